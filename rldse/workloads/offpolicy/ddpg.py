"""DDPG (Lillicrap et al. 2016) on a continuous-action Gymnasium task, captured as a trace.

One process (worker ``host``); every row's ``iter`` is the env step it happened in. Per
env step: ``act`` (a batch-1 actor forward plus Gaussian noise; a uniform random action,
no forward, during warm-up), ``env_step``, ``replay_add``; ``env_reset`` at episode ends.
Every ``learn_every`` steps after warm-up: ``replay_sample``, ``learn`` (one critic and one
actor gradient step) and ``sync`` (Polyak update of both target networks).

Work of ``learn`` is the sum of mlp.py's formulas and the kernels around them (see
``learn_work``). The replay buffer is a small local ring: replay.py's
buffers store discrete actions, DDPG's are vectors. It counts bytes the way replay.py
does: a transition is T = 2·obs_dim·4 + act_dim·4 + 4 + 1 bytes (obs and next obs, float32
action, float32 reward, bool done); an add reads and writes it (2·T); a sample of B writes
and reads back B int64 indices and gathers B rows (B·(2·T + 16)), with no dependent touches.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ConfigDict, Field

from rldse.errors import RldseError
from rldse.kernels.mlp import (
    F32,
    MLP,
    Adam,
    Work,
    adam_work,
    backward_work,
    cold,
    elementwise,
    forward_work,
    n_params,
    n_tensors,
    vector,
)
from rldse.kernels.replay import OpWork, gather, write
from rldse.strict import UserModel
from rldse.trace import Trace
from rldse.workloads.common import base
from rldse.workloads.common.base import CaptureConfig, Progress, no_progress
from rldse.workloads.common.recorder import NullRecorder, Recorder
from rldse.workloads.offpolicy.loop import capture_trace, train_offpolicy

if TYPE_CHECKING:  # `rldse capture ddpg --help` reads DDPGConfig without gymnasium
    import gymnasium as gym

POLYAK_FLOPS_PER_PARAM = 3  # target·(1 − τ), τ·online, add
POLYAK_BYTES_PER_PARAM = 28  # 8 + 8 + 12 (sync_work)
INDEX_BYTES = 8  # int64 sampled index
DONE_BYTES = 1  # bool


class DDPGConfig(UserModel):
    """Everything a DDPG run depends on; CaptureConfig.options may override any field."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str
    steps: int = Field(15_000, gt=0, description="env steps")
    seed: int = 0
    hidden: tuple[int, ...] = (64, 64)
    actor_lr: float = Field(1e-3, gt=0)
    critic_lr: float = Field(1e-3, gt=0)
    gamma: float = Field(0.99, ge=0, le=1)
    tau: float = Field(0.005, gt=0, le=1, description="Polyak step of the target networks")
    # 64: each 64×64×64 matmul stays under OpenBLAS's threading threshold (single thread)
    batch_size: int = Field(64, gt=0)
    buffer_size: int = Field(100_000, gt=0)
    warmup_steps: int = Field(1_000, ge=0, description="uniform random actions, no updates")
    learn_every: int = Field(1, gt=0, description="env steps per update")
    noise_std: float = Field(0.1, ge=0, description="exploration noise, fraction of the bound")


_FIXED = ("env_id", "steps", "seed")  # set by CaptureConfig, not by options


def config_for(cfg: CaptureConfig) -> DDPGConfig:
    """Defaults, then the capture request, then its options. RldseError on bad input."""
    return base.workload_config(DDPGConfig, "ddpg", cfg, _FIXED)


Config = DDPGConfig  # the capture options (rldse.workloads.Workload.config)


def make_env(env_id: str) -> gym.Env:
    """A gymnasium env with flat Box observations and one symmetric Box action bound."""
    env = base.make_env(env_id, "ddpg", "box")
    act = env.action_space
    high = np.asarray(act.high, np.float64)
    if not (np.all(np.isfinite(high)) and np.allclose(high, high[0])
            and np.allclose(act.low, -high)):
        env.close()
        raise RldseError(f"env '{env_id}': ddpg needs one symmetric finite action bound, "
                         f"found low={act.low} high={act.high}")
    return env


class UniformRing:
    """Fixed-capacity ring of transitions in preallocated arrays; uniform sampling."""

    dtype = "none"  # trace dtype of its operations: pure data movement

    def __init__(self, capacity: int, obs_dim: int, act_dim: int) -> None:
        self.capacity, self.size, self.pos = capacity, 0, 0
        self.obs = np.zeros((capacity, obs_dim), np.float32)
        self.act = np.zeros((capacity, act_dim), np.float32)
        self.rew = np.zeros(capacity, np.float32)
        self.next_obs = np.zeros((capacity, obs_dim), np.float32)
        self.done = np.zeros(capacity, bool)
        self.transition_bytes = F32 * (2 * obs_dim + act_dim + 1) + DONE_BYTES

    def add(self, obs, act, rew: float, next_obs, done: bool) -> None:
        i = self.pos
        self.obs[i], self.act[i], self.rew[i] = obs, act, rew
        self.next_obs[i], self.done[i] = next_obs, done
        self.pos = (i + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)

    def sample(self, rng: np.random.Generator, batch: int) -> tuple[np.ndarray, ...]:
        idx = rng.integers(0, self.size, size=batch)
        return self.obs[idx], self.act[idx], self.rew[idx], self.next_obs[idx], self.done[idx]


