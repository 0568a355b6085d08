"""What a whole search will cost before it starts: its trials × the simulation of one.
Apart from rldse.sim.budget because it samples the search's space (rldse.search.space, a
layer above sim); each simulation's estimate and the refusal are budget's.

One trial's cost is the up-front estimate of its simulation (rldse.sim.budget), plus the
pilots a trial runs to estimate it itself, at a few points of the space: its two
corners (every dimension at its low end, then its high end) and SAMPLED_POINTS more
drawn from the ranges (seeded by the study's seed), never an enumerated grid; the
costliest one stands for every trial (pricing stops at a point that already puts the
search over its limit). Points whose spec is invalid (trials that will be marked
invalid, not run) cost nothing. The workers run trials side by side, as many at a time
as this host has cores. Trials the analytic estimate prunes or the cache holds cost
nothing either, so the total is an upper end.

Small designs (rldse.sim.budget.is_small) are priced at UNMETERED_RUN_S each without
pilots; only when that many of them could pass the limit is one timed.
"""

from __future__ import annotations

import math
import os
import random
import time
from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.search.space import Dimension, Scalar, Space
from rldse.search.study_file import StudyFile
from rldse.sim.budget import Limits, duration, is_small, per_run_s, refuse_long
from rldse.sim.target import to_target
from rldse.system import resolve

#: points drawn from the ranges besides the two corners
SAMPLED_POINTS = 2
#: the most one small (unmetered) design takes on a loaded 2-core host: 200k env steps at
#: the per-event paths' 60k steps/s (rldse.sim.budget.UNMETERED_STEPS)
UNMETERED_RUN_S = 5.0


@dataclass(frozen=True)
class SearchCost:
    """A search's estimated wall time and how it was had."""

    wall_s: float
    trials: int
    per_trial_s: float
    parallel: int
    points: int  # points of the space priced
    measured: bool  # per_trial_s from the budget's estimate (False: UNMETERED_RUN_S)

    def describe(self) -> str:
        basis = ("at the costliest of" if self.measured else
                 "at most, small designs as all of")
        return (f"about {duration(self.wall_s)} ({self.trials:,} trials of about "
                f"{duration(self.per_trial_s)} each, {basis} {self.points} point(s) of its "
                f"space, {self.parallel} at a time)")


def _value(dim: Dimension, rng: random.Random) -> Scalar:
    """A value drawn from the dimension's range (log-uniform with ``log``), on its step."""
    if dim.kind == "categorical":
        return rng.choice(dim.choices)
    low, high = float(dim.low), float(dim.high)
    x = (math.exp(rng.uniform(math.log(low), math.log(high))) if dim.log and low > 0
         else rng.uniform(low, high))
    if dim.step is not None or dim.kind == "int":
        step = dim.step or 1
        x = min(low + round((x - low) / step) * step, high)
    return int(round(x)) if dim.kind == "int" else x


def sample_points(space: Space, n: int, seed: int) -> list[dict[str, Scalar]]:
    """The two corners of the space and ``n`` points drawn from its ranges; a dimension
    whose `when` does not hold at a point is left out of it, as a trial leaves it."""
    rng = random.Random(seed)
    pickers = [lambda d: d.extremes()[0], lambda d: d.extremes()[-1]]
    pickers += [lambda d: _value(d, rng)] * n
    points = []
    for pick in pickers:
        point: dict[str, Scalar] = {}
        for dim in space.dims:
            if space.active(dim, point):
                point[dim.path] = pick(dim)
        points.append(point)
    return points


def search_cost(study: StudyFile, trials: int, workers: int, limits: Limits) -> SearchCost:
    """The estimated wall time of ``trials`` more trials on ``workers`` processes (module
    docstring)."""
    trace = study.loaded_trace
    systems = []
    for point in sample_points(study.search_space, SAMPLED_POINTS, study.seed):
        try:
            spec = study.search_space.spec(point, where="point")
            if study.target is not None:
                spec = to_target(spec, study.target_steps)
            systems.append(resolve(spec, trace))
        except RldseError:
            continue  # an invalid trial: refused before it simulates
    parallel = max(1, min(workers, os.cpu_count() or 1))
    small = all(is_small(trace, s) for s in systems)

    def total(each_s: float) -> float:
        return math.ceil(trials / parallel) * each_s

    if small and not limits.over(total(UNMETERED_RUN_S)):
        return SearchCost(total(UNMETERED_RUN_S), trials, UNMETERED_RUN_S, parallel,
                          len(systems), measured=False)
    # priced until the search is surely over the limit: the answer is then a refusal
    rounds = math.ceil(trials / parallel)
    enough_s = limits.share_s(rounds)
    each_s, priced = 0.0, 0
    for system in systems:
        each_s = max(each_s, _with_its_estimate(trace, system, enough_s))
        priced += 1
        if enough_s is not None and each_s > enough_s:
            break
    return SearchCost(total(each_s), trials, each_s, parallel, priced, measured=True)


def _with_its_estimate(trace, system, enough_s: float | None) -> float:
    """Wall seconds of one trial of a design that is not small: its simulation
    (rldse.sim.budget.per_run_s) and the same pilots run again, since such a trial
    estimates its own simulation before it runs it (rldse.search.trial); the pilots' CPU
    time here, turned into wall time as theirs is (rldse.host.wall_per_cpu). (Without
    them a search of 2M-step trials was estimated at 0.46x its time.)"""
    from rldse.host import wall_per_cpu

    w0, c0 = time.perf_counter(), time.process_time()
    run_s = per_run_s(trace, system, enough_s)
    cpu_s = time.process_time() - c0
    return run_s + cpu_s * wall_per_cpu(time.perf_counter() - w0, cpu_s)[0]


def check_search(cost: SearchCost, limits: Limits, where: str) -> None:
    """Refuse a search estimated over ``limits.wall_s`` in one line (unless allow_long)."""
    refuse_long(cost.wall_s, f"this search would take {cost.describe()}",
                "fewer trials, more workers or a smaller workload.env_steps", where, limits)
