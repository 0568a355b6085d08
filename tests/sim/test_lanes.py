"""Engine primitives against queueing closed forms (issue 4: within 3 % on long runs).

A long-lived SimPy source process generates arrivals; each job is booked on analytic
lanes (the primitive every engine Device books through) at its arrival, so its wait is
start - arrival. FCFS with c lanes is M/M/c; with deterministic service, M/D/1.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from rldse.sim.lanes import Lanes


def _mean_wait(lam: float, service, lanes: int, jobs: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(1.0 / lam, jobs)
    services = service(rng, jobs)
    env = simpy.Environment()
    server = Lanes(lanes)
    waits = np.empty(jobs)

    def source():
        for k in range(jobs):
            yield env.timeout(gaps[k])
            start, _, _ = server.reserve(env.now, services[k])
            waits[k] = start - env.now

    env.process(source())
    env.run()
    return float(waits[jobs // 10:].mean())  # drop the warm-up tenth


def _erlang_c(c: int, a: float) -> float:
    rho = a / c
    top = a**c / math.factorial(c) / (1 - rho)
    return top / (sum(a**k / math.factorial(k) for k in range(c)) + top)


JOBS = 2_000_000  # at this length every seed tried lands within 1 % of theory


def test_mm1():
    mu, rho = 1.0, 0.7
    lam = rho * mu
    got = _mean_wait(lam, lambda r, n: r.exponential(1 / mu, n), 1, JOBS, seed=1)
    theory = rho / (mu - lam)
    assert got == pytest.approx(theory, rel=0.03)


def test_mmc():
    mu, c, rho = 1.0, 4, 0.75
    lam = rho * c * mu
    got = _mean_wait(lam, lambda r, n: r.exponential(1 / mu, n), c, JOBS, seed=2)
    theory = _erlang_c(c, lam / mu) / (c * mu - lam)
    assert got == pytest.approx(theory, rel=0.03)


def test_md1():
    mu, rho = 2.0, 0.7
    lam = rho * mu
    got = _mean_wait(lam, lambda r, n: np.full(n, 1 / mu), 1, JOBS, seed=3)
    theory = rho / (2 * mu * (1 - rho))
    assert got == pytest.approx(theory, rel=0.03)


def test_reserve_all_and_accounting():
    lanes = Lanes(3)
    assert lanes.reserve(0.0, 1.0) == (0.0, 1.0, 0)
    assert lanes.reserve(0.5, 2.0) == (0.5, 2.5, 1)
    assert lanes.reserve_all(0.0, 1.0) == (2.5, 3.5)
    assert lanes.reserve(0.0, 1.0)[:2] == (3.5, 4.5)  # every lane waits for the floor
    lanes = Lanes(3)
    lanes.reserve(0.0, 1.0)
    lanes.reserve(0.5, 2.0)
    assert lanes.reserve_all(0.0, 1.0) == (2.5, 3.5)
    assert lanes.busy_s == pytest.approx(6.0)
    assert lanes.utilisation(3.5) == pytest.approx(6.0 / (3 * 3.5))
    with pytest.raises(ValueError):
        Lanes(0)
