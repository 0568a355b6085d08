"""Why a search's answer is what it is, read from its trials table alone (report.trials_frame):
one recommendation and the rule that chose it, each constraint's slack there, the
constraint that binds, the parts of the recommended design that do no work, and the
designs that differ only in parts they do not have, collapsed into one.

- A part is *absent* from a trial when the table records a utilisation (`util.<part>`)
  for its kind in some trials but not in this one (`gpu.count: 0`): its parameters
  (`gpu.preset`) change nothing there, so designs that differ only in them are one design.
- A part is *idle* when it is present and its utilisation is 0: nothing placed on it ran.
- Slack is bound − left-hand side (for `>=`: left-hand side − bound), in the constraint's
  own units and as a share of the bound; a check (`gpu_memory_ok`) is met or not.
- A constraint *binds* when evaluated trials that break it beat the recommended design's
  objective by more than NEAR_TIE (several objectives: are not dominated by the feasible
  Pareto set): it is the one most of them break. None binds when no such trial exists;
  then the space's bounds, or the budget, limit the answer.
- The recommendation: one objective: the best feasible design, or, when several lie
  within NEAR_TIE of it (closer than the model tells designs apart), the cheapest of those
  (CHEAPER_FIRST in turn, a difference under NEAR_TIE counting as none), and of the
  cheapest the best. Several objectives: the feasible Pareto design nearest the ideal
  point, each objective scaled to [0, 1] over the Pareto set.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rldse.models.kinds import PART_KINDS
from rldse.search.constraints import Constraint
from rldse.search.trial import CACHE, SIMULATED

#: Designs this close to the best objective are not told apart: the programs replay trace
#: rows from a seeded start, and the seed alone moved one design's env steps/s by 0.65 %
#: (40 actors on two V100s, seeds 0-3, traces/actor_learner_cartpole_2.parquet).
NEAR_TIE = 0.01
#: A near tie goes to the cheapest design: lowest parts cost, then power
CHEAPER_FIRST = ("cost_usd", "avg_power_w")
UTIL = "util."
_DEVICE = re.compile(r"(?:node\d+/)?([A-Za-z_]+?)\d*")
_FORMS = {"env_steps_per_s": "{:,.0f} env steps/s", "steps_per_joule": "{:,.4g} steps/J",
          "avg_power_w": "{:,.0f} W", "cost_usd": "${:,.0f}"}


def shown(metric: str, value: float) -> str:
    """A metric's value with its unit where it has a common one."""
    return _FORMS.get(metric, metric + " {:,.6g}").format(value)


def evaluated(frame: pd.DataFrame, metrics: Sequence[str]) -> pd.DataFrame:
    """Trials with every objective measured (simulated or from the cache), any feasibility."""
    if frame.empty or any(m not in frame for m in metrics):
        return frame.iloc[0:0]
    keep = frame["source"].isin([SIMULATED, CACHE])
    for m in metrics:
        keep &= frame[m].notna()
    return frame[keep]


def device_kind(column: str) -> str:
    """The part kind of a `util.<device>` column (`util.node1/gpu3` -> gpu)."""
    match = _DEVICE.fullmatch(column.removeprefix(UTIL))
    return match.group(1) if match else column.removeprefix(UTIL)


def absent_parts(row: pd.Series, frame: pd.DataFrame) -> set[str]:
    """Part kinds the table records for some trials and this one lacks."""
    recorded: dict[str, bool] = {}
    for col in frame.columns:
        if col.startswith(UTIL):
            kind = device_kind(col)
            recorded[kind] = recorded.get(kind, False) or bool(pd.notna(row.get(col)))
    return {kind for kind, here in recorded.items() if not here}


def _moot(path: str, absent: set[str]) -> bool:
    """Whether ``path`` sets a field of a part the design lacks (its count excepted: that
    is what says the part is absent)."""
    head, _, field = path.partition(".")
    return head in PART_KINDS and head in absent and field != "count"


def _knobs(row: pd.Series, params: Sequence[str], frame: pd.DataFrame) -> list[tuple]:
    absent = absent_parts(row, frame)
    return [(p, row[p]) for p in params if p in row and pd.notna(row[p]) and not _moot(p, absent)]


def design_key(row: pd.Series, params: Sequence[str], frame: pd.DataFrame) -> tuple:
    """The parameters that make a design: those of parts it has, unset ones left out."""
    return tuple(_knobs(row, params, frame))


