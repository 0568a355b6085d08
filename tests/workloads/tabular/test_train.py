"""Tabular Q-learning/SARSA: they learn, their traces are deterministic and count work
by the documented formulas, and SwiftRL's offline scheme keeps its math independent of
number format (fp32 vs int32 fixed point) and of the process count."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import gymnasium as gym
import numpy as np
import pandas as pd
import pytest

from rldse.errors import RldseError
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular.train import (
    capture,
    env_spaces,
    greedy_policy,
    int32_scale_bits,
    resolve_params,
    train_offline,
    train_online,
)
from tests.workloads.tabular.sampled import evaluate_greedy

SWIFTRL_FROZENLAKE_10K = Path("/work/shared/data/swiftrl/FrozenLake_trajectories_10k.txt")
WORK_COLUMNS = ["worker", "phase", "iter", "items", "flops", "bytes", "touches", "dtype"]


@cache
def random_dataset(env_id: str, n: int, seed: int) -> pd.DataFrame:
    """n transitions of a uniformly random behaviour policy, like SwiftRL's datasets."""
    env = gym.make(env_id)
    actions = np.random.default_rng(seed).integers(env.action_space.n, size=n).tolist()
    rows = []
    s, _ = env.reset(seed=seed)
    for a in actions:
        sp, r, terminated, truncated, _ = env.step(a)
        rows.append((s, a, r, sp))
        s = sp if not (terminated or truncated) else env.reset()[0]
    df = pd.DataFrame(rows, columns=["state", "action", "reward", "next_state"])
    return df.astype({"state": "int32", "action": "int32", "reward": "float32",
                      "next_state": "int32"})


def offline(env_id, data, **kw):
    n_states, n_actions = env_spaces(env_id)
    options = {k: kw.pop(k) for k in ("passes", "passes_per_round", "workers") if k in kw}
    params = resolve_params(env_id, options, online=False)
    return train_offline(data, n_states, n_actions, params=params, **kw)


# ---- online learning --------------------------------------------------------------------

def _exact(env_id: str, q: np.ndarray) -> tuple[float, float]:
    """(success probability, expected return) of q's greedy policy from the env's own
    transition table within its time limit: exact, where sampled episodes need a margin."""
    from rldse.studies.swiftrl_pim.data import EnvModel

    return EnvModel(env_id).evaluate(greedy_policy(q))


def test_q_learning_frozenlake_reaches_optimal_success():
    """Slippery 4x4 FrozenLake: the best policy reaches the goal within the 100-step limit
    with probability 0.740 (value iteration over the env's own transition table).
    200k steps at α 0.05 with ε decaying to 0.01 over half of them learn exactly that
    policy (every seed 0-9 did). The learned policy is evaluated exactly over the same
    transition table (no sampled episodes, so no sampling margin): 0.7402."""
    run = train_online("FrozenLake-v1", algorithm="q_learning", seed=0)
    success, _ = _exact("FrozenLake-v1", run.q)
    assert success >= 0.739


def test_sarsa_frozenlake_learns():
    """SARSA learns the value of its ε-greedy behaviour, so where two actions are nearly
    equal it may settle on the slightly worse one: over seeds 0-9 its greedy policies
    reach the goal with probability 0.728-0.730 (exact, from the transition table, as
    evaluated here); a random policy scores about 0.015."""
    run = train_online("FrozenLake-v1", algorithm="sarsa", seed=0)
    success, _ = _exact("FrozenLake-v1", run.q)
    assert success >= 0.725


def test_taxi_learns_to_deliver():
    """An optimal Taxi episode scores 20 minus its 10-16 moves, about 8 on average; a
    random policy scores about -770. 100k steps learn to deliver every passenger."""
    run = train_online("Taxi-v4", algorithm="q_learning", seed=0)
    success, mean_return = _exact("Taxi-v4", run.q)
    assert success == pytest.approx(1.0, abs=1e-9)
    assert mean_return > 5


