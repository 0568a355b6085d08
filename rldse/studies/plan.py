"""What a study run will cost before it starts: the work its module plans, priced.
Apart from rldse.sim.budget because it sums a study module's plan (searches, simulations,
learning runs) from the layer above them; each estimate and the refusal are theirs.

A study module may declare ``plan(study_dir) -> list[Planned]`` beside its ``run``: the
simulations it will run, in groups of one representative design (its costliest: a group
of N runs costs N times it), the searches it runs whole, its real learning runs (one
priced run standing for N: a request's N seeds), and other work, which is listed but
not priced. Each design is priced by rldse.sim.budget.per_run_s (a small design: one
timed run; a larger one: its pilots), each search by rldse.search.cost, each learning
run by rldse.sim.run_cost (a probe of its first steps); the study's estimate is
their sum. A module without ``plan`` is run unestimated, and `study run` says so.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rldse.errors import RldseError
from rldse.sim.budget import Limits, duration, per_run_s, refuse_long
from rldse.studies.discovery import Study
from rldse.system import ResolvedSystem, resolve


@dataclass(frozen=True)
class Planned:
    """``count`` runs of one kind (``what``): simulations of ``spec`` (a SystemSpec or
    ResolvedSystem) on ``trace``, or with ``search`` the search in that study file run
    whole (``count`` 1), or with ``learning`` real learning runs, each priced by calling
    it (a RunCost of rldse.sim.run_cost, or None), or with none of them, work no
    estimate covers."""

    what: str
    count: int
    trace: Any = None
    spec: Any = None
    search: Path | None = None
    learning: Callable[[], Any] | None = None


@dataclass(frozen=True)
class StudyCost:
    wall_s: float
    parts: list[str] = field(default_factory=list)  # '<count> <what>: <duration>' per priced group
    unpriced: list[str] = field(default_factory=list)  # '<count> <what>'

    def describe(self) -> str:
        text = f"about {duration(self.wall_s)} ({'; '.join(self.parts) or 'nothing priced'})"
        if self.unpriced:
            text += f", besides {', '.join(self.unpriced)} (not estimated)"
        return text


def _price(item: Planned, limits: Limits) -> float | None:
    if item.search is not None:
        from rldse.search.cost import search_cost
        from rldse.search.run import trial_budget
        from rldse.search.study_file import load_study_file

        study = load_study_file(item.search)
        return search_cost(study, trial_budget(study, None, str(item.search)), 1,
                           limits).wall_s
    if item.learning is not None:
        cost = item.learning()
        return None if cost is None else item.count * cost.wall_s
    if item.trace is None:
        return None
    system = item.spec if isinstance(item.spec, ResolvedSystem) else resolve(item.spec,
                                                                              item.trace)
    return item.count * per_run_s(item.trace, system)


def study_cost(plan: list[Planned], limits: Limits) -> StudyCost:
    """The plan priced (module docstring)."""
    total, parts, unpriced = 0.0, [], []
    for item in plan:
        seconds = _price(item, limits)
        if seconds is None:
            unpriced.append(f"{item.count:,} {item.what}")
            continue
        total += seconds
        parts.append(f"{item.count:,} {item.what}: {duration(seconds)}")
    return StudyCost(total, parts, unpriced)


def estimate_studies(studies: list[Study], limits: Limits) -> list[tuple[Study, StudyCost | None]]:
    """Each study's cost (None: its module plans nothing), refused in one line when their
    sum is over ``limits.wall_s`` (unless ``allow_long``), before any of them runs."""
    costs = []
    for study in studies:
        plan = getattr(study.load(), "plan", None)
        try:
            costs.append((study, None if plan is None else study_cost(plan(study.path),
                                                                      limits)))
        except RldseError as exc:
            raise exc.within(f"study {study.name}") from None
    total_s = sum(c.wall_s for _, c in costs if c is not None)
    shown = "; ".join(f"{s.name} {c.describe()}" for s, c in costs if c is not None)
    refuse_long(total_s, f"this study run would take about {duration(total_s)} ({shown})", "",
                "study run", limits)
    return costs
