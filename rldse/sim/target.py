"""Learning-aware metrics: env steps, time, energy and cost to reach a target return.

Architects buy hardware to train an agent to a return sooner, cheaper or cooler, not for
env steps per second. Every trace carries its learning curve (``meta.episode_returns``),
so the env steps at which the capture first reached a return R are known; a design's
time and energy to R follow from its simulated rate. The assumption (a design has the
captured sample efficiency per env step, so one that changes a ``learning_knob`` is
refused) is docs/target.md's; how episode ends are found, the smoothing, why the run is
simulated to R rather than interpolated, cost and several seeds: docs/architecture.md,
"Learning-aware metrics".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import numpy as np

from rldse.errors import RldseError
from rldse.sim.result import Result
from rldse.trace import Trace

#: Default trailing window, in episodes (what "solved" CartPole criteria average over is
#: 100; the shipped traces have 50-320 episodes, so 10 keeps them usable).
DEFAULT_SMOOTHING_EPISODES = 10


@dataclass(frozen=True)
class Target:
    """A target return and the smoothing used to decide it was reached."""

    return_: float
    smoothing_episodes: int = DEFAULT_SMOOTHING_EPISODES

    def __post_init__(self) -> None:
        if not np.isfinite(self.return_):
            raise RldseError(f"{self.return_}: the target return must be a finite number")
        if self.smoothing_episodes < 1:
            raise RldseError(f"smoothing over {self.smoothing_episodes} episodes: must be at "
                             "least 1")


@dataclass(frozen=True)
class Curve:
    """The capture's learning curve: episode returns and the env steps at each end."""

    end_steps: np.ndarray  # int64, env steps completed when each episode ended
    returns: np.ndarray  # float64

    def smoothed(self, k: int) -> np.ndarray:
        """Trailing mean over k episodes; element i is the window ending at episode
        i + k - 1 (empty when there are fewer than k episodes)."""
        if len(self.returns) < k:
            return np.empty(0)
        c = np.concatenate([[0.0], np.cumsum(self.returns, dtype=np.float64)])
        return (c[k:] - c[:-k]) / k


def _worker_key(name: str) -> tuple[str, int]:
    m = re.fullmatch(r"(.*?)/(\d+)", name)
    return (m.group(1), int(m.group(2))) if m else (name, -1)


def learning_curve(trace: Trace) -> Curve:
    """The trace's episode returns against env steps (docs/architecture.md, "How each
    number is found": episode ends)."""
    returns = np.asarray(trace.meta.episode_returns, dtype=np.float64)
    if len(returns) == 0:
        raise RldseError(f"trace {trace.digest} has no learning curve (meta.episode_returns is "
                         "empty: an offline capture); a target return needs one")
    ops = trace.ops
    phase = ops["phase"].astype(str).to_numpy()
    worker = ops["worker"].astype(str).to_numpy()
    start = ops["start_s"].to_numpy()
    step = phase == "env_step"
    step_start = start[step]
    order = np.argsort(step_start, kind="stable")
    step_cum = np.cumsum(ops["items"].to_numpy()[step][order])
    step_start = step_start[order]
    keys, ends, counts = [], [], []
    for w in sorted(set(worker[phase == "env_reset"]), key=_worker_key):
        mine = worker == w
        resets = np.flatnonzero(mine & (phase == "env_reset"))
        resets = resets[np.argsort(start[resets], kind="stable")][1:]  # the first starts the run
        sends = np.sort(start[mine & (phase == "rollout_add")])
        for r in resets:
            done = np.searchsorted(step_start, start[r], side="right")
            keys.append((int(np.searchsorted(sends, start[r])), _worker_key(w), start[r]))
            ends.append(int(step_cum[done - 1]) if done else 0)
            counts.append(int(ops["items"].iat[r]))
    idx = sorted(range(len(keys)), key=keys.__getitem__)
    end_steps = np.repeat(np.asarray(ends, np.int64)[idx], np.asarray(counts, np.int64)[idx]) \
        if idx else np.empty(0, np.int64)
    if len(end_steps) != len(returns):
        raise RldseError(f"trace {trace.digest}: its {len(returns)} episode returns do not match "
                         f"its {len(end_steps)} episode ends (env_reset ops); capture it again")
    return Curve(end_steps, returns)


def _first_reach(curve: Curve, target: Target) -> int | None:
    """Env steps at which ``curve``'s trailing mean first reaches the target; None never."""
    k = target.smoothing_episodes
    hit = np.flatnonzero(curve.smoothed(k) >= target.return_)
    return int(curve.end_steps[int(hit[0]) + k - 1]) if len(hit) else None


