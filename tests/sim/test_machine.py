"""Machine's cost cycles: vector takes equal the scalar ones; per-actor copies share rows."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.sim.machine import Cycle, SplitCycle


@pytest.mark.parametrize("rows", [1, 3, 7, 100])
@pytest.mark.parametrize("k", [0, 1, 2, 5, 7, 13, 250])
def test_takes_of_equal_counts_equal_scalar_takes(rows, k):
    costs = np.random.default_rng(rows).random(rows)
    vec, one = Cycle(costs, 3), Cycle(costs, 3)
    got = vec.takes(np.full(40, k))
    want = [one.take(k) for _ in range(40)]
    np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)
    assert vec.pos == one.pos


def test_takes_of_mixed_counts_equal_scalar_takes():
    costs = np.random.default_rng(0).random(11)
    counts = np.array([0, 1, 4, 11, 23, 2])
    vec, one = Cycle(costs, 5), Cycle(costs, 5)
    np.testing.assert_allclose(vec.takes(counts), [one.take(int(k)) for k in counts])
    assert vec.pos == one.pos


def test_at_starts_elsewhere_and_advances_on_its_own():
    h, d, w = (np.arange(1.0, 6.0) * s for s in (1, 2, 3))
    base = SplitCycle(h, d, w)
    other = base.at(2)
    assert other.take(1).wall_s == 9.0 and base.take(1).wall_s == 3.0
    assert other.pos == 3 and base.pos == 1 and other.rows == 5


def test_a_gpu_phase_cost_gives_the_same_energy_in_every_simulation_of_a_process(
        tmp_path, host_fp, monkeypatch):
    """phase_cost on a part that issues kernels fills that machine's GPU energy ledger;
    a cost shared from an earlier machine once left the ledger empty, so the second
    simulation of the same design drew full dynamic power (22.9 instead of 53.7 steps/J)."""
    from rldse.sim import simulate
    from rldse.system import parse_spec
    from rldse.workloads import WORKLOADS
    from tests.search import stand_in

    monkeypatch.setitem(WORKLOADS, stand_in.NAME, stand_in.WORKLOAD)
    trace = stand_in.make_trace(host_fp)
    spec = parse_spec({"cpu": {"preset": "epyc-7742"}, "gpu": {"preset": "a100-40g"},
                       "placement": {"learn": "gpu"},
                       "workload": {"env_steps": 4096, "actors": 8, "cores": 8}})
    first, second = (simulate(trace, spec, seed=0) for _ in range(2))
    assert first.energy_j == second.energy_j and first.sim_time_s == second.sim_time_s
