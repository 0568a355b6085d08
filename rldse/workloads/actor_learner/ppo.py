"""Synchronous multi-actor PPO (Schulman et al. 2017): N actor processes, one learner.

Each iteration the learner (the parent process, worker ``learner``) broadcasts the flat
float32 parameter vector (``sync``); every actor (a child process, worker ``actor/i``)
loads it, steps its own ``envs_per_actor`` environments ``rollout_len`` times with its own
copy of the policy (``act``, ``env_step``, ``env_reset`` as episodes end), adds one value
forward on the last observations for bootstrapping (``act``) and sends the rollout back
(``rollout_add``). The learner waits for all N rollouts, orders them by actor id (so
arrival order never changes the result), computes GAE advantages and runs ``epochs``
passes of clipped-objective minibatch steps (one ``learn`` row each). Time an actor
spends waiting for parameters is idle and is not recorded. An ``env_step`` row covers
stepping the env vector and storing the transition it produced (the rollout arrays).

Each actor records with its own Recorder on the parent's time origin and calibration, and
sends its rows back at the end, so the trace keeps every process's timings from the
real parallel run. ``iter`` is the vector step (actors' act/env rows), the iteration
(``rollout_add``, ``sync``) or the minibatch step (``learn``).

Work of ``learn`` is mlp.py's formulas: forward and backward of the policy and value
networks on the minibatch, plus Adam over all parameters; the O(B·A) softmax, ratio and
loss kernels are ppo_work.py's count; the O(N) GAE pass is not counted.

Atari (``ALE/...``; common/atari.py): the policy is the Nature-CNN in PyTorch with a policy
and a value head on one torso (``CNNPolicy``, CleanRL's ppo_atari layout), observations
are uint8 frame stacks, and the work of ``act`` and ``learn`` is kernels/nature_cnn.py's
count. Its defaults (``ATARI_DEFAULTS``) are CleanRL's ppo_atari ones at 4 envs per actor.

``program(machine)`` below is the simulated twin of this loop (rldse.sim.simulate runs it):
see its docstring for what it models and what it merges.
"""

from __future__ import annotations

import contextlib
import math
import multiprocessing as mp
import time
import traceback
from multiprocessing.connection import Connection, wait
from typing import TYPE_CHECKING, Any

import numpy as np
from pydantic import ConfigDict, Field

from rldse.kernels import nature_cnn
from rldse.kernels.mlp import (
    F32,
    MLP,
    Adam,
    Work,
    adam_work,
    backward_work,
    cold,
    forward_work,
    n_tensors,
)
from rldse.strict import UserModel
from rldse.trace import Trace, operator_records
from rldse.workloads.actor_learner.ppo_work import ROLLOUT_FIELDS, ppo_loss_work
from rldse.workloads.common import atari, base
from rldse.workloads.common.base import CaptureConfig, Progress, build_trace, no_progress
from rldse.workloads.common.recorder import Recorder, rows_to_frame

if TYPE_CHECKING:  # `rldse capture actor_learner --help` reads PPOConfig without them
    import gymnasium as gym
    import pandas as pd