class DDPGAgent:
    """Actor, critic, their targets and optimizers, and the replay ring."""

    def __init__(self, cfg: DDPGConfig, obs_dim: int, act_dim: int, bound: float,
                 rng: np.random.Generator) -> None:
        self.cfg, self.rng, self.obs_dim, self.bound = cfg, rng, obs_dim, bound
        self.actor_sizes = [obs_dim, *cfg.hidden, act_dim]
        self.critic_sizes = [obs_dim + act_dim, *cfg.hidden, 1]
        # small last layers: the first actions sit near 0 and Q starts near 0
        self.actor = MLP(self.actor_sizes, rng, out_act="tanh", out_scale=0.1)
        self.critic = MLP(self.critic_sizes, rng, out_scale=0.1)
        self.actor_target = MLP(self.actor_sizes, rng, out_act="tanh")
        self.critic_target = MLP(self.critic_sizes, rng)
        self.actor_target.copy_from(self.actor)
        self.critic_target.copy_from(self.critic)
        self.actor_opt = Adam(self.actor.params, lr=cfg.actor_lr)
        self.critic_opt = Adam(self.critic.params, lr=cfg.critic_lr)
        self.replay = UniformRing(min(cfg.buffer_size, cfg.steps), obs_dim, act_dim)
        self.act_work = forward_work(self.actor_sizes, 1, tanh=True)
        self.learn_work = learn_work(self.actor_sizes, self.critic_sizes, cfg.batch_size)
        self.sync_work = sync_work(self.actor_sizes, self.critic_sizes)

    def act(self, obs: np.ndarray, step: int) -> tuple[np.ndarray, bool]:
        """Uniform random action (warm-up), or the actor's action plus Gaussian noise; and
        whether the actor was evaluated for it."""
        act_dim, bound = self.actor_sizes[-1], self.bound
        if step < self.cfg.warmup_steps:
            return self.rng.uniform(-bound, bound, size=act_dim).astype(np.float32), False
        noise = self.rng.normal(0.0, self.cfg.noise_std * bound, size=act_dim)
        a = bound * self.actor(obs[None])[0] + noise.astype(np.float32)
        return np.clip(a, -bound, bound), True

    def learn(self, obs, act, rew, next_obs, done) -> None:
        """One critic step on the TD error, then one actor step up Q(s, μ(s))."""
        self.critic_opt.step(self.critic_grads(obs, act, rew, next_obs, done))
        self.actor_opt.step(self.actor_grads(obs))

    def critic_grads(self, obs, act, rew, next_obs, done) -> list[np.ndarray]:
        """Gradients of mean (Q(s,a) − y)², y = r + γ·(1 − done)·Q'(s', μ'(s'))."""
        next_act = self.bound * self.actor_target(next_obs)
        q_next = self.critic_target(np.concatenate([next_obs, next_act], axis=1))[:, 0]
        y = rew + self.cfg.gamma * (1.0 - done) * q_next
        q, acts = self.critic.forward(np.concatenate([obs, act], axis=1))
        grads, _ = self.critic.backward(acts, (2.0 / len(obs)) * (q - y[:, None]))
        return grads

    def actor_grads(self, obs: np.ndarray) -> list[np.ndarray]:
        """Gradients of −mean Q(s, μ(s)), through dQ/da (deterministic policy gradient)."""
        mu, actor_acts = self.actor.forward(obs)
        _, critic_acts = self.critic.forward(np.concatenate([obs, self.bound * mu], axis=1))
        ascent = np.full((len(obs), 1), -1.0 / len(obs), np.float32)
        _, dx = self.critic.backward(critic_acts, ascent, input_grad=True)
        grads, _ = self.actor.backward(actor_acts, self.bound * dx[:, self.obs_dim:])
        return grads

    def sync(self) -> None:
        self.actor_target.copy_from(self.actor, self.cfg.tau)
        self.critic_target.copy_from(self.critic, self.cfg.tau)

    # ---- the OffPolicyAgent protocol of loop.py -----------------------------------

    def remember(self, obs: np.ndarray, action: np.ndarray, reward: float,
                 next_obs: np.ndarray, terminated: bool) -> OpWork:
        """Store a transition: the add reads and writes it (2·T bytes)."""
        self.replay.add(obs, action, reward, next_obs, terminated)
        return write(1, 2 * self.replay.transition_bytes)

    def update(self, step: int, rec: Recorder | NullRecorder) -> None:
        """Sample, learn, Polyak-sync: three recorded operations."""
        now, add, bs = rec.now, rec.add, self.cfg.batch_size
        t0 = now()
        batch = self.replay.sample(self.rng, bs)
        add("replay_sample", t0, step, items=bs, dtype="none",
            work=gather(bs, bs * (2 * self.replay.transition_bytes + 2 * INDEX_BYTES)))

        t0 = now()
        self.learn(*batch)
        add("learn", t0, step, items=bs, work=self.learn_work)

        t0 = now()
        self.sync()
        add("sync", t0, step, items=1, work=self.sync_work)

    def end_step(self, step: int, rec: Recorder | NullRecorder) -> None:
        """Nothing: DDPG's Polyak sync is part of each update."""


