"""A study's figures: Optuna's own matplotlib plots (`optuna.visualization.matplotlib`),
which read the trials' stored constraints and draw infeasible points apart.

- `pareto.png`: the Pareto front (two or three objectives), infeasible trials greyed;
- `history.png` (one objective) or `history_<metric>.png` (each of several): each
  objective by trial, with the best feasible value so far;
- `importance.png` / `importance_<metric>.png`: PED-ANOVA parameter importance (Optuna's
  evaluator that needs no scikit-learn), i.e. which parameters the best points share;
- `slice_<path>.png` / `slice_<path>_<metric>.png`: each objective against one
  parameter, on a log axis where the space searches the parameter on a log scale.

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
from optuna.trial import TrialState  # noqa: E402

from rldse.files import atomic_path  # noqa: E402
from rldse.search.space import Space  # noqa: E402


def write_figures(study: optuna.Study, objectives: list[tuple[str, str]], space: Space,
                  fig_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Draw what the finished trials support; return {figure: path} and notes on skips."""
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
    drawn = {Path(p).name for p in files.values()}
    for old in fig_dir.glob("[!.]*.png"):  # another worker's temporaries start with '.'
        if old.name not in drawn:
            old.unlink(missing_ok=True)
    return files, notes


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