class PPOConfig(UserModel):
    """Everything an actor-learner run depends on; CaptureConfig.options may override."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str
    steps: int = Field(100_000, gt=0, description="env steps over all actors (rounded up "
                                                  "to whole iterations)")
    seed: int = 0
    actors: int = Field(1, ge=1)
    envs_per_actor: int = Field(4, ge=1)
    rollout_len: int = Field(128, ge=1, description="vector steps per actor per iteration")
    hidden: tuple[int, ...] = (64, 64)
    lr: float = Field(1e-3, gt=0)
    gamma: float = Field(0.99, ge=0, le=1)
    gae_lambda: float = Field(0.95, ge=0, le=1)
    clip: float = Field(0.2, gt=0, description="PPO ratio clip ε")
    epochs: int = Field(4, ge=1)
    # 64: each 64×64×64 matmul stays under OpenBLAS's threading threshold (single thread)
    minibatch_size: int = Field(64, ge=1)
    vf_coef: float = Field(0.5, ge=0)
    ent_coef: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(0.5, gt=0)
    timeout_s: float = Field(120.0, gt=0, description="longest wait for an actor's message")

    @property
    def iterations(self) -> int:
        return math.ceil(self.steps / (self.actors * self.envs_per_actor * self.rollout_len))


_FIXED = ("env_id", "steps", "seed", "actors")  # set by CaptureConfig, not by options

#: CleanRL's ppo_atari (Huang et al., JMLR 23(274), 2022): lr 2.5e-4, clip 0.1, entropy
#: 0.01, 4 minibatches per epoch (here of 4 envs × 128 steps).
ATARI_DEFAULTS: dict[str, Any] = dict(lr=2.5e-4, clip=0.1, ent_coef=0.01, minibatch_size=128)


def config_for(cfg: CaptureConfig) -> PPOConfig:
    """Defaults, then the capture request, then its options. RldseError on bad input."""
    if atari.is_atari(cfg.env_id):
        atari.refuse_hidden("actor_learner", cfg.options)
        return base.workload_config(PPOConfig, "actor_learner", cfg, _FIXED, ATARI_DEFAULTS,
                                    actors=cfg.actors)
    return base.workload_config(PPOConfig, "actor_learner", cfg, _FIXED, actors=cfg.actors)


def make_env(env_id: str) -> gym.Env:
    """An Atari env with the standard preprocessing (common/atari.py), or a gymnasium env
    with a flat Box observation and Discrete actions; RldseError otherwise."""
    if atari.is_atari(env_id):
        return atari.make_env(env_id)
    return base.make_env(env_id, "actor_learner", "discrete")


def make_policy(cfg: PPOConfig, env: gym.Env, rng: np.random.Generator) -> Policy | CNNPolicy:
    """The numpy MLP policy, or on Atari the PyTorch Nature-CNN one (weights from ``rng``)."""
    n_actions = int(env.action_space.n)
    if atari.is_atari(cfg.env_id):
        return CNNPolicy(n_actions, cfg, int(rng.integers(2**31)))
    return Policy(env.observation_space.shape[0], n_actions, cfg.hidden, rng, cfg)


class Policy:
    """Separate policy (logits) and value networks behind one flat parameter vector."""

    obs_dtype = np.float32

    def __init__(self, obs_dim: int, n_actions: int, hidden: tuple[int, ...],
                 rng: np.random.Generator, cfg: PPOConfig | None = None) -> None:
        self.cfg = cfg  # the learner's (update needs it); actors only act
        self.obs_shape = (obs_dim,)
        self.pi_sizes = [obs_dim, *hidden, n_actions]
        self.v_sizes = [obs_dim, *hidden, 1]
        self.pi = MLP(self.pi_sizes, rng, out_scale=0.01)  # near-uniform first policy
        self.v = MLP(self.v_sizes, rng)
        self.params = self.pi.params + self.v.params
        self.n_params = self.pi.n_params + self.v.n_params
        self.opt: Adam | None = None  # the learner's, made on its first update

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Log-probabilities of every action and the values of a batch of observations."""
        return log_softmax(self.pi(obs)), self.v(obs)[:, 0]

    def value(self, obs: np.ndarray) -> np.ndarray:
        return self.v(obs)[:, 0]

    def value_work(self, batch: int) -> Work:
        return forward_work(self.v_sizes, batch)

    def update(self, obs: np.ndarray, actions: np.ndarray, old_logp: np.ndarray,
               adv: np.ndarray, returns: np.ndarray) -> None:
        """One minibatch step of the PPO loss (ppo_grads) with Adam."""
        if self.opt is None:
            self.opt = Adam(self.params, lr=self.cfg.lr, clip_norm=self.cfg.max_grad_norm)
        self.opt.step(ppo_grads(self, self.cfg, obs, actions, old_logp, adv, returns))

    def get_flat(self) -> np.ndarray:
        return np.concatenate([self.pi.get_flat(), self.v.get_flat()])

    def set_flat(self, flat: np.ndarray) -> None:
        self.pi.set_flat(flat[:self.pi.n_params])
        self.v.set_flat(flat[self.pi.n_params:])

    def act_work(self, batch: int) -> Work:
        return forward_work(self.pi_sizes, batch) + forward_work(self.v_sizes, batch)

    def learn_work(self, batch: int) -> Work:
        """mlp.py work of one minibatch step: both forwards, both backwards, Adam."""
        return (self.act_work(batch) + backward_work(self.pi_sizes, batch)
                + backward_work(self.v_sizes, batch) + ppo_loss_work(batch, self.pi_sizes[-1])
                + cold(self.n_params, 1)
                + adam_work(self.n_params, n_tensors(self.pi_sizes) + n_tensors(self.v_sizes),
                            clip=True))


