"""What a study run leaves behind, in its out/ folder, and the report it returns.

- `trials.csv`, `trials.parquet`: one row per trial: number, state, source (simulated,
  cache, pruned, invalid), every parameter, every objective, each constraint's Optuna
  value (≤ 0 feasible), feasible, best, every scalar metric, the analytic bounds
  (`estimate.<metric>`), the bottleneck and a note (why pruned or invalid);
- `figures/` (rldse.search.figures);
- `best/trial-<n>.yaml`: the best feasible configuration (each, when several tie), or
  each point of the feasible Pareto set (several objectives), as SystemSpec files that
  `rldse simulate TRACE --system FILE` accepts;
- `summary.json`: the StudyReport, whose `headline()` `rldse study run` prints for the
  searches a study ran.

Every file is written through `rldse.files` (temporary file, then rename), and a folder's
old files are removed only after its new ones are in place, so `figures/` and `best/`
are never seen empty or half-written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
import optuna
import pandas as pd
from optuna.trial import TrialState
from pydantic import BaseModel

from rldse.files import atomic_write, atomic_write_text, clean_stale_temporaries
from rldse.search.advice import (
    CHEAPER_FIRST,
    NEAR_TIE,
    advise,
    collapse,
    design_key,
    evaluated,
    idle_parts,
    shown,
)
from rldse.search.constraints import violations
from rldse.search.storage import StorageRef
from rldse.search.study_file import StudyFile
from rldse.search.trial import CACHE, INVALID, PRUNED, SIMULATED, trial_attrs
from rldse.sim.result import CHECK_PREFIX
from rldse.system import system_spec

#: Metrics a best point is shown with besides its objectives (when its program has them).
SHOWN_METRICS = ("env_steps_per_s", "steps_per_joule", "avg_power_w", "cost_usd")


class StudyReport(BaseModel):
    name: str
    study_file: str
    storage: str
    out_dir: str
    budget: int
    workers: int
    objectives: list[str]
    constraints: list[str]  # every constraint applied, part checks included
    states: dict[str, int]
    simulated: int
    cache_hits: int
    pruned_by_estimate: int
    invalid: int
    requeued: int
    best: list[dict[str, Any]]  # number, values, params, metrics, constraints, file, idle
    files: dict[str, str]
    notes: list[str]
    near_ties: list[str] = []  # headline lines: designs within NEAR_TIE of the best
    advice: list[str] = []  # headline lines: the recommendation and why (search.advice)
    recommended: int | None = None  # the recommended trial (its file is in best/)
    finished_now: int
    elapsed_s: float

    @property
    def simulations_saved(self) -> int:
        """Trials that cost no simulation: ruled out by the estimate, or found in the cache."""
        return self.pruned_by_estimate + self.cache_hits

    @property
    def trials_per_min(self) -> float:
        return 60.0 * self.finished_now / self.elapsed_s if self.elapsed_s > 0 else 0.0

    def summary(self) -> str:
        """What the run did, where its files are, and last the headline with its designs."""
        states = ", ".join(f"{n} {s.lower()}" for s, n in self.states.items() if n)
        lines = [
            f"study '{self.name}' in {self.storage}: {states or 'no trials'} "
            f"(budget {self.budget})",
            f"  {self.finished_now} trials in {self.elapsed_s:.1f} s with {self.workers} "
            f"worker(s): {self.trials_per_min:.1f} trials/min",
            f"  simulations: {self.simulated} run, {self.simulations_saved} saved "
            f"({self.pruned_by_estimate} ruled out by the analytic estimate, "
            f"{self.cache_hits} from the cache); {self.invalid} invalid points",
        ]
        if self.requeued:
            lines.append(f"  resumed: {self.requeued} trial(s) left running by a killed run "
                         "were failed and queued again")
        lines += [f"  {k}: {v}" for k, v in self.files.items()
                  if k in ("trials.csv", "trials.parquet", "figures", "summary.json")]
        lines.append(f"  dashboard: rldse dashboard {self.study_file}")
        lines += [f"  note: {n}" for n in self.notes]
        return "\n".join([*lines, self.headline()])

    def headline(self) -> str:
        """The designs to act on: the best (ties named as ties) or, for several objectives,
        the Pareto set, each with its objectives, parameters, throughput, steps/J, power,
        cost and file. All meet every constraint: infeasible points are never shown."""
        checks = [c.removeprefix(CHECK_PREFIX) for c in self.constraints
                  if c.startswith(CHECK_PREFIX)]
        own = [c for c in self.constraints if not c.startswith(CHECK_PREFIX)]
        met = "; ".join([*own, *([f"the part checks {', '.join(checks)}"] if checks else [])])
        met = f"every constraint ({met or 'none'})"
        if not self.best:
            return f"no design meets {met} yet: see the feasible column of trials.csv"
        if len(self.objectives) > 1:
            head = f"Pareto set of {len(self.best)} designs, each meeting {met}:"
        elif len(self.best) > 1:
            value = self.best[0]["values"][self.objectives[0]]
            head = (f"best {self.objectives[0]} {value:,.6g}, a tie of {len(self.best)} "
                    f"designs, each meeting {met}:")
        else:
            head = f"best design, meeting {met}:"
        lines = [head]
        for b in self.best[:10]:
            values = ", ".join(f"{k}={v:,.6g}" for k, v in b["values"].items())
            params = ", ".join(f"{k}={v}" for k, v in b["params"].items())
            more = "; ".join(shown(k, v) for k, v in b.get("metrics", {}).items()
                             if k not in b["values"])
            idle = (f"  idle: {', '.join(b['idle'])} (utilisation 0, does no work)"
                    if b.get("idle") else "")
            lines.append(f"  trial {b['number']}: {values}  [{params}]"
                         + (f"  ({more})" if more else "") + f"  -> {b['file']}{idle}")
        if len(self.best) > 10:
            lines.append(f"  ... and {len(self.best) - 10} more in {self.files.get('best')}")
        return "\n".join([*lines, *self.near_ties, *self.advice])


def trials_frame(study_file: StudyFile, study: optuna.Study) -> pd.DataFrame:
    """The trials table (module docstring)."""
    params = [d.path for d in study_file.search_space.dims]
    objectives = [o.metric for o in study_file.objectives]
    best = {t.number for t in study.best_trials}
    rows = []
    for t in study.get_trials(deepcopy=False):
        ua = trial_attrs(t)
        row: dict[str, Any] = {"number": t.number, "state": t.state.name,
                               "source": ua.get("source", "")}
        row.update({p: t.params.get(p) for p in params})
        values = t.values if t.state == TrialState.COMPLETE else None
        row.update({m: values[i] if values else math.nan for i, m in enumerate(objectives)})
        cons = violations(t, study_file.parsed_constraints)
        for c in study_file.parsed_constraints:
            row[f"constraint: {c.text}"] = cons.get(c.text, math.nan)
        violated = any(v > 0 for v in cons.values())
        row["feasible"] = not violated if values or violated else None
        row["best"] = t.number in best
        for k, v in ua.get("metrics", {}).items():
            row.setdefault(k, v)
        row.update({f"estimate.{k}": v for k, v in ua.get("estimate", {}).items()})
        row["bottleneck"] = ua.get("bottleneck")
        row["note"] = ua.get("note")
        row["duration_s"] = t.duration.total_seconds() if t.duration else math.nan
        rows.append(row)
    frame = pd.DataFrame(rows)
    if not frame.empty:
        frame["feasible"] = frame["feasible"].astype("boolean")
    return frame


def write_outputs(study_file: StudyFile, study: optuna.Study, ref: StorageRef, budget: int,
                  finished_now: int, elapsed_s: float, requeued: int,
                  workers: int, run_notes: list[str] = ()) -> StudyReport:
    """Write the trials table, figures, best specs and summary.json (the report, with
    ``run_notes``: what the run warned of, such as requeued or taken-over trials)."""
    out = study_file.out_dir
    out.mkdir(parents=True, exist_ok=True)
    clean_stale_temporaries(out)  # left by a run killed mid-write
    frame = trials_frame(study_file, study)
    files = {"trials.csv": str(out / "trials.csv"), "trials.parquet": str(out / "trials.parquet")}
    atomic_write(out / "trials.csv", lambda tmp: frame.to_csv(tmp, index=False))
    atomic_write(out / "trials.parquet",
                 lambda tmp: _parquet_safe(frame).to_parquet(tmp, index=False))
    objectives = [(o.metric, o.direction) for o in study_file.objectives]
    if study_file.figures:
        from rldse.search.figures import write_figures  # matplotlib: only when drawing

        figs, notes = write_figures(study, objectives, study_file.search_space, out / "figures",
                                    frame, study_file.parsed_constraints)
        files["figures"] = str(out / "figures")
        files.update(figs)
    else:
        notes = [f"figures: false in {study_file.file.name}: no figures drawn"]
    notes = [*run_notes, *target_notes(study_file, frame), *notes]
    params = [d.path for d in study_file.search_space.dims if d.path in frame]
    advice = advise(objectives, params, study_file.parsed_constraints, frame)
    best, chosen = _write_best(study_file, study, out / "best", frame, advice.number)
    lines = list(advice.lines)
    if chosen is not None:
        lines[0] += f"  -> {chosen}"
    files["best"] = str(out / "best")
    files["summary.json"] = str(out / "summary.json")
    sources = frame["source"].value_counts().to_dict() if not frame.empty else {}
    report = StudyReport(
        name=study.study_name, study_file=str(study_file.file), storage=ref.shown, out_dir=str(out), budget=budget,
        workers=workers, objectives=[m for m, _ in objectives],
        constraints=[c.text for c in study_file.parsed_constraints],
        states={s.name: len(study.get_trials(deepcopy=False, states=(s,))) for s in TrialState},
        simulated=sources.get(SIMULATED, 0), cache_hits=sources.get(CACHE, 0),
        pruned_by_estimate=sources.get(PRUNED, 0), invalid=sources.get(INVALID, 0),
        requeued=requeued, best=best, files=files, notes=notes,
        near_ties=near_ties(study_file, frame), advice=lines, recommended=advice.number,
        finished_now=finished_now,
        elapsed_s=elapsed_s)
    atomic_write_text(out / "summary.json", report.model_dump_json(indent=1))
    return report


def relocate_reports(folder: Path, moved_to: Path) -> None:
    """Rewrite the summary.json of every search under ``folder`` for the folder's move to
    ``moved_to`` (a study run builds its outputs beside out/ and renames them in): the
    paths a report names under ``folder`` then point under ``moved_to``."""
    def moved(value: Any) -> Any:
        if isinstance(value, str):
            return (str(moved_to) if value == str(folder)
                    else value.replace(f"{folder}/", f"{moved_to}/"))
        if isinstance(value, dict):
            return {k: moved(v) for k, v in value.items()}
        if isinstance(value, list):
            return [moved(v) for v in value]
        return value

    for summary in folder.rglob("summary.json"):
        report = StudyReport.model_validate_json(summary.read_text())
        report = StudyReport.model_validate(moved(report.model_dump(mode="json")))
        atomic_write_text(summary, report.model_dump_json(indent=1))


def near_ties(study_file: StudyFile, frame: pd.DataFrame) -> list[str]:
    """With one objective: the feasible designs within NEAR_TIE of the best, cheapest
    first (designs that differ only in absent parts counted once: rldse.search.advice).
    Empty when the best stands alone; the pick among them is the recommendation's."""
    if len(study_file.objectives) != 1 or frame.empty:
        return []
    metric = study_file.objectives[0].metric
    direction = study_file.objectives[0].direction
    done = evaluated(frame, [metric])
    params = [d.path for d in study_file.search_space.dims if d.path in frame]
    done, _ = collapse(done[done["feasible"] == True], params, frame)  # noqa: E712
    if len(done) < 2:
        return []
    best = done[metric].max() if direction == "maximize" else done[metric].min()
    close = done[(done[metric] - best).abs() <= NEAR_TIE * abs(best)]
    if len(close) < 2:
        return []
    order = [c for c in CHEAPER_FIRST if c in close]
    close = close.sort_values([*order, "number"])

    def show(row: pd.Series) -> str:
        knobs = ", ".join(f"{p}={v}" for p, v in design_key(row, params, frame))
        costs = "; ".join(shown(c, row[c]) for c in order if pd.notna(row[c]))
        return (f"trial {int(row['number'])} [{knobs}]: {shown(metric, row[metric])} "
                f"({row[metric] / best - 1:+.2%})" + (f"; {costs}" if costs else ""))

    lines = [f"near tie: {len(close)} feasible designs within {NEAR_TIE:.0%} of the best "
             f"{metric} (closer than the model tells designs apart), cheapest first:"]
    lines += [f"  {show(row)}" for _, row in close.head(5).iterrows()]
    if len(close) > 5:
        lines.append(f"  ... and {len(close) - 5} more in trials.csv")
    return lines


