"""The study's figures, each saved into the outputs folder (rldse.studies.common.save_figure)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import seaborn as sns

from rldse.studies.common import save_figure


def fig_pairs(tables: pd.DataFrame, out: Path) -> Path:
    """Iteration time of every RM/learner pair on PEARL's tables, co-located pairs apart."""
    ax = sns.barplot(data=tables.assign(pair=tables.rm + " / " + tables.learner), x="pair",
                     y="iteration_ms", hue="colocated")
    ax.set(xlabel="replay manager / learner (PEARL table rows)",
           ylabel="iteration time (ms)", title="PEARL tables through the engine")
    ax.tick_params(axis="x", rotation=60)
    return save_figure(ax.figure, out, "pearl_pairs")


def fig_platform(nominal: pd.DataFrame, out: Path) -> Path:
    """Training samples/s of every placement at the presets' values, one panel a workload."""
    g = sns.catplot(data=nominal.assign(placement=nominal.system + "\nreplay " + nominal.replay
                                        + "\nlearn " + nominal.learn),
                    x="placement", y="samples_per_s", col="workload", kind="bar",
                    sharey=False, height=4.5, aspect=1.4)
    g.set_axis_labels("system, placement", "training samples / s")
    return save_figure(g.figure, out, "fpga_platform")