@pytest.mark.parametrize(("algorithm", "floor"), [("q_learning", -13), ("sarsa", -17)])
def test_cliffwalking_paths(algorithm, floor):
    """The shortest path along the cliff edge takes 13 steps (return -13), the path
    Q-learning learns; SARSA, which learns its exploring behaviour's value, keeps away
    from the edge: the top row path takes 17 steps."""
    run = train_online("CliffWalking-v1", algorithm=algorithm, seed=0)
    result = evaluate_greedy("CliffWalking-v1", run.q, episodes=10, seed=0)
    assert result.success_rate == 1.0
    assert result.mean_return >= floor


# ---- online traces ------------------------------------------------------------------------

@pytest.mark.parametrize("algorithm", ["q_learning", "sarsa"])
def test_same_seed_same_transitions_and_work(algorithm):
    cfg = CaptureConfig(workload="tabular", env_id="FrozenLake-v1", steps=3000, seed=5,
                        algorithm=algorithm)
    a, b = capture(cfg), capture(cfg)
    pd.testing.assert_frame_equal(a.transitions, b.transitions)
    pd.testing.assert_frame_equal(a.ops[WORK_COLUMNS], b.ops[WORK_COLUMNS])
    other = capture(cfg.model_copy(update={"seed": 6}))
    assert not a.transitions.equals(other.transitions)


def test_online_trace_counts_work_by_formula():
    """Q-learning on Taxi (A = 6): every formula of the module docstring, op by op."""
    trace = capture(CaptureConfig(workload="tabular", env_id="Taxi-v4", steps=2000, seed=1))
    ops, t = trace.ops, trace.transitions
    a_ = 6
    steps = ops[ops.phase == "env_step"]
    assert len(steps) == 2000 and (steps["items"] == 1).all()
    acts = ops[ops.phase == "act"]
    greedy = acts.flops > 0
    assert len(acts) == 2000 and greedy.any() and (~greedy).any()
    assert (acts[greedy][["flops", "touches", "bytes"]] == [a_ - 1, a_, 4 * a_]).all().all()
    assert (acts[~greedy][["flops", "touches", "bytes"]] == 0).all().all()
    upd = ops[ops.phase == "q_update"].sort_values("iter")
    done = t["done"].to_numpy()
    assert (upd["flops"].to_numpy() == np.where(done, 3, a_ - 1 + 5)).all()
    assert (upd["touches"].to_numpy() == np.where(done, 2, a_ + 2)).all()
    assert (upd["bytes"].to_numpy() == 4 * upd["touches"].to_numpy() + 17).all()
    resets = ops[ops.phase == "env_reset"]
    assert len(resets) == len(trace.meta.episode_returns) + 1
    assert t.dtypes.to_dict() == {"state": np.int32, "action": np.int32,
                                  "reward": np.float32, "next_state": np.int32,
                                  "done": np.bool_}


def test_online_trace_meta_and_progress():
    calls = []
    trace = capture(CaptureConfig(workload="tabular", env_id="FrozenLake-v1", steps=5000,
                                  seed=0, algorithm="sarsa",
                                  options={"map_name": "8x8", "alpha": 0.2}), calls.append)
    assert sum(calls) == 5000 and 50 <= len(calls) <= 101
    meta = trace.meta
    assert (meta.workload, meta.algorithm, meta.env_id) == ("tabular", "sarsa", "FrozenLake-v1")
    assert meta.hyperparameters["alpha"] == 0.2 and meta.hyperparameters["steps"] == 5000
    info = meta.workload_info
    assert (info["n_states"], info["n_actions"], info["mode"]) == (64, 4, "online")
    assert (info["agents"], info["workers"], info["dtype"]) == (1, 1, "fp32")
    assert info["dataset_transitions"] == 5000 and info["int32_scale_bits"] is None


@pytest.mark.parametrize(("cfg", "needle"), [
    (dict(env_id="CartPole-v1"), "not a tabular env"),
    (dict(env_id="Taxi-v4", algorithm="td_lambda"), "algorithm must be one of"),
    (dict(env_id="Taxi-v4", options={"alpha": 2.0}), "option 'alpha'"),
    (dict(env_id="Taxi-v4", options={"learning_rate": 0.1}), "option 'learning_rate'"),
    (dict(env_id="Taxi-v4", options={"map_name": "8x8"}), "FrozenLake-v1 only"),
    (dict(env_id="Taxi-v4", agents=4), "apply to offline training"),
])
def test_bad_requests_are_one_line_errors(cfg, needle):
    with pytest.raises(RldseError, match=needle) as err:
        capture(CaptureConfig(workload="tabular", steps=10, **cfg))
    assert "\n" not in str(err.value)


