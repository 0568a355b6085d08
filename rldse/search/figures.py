"""Seaborn figures of a study, drawn from its trials table (rldse.search.report).

- `pareto.png`: the feasible Pareto front (two objectives), or every pair of objectives
  with the Pareto points marked (more);
- `history.png`: each objective by trial number, with the best feasible value so far;
- `importance.png`: PED-ANOVA parameter importance per objective (Optuna's evaluator
  that needs no scikit-learn), i.e. which parameters the best points have in common;
- `slice_<path>.png`: each objective against one parameter.
"""

from __future__ import annotations

import os
import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import optuna  # noqa: E402
import pandas as pd  # noqa: E402
import seaborn as sns  # noqa: E402

#: hue order and colours of a point's status
STATUS = {"Pareto / best": "#d62728", "feasible": "#1f77b4", "infeasible": "#bbbbbb"}


def write_figures(frame: pd.DataFrame, objectives: list[tuple[str, str]], params: list[str],
                  study: optuna.Study, fig_dir: Path) -> tuple[dict[str, str], list[str]]:
    """Draw what the finished trials support; return {figure: path} and notes on skips."""
    fig_dir.mkdir(parents=True, exist_ok=True)
    for old in fig_dir.glob("[!.]*.png"):  # not another worker's temporary file
        old.unlink(missing_ok=True)
    done = frame[frame["state"] == "COMPLETE"].copy()
    files: dict[str, str] = {}
    notes: list[str] = []
    if done.empty:
        return files, ["no finished simulations to plot"]
    done["status"] = [("Pareto / best" if b else "feasible") if f else "infeasible"
                      for b, f in zip(done["best"], done["feasible"], strict=True)]
    metrics = [m for m, _ in objectives]
    sns.set_theme(style="whitegrid", context="paper")
    if len(metrics) == 2:
        files["pareto"] = _front(done, objectives, fig_dir / "pareto.png")
    elif len(metrics) > 2:
        grid = sns.pairplot(done, vars=metrics, hue="status", hue_order=list(STATUS),
                            palette=STATUS, corner=True, diag_kind="hist", plot_kws={"s": 18})
        grid.figure.suptitle("Pareto front", y=1.02)
        files["pareto"] = _save(grid.figure, fig_dir / "pareto.png")
    files["history"] = _history(done, objectives, fig_dir / "history.png")
    imp = _importance(study, objectives, params)
    if imp is None:
        notes.append("parameter importance needs at least 2 finished simulations that "
                     "differ in a parameter")
    else:
        fig, ax = plt.subplots(figsize=(6, 0.5 + 0.4 * len(params) * len(metrics)))
        sns.barplot(imp, x="importance", y="parameter", hue="objective", ax=ax)
        ax.set_title("Parameter importance (PED-ANOVA)")
        files["importance"] = _save(fig, fig_dir / "importance.png")
    for param in params:
        if param not in done or done[param].isna().all():
            continue
        fig, axes = plt.subplots(1, len(metrics), figsize=(4.5 * len(metrics), 3.5),
                                 squeeze=False)
        for ax, m in zip(axes[0], metrics, strict=True):
            sns.scatterplot(done, x=param, y=m, hue="status", hue_order=list(STATUS),
                            palette=STATUS, ax=ax, s=20)
        fig.suptitle(f"Slice: {param}")
        name = re.sub(r"[^A-Za-z0-9_.-]", "_", param)
        files[f"slice {param}"] = _save(fig, fig_dir / f"slice_{name}.png")
    return files, notes


def _front(done: pd.DataFrame, objectives: list[tuple[str, str]], path: Path) -> str:
    (x, dx), (y, _) = objectives
    fig, ax = plt.subplots(figsize=(6, 4.5))
    sns.scatterplot(done, x=x, y=y, hue="status", hue_order=list(STATUS), palette=STATUS,
                    ax=ax, s=22)
    front = done[done["best"]].sort_values(x, ascending=dx == "minimize")
    ax.step(front[x], front[y], where="post", color=STATUS["Pareto / best"], lw=1)
    ax.set_title(f"Pareto front ({dx} {x}, {objectives[1][1]} {y})")
    return _save(fig, path)


def _history(done: pd.DataFrame, objectives: list[tuple[str, str]], path: Path) -> str:
    fig, axes = plt.subplots(len(objectives), 1, figsize=(7, 3 * len(objectives)),
                             squeeze=False)
    for ax, (m, direction) in zip(axes[:, 0], objectives, strict=True):
        sns.scatterplot(done, x="number", y=m, hue="status", hue_order=list(STATUS),
                        palette=STATUS, ax=ax, s=20)
        feasible = done[done["feasible"]].sort_values("number")
        if not feasible.empty:
            best = (feasible[m].cummax() if direction == "maximize" else feasible[m].cummin())
            ax.step(feasible["number"], best, where="post", color="black", lw=1,
                    label="best feasible so far")
            ax.legend(fontsize=7)
        ax.set_xlabel("trial")
    fig.suptitle("Optimisation history")
    return _save(fig, path)


def _importance(study: optuna.Study, objectives: list[tuple[str, str]],
                params: list[str]) -> pd.DataFrame | None:
    rows = []
    evaluator = optuna.importance.PedAnovaImportanceEvaluator()
    for i, (m, direction) in enumerate(objectives):
        sign = -1.0 if direction == "maximize" else 1.0  # the evaluator favours low targets
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                imp = optuna.importance.get_param_importances(
                    study, evaluator=evaluator, target=lambda t, i=i, s=sign: s * t.values[i])
        except (ValueError, RuntimeError, ZeroDivisionError):
            return None
        rows += [(m, p, v) for p, v in imp.items() if p in params]
    return pd.DataFrame(rows, columns=["objective", "parameter", "importance"]) if rows else None


def _save(fig, path: Path) -> str:
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.png")  # see report._atomic
    fig.savefig(tmp, dpi=110, bbox_inches="tight")
    plt.close(fig)
    os.replace(tmp, path)
    return str(path)