def target_notes(study_file: StudyFile, frame: pd.DataFrame) -> list[str]:
    """With a target: why the design that reaches it soonest wins, against the one with
    the best steps/J (both feasible, simulated or cached)."""
    target = study_file.target
    cols = ("time_to_target_s", "energy_to_target_j", "steps_per_joule", "env_steps_per_s")
    if target is None or frame.empty or any(c not in frame for c in cols):
        return []
    done = frame[(frame["feasible"] == True) & frame["time_to_target_s"].notna()]  # noqa: E712
    lines = [f"target return {target.return_:g} (trailing mean over "
             f"{target.smoothing_episodes} episodes) is reached at "
             f"{study_file.target_steps:,} env steps of the captured curve, for every design "
             "(equal sample efficiency per env step assumed)"]
    if done.empty:
        return lines + ["no feasible simulated point reaches the target yet"]
    params = [d.path for d in study_file.search_space.dims]

    def show(row: pd.Series) -> str:
        knobs = ", ".join(f"{p}={row[p]}" for p in params if p in row and pd.notna(row[p]))
        return (f"trial {int(row['number'])} [{knobs}]: {row['time_to_target_s']:.4g} s and "
                f"{row['energy_to_target_j']:,.4g} J to the target, "
                f"{row['env_steps_per_s']:,.0f} env steps/s, {row['steps_per_joule']:.4g} "
                f"steps/J, bottleneck {row['bottleneck']}")

    soon = done.loc[done["time_to_target_s"].idxmin()]
    frugal = done.loc[done["steps_per_joule"].idxmax()]
    lines.append(f"soonest: {show(soon)}")
    if soon["number"] == frugal["number"]:
        return lines + ["it also has the best steps/J of the feasible points"]
    lines.append(f"best steps/J: {show(frugal)}")
    lines.append(f"the soonest wins on time because it steps "
                 f"{soon['env_steps_per_s'] / frugal['env_steps_per_s']:.3g}x as fast; it pays "
                 f"{soon['energy_to_target_j'] / frugal['energy_to_target_j']:.3g}x the energy "
                 "to the target (time to target is steps_to_target / rate, the same steps for "
                 "both)")
    if "staleness_mean_updates" in soon and pd.notna(soon["staleness_mean_updates"]) \
            and soon["staleness_mean_updates"] > 0:
        lines.append(f"the soonest's actors act on parameters "
                     f"{soon['staleness_mean_updates']:.3g} updates old on average, unlike the "
                     "capture: its time to target assumes the captured sample efficiency")
    return lines