# ---- offline (SwiftRL) ------------------------------------------------------------------

@pytest.mark.parametrize(("env_id", "check"), [
    ("FrozenLake-v1", lambda success, ret: success >= 0.725),
    ("CliffWalking-v1", lambda success, ret: ret == pytest.approx(-13)),
])
def test_offline_q_learning_learns_from_random_behaviour(env_id, check):
    """Q-learning is off-policy: 10 passes over 50k transitions of a random policy learn
    the optimal Cliff path (-13) and a FrozenLake policy whose exact success rate is
    0.730 (both evaluated exactly on the env's table)."""
    run = offline(env_id, random_dataset(env_id, 50_000, 0), passes=10)
    assert check(*_exact(env_id, run.q))


@pytest.mark.parametrize("algorithm", ["q_learning", "sarsa"])
@pytest.mark.parametrize(("env_id", "agents", "passes"), [
    ("FrozenLake-v1", 1, 10), ("FrozenLake-v1", 8, 6), ("Taxi-v4", 4, 3),
    ("CliffWalking-v1", 1, 5),
])
def test_int32_and_fp32_reach_the_same_greedy_policy(env_id, agents, passes, algorithm):
    data = random_dataset(env_id, 20_000, 1)
    fp = offline(env_id, data, agents=agents, passes=passes, dtype="fp32", algorithm=algorithm)
    fx = offline(env_id, data, agents=agents, passes=passes, dtype="int32", algorithm=algorithm)
    assert fx.q_stored.dtype == np.int32 and fp.q_stored.dtype == np.float32
    np.testing.assert_array_equal(greedy_policy(fx.q), greedy_policy(fp.q))
    assert np.abs(fx.q - fp.q).max() < 1e-3 * max(1.0, np.abs(fp.q).max())


@pytest.mark.skipif(not SWIFTRL_FROZENLAKE_10K.is_file(), reason="SwiftRL datasets not present")
def test_int32_and_fp32_agree_on_swiftrl_frozenlake():
    """SwiftRL's FrozenLake 10k file, 100 agents x 10 passes: the same greedy policy.

    At SwiftRL's 1000 agents x 10 passes (10 transitions an agent) the averaged values
    near the start are ~1e-10, below int32's resolution 2^-25 (FrozenLake's value range
    leaves 25 fractional bits): there fixed point rounds them to 0 and picks action 0.
    The policies agree wherever fp32's greedy margin is at least that resolution."""
    from rldse.workloads.tabular.swiftrl_format import read_swiftrl
    data = read_swiftrl(SWIFTRL_FROZENLAKE_10K)
    for agents in (100, 1000):
        fp = offline("FrozenLake-v1", data, agents=agents, passes=10, dtype="fp32")
        fx = offline("FrozenLake-v1", data, agents=agents, passes=10, dtype="int32")
        top2 = np.sort(fp.q, axis=1)[:, -2:]
        resolved = top2[:, 1] - top2[:, 0] >= 2.0**-fx.scale_bits
        same = greedy_policy(fx.q) == greedy_policy(fp.q)
        assert same[resolved].all()
        assert same.all() == (agents == 100)


@pytest.mark.parametrize("dtype", ["fp32", "int32"])
@pytest.mark.parametrize("algorithm", ["q_learning", "sarsa"])
def test_two_workers_give_the_same_tables_as_one(dtype, algorithm):
    data = random_dataset("Taxi-v4", 12_000, 2)
    one = offline("Taxi-v4", data, agents=5, passes=2, workers=1, dtype=dtype,
                  algorithm=algorithm, seed=4)
    two = offline("Taxi-v4", data, agents=5, passes=2, workers=2, dtype=dtype,
                  algorithm=algorithm, seed=4)
    np.testing.assert_array_equal(one.q_stored, two.q_stored)


