"""The real off-policy training loop that DQN and DDPG share, recorded as a trace.

One process (worker ``host``); every row's ``iter`` is the env step it happened in. Per
env step: ``act``, ``env_step``, ``replay_add``, and ``env_reset`` at episode ends; once
``step >= learning_starts``, every ``learn_every`` steps, the agent's ``update`` (which
records its own rows); then, every step, the agent's ``end_step`` (DQN's hard target
copy, nothing for DDPG). The agent owns its random generator, so the loop draws nothing
itself: the draws, their order and the recorded rows are the agent's and the env's alone.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import numpy as np
from pydantic import BaseModel

from rldse.kernels.mlp import Work
from rldse.kernels.replay import OpWork
from rldse.trace import Trace
from rldse.workloads.common.base import Progress, build_trace, no_progress, progress_chunk
from rldse.workloads.common.recorder import NullRecorder, Recorder

if TYPE_CHECKING:
    import gymnasium as gym

Rec = Recorder | NullRecorder
CfgT = TypeVar("CfgT", bound=BaseModel)


class ReplayLike(Protocol):
    dtype: str  # the trace dtype of its operations


class OffPolicyAgent(Protocol):
    """What run_offpolicy asks of an agent."""

    act_work: Work  # a batch-1 policy forward: the work of an ``act`` that evaluated it
    replay: ReplayLike

    def act(self, obs: np.ndarray, step: int) -> tuple[Any, bool]:
        """The action for ``obs`` at env step ``step``, and whether the policy net ran."""
        ...

    def remember(self, obs: np.ndarray, action: Any, reward: float, next_obs: np.ndarray,
                 terminated: bool) -> OpWork:
        """Store one transition in the replay buffer; returns the work of the add."""
        ...

    def update(self, step: int, rec: Rec) -> None:
        """One learner update at env step ``step``, recording its operations into ``rec``."""
        ...

    def end_step(self, step: int, rec: Rec) -> None:
        """Whatever the agent does at the end of every env step (e.g. a target sync)."""
        ...


AgentT = TypeVar("AgentT", bound=OffPolicyAgent)


def run_offpolicy(env: gym.Env, agent: OffPolicyAgent, steps: int, learning_starts: int,
                  learn_every: int, rec: Rec, progress: Progress = no_progress,
                  seed: int | None = None) -> list[float]:
    """Run ``agent`` on ``env`` for ``steps`` env steps, recording into ``rec``; close env.

    The env is reset with ``seed`` first. Returns the completed episodes' returns.
    ``progress`` is called with the steps done, in chunks of ``progress_chunk(steps)``.
    """
    now, add = rec.now, rec.add
    act_w, replay_dtype = agent.act_work, agent.replay.dtype
    chunk = progress_chunk(steps)
    returns: list[float] = []
    ep_return = 0.0

    t0 = now()
    obs, _ = env.reset(seed=seed)
    add("env_reset", t0, 0, items=1, dtype="fp64")
    for step in range(steps):
        t0 = now()
        action, evaluated = agent.act(obs, step)
        if evaluated:
            add("act", t0, step, items=1, work=act_w)
        else:
            add("act", t0, step, items=1, dtype="none")

        t0 = now()
        next_obs, reward, terminated, truncated, _ = env.step(action)
        add("env_step", t0, step, items=1, dtype="fp64")

        t0 = now()
        w = agent.remember(obs, action, reward, next_obs, terminated)
        add("replay_add", t0, step, items=1, work=w, dtype=replay_dtype)

        ep_return += float(reward)
        if terminated or truncated:
            returns.append(ep_return)
            ep_return = 0.0
            t0 = now()
            obs, _ = env.reset()
            add("env_reset", t0, step, items=1, dtype="fp64")
        else:
            obs = next_obs

        if step >= learning_starts and step % learn_every == 0:
            agent.update(step, rec)
        agent.end_step(step, rec)
        if (step + 1) % chunk == 0:
            progress(chunk)
    if steps % chunk:
        progress(steps % chunk)
    env.close()
    return returns



def train_offpolicy(env: gym.Env, make_agent: Callable[[gym.Env, np.random.Generator], AgentT],
                    seed: int, steps: int, learning_starts: int, learn_every: int,
                    rec: Rec | None = None,
                    progress: Progress = no_progress) -> tuple[list[float], AgentT]:
    """Build the agent for ``env`` on a generator seeded with ``seed``, then run_offpolicy.

    Returns the completed episodes' returns and the trained agent. With no recorder (a
    NullRecorder) this is the untraced baseline of the very same loop.
    """
    agent = make_agent(env, np.random.default_rng(seed))
    returns = run_offpolicy(env, agent, steps, learning_starts, learn_every,
                            rec or NullRecorder(), progress, seed)
    return returns, agent


def capture_trace(train: Callable[[CfgT, Recorder, Progress], tuple[list[float], AgentT]],
                  cfg: CfgT, progress: Progress, *, workload: str, algorithm: str,
                  info: Callable[[AgentT], dict[str, Any]],
                  exclude: Iterable[str] = ()) -> Trace:
    """Run ``train(cfg, rec, progress)`` under a ``host`` Recorder, timed, and build its Trace.

    The hyperparameters are ``cfg``'s fields less env_id, seed and ``exclude`` (``hidden``
    as a list); the workload info is ``info(agent)`` of the trained agent.
    """
    rec = Recorder(worker="host")
    t0 = time.perf_counter()
    returns, agent = train(cfg, rec, progress)
    wall_s = time.perf_counter() - t0
    hyper = cfg.model_dump(exclude={"env_id", "seed", *exclude})
    hyper["hidden"] = list(hyper["hidden"])
    return build_trace(
        workload=workload, algorithm=algorithm, env_id=cfg.env_id, seed=cfg.seed,
        hyperparameters=hyper, workload_info=info(agent), episode_returns=returns,
        wall_time_s=wall_s, recorders=[rec],
    )