class CNNPolicy:
    """Atari: the Nature-CNN with a policy and a value head (PyTorch, one CPU thread), the
    same interface as Policy; the work of its steps is kernels/nature_cnn.py's count."""

    obs_dtype = np.uint8

    def __init__(self, n_actions: int, cfg: PPOConfig, seed: int) -> None:
        import torch

        torch.set_num_threads(1)  # one core per process, as the numpy loop
        torch.manual_seed(seed)
        self.torch, self.cfg = torch, cfg
        self.heads = (n_actions, 1)
        self.net = atari.torch_network(self.heads)
        self.params = list(self.net.parameters())
        self.n_params = nature_cnn.n_params(self.heads)
        self.obs_shape = nature_cnn.OBS_SHAPE
        # the program's stand-in (workload_info): an observation of obs_dim float32 words
        # holds the uint8 frame stack's bytes; the hidden width is the torso's features
        obs_words = nature_cnn.OBS_BYTES // F32
        self.pi_sizes = [obs_words, nature_cnn.FEATURES, n_actions]
        self.v_sizes = [obs_words, nature_cnn.FEATURES, 1]
        self.opt = None

    def get_flat(self) -> np.ndarray:
        from torch.nn.utils import parameters_to_vector

        return parameters_to_vector(self.params).detach().numpy().copy()

    def set_flat(self, flat: np.ndarray) -> None:
        from torch.nn.utils import vector_to_parameters

        with self.torch.no_grad():
            vector_to_parameters(self.torch.from_numpy(flat), self.params)

    def act(self, obs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        torch = self.torch
        with torch.no_grad():
            logits, values = self.net(torch.from_numpy(obs))
            return torch.log_softmax(logits, 1).numpy(), values[:, 0].numpy()

    def value(self, obs: np.ndarray) -> np.ndarray:
        return self.act(obs)[1]

    def act_work(self, batch: int) -> Work:
        return nature_cnn.forward_work(batch, self.heads)

    value_work = act_work  # the value head shares the torso: one forward of both

    def learn_work(self, batch: int) -> Work:
        """A minibatch step: forward, backward, the loss kernels, Adam with its clip."""
        return (nature_cnn.forward_work(batch, self.heads)
                + nature_cnn.backward_work(batch, self.heads)
                + ppo_loss_work(batch, self.heads[0]) + cold(self.n_params, 1)
                + adam_work(self.n_params, nature_cnn.n_tensors(self.heads), clip=True))

    def update(self, obs: np.ndarray, actions: np.ndarray, old_logp: np.ndarray,
               adv: np.ndarray, returns: np.ndarray) -> None:
        """The loss ppo_grads differentiates by hand, through autograd, with Adam."""
        torch, cfg = self.torch, self.cfg
        if self.opt is None:
            self.opt = torch.optim.Adam(self.params, lr=cfg.lr, eps=1e-5)
        logits, values = self.net(torch.from_numpy(obs))
        logp_all = torch.log_softmax(logits, 1)
        a = torch.from_numpy(adv)
        a = (a - a.mean()) / (a.std(unbiased=False) + 1e-8)
        idx = torch.from_numpy(actions.astype(np.int64))
        ratio = torch.exp(logp_all.gather(1, idx[:, None])[:, 0] - torch.from_numpy(old_logp))
        surrogate = torch.min(ratio * a, torch.clamp(ratio, 1 - cfg.clip, 1 + cfg.clip) * a)
        entropy = -(logp_all.exp() * logp_all).sum(1)
        loss = (-surrogate.mean() + cfg.vf_coef * ((values[:, 0] - torch.from_numpy(returns))
                                                  ** 2).mean() - cfg.ent_coef * entropy.mean())
        self.opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.params, cfg.max_grad_norm)
        self.opt.step()


