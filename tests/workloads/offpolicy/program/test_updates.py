"""The update's cost terms (rldse.workloads.offpolicy.program.updates) reach every path's
schedule: a fixed cost added to each host↔device copy shows, once per update, in the
busy seconds of the phase each copy belongs to, on the merged sync and merged async paths
alike (a dropped copy fails here; tests/sim/test_exact.py holds the paths to each other).
"""

from __future__ import annotations

import pytest

from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import load_trace

COPY_S = 1e-3  # added to every copy: far above the copies' own seconds


def _run(learner: str, copy_fixed_s: float):
    spec = parse_spec({"name": "t", "cpu": {"preset": "xeon-e5-2698-v4", "sockets": 2},
                       "gpu": {"preset": "v100-sxm2", "copy_fixed_s": copy_fixed_s},
                       "placement": {"act": "cpu", "learn": "gpu", "replay": "cpu"},
                       "workload": {"learner": learner, "env_steps": 3000}})
    r = simulate(load_trace("traces/dqn_cartpole_per.parquet"), spec, seed=0)
    return r, {d.name: d.phase_busy_s for d in r.devices}


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_each_update_pays_its_batch_copy_and_its_td_copy(learner):
    """Learn: the sampled batch copied to the GPU learner (booked on the GPU); priority
    update: the TD errors copied back to the host replay (booked on its core)."""
    base, busy0 = _run(learner, 0.0)
    slow, busy1 = _run(learner, COPY_S)
    n = base.updates
    assert n > 100 and slow.updates == n
    assert busy1["gpu"]["learn"] - busy0["gpu"]["learn"] == pytest.approx(n * COPY_S,
                                                                            rel=1e-6)
    assert busy1["cpu"]["replay_update"] - busy0["cpu"]["replay_update"] == pytest.approx(
        n * COPY_S, rel=1e-6)