def _write_best(study_file: StudyFile, study: optuna.Study, folder: Path, frame: pd.DataFrame,
                recommended: int | None) -> tuple[list[dict[str, Any]], str | None]:
    """One SystemSpec file per distinct best (or Pareto) feasible design, named by its
    first trial (a point proposed again, or one differing only in parts it lacks, is the
    same design: rldse.search.advice.design_key), and the recommended trial's when it is
    not one of them; old files go only once the new ones are written. Returns the best
    points and the recommended one's file."""
    objectives = [o.metric for o in study_file.objectives]
    params = [d.path for d in study_file.search_space.dims if d.path in frame]
    rows = frame.set_index("number", drop=False)
    out = []
    seen: set[tuple] = set()

    def write(t: optuna.trial.FrozenTrial) -> Path:
        values = dict(zip(objectives, t.values, strict=True))
        path = folder / f"trial-{t.number:04d}.yaml"
        text = ", ".join(f"{k}={v:.6g}" for k, v in values.items())
        atomic_write_text(path, f"# rldse search: study '{study.study_name}', trial "
                          f"{t.number}: {text}\n# trace: {study_file.trace} (digest "
                          f"{study_file.loaded_trace.digest}), seed {study_file.seed}\n"
                          + system_spec().model_validate(trial_attrs(t)["spec"]).to_yaml())
        return path

    for t in sorted(study.best_trials, key=lambda t: t.number):  # feasible ones only
        attrs = trial_attrs(t)
        key = design_key(rows.loc[t.number], params, frame)
        if key in seen:
            continue
        seen.add(key)
        path = write(t)
        params = {d.path: t.params[d.path] for d in study_file.search_space.dims
                  if d.path in t.params}
        metrics = attrs.get("metrics", {})
        out.append({"number": t.number, "values": dict(zip(objectives, t.values, strict=True)),
                    "params": params,
                    "metrics": {m: metrics[m] for m in SHOWN_METRICS if m in metrics},
                    "constraints": attrs.get("constraints", {}), "file": str(path),
                    "idle": idle_parts(rows.loc[t.number])})
    keep = {Path(b["file"]).name for b in out}
    chosen = None
    if recommended is not None:
        chosen = next((b["file"] for b in out if b["number"] == recommended), None)
        if chosen is None:
            chosen = str(write(study.get_trials(deepcopy=False)[recommended]))
            keep.add(Path(chosen).name)
    for old in folder.glob("trial-*.yaml"):
        if old.name not in keep:
            old.unlink(missing_ok=True)
    return out, chosen


def _parquet_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """Parquet needs one type per column: a parameter with mixed choices becomes text."""
    out = frame.copy()
    for col in out.columns:
        if out[col].dtype == object:
            kinds = {type(v) for v in out[col] if v is not None and not
                     (isinstance(v, float) and np.isnan(v))}
            if len(kinds) > 1:
                out[col] = out[col].map(lambda v: None if v is None else str(v))
    return out
