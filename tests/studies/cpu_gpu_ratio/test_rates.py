"""The analytic rates against their closed forms on made-up unit costs: with inference
free, n actors of E envs produce n·E / t_env steps/s (at most cores·E / t_env) and the
learner consumes 1 / (epochs · t_learn / B) whatever n, so the knee is at
consumption · t_env / E actors."""

from __future__ import annotations

import math

import pytest

from rldse.studies.cpu_gpu_ratio.rates import consumption, knee, production
from rldse.workloads.actor_learner.program.unit_costs import UnitCosts


def _units(learn_step_s: float) -> UnitCosts:
    return UnitCosts(actors=1, envs_per_actor=4, rollout_len=128, cores=64,
                     env_step_s=1e-3, act_s=[0.0, 0.0], act_device_s=[0.0, 0.0],
                     learn_step_s=learn_step_s, learn_step_device_s=learn_step_s / 2,
                     minibatch=2, epochs=2, handoff_s=0.0, sync_s=0.0,
                     inference_on_learner_gpu=False)


def test_rates_and_knee_match_their_closed_forms():
    u = _units(learn_step_s=1e-4)  # consumes 1 / (2 · 1e-4 / 2) = 10,000 steps/s
    assert production(u, 3, 64) == pytest.approx(3 * 4 / 1e-3)
    assert production(u, 3, 2) == pytest.approx(2 * 4 / 1e-3)  # two cores step at most
    assert consumption(u, 1) == pytest.approx(1e4) == consumption(u, 30)
    assert knee(u, 64, 64.0) == pytest.approx(1e4 * 1e-3 / 4)  # 2.5 actors
    assert knee(u, 2, 64.0) == math.inf  # two cores never keep up
    assert knee(_units(learn_step_s=1e-2), 64, 64.0) == 1.0  # one actor already does