def collapse(rows: pd.DataFrame, params: Sequence[str], frame: pd.DataFrame
             ) -> tuple[pd.DataFrame, dict[int, list[int]]]:
    """One row per design (the lowest trial number), and the other trials each stands for
    (the same point again, or one differing only in absent parts' parameters)."""
    first: dict[tuple, int] = {}
    same: dict[int, list[int]] = {}
    keep = []
    for index, row in rows.sort_values("number").iterrows():
        key = design_key(row, params, frame)
        if key in first:
            same[first[key]].append(int(row["number"]))
            continue
        first[key] = int(row["number"])
        same[int(row["number"])] = []
        keep.append(index)
    return rows.loc[keep], same


def idle_parts(row: pd.Series) -> list[str]:
    """The devices of this trial whose utilisation is 0: nothing placed on them ran."""
    return [col.removeprefix(UTIL) for col in row.index
            if col.startswith(UTIL) and pd.notna(row[col]) and row[col] == 0]


@dataclass(frozen=True)
class Slack:
    constraint: Constraint
    slack: float | None  # in the constraint's units (None: a check, met or not)
    share: float | None  # slack / |bound| (None: a check, or a bound of 0)
    met: bool

    def describe(self) -> str:
        con = self.constraint
        if self.slack is None:
            return f"{con.text}: {'met' if self.met else 'broken'}"
        metric = con.names[0] if len(con.terms) == 1 and con.terms[0][0] == 1.0 else ""
        value = shown(metric, self.slack) if metric in _FORMS else f"{self.slack:,.4g}"
        share = f" ({self.share:.1%} of the bound)" if self.share is not None else ""
        return f"{con.text}: {value}{share}"


def slack(con: Constraint, violation: float) -> Slack:
    """The slack behind a stored Optuna constraint value (constraints.Constraint.violation)."""
    met = violation <= 0
    if con.op is None:
        return Slack(con, None, None, met)
    if con.bound:
        return Slack(con, -violation * abs(con.bound), -violation, met)
    return Slack(con, -violation, None, met)


def slacks(row: pd.Series, constraints: Sequence[Constraint]) -> list[Slack]:
    """Each constraint's slack in one trial (those the trial has a stored value for)."""
    out = []
    for con in constraints:
        value = row.get(f"constraint: {con.text}")
        if value is not None and pd.notna(value):
            out.append(slack(con, float(value)))
    return out


@dataclass(frozen=True)
class Advice:
    number: int | None  # the recommended trial
    lines: list[str]  # what the headline prints, the recommendation first


def _better(a: float, b: float, direction: str) -> bool:
    return a > b if direction == "maximize" else a < b


def _dominated(point: np.ndarray, front: np.ndarray, signs: np.ndarray) -> bool:
    """Whether any row of ``front`` is at least as good everywhere and better somewhere
    (``signs``: +1 maximise, -1 minimise)."""
    if not len(front):
        return False
    p, f = point * signs, front * signs
    return bool(((f >= p).all(axis=1) & (f > p).any(axis=1)).any())


def advise(objectives: Sequence[tuple[str, str]], params: Sequence[str],
           constraints: Sequence[Constraint], frame: pd.DataFrame) -> Advice:
    """The recommendation and why (module docstring), from the trials table."""
    metrics = [m for m, _ in objectives]
    done = evaluated(frame, metrics)
    ok = done[done["feasible"] == True]  # noqa: E712
    designs, same = collapse(ok, params, frame)
    if designs.empty:
        return Advice(None, [])
    if len(objectives) == 1:
        pick, rule, beats = _single(objectives[0], designs)
    else:
        pick, rule, beats = _several(objectives, designs)
    row = designs[designs["number"] == pick].iloc[0]
    lines = [f"recommendation: {_design(row, params, metrics, frame)}", f"  rule: {rule}"]
    if same[pick]:
        shown_same = ", ".join(map(str, same[pick][:8])) + (" ..." if len(same[pick]) > 8 else "")
        lines.append(f"  the same design as trial(s) {shown_same}: they differ at most in "
                     "parts the design does not have")
    collapsed = len(ok) - len(designs)
    if collapsed:
        lines.append(f"  {collapsed} feasible trial(s) collapsed into the designs they repeat "
                     "(the same point, or one differing only in absent parts' parameters)")
    found = slacks(row, constraints)
    how = (f"by more than {NEAR_TIE:.0%}" if len(objectives) == 1
           else "not dominated by the feasible Pareto set")
    lines += _binding(found, done, beats, constraints, pick, how)
    numbers = [s.describe() for s in found if s.slack is not None]
    checks = [s.constraint.text for s in found if s.slack is None]
    if numbers or checks:
        lines.append(f"  slack at trial {pick}: " + "; ".join(
            [*numbers, *([f"{len(checks)} check(s) met"] if checks else [])]))
    idle = idle_parts(row)
    if idle:
        lines.append(f"  idle in trial {pick}: {', '.join(idle)} (utilisation 0: nothing "
                     "placed there runs); the design pays its price and idle power for nothing")
    return Advice(pick, lines)