def test_host_averages_the_agents_tables():
    """One round with 2 agents = the mean of two 1-agent runs on the two halves."""
    data = random_dataset("FrozenLake-v1", 5_000, 3)
    both = offline("FrozenLake-v1", data, agents=2).q_stored
    halves = [offline("FrozenLake-v1", part.reset_index(drop=True)).q_stored
              for part in (data.iloc[:2500], data.iloc[2500:])]
    expected = ((halves[0].astype(np.float64) + halves[1]) / 2).astype(np.float32)
    np.testing.assert_array_equal(both, expected)


def test_offline_trace_ops_and_meta(tmp_path):
    from rldse.workloads.tabular.swiftrl_format import write_swiftrl
    path = write_swiftrl(random_dataset("FrozenLake-v1", 6_000, 4),
                         tmp_path / "FrozenLake_trajectories_6k.txt")
    cfg = CaptureConfig(workload="tabular", env_id="auto", dataset=str(path), agents=3,
                        dtype="int32", seed=2, options={"passes": 4, "passes_per_round": 2,
                                                        "workers": 2})
    trace = capture(cfg)
    a_, s_ = 4, 16
    upd = trace.ops[trace.ops.phase == "q_update"]
    assert sorted(upd.worker.astype(str).unique()) == ["agent/0", "agent/1", "agent/2"]
    assert len(upd) == 3 * 2 and upd["items"].sum() == 6_000 * 4
    assert (upd["flops"] == upd["items"] * (a_ - 1 + 5)).all()
    assert (upd["touches"] == upd["items"] * (a_ + 2)).all()
    assert (upd["bytes"] == 4 * upd["touches"] + 16 * upd["items"]).all()
    assert (upd["dtype"] == "int32").all()
    agg = trace.ops[trace.ops.phase == "aggregate"]
    assert list(agg["iter"]) == [0, 1] and (agg.worker == "host").all()
    assert (agg["flops"] == 3 * s_ * a_ + s_ * a_).all() and (agg["bytes"] == 4 * s_ * a_ * 4).all()
    assert (agg["start_s"].to_numpy() > upd.groupby("iter")["start_s"].max().to_numpy()).all()
    info = trace.meta.workload_info
    assert trace.meta.env_id == "FrozenLake-v1"
    assert {k: info[k] for k in ("n_states", "n_actions", "mode", "dtype", "agents", "passes",
                                 "rounds", "workers", "dataset_transitions",
                                 "int32_scale_bits")} == {
        "n_states": 16, "n_actions": 4, "mode": "offline", "dtype": "int32", "agents": 3,
        "passes": 4, "rounds": 2, "workers": 2, "dataset_transitions": 6000,
        "int32_scale_bits": 25}
    again = capture(cfg)
    pd.testing.assert_frame_equal(trace.ops[WORK_COLUMNS].sort_values(["worker", "iter"])
                                  .reset_index(drop=True),
                                  again.ops[WORK_COLUMNS].sort_values(["worker", "iter"])
                                  .reset_index(drop=True))


def test_int32_scale_bits_fit_each_env():
    """|Q| <= max|r|/(1-γ): FrozenLake 20, Taxi 400, CliffWalking 2000 at γ 0.95."""
    assert int32_scale_bits(1, 0.95) == 25
    assert int32_scale_bits(20, 0.95) == 21
    assert int32_scale_bits(100, 0.95) == 19
    for bound, bits in ((20, 25), (400, 21), (2000, 19)):
        assert 2 * bound * 2**bits < 2**31


def test_offline_errors():
    data = random_dataset("FrozenLake-v1", 1_000, 0)
    with pytest.raises(RldseError, match="agents must be between 1 and"):
        offline("FrozenLake-v1", data, agents=1001)
    with pytest.raises(RldseError, match="multiple of 'passes_per_round'"):
        resolve_params("FrozenLake-v1", {"passes": 3, "passes_per_round": 2}, online=False)
    with pytest.raises(RldseError, match="use dtype fp32"):
        int32_scale_bits(1e9, 0.99)
