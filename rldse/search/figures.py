"""A study's figures: Optuna's own matplotlib plots (`optuna.visualization.matplotlib`),
which read the trials' stored constraints and draw infeasible points apart.

- `pareto.png`: the Pareto front (two or three objectives), infeasible trials greyed;
- `history.png` (one objective) or `history_<metric>.png` (each of several): each
  objective by trial, with the best feasible value so far;
- `importance.png` / `importance_<metric>.png`: PED-ANOVA parameter importance (Optuna's
  evaluator that needs no scikit-learn), i.e. which parameters the best points share;
- `slice_<path>.png` / `slice_<path>_<metric>.png`: each objective against one
  parameter, on a log axis where the space searches the parameter on a log scale;
- `trials.png` (`trials_figure`, the figure the studies draw of their searches too): the
  first objective against average power, feasible and infeasible points apart, a power
  cap drawn where a constraint sets one; and the objective by trial with the best feasible
  value so far.

Each figure is written atomically (rldse.files); old figures that this run did not draw
again are removed after the new ones are in place, so the folder is never seen empty.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import optuna  # noqa: E402
import optuna.visualization.matplotlib as ovm  # noqa: E402
import pandas as pd  # noqa: E402
from optuna.trial import TrialState  # noqa: E402

from rldse.files import atomic_path  # noqa: E402
from rldse.search.constraints import Constraint  # noqa: E402
from rldse.search.space import Space  # noqa: E402
from rldse.search.trial import CACHE, SIMULATED  # noqa: E402


def write_figures(study: optuna.Study, objectives: list[tuple[str, str]], space: Space,
                  fig_dir: Path, trials: pd.DataFrame, constraints: list[Constraint]
                  ) -> tuple[dict[str, str], list[str]]:
    """Draw what the finished trials (and their table, report.trials_frame) support;
    return {figure: path} and notes on skips."""
    done = study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
    if not done:
        return {}, ["no finished simulations to plot"]
    fig_dir.mkdir(parents=True, exist_ok=True)
    metrics = [m for m, _ in objectives]
    several = len(metrics) > 1
    params = [d.path for d in space.dims if any(d.path in t.params for t in done)]
    files: dict[str, str] = {}
    notes: list[str] = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        warnings.simplefilter("ignore", UserWarning)  # matplotlib's layout hints
        if len(metrics) in (2, 3):
            files["pareto"] = _draw(fig_dir / "pareto.png", lambda: ovm.plot_pareto_front(
                study, target_names=metrics))
        for i, metric in enumerate(metrics):
            suffix = f"_{_safe(metric)}" if several else ""
            target = _target(i) if several else None
            files[f"history{suffix}"] = _draw(
                fig_dir / f"history{suffix}.png", lambda t=target, m=metric:
                ovm.plot_optimization_history(study, target=t, target_name=m))
            for param in params:
                key = f"slice {param}" + (f" {metric}" if several else "")
                files[key] = _draw(
                    fig_dir / f"slice_{_safe(param)}{suffix}.png", lambda t=target, m=metric,
                    p=param: ovm.plot_slice(study, params=[p], target=t, target_name=m))
            try:
                files[f"importance{suffix}"] = _draw(
                    fig_dir / f"importance{suffix}.png", lambda t=target, m=metric:
                    ovm.plot_param_importances(
                        study, evaluator=optuna.importance.PedAnovaImportanceEvaluator(),
                        params=params or None, target=t, target_name=m))
            except (ValueError, RuntimeError, ZeroDivisionError):
                notes.append(f"parameter importance of {metric} needs more finished "
                             "simulations that differ in a parameter")
        if "avg_power_w" in trials:
            files["trials"] = _draw(fig_dir / "trials.png", lambda: trials_figure(
                trials, objectives[0], constraints).axes[0])
        else:
            notes.append("trials.png needs avg_power_w, which this workload's results lack")
    drawn = {Path(p).name for p in files.values()}
    for old in fig_dir.glob("[!.]*.png"):  # another worker's temporaries start with '.'
        if old.name not in drawn:
            old.unlink(missing_ok=True)
    return files, notes


def trials_figure(trials: pd.DataFrame, objective: tuple[str, str],
                  constraints: list[Constraint]) -> plt.Figure:
    """A search's trials table drawn in two panels: the objective against average power
    (feasible points coloured by GPU count where the space searches it, infeasible ones
    apart, a `avg_power_w <= CAP` constraint's cap as a line), and the objective by trial
    with the best feasible value so far. Trials without a simulation are left out."""
    metric, direction = objective
    ok_all = trials.feasible.fillna(False).astype(bool)  # no record: not feasible
    done = trials[trials.source.isin([SIMULATED, CACHE])]
    ok = ok_all[done.index]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    if "gpu.count" in done:
        sc = a.scatter(done.avg_power_w[ok], done[metric][ok], c=done["gpu.count"][ok],
                       cmap="viridis", s=25, label="feasible")
        fig.colorbar(sc, ax=a, label="GPUs")
    else:
        a.scatter(done.avg_power_w[ok], done[metric][ok], s=25, label="feasible")
    a.scatter(done.avg_power_w[~ok], done[metric][~ok], marker="x", color="tab:red", s=25,
              label="infeasible (breaks a constraint)")
    for con in constraints:
        if con.names == ("avg_power_w",) and con.op == "<=":
            a.axvline(con.bound, color="tab:red", ls="--", label=f"cap {con.bound:g} W")
    label = "throughput (env steps/s)" if metric == "env_steps_per_s" else metric
    a.set(xlabel="average power (W)", ylabel=label, title="simulated trials")
    a.legend(fontsize=8)
    feas = trials.assign(v=trials[metric].where(ok_all))
    best = (feas.v.cummax() if direction == "maximize" else feas.v.cummin()).ffill()
    b.plot(trials.number[ok_all], trials[metric][ok_all], ".", color="grey",
           label="feasible trial")
    b.plot(trials.number[~ok_all], trials[metric][~ok_all], "x", color="tab:red", ms=4,
           label="infeasible trial")
    b.step(trials.number, best, where="post", color="tab:green", label="best feasible so far")
    b.set(xlabel="trial number", ylabel=label, title="search history")
    b.legend(fontsize=8)
    return fig


def _target(i: int) -> Callable[[optuna.trial.FrozenTrial], float]:
    return lambda t: t.values[i]


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def _draw(path: Path, plot: Callable[[], object]) -> str:
    """Call an Optuna plot and save its figure atomically (a failed plot writes nothing)."""
    plt.close("all")
    try:
        axes = plot()
        first = axes.flat[0] if hasattr(axes, "flat") else axes
        fig = first.figure
        fig.set_size_inches(max(6.0, fig.get_figwidth()), max(4.0, fig.get_figheight()))
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    finally:
        plt.close("all")
    return str(path)
