"""The analytic rates: the actors' production and the learner's consumption from the unit
costs the simulation books, and the knee where they meet.

For N actors with E envs each, C cores, one GPU:

- production P(N) = min(N·E / (t_env + t_inf(N) + w), C·E / t_env): an actor's vector
  step is its env step on a core (t_env), one inference batch of the N actors (t_inf)
  and, when inference shares the learner's GPU, a wait w = g_learn / 2 behind the
  kernels of the minibatch step in progress (g_learn: its GPU time; the learner is busy
  at and past the knee); C cores step at most C·E / t_env;
- consumption L(N) = 1 / (h / (E·T) + max(epochs·t_learn / B, epochs·g_learn / B +
  g_inf(N) / (N·E))): per env step the learner receives its share of a rollout (h per
  rollout of E·T steps) and trains it `epochs` times in minibatches of B; a minibatch
  step takes t_learn (the later of its core's dispatch and its kernels), unless the GPU,
  which also runs its share of an inference batch's kernels (g_inf) when inference
  shares it, is busier than that;
- the knee N* is where P(N*) = L(N*); below it the actors limit throughput, above it the
  learner."""

from __future__ import annotations

import numpy as np

from rldse.workloads.actor_learner.program.unit_costs import UnitCosts


def _infer_s(u: UnitCosts, n: np.ndarray) -> np.ndarray:
    """One inference batch of n actors (interpolated; n beyond the table: its last row)."""
    table = np.asarray(u.act_s)
    return np.interp(n, np.arange(len(table)), table)


def production(u: UnitCosts, n, cores: int) -> np.ndarray:
    """Env steps/s that n actors on `cores` cores produce (rldse.studies.cpu_gpu_ratio)."""
    n = np.asarray(n, np.float64)
    e = u.envs_per_actor
    wait = u.learn_step_device_s / 2 if u.inference_on_learner_gpu else 0.0
    free = n * e / (u.env_step_s + _infer_s(u, n) + wait)
    return np.minimum(free, cores * e / u.env_step_s)


def consumption(u: UnitCosts, n) -> np.ndarray:
    """Env steps/s the learner can train with n actors (rldse.studies.cpu_gpu_ratio)."""
    n = np.asarray(n, np.float64)
    e = u.envs_per_actor
    gpu_s = u.epochs * u.learn_step_device_s / u.minibatch
    if u.inference_on_learner_gpu:
        gpu_s = gpu_s + np.interp(n, np.arange(len(u.act_device_s)), u.act_device_s) / (n * e)
    per_step = (u.handoff_s / (e * u.rollout_len)
                + np.maximum(u.epochs * u.learn_step_s / u.minibatch, gpu_s))
    return 1.0 / per_step


def knee(u: UnitCosts, cores: int, top: float) -> float:
    """Actors where production first reaches consumption, in [1, top]: 1.0 if it already
    does with one actor, inf if it never does."""
    n = np.geomspace(1.0, top, 2000)
    gap = production(u, n, cores) - consumption(u, n)
    if gap[0] >= 0:
        return 1.0
    up = np.flatnonzero(gap >= 0)
    if not len(up):
        return float("inf")
    i = up[0]
    return float(n[i - 1] + (n[i] - n[i - 1]) * -gap[i - 1] / (gap[i] - gap[i - 1]))