def _never_reached(trace: Trace, curve: Curve, target: Target) -> RldseError:
    k = target.smoothing_episodes
    means = curve.smoothed(k)
    best = (f"best trailing mean over {k} episodes: {means.max():.6g} at "
            f"{int(curve.end_steps[int(np.argmax(means)) + k - 1]):,} env steps"
            if len(means) else f"the curve has only {len(curve.returns)} episodes")
    return RldseError(f"{target.return_:g} is never reached by the learning curve of trace "
                      f"{trace.digest} ({best})")


@dataclass(frozen=True)
class TargetSteps:
    """Env steps to a target over the trace's seeds: the median the run goes to, the range
    over seeds (``high`` None when a seed never reaches it) and the seed counts."""

    steps: int
    low: int
    high: int | None
    seeds: int
    reached: int


def target_steps(trace: Trace, target: Target) -> TargetSteps:
    """Steps to ``target`` on the trace's own curve and its ``meta.seed_curves`` (module
    docstring); a one-line RldseError when its own curve (one seed) or most seeds never
    reach it."""
    own = learning_curve(trace)
    curves = [own, *(Curve(np.asarray(c.end_steps, np.int64), np.asarray(c.returns, np.float64))
                     for c in trace.meta.seed_curves)]
    firsts = [_first_reach(c, target) for c in curves]
    reached = sorted(f for f in firsts if f is not None)
    if len(curves) == 1 and not reached:
        raise _never_reached(trace, own, target)
    if 2 * len(reached) <= len(curves):
        raise RldseError(f"{target.return_:g} is reached by only {len(reached)} of the "
                         f"{len(curves)} seeds' learning curves of trace {trace.digest}: the "
                         "median seed never reaches it")
    # a seed that never reaches it counts as the slowest: more than half do, so the
    # median is finite
    steps = float(np.median([np.inf if f is None else f for f in firsts]))
    return TargetSteps(steps=int(round(steps)), low=reached[0],
                       high=reached[-1] if len(reached) == len(curves) else None,
                       seeds=len(curves), reached=len(reached))


def steps_to_target(trace: Trace, target: Target) -> int:
    """Env steps the run to the target goes to (``target_steps``: the median over seeds,
    the curve's own with one); a one-line RldseError when it is never reached."""
    return target_steps(trace, target).steps


def to_target(spec: Any, steps: int) -> Any:
    """``spec`` (a SystemSpec) with its run cut to ``steps`` env steps, what the
    *_to_target metrics are measured on; one that sets env_steps itself is refused, since
    the target decides the run's length."""
    if spec.workload.get("env_steps") is not None:
        raise RldseError("a target return sets the run's length (steps_to_target); leave "
                         "env_steps unset", where="workload.env_steps")
    return spec.model_copy(update={"workload": {**spec.workload, "env_steps": int(steps)}})


def check_same_learning(trace: Trace, system: Any) -> None:
    """Refuse a time-to-target for ``system`` (a ResolvedSystem of ``trace``) when it sets
    a learning knob (``Workload.learning_knobs``) away from the trace's value, naming the
    knob: the captured learning curve is not that design's."""
    captured = system.workload.resolve_knobs({}, trace, system.parts, system.placement)
    for name in system.workload.learning_knobs:
        new, old = getattr(system.knobs, name), getattr(captured, name)
        if new is not None and new != old:
            raise RldseError(
                f"{new} changes what each learner update sees or when (the capture ran "
                f"{old}), so the trace's learning curve is not this design's; a "
                f"time-to-target needs a trace captured at {name}={new}",
                where=f"workload.{name}")


def with_target(result: Result, steps: int, target: Target,
                spread: TargetSteps | None = None) -> Result:
    """``result`` (a run of at least ``steps`` env steps, `to_target`) with the *_to_target
    metrics for a target reached at ``steps``: linear within the run's overshoot; with
    ``spread`` (more than one seed), the range over seeds at the run's rate."""
    if result.env_steps <= 0 or result.sim_time_s <= 0:
        raise RldseError("the simulated run took no env steps, so it has no rate to reach "
                         "the target at")
    share = steps / result.env_steps
    time_s = result.sim_time_s * share
    update = {"target_return": float(target.return_),
              "target_smoothing_episodes": target.smoothing_episodes,
              "steps_to_target": int(steps), "time_to_target_s": time_s,
              "energy_to_target_j": result.energy_j * share,
              "cost_to_target_usd": (None if result.rental_usd_per_hour is None
                                     else result.rental_usd_per_hour * time_s / 3600.0)}
    if spread is not None and spread.seeds > 1:
        rate_s = result.sim_time_s / result.env_steps
        update.update({
            "target_seeds": spread.seeds, "target_seeds_reached": spread.reached,
            "steps_to_target_low": spread.low, "steps_to_target_high": spread.high,
            "time_to_target_s_low": spread.low * rate_s,
            "time_to_target_s_high": None if spread.high is None else spread.high * rate_s})
    return result.model_copy(update=update)
