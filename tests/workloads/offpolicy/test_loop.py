"""The shared off-policy loop (loop.py) on a scripted env and agent: its schedule, its rows,
its episode bookkeeping and its progress calls."""

from __future__ import annotations

import numpy as np

from rldse.kernels.mlp import Work
from rldse.kernels.replay import OpWork
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.offpolicy.loop import run_offpolicy, train_offpolicy


class _Env:
    """Reward 1 per step; episodes end (terminated) every 4 steps."""

    def __init__(self) -> None:
        self.t, self.resets, self.closed = 0, [], False

    def reset(self, seed=None):
        self.resets.append(seed)
        self.t = 0
        return np.zeros(2), {}

    def step(self, action):
        self.t += 1
        return np.full(2, float(self.t)), 1.0, self.t == 4, False, {}

    def close(self) -> None:
        self.closed = True


class _Replay:
    dtype = "none"


class _Agent:
    act_work = Work(10, 20)
    replay = _Replay()

    def __init__(self) -> None:
        self.updates, self.ends, self.stored = [], [], 0

    def act(self, obs, step):
        return 0, step % 2 == 1

    def remember(self, obs, action, reward, next_obs, terminated):
        self.stored += 1
        return OpWork(1, flops=1, bytes=2, touches=3)

    def update(self, step, rec):
        self.updates.append(step)

    def end_step(self, step, rec):
        self.ends.append(step)


def test_schedule_rows_returns_and_progress():
    env, agent, rec, ticks = _Env(), _Agent(), Recorder(worker="host"), []
    returns = run_offpolicy(env, agent, 250, learning_starts=100, learn_every=3, rec=rec,
                            progress=ticks.append, seed=5)
    assert returns == [4.0] * 62  # 250 steps: 62 whole episodes of 4
    assert env.resets == [5] + [None] * 62 and env.closed
    assert agent.updates == [s for s in range(100, 250) if s % 3 == 0]
    assert agent.ends == list(range(250)) and agent.stored == 250
    assert ticks == [2] * 125 and sum(ticks) == 250

    ops = rec.frame()
    assert list(ops.phase[:4]) == ["env_reset", "act", "env_step", "replay_add"]
    acts = ops[ops.phase == "act"]
    assert list(acts.flops[:2]) == [0, 10] and list(acts.bytes[:2]) == [0, 20]
    assert list(acts.dtype[:2]) == ["none", "fp32"]
    adds = ops[ops.phase == "replay_add"]
    assert (adds.flops == 1).all() and (adds.bytes == 2).all() and (adds.touches == 3).all()
    assert list(adds["iter"]) == list(range(250))
    resets = ops[ops.phase == "env_reset"]
    assert list(resets["iter"]) == [0] + list(range(3, 250, 4))


def test_progress_remainder_and_seeded_agent():
    env, ticks, seen = _Env(), [], []

    def make_agent(e, rng):
        seen.append((e, rng.random()))
        return _Agent()

    returns, agent = train_offpolicy(env, make_agent, 3, 1057, 0, 1, None, ticks.append)
    assert seen == [(env, np.random.default_rng(3).random())] and env.resets[0] == 3
    assert env.closed and len(returns) == 264
    assert ticks == [10] * 105 + [7]
    assert agent.updates == list(range(1057))