def learn_work(actor_sizes: list[int], critic_sizes: list[int], batch: int) -> Work:
    """mlp.py work of one `DDPGAgent.learn`: the critic step, then the actor step, with the
    kernels around the networks, per sample (o observation, a action numbers): bound · μ
    (8·a bytes, each time the actor runs), the concatenation [s, a] (8·(o + a), each time
    the critic runs on one), the TD target r + γ·(1 − done)·Q' (65: 9 + 16 + 20 + 20,
    float64 after 1 − done), the loss gradient (2/B)·(Q − y) (36), the ascent vector (4)
    and bound · dQ/da (8·a); and the cold state (mlp.cold)."""
    o, a, b = actor_sizes[0], actor_sizes[-1], batch
    actor_fwd = forward_work(actor_sizes, b, tanh=True) + elementwise(b * a, 8 * b * a)
    critic_fwd = forward_work(critic_sizes, b) + elementwise(0, 8 * b * (o + a))
    critic_step = (actor_fwd + critic_fwd  # target μ'(s'), Q'(s', μ'(s'))
                   + elementwise(4 * b, 65 * b, 4)  # y
                   + critic_fwd  # Q(s, a)
                   + elementwise(2 * b, 36 * b, 2)  # (2/B)·(Q − y)
                   + backward_work(critic_sizes, b)
                   + adam_work(n_params(critic_sizes), n_tensors(critic_sizes)))
    actor_step = (actor_fwd + critic_fwd  # μ(s); Q(s, μ(s))
                  + elementwise(0, 4 * b)  # the ascent vector
                  + backward_work(critic_sizes, b, input_grad=True)  # dQ/da
                  + elementwise(b * a, 8 * b * a)  # bound · dQ/da
                  + backward_work(actor_sizes, b, tanh=True)
                  + adam_work(n_params(actor_sizes), n_tensors(actor_sizes)))
    state = cold(n_params(actor_sizes) + n_params(critic_sizes), 2)  # nets and targets
    return critic_step + actor_step + state


def sync_work(actor_sizes: list[int], critic_sizes: list[int]) -> Work:
    """Polyak update of both targets (`MLP.copy_from` with τ < 1), per parameter:
    target ·= 1 − τ (8 bytes), τ · online (8), target += (12): 3 flops, 28 bytes, 3 calls
    per parameter array."""
    params = n_params(actor_sizes) + n_params(critic_sizes)
    tensors = n_tensors(actor_sizes) + n_tensors(critic_sizes)
    return vector(POLYAK_FLOPS_PER_PARAM * params, POLYAK_BYTES_PER_PARAM * params,
                  3 * tensors)


def train(cfg: DDPGConfig, rec: Recorder | NullRecorder | None = None,
          progress: Progress = no_progress) -> tuple[list[float], DDPGAgent]:
    """Run DDPG for cfg.steps env steps (warm-up included) on loop.py's loop, recording
    each operation into ``rec``; returns the episodes' returns and the trained agent."""
    def agent(env: gym.Env, rng: np.random.Generator) -> DDPGAgent:
        act = env.action_space
        return DDPGAgent(cfg, env.observation_space.shape[0], act.shape[0],
                         float(act.high[0]), rng)

    return train_offpolicy(make_env(cfg.env_id), agent, cfg.seed, cfg.steps,
                           cfg.warmup_steps, cfg.learn_every, rec, progress)


def workload_info(agent: DDPGAgent) -> dict[str, Any]:
    """Shapes and schedule a simulator needs to replay this run."""
    cfg = agent.cfg
    return {
        "obs_dim": agent.actor_sizes[0],
        "act_dim": agent.actor_sizes[-1],
        "action_bound": agent.bound,
        "actor_sizes": agent.actor_sizes,
        "critic_sizes": agent.critic_sizes,
        "actor_n_params": agent.actor.n_params,
        "critic_n_params": agent.critic.n_params,
        "batch_size": cfg.batch_size,
        "replay_capacity": agent.replay.capacity,
        "transition_bytes": agent.replay.transition_bytes,
        "warmup_steps": cfg.warmup_steps,
        "learn_every": cfg.learn_every,
        "tau": cfg.tau,
    }


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Train DDPG as ``cfg`` asks, recording every operation, and return the Trace."""
    return capture_trace(train, config_for(cfg), progress, workload="ddpg", algorithm="ddpg",
                         info=workload_info)