def _single(objective: tuple[str, str], designs: pd.DataFrame):
    metric, direction = objective
    best_value = designs[metric].max() if direction == "maximize" else designs[metric].min()
    best = designs[designs[metric] == best_value].sort_values("number").iloc[0]
    close = designs[(designs[metric] - best_value).abs() <= NEAR_TIE * abs(best_value)]
    order = [c for c in CHEAPER_FIRST if c in close]
    if len(close) > 1:
        pool = close
        for col in order:  # the cheapest, a difference under NEAR_TIE being none
            low = pool[col].min()
            pool = pool[pool[col] <= low + NEAR_TIE * abs(low)]
        top = pool.sort_values([metric, "number"],
                               ascending=[direction != "maximize", True]).iloc[0]
        cheapest = (f"the cheapest ({' then '.join(order)}, each within {NEAR_TIE:.0%} of its "
                    f"lowest), the best {metric} among those, " if order else "the best ")
        rule = (f"{cheapest}of the {len(close)} feasible designs within {NEAR_TIE:.0%} of "
                f"the best {metric} (trial {int(best['number'])}: "
                f"{shown(metric, best_value)}); closer than that the model does not tell "
                "designs apart")
    else:
        top = best
        rule = f"the best {metric} of the feasible designs, with none within {NEAR_TIE:.0%}"
    value = top[metric]

    def beats(row: pd.Series) -> bool:
        margin = NEAR_TIE * abs(value)
        return _better(row[metric], value + (margin if direction == "maximize" else -margin),
                       direction)

    return int(top["number"]), rule, beats


def _several(objectives: Sequence[tuple[str, str]], designs: pd.DataFrame):
    metrics = [m for m, _ in objectives]
    signs = np.array([1.0 if d == "maximize" else -1.0 for _, d in objectives])
    values = designs[metrics].to_numpy(dtype=float)
    on_front = [not _dominated(v, values, signs) for v in values]
    front = designs[on_front]
    fv = front[metrics].to_numpy(dtype=float) * signs
    low, high = fv.min(axis=0), fv.max(axis=0)
    span = np.where(high > low, high - low, 1.0)
    distance = np.sqrt((((high - fv) / span) ** 2).sum(axis=1))
    order = np.lexsort((front["number"].to_numpy(), distance))
    top = front.iloc[order[0]]
    rule = (f"of the {len(front)} feasible Pareto designs, the one nearest the ideal point "
            f"(each of {', '.join(metrics)} scaled to [0, 1] over the set)")
    pareto = front[metrics].to_numpy(dtype=float)

    def beats(row: pd.Series) -> bool:
        return not _dominated(row[metrics].to_numpy(dtype=float), pareto, signs)

    return int(top["number"]), rule, beats


def _binding(found: list[Slack], done: pd.DataFrame, beats, constraints: Sequence[Constraint],
             pick: int, how: str) -> list[str]:
    """The constraint that binds (module docstring), or why none does."""
    broken = done[done["feasible"] == False]  # noqa: E712
    better = broken[[bool(beats(r)) for _, r in broken.iterrows()]] if len(broken) else broken
    counts: dict[str, int] = {}
    for con in constraints:
        col = f"constraint: {con.text}"
        if col in better:
            counts[con.text] = int((better[col] > 0).sum())
    by_text = {s.constraint.text: s for s in found}

    def tightness(text: str) -> float:
        s = by_text.get(text)
        return s.share if s is not None and s.share is not None else math.inf

    if not any(counts.values()):
        tight = [s for s in found if s.share is not None]
        closest = min(tight, key=lambda s: s.share).describe() if tight else None
        return [f"  no constraint binds: no evaluated trial that breaks one is better than "
                f"trial {pick} ({how}): the space's bounds or the budget limit it"
                + (f"; the least slack: {closest}" if closest else "")]
    text = max(counts, key=lambda t: (counts[t], -tightness(t)))
    s = by_text.get(text)
    where = f", slack {s.describe().removeprefix(text + ': ')} at trial {pick}" if s else ""
    return [f"  binding constraint: {text}{where}: {counts[text]} of the {len(better)} "
            f"infeasible trial(s) better than trial {pick} ({how}) break it"]


def _design(row: pd.Series, params: Sequence[str], metrics: Sequence[str],
            frame: pd.DataFrame) -> str:
    knobs = ", ".join(f"{p}={v}" for p, v in _knobs(row, params, frame))
    figures = [shown(m, row[m]) for m in (*metrics, "env_steps_per_s", "avg_power_w", "cost_usd")
               if m in row and pd.notna(row[m])]
    figures = list(dict.fromkeys(figures))
    return f"trial {int(row['number'])} [{knobs}]: {'; '.join(figures)}"