def log_softmax(logits: np.ndarray) -> np.ndarray:
    z = logits - logits.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


# ---- actors (child processes) ---------------------------------------------------------

def _actor_main(actor_id: int, conn: Connection, cfg: PPOConfig, seed: np.random.SeedSequence,
                origin_ns: int, overhead_ns: float) -> None:
    """Process entry: run the actor loop; report any exception to the learner, then exit."""
    try:
        _actor_loop(actor_id, conn, cfg, seed, origin_ns, overhead_ns)
    except (EOFError, BrokenPipeError):
        pass  # the learner closed its end: it has stopped, so stop too
    except Exception:
        with contextlib.suppress(OSError):
            conn.send(("error", actor_id, traceback.format_exc()))
    finally:
        conn.close()


def _actor_loop(actor_id: int, conn: Connection, cfg: PPOConfig, seed: np.random.SeedSequence,
                origin_ns: int, overhead_ns: float) -> None:
    """Per iteration: wait for parameters, collect a rollout, send it. Then send the rows,
    with when the actor was ready and the CPU time of each receive (info.py)."""
    rec = Recorder(f"actor/{actor_id}", origin_ns=origin_ns, overhead_ns=overhead_ns)
    env_seq, act_seq = seed.spawn(2)
    rng = np.random.default_rng(act_seq)
    envs = [make_env(cfg.env_id) for _ in range(cfg.envs_per_actor)]
    policy = make_policy(cfg, envs[0], np.random.default_rng(0))  # weights: the learner's
    ready = rec.stamp()  # this thread's CPU clock began with the process: its start-up
    receives_ns: list[int] = []
    t0 = rec.now()
    obs = np.stack([env.reset(seed=int(s))[0] for env, s in
                    zip(envs, env_seq.generate_state(len(envs)), strict=True)])
    rec.add("env_reset", t0, 0, items=len(envs), dtype="fp64")
    ep_returns = np.zeros(len(envs))
    for iteration in range(cfg.iterations):
        cpu0 = rec.stamp()[1]
        msg = conn.recv()  # idle until the learner broadcasts: not an op
        policy.set_flat(msg)
        receives_ns.append(rec.stamp()[1] - cpu0)  # a window of its own: the wait's CPU is 0
        rollout, finished, obs = _collect(envs, policy, obs, ep_returns, rng, rec,
                                          iteration * cfg.rollout_len, cfg.rollout_len)
        payload = sum(a.nbytes for a in rollout.values())
        rec.sample_cpu()  # a send that may block: its CPU window is its own
        t0 = rec.now()
        conn.send(("rollout", actor_id, rollout, finished))
        rec.add("rollout_add", t0, iteration, items=rollout["rewards"].size, bytes=payload,
                dtype="none")
    for env in envs:
        env.close()
    conn.send(("rows", actor_id, rec.rows, rec.cpu_fractions(), ready, receives_ns))


