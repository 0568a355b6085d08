"""Engine primitives against queueing closed forms (within 3 % on long runs).

Each job is booked on analytic lanes (the primitive every engine Device books through)
at its arrival, so its wait is start - arrival. FCFS with c lanes is M/M/c; with
deterministic service, M/D/1. Arrivals are booked in order from a plain loop: with no
clock, Lanes reads only the arrival times it is given, and a SimPy source process
yielding the same gaps gives bit-identical waits (its clock adds the gaps one by one,
as the cumulative sum does) at four times the cost of these 2M-job runs.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import simpy

from rldse.sim.lanes import Lanes


def _mean_wait(lam: float, service, lanes: int, jobs: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    arrivals = np.cumsum(rng.exponential(1.0 / lam, jobs)).tolist()
    services = service(rng, jobs).tolist()
    reserve = Lanes(lanes).reserve
    waits = [reserve(t, s)[0] - t for t, s in zip(arrivals, services, strict=True)]
    return float(np.mean(waits[jobs // 10:]))  # drop the warm-up tenth


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


# ---- arrival order: a job booked ahead never delays an earlier arrival ------

class _Clock:
    now = 0.0


def test_an_earlier_arrival_fills_the_gap_before_a_job_booked_ahead():
    lanes = Lanes(1, clock=_Clock())
    assert lanes.reserve(10.0, 2.0)[:2] == (10.0, 12.0)  # booked ahead of the clock
    assert lanes.reserve(3.0, 4.0)[:2] == (3.0, 7.0)  # arrives earlier: runs in the gap
    assert lanes.reserve(8.0, 3.0)[:2] == (12.0, 15.0)  # 8..10 too short: after the first
    assert lanes.reserve(7.0, 1.0)[:2] == (7.0, 8.0)
    assert lanes.out_of_order == 3
    assert lanes.busy_s == pytest.approx(10.0)


def test_gap_filling_picks_the_lane_free_earliest_at_the_arrival():
    lanes = Lanes(2, clock=_Clock())
    lanes.reserve(0.0, 5.0)  # lane 0 busy 0..5
    lanes.reserve(6.0, 1.0)  # lane 1 busy 6..7
    start, end, lane = lanes.reserve(2.0, 3.0)  # lane 1 is idle 2..5
    assert (start, end, lane) == (2.0, 5.0, 1)


def test_bookings_at_arrival_match_a_simpy_resource():
    """Every job booked when it arrives: the lanes' FCFS schedule is simpy.Resource's."""
    rng = np.random.default_rng(3)
    jobs = 400
    arrivals = np.cumsum(rng.exponential(0.4, jobs))
    services = rng.exponential(1.0, jobs)
    env = simpy.Environment()
    res, lanes = simpy.Resource(env, capacity=2), Lanes(2, clock=env)
    via_res, via_lanes = np.empty(jobs), np.empty(jobs)

    def job(k):
        with res.request() as req:
            yield req
            via_res[k] = env.now
            yield env.timeout(services[k])

    def source():
        for k in range(jobs):
            yield env.timeout(arrivals[k] - env.now)
            via_lanes[k] = lanes.reserve(env.now, services[k])[0]
            env.process(job(k))

    env.process(source())
    env.run()
    assert via_lanes == pytest.approx(via_res, rel=1e-12, abs=1e-12)
