"""DDPG on Pendulum-v1: it learns, its trace counts the work mlp.py's formulas give, and
its deterministic policy gradient matches finite differences."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.kernels.mlp import (
    adam_work,
    backward_work,
    cold,
    elementwise,
    forward_work,
    n_params,
)
from rldse.trace import load_trace
from rldse.workloads.common.base import CaptureConfig, no_progress
from rldse.workloads.offpolicy import ddpg

ENV = "Pendulum-v1"


def _capture(steps: int, seed: int = 0, progress=no_progress, **options):
    cfg = CaptureConfig(workload="ddpg", env_id=ENV, steps=steps, seed=seed, options=options)
    return ddpg.capture(cfg, progress)


@pytest.fixture(scope="module")
def ticks() -> list[int]:
    return []


@pytest.fixture(scope="module")
def short(ticks):
    """600 steps (3 episodes), 200 of them warm-up: every phase, in a second or two."""
    return _capture(600, progress=ticks.append, warmup_steps=200)


def _learns(seed: int) -> None:
    """Mean return of the last 10 episodes after 10k steps (50 episodes) is ≥ −400.

    Random actions score about −1200 to −1500 per episode and a good DDPG −150 to −250.
    Measured with the defaults at 10k steps, seeds 0–7 reached −121 to −224 (the last
    dips on the way were near −400 to −700 around 6–8k steps), so −400 holds with margin
    while still meaning "swings up and balances most of the time".
    """
    returns = _capture(10_000, seed).meta.episode_returns
    assert len(returns) == 50
    assert np.mean(returns[:5]) < -900  # the warm-up is random: a real starting point
    assert np.mean(returns[-10:]) >= -400


def test_learns_pendulum():
    _learns(0)


@pytest.mark.slow
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_learns_pendulum_other_seeds(seed):
    _learns(seed)


def test_progress_counts_every_step(short, ticks):
    assert sum(ticks) == 600


def test_trace_rows(short):
    ops, info = short.ops, short.meta.workload_info
    counts = ops.groupby("phase", observed=True).size()
    assert counts["env_step"] == counts["act"] == counts["replay_add"] == 600
    assert counts["replay_sample"] == counts["learn"] == counts["sync"] == 400
    assert counts["env_reset"] == len(short.meta.episode_returns) + 1 == 4
    assert set(ops["worker"].astype(str)) == {"host"}
    assert (short.meta.workload, short.meta.algorithm) == ("ddpg", "ddpg")
    assert info["actor_sizes"] == [3, 64, 64, 1] and info["critic_sizes"] == [4, 64, 64, 1]
    assert info["replay_capacity"] == 600
    assert info["transition_bytes"] == 4 * (2 * 3 + 1 + 1) + 1
    act = ops[ops["phase"] == "act"].sort_values("iter")
    assert (act["flops"].iloc[:200] == 0).all()
    assert (act["flops"].iloc[200:] == forward_work([3, 64, 64, 1], 1, tanh=True).flops).all()


def test_trace_round_trips(short, tmp_path):
    loaded = load_trace(short.save(tmp_path / "ddpg.parquet"))
    assert loaded.digest == short.digest
    assert loaded.meta.workload_info["critic_n_params"] == 4 * 64 + 64 + 64 * 64 + 64 + 65


def test_learn_and_sync_work_match_mlp_formulas(short):
    actor, critic, b = [3, 64, 64, 1], [4, 64, 64, 1], 64
    fa = forward_work(actor, b, tanh=True) + elementwise(b, 8 * b)  # bound · μ
    fc = forward_work(critic, b) + elementwise(0, 8 * b * 4)  # concatenate [s, a]
    parts = [fa, fc, elementwise(4 * b, 65 * b), fc, elementwise(2 * b, 36 * b),
             backward_work(critic, b), adam_work(n_params(critic)),
             fa, fc, elementwise(0, 4 * b), backward_work(critic, b, input_grad=True),
             elementwise(b, 8 * b), backward_work(actor, b, tanh=True),
             adam_work(n_params(actor)), cold(n_params(actor) + n_params(critic), 2)]
    learn = short.ops[short.ops["phase"] == "learn"]
    assert (learn["flops"] == sum(p.flops for p in parts)).all()
    assert (learn["bytes"] == sum(p.bytes for p in parts)).all()
    assert (learn["items"] == b).all()
    params = n_params(actor) + n_params(critic)
    sync = short.ops[short.ops["phase"] == "sync"]
    assert (sync["flops"] == 3 * params).all() and (sync["bytes"] == 28 * params).all()


def test_same_seed_same_run(short):
    again = _capture(600, warmup_steps=200)
    assert again.meta.episode_returns == short.meta.episode_returns
    cols = ["worker", "phase", "iter", "items", "flops", "bytes", "touches"]
    key = ["phase", "iter"]
    a = short.ops[cols].sort_values(key, kind="stable").reset_index(drop=True)
    b = again.ops[cols].sort_values(key, kind="stable").reset_index(drop=True)
    assert a.equals(b)


def test_actor_gradient_matches_finite_differences():
    """dQ/da chained through the actor equals d(−mean Q(s, μ(s)))/dθ numerically."""
    cfg = ddpg.DDPGConfig(env_id=ENV)
    rng = np.random.default_rng(1)
    agent = ddpg.DDPGAgent(cfg, 3, 1, 2.0, rng)
    agent.actor.W[-1] *= 10  # undo the small output init: gradients well above fp32 noise
    agent.critic.W[-1] *= 10
    obs = rng.normal(size=(16, 3)).astype(np.float32)

    def loss() -> float:
        a = agent.bound * agent.actor(obs)
        return -float(np.mean(agent.critic(np.concatenate([obs, a], axis=1)), dtype=np.float64))

    grads = agent.actor_grads(obs)
    for k, (i, j) in [(0, (0, 5)), (2, (7, 3)), (4, (11, 0))]:  # W of each layer
        w, eps = agent.actor.params[k], 1e-2
        w[i, j] += eps
        up = loss()
        w[i, j] -= 2 * eps
        down = loss()
        w[i, j] += eps
        assert abs(grads[k][i, j]) > 1e-4
        assert grads[k][i, j] == pytest.approx((up - down) / (2 * eps), rel=0.05)


def test_bad_input_is_one_line_error():
    with pytest.raises(RldseError, match="Box actions"):
        ddpg.capture(CaptureConfig(workload="ddpg", env_id="CartPole-v1", steps=10))
    with pytest.raises(RldseError, match="ddpg option 'batch_sz'"):
        _capture(10, batch_sz=32)
    with pytest.raises(RldseError, match="set by the capture"):
        ddpg.capture(CaptureConfig(workload="ddpg", env_id=ENV, options={"steps": 5}))