def _collect(envs: list[gym.Env], policy: Policy | CNNPolicy, obs: np.ndarray,
             ep_returns: np.ndarray,
             rng: np.random.Generator, rec: Recorder, step0: int,
             length: int) -> tuple[dict[str, np.ndarray], list[float], np.ndarray]:
    """Step the env vector ``length`` times; returns the rollout, finished episodes' returns
    and the observations to continue from. Finished envs are reset at once (autoreset)."""
    n_envs = len(obs)
    out = {"obs": np.zeros((length, n_envs, *policy.obs_shape), policy.obs_dtype),
           "actions": np.zeros((length, n_envs), np.int32),
           **{k: np.zeros((length, n_envs), np.float32)
              for k in ("logp", "rewards", "dones", "values")}}
    act_w, finished = policy.act_work(n_envs), []
    for t in range(length):
        step = step0 + t
        t0 = rec.now()
        logp_all, values = policy.act(obs)
        u = rng.random((n_envs, 1))
        actions = np.minimum((np.exp(logp_all).cumsum(axis=1) < u).sum(axis=1),
                             logp_all.shape[1] - 1)
        rec.add("act", t0, step, items=n_envs, work=act_w)

        t0 = rec.now()  # env_step: step the vector and store the transition it made
        results = [env.step(int(a)) for env, a in zip(envs, actions, strict=True)]
        out["obs"][t], out["actions"][t], out["values"][t] = obs, actions, values
        out["logp"][t] = logp_all[np.arange(n_envs), actions]
        obs = np.stack([r[0] for r in results]).astype(policy.obs_dtype)
        rewards = np.array([r[1] for r in results], np.float32)
        dones = np.array([r[2] or r[3] for r in results])
        out["rewards"][t], out["dones"][t] = rewards, dones
        ep_returns += rewards
        rec.add("env_step", t0, step, items=n_envs, dtype="fp64")
        if dones.any():
            obs = _reset_done(envs, dones, obs, ep_returns, finished, rec, step)
    t0 = rec.now()
    out["last_values"] = policy.value(obs)
    v_w = policy.value_work(n_envs)
    rec.add("act", t0, step0 + length - 1, items=n_envs, work=v_w)
    return out, finished, obs


def _reset_done(envs: list[gym.Env], dones: np.ndarray, obs: np.ndarray,
                ep_returns: np.ndarray, finished: list[float], rec: Recorder,
                step: int) -> np.ndarray:
    """Reset the finished envs (one recorded op) and log their returns."""
    idx = np.flatnonzero(dones)
    finished.extend(float(ep_returns[i]) for i in idx)
    ep_returns[idx] = 0.0
    t0 = rec.now()
    for i in idx:
        obs[i] = envs[i].reset()[0]
    rec.add("env_reset", t0, step, items=len(idx), dtype="fp64")
    return obs


# ---- learner (parent process) ---------------------------------------------------------

