"""The analytic rates (the package docstring states them): the actors' production and the
learner's consumption from the unit costs the simulation books, and the knee where they
meet."""

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
