"""Off-policy data-parallel learners: one all-reduce per update inside the learn drive."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.models import load_part
from rldse.models.collectives import Cluster, choose
from rldse.sim import simulate
from rldse.system import load_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[4]


def test_learner_gpus_all_reduce_per_update():
    trace = load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
    sets = {"workload.env_steps": 3000}
    one = simulate(trace, load_spec(ROOT / "examples" / "dgx1_like.yaml", sets))
    eight = simulate(trace, load_spec(ROOT / "examples" / "dgx1_like.yaml",
                                      {**sets, "workload.learner_gpus": 8}))
    params = trace.meta.workload_info["n_params"]
    per_update_s = float(choose(Cluster(load_part("fabric", "dgx1-v100")), "all_reduce",
                                4 * params).seconds)
    assert "allreduce_s" not in one.breakdown_s
    assert eight.updates == one.updates
    assert eight.breakdown_s["allreduce_s"] == pytest.approx(eight.updates * per_update_s,
                                                            rel=1e-12)