def gae(rewards: np.ndarray, values: np.ndarray, dones: np.ndarray, last_values: np.ndarray,
        gamma: float, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """Generalized advantage estimates and value targets for (T, E) arrays.

    A done (terminated or truncated) step does not bootstrap from the next state.
    """
    adv = np.zeros_like(rewards)
    running = np.zeros(rewards.shape[1], np.float32)
    next_values = last_values
    for t in range(len(rewards) - 1, -1, -1):
        live = 1.0 - dones[t]
        delta = rewards[t] + gamma * next_values * live - values[t]
        running = delta + gamma * lam * live * running
        adv[t] = running
        next_values = values[t]
    return adv, adv + values


def ppo_grads(policy: Policy, cfg: PPOConfig, obs: np.ndarray, actions: np.ndarray,
              old_logp: np.ndarray, adv: np.ndarray, returns: np.ndarray) -> list[np.ndarray]:
    """Gradients (in ``policy.params`` order) of a minibatch's PPO loss:
    −mean min(r·Â, clip(r, 1 ± ε)·Â) + vf_coef·mean (V − R)² − ent_coef·mean H,
    with Â the advantages normalised over the minibatch."""
    n = len(obs)
    logits, pi_acts = policy.pi.forward(obs)
    values, v_acts = policy.v.forward(obs)
    logp_all = log_softmax(logits)
    probs = np.exp(logp_all)
    rows = np.arange(n)
    adv = (adv - adv.mean()) / (adv.std() + 1e-8)
    ratio = np.exp(logp_all[rows, actions] - old_logp)
    clipped = ((adv > 0) & (ratio > 1 + cfg.clip)) | ((adv < 0) & (ratio < 1 - cfg.clip))
    d_logp = np.where(clipped, 0.0, -adv * ratio) / n  # d(−mean min(r·A, clip(r)·A))/d logp
    d_logits = -d_logp[:, None] * probs
    d_logits[rows, actions] += d_logp
    entropy = -(probs * logp_all).sum(axis=1, keepdims=True)
    d_logits += (cfg.ent_coef / n) * probs * (logp_all + entropy)  # d(−c·mean H)/d logits
    d_values = (2.0 * cfg.vf_coef / n) * (values - returns[:, None])
    pi_grads, _ = policy.pi.backward(pi_acts, d_logits.astype(np.float32))
    v_grads, _ = policy.v.backward(v_acts, d_values)
    return pi_grads + v_grads


class _Learner:
    """The parent side: actor processes and their pipes, the policy and its optimizer."""

    def __init__(self, cfg: PPOConfig, env: gym.Env, rec: Recorder) -> None:
        self.cfg, self.rec = cfg, rec
        seeds = np.random.SeedSequence(cfg.seed).spawn(1 + cfg.actors)
        self.rng = np.random.default_rng(seeds[0])
        self.policy = make_policy(cfg, env, self.rng)
        self.seeds = seeds[1:]
        self.conns: list[Connection] = []
        self.procs: list[mp.process.BaseProcess] = []
        self.started_ns: list[int] = []  # when each actor process was started (shared clock)
        self.sent_cpu_ns = 0  # the learner's CPU clock when its last broadcast was sent
        self.receives_ns: list[int] = []  # per iteration: CPU of receiving the rollouts

    def start(self) -> None:
        """One process per actor, each with its end of a duplex pipe."""
        cfg, rec = self.cfg, self.rec
        ctx = mp.get_context("fork" if "fork" in mp.get_all_start_methods() else "spawn")
        for i in range(cfg.actors):
            parent_end, child_end = ctx.Pipe()
            proc = ctx.Process(target=_actor_main, name=f"rldse-actor-{i}", daemon=True,
                               args=(i, child_end, cfg, self.seeds[i], rec.origin_ns,
                                     rec.overhead_ns))
            self.started_ns.append(rec.now())
            proc.start()
            child_end.close()
            self.conns.append(parent_end)
            self.procs.append(proc)

    def broadcast(self, iteration: int) -> None:
        flat = self.policy.get_flat()
        self.rec.sample_cpu()  # sends that may block: their CPU window is their own
        t0 = self.rec.now()
        for conn in self.conns:
            try:
                conn.send(flat)
            except OSError:
                self._recv(conn)  # the actor is gone: raise its own error, or its exit
                raise
        self.rec.add("sync", t0, iteration, items=len(self.conns),
                     bytes=flat.nbytes * len(self.conns), dtype="none")
        self.sent_cpu_ns = self.rec.stamp()[1]

    def gather(self, kind: str) -> list[tuple]:
        """One message of ``kind`` from every actor, ordered by actor id."""
        got: dict[int, tuple] = {}
        deadline = time.monotonic() + self.cfg.timeout_s
        while len(got) < len(self.conns):
            ready = wait([c for i, c in enumerate(self.conns) if i not in got],
                         timeout=max(0.0, deadline - time.monotonic()))
            if not ready:
                late = sorted(set(range(len(self.conns))) - set(got))
                raise RuntimeError(f"actor_learner: no '{kind}' from actors {late} "
                                   f"within {self.cfg.timeout_s} s")
            for conn in ready:
                msg = self._recv(conn)
                if msg[0] != kind:
                    raise RuntimeError(f"actor_learner: expected '{kind}' from actor "
                                       f"{msg[1]}, got '{msg[0]}'")
                got[msg[1]] = msg[2:]
        self.rec.sample_cpu()  # after the wait: the learner's next window computes
        return [got[i] for i in range(len(self.conns))]

    def _recv(self, conn: Connection) -> tuple:
        actor = self.conns.index(conn)
        try:
            msg = conn.recv()
        except EOFError:
            raise RuntimeError(f"actor_learner: actor {actor} exited without a message "
                               f"(exit code {self.procs[actor].exitcode})") from None
        if msg[0] == "error":
            raise RuntimeError(f"actor_learner: actor {msg[1]} failed:\n{msg[2]}")
        return msg

    def learn(self, rollouts: list[dict[str, np.ndarray]], step0: int) -> int:
        """PPO epochs over all rollouts (in actor order); returns the next learn iter."""
        cfg, rec = self.cfg, self.rec
        parts = [gae(r["rewards"], r["values"], r["dones"], r["last_values"], cfg.gamma,
                     cfg.gae_lambda) for r in rollouts]
        obs = np.concatenate([r["obs"].reshape(-1, *self.policy.obs_shape)
                              for r in rollouts])
        actions = np.concatenate([r["actions"].ravel() for r in rollouts])
        logp = np.concatenate([r["logp"].ravel() for r in rollouts])
        adv = np.concatenate([a.ravel() for a, _ in parts])
        returns = np.concatenate([ret.ravel() for _, ret in parts])
        # since the broadcast: the rollouts' receipt and this preparation (the wait: 0 CPU)
        self.receives_ns.append(rec.stamp()[1] - self.sent_cpu_ns)
        step = step0
        works: dict[int, Work] = {}  # per minibatch size: counting work is not the loop's
        for _ in range(cfg.epochs):
            order = self.rng.permutation(len(obs))
            for start in range(0, len(obs), cfg.minibatch_size):
                mb = order[start:start + cfg.minibatch_size]
                work = works.get(len(mb)) or works.setdefault(len(mb),
                                                              self.policy.learn_work(len(mb)))
                t0 = rec.now()
                self.policy.update(obs[mb], actions[mb], logp[mb], adv[mb], returns[mb])
                rec.add("learn", t0, step, items=len(mb), work=work)
                step += 1
        return step

    def close(self) -> None:
        """Close the pipes (a waiting actor sees EOF and exits), give each actor a second
        to finish, terminate the rest: never blocks for long, never leaves a process."""
        for conn in self.conns:
            conn.close()
        for proc in self.procs:
            proc.join(timeout=1.0)
            if proc.is_alive():
                proc.terminate()
                proc.join()


def train(cfg: PPOConfig, rec: Recorder, progress: Progress = no_progress
          ) -> tuple[list[float], list[pd.DataFrame], Policy | CNNPolicy, dict[str, Any]]:
    """Run the actor-learner loop. Returns episode returns (per iteration, in actor order),
    each actor's ops frame, the trained policy, and the processes' start-up and receives
    (``processes`` in workload_info: info.py)."""
    set_up = rec.stamp()
    probe = make_env(cfg.env_id)
    learner = _Learner(cfg, probe, rec)
    probe.close()
    returns: list[float] = []
    steps_per_iter = cfg.actors * cfg.envs_per_actor * cfg.rollout_len
    try:
        spawn = rec.stamp()
        learner.start()
        started = rec.stamp()
        step = 0
        for iteration in range(cfg.iterations):
            learner.broadcast(iteration)
            msgs = learner.gather("rollout")
            progress(steps_per_iter)
            for _, finished in msgs:
                returns.extend(finished)
            step = learner.learn([rollout for rollout, _ in msgs], step)
        rows = learner.gather("rows")
    finally:
        learner.close()
    frames = [rows_to_frame(r, rec.origin_ns, rec.overhead_ns, f) for r, f, *_ in rows]
    startup = {"learner": _span(set_up, spawn), "spawn": _span(spawn, started),
               "actors": [_span((t, 0), ready)
                          for t, (*_, ready, _) in zip(learner.started_ns, rows, strict=True)]}
    params = np.mean([receives for *_, receives in rows], axis=0) / 1e9
    receive_cpu = {"params_cpu_s": params.tolist(),
                   "rollouts_cpu_s": (np.asarray(learner.receives_ns) / 1e9).tolist()}
    return returns, frames, learner.policy, {"startup": startup, "receive_cpu": receive_cpu}


def _span(start: tuple[int, int], end: tuple[int, int]) -> dict[str, float]:
    """Wall and CPU seconds between two (wall ns, CPU ns) stamps (``Recorder.stamp``)."""
    return {"wall_s": (end[0] - start[0]) / 1e9, "cpu_s": max(end[1] - start[1], 0) / 1e9}


def transition_bytes(obs_dim: int) -> int:
    """Bytes one transition adds to a rollout message (fields in ROLLOUT_FIELDS)."""
    return F32 * (obs_dim + len(ROLLOUT_FIELDS) - 1)


def workload_info(cfg: PPOConfig, policy: Policy | CNNPolicy) -> dict[str, Any]:
    """Shapes and schedule a simulator needs to replay this run. An Atari run's
    ``policy_sizes`` and ``value_sizes`` are CNNPolicy's stand-in; ``network`` describes
    the Nature-CNN it ran (common/atari.py)."""
    extra = {"network": nature_cnn.network_info(policy.heads)} if isinstance(policy, CNNPolicy) \
        else {}
    return {**extra,
        "actors": cfg.actors,
        "envs_per_actor": cfg.envs_per_actor,
        "rollout_len": cfg.rollout_len,
        "iterations": cfg.iterations,
        "obs_dim": policy.pi_sizes[0],
        "n_actions": policy.pi_sizes[-1],
        "policy_sizes": policy.pi_sizes,
        "value_sizes": policy.v_sizes,
        "n_params": policy.n_params,
        "minibatch_size": cfg.minibatch_size,
        "epochs": cfg.epochs,
        "transition_bytes": transition_bytes(policy.pi_sizes[0]),
        "sync_bytes": F32 * policy.n_params * cfg.actors,
    }


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Train PPO with ``cfg.actors`` actor processes and return the merged Trace."""
    pcfg = config_for(cfg)
    rec = Recorder(worker="learner")
    t0 = time.perf_counter()
    returns, actor_frames, policy, processes = train(pcfg, rec, progress)
    wall_s = time.perf_counter() - t0
    hyper = pcfg.model_dump(exclude={"env_id", "seed", "timeout_s"})
    if atari.is_atari(pcfg.env_id):
        del hyper["hidden"]  # the Nature-CNN has none
    else:
        hyper["hidden"] = list(pcfg.hidden)
    return build_trace(
        workload="actor_learner", algorithm="ppo", env_id=pcfg.env_id, seed=pcfg.seed,
        hyperparameters=hyper, workload_info={**workload_info(pcfg, policy), **processes},
        episode_returns=returns, wall_time_s=wall_s,
        frames=[rec.frame(), *actor_frames], overhead_ns=rec.overhead_ns,
        load_start=rec.load_start,  # the learner's recorder began with the capture
        operators=[*rec.operators(), *act_operators(policy, pcfg.envs_per_actor)],
    )


def act_operators(policy, n_envs: int) -> list:
    """The operators of the actors' acts (their recorders run in other processes): a
    step's policy and value forward, and the rollout's bootstrap value forward (one list
    where they are one forward: a Nature-CNN's shared torso and two heads)."""
    full, value = policy.act_work(n_envs), policy.value_work(n_envs)
    works = [full] if value.flops == full.flops else [full, value]
    return [r for w in works for r in operator_records("act", n_envs, w)]


#: The capture options of this workload (rldse.workloads.Workload.config).
Config = PPOConfig
