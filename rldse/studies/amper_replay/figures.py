"""The study's figures, from the presets' values (results.csv's draw -1) and the learning
curves."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

from rldse.studies.amper_replay.params import Params
from rldse.studies.common import save_figure


def fig_latency(lat: pd.DataFrame, p: Params, out: Path) -> Path:
    b = p.latency.figure_batch
    sub = lat[lat.batch == b]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (col, label, gcol) in zip(axes, (("tcam_sample_s", "sample latency per batch (s)",
                                               "gpu_sample_s"),
                                              ("tcam_energy_j", "energy per batch, sample + "
                                               "update (J)", "gpu_energy_j")), strict=True):
        for g, grp in sub.groupby("gpu"):
            one = grp[(grp.tcam == p.latency.tcams[0]) & (grp.variant == "AMPER-k")]
            ax.plot(one.buffer, one[gcol], "k-" if g == p.latency.figure_gpu else "k--",
                    marker="s", label=f"GPU {g} (PER sum tree)")
        colors = dict(zip(p.latency.tcams, sns.color_palette("tab10", len(p.latency.tcams)),
                          strict=True))
        for (tcam, variant), grp in sub[sub.gpu == p.latency.figure_gpu].groupby(["tcam",
                                                                               "variant"]):
            ax.plot(grp.buffer, grp[col], color=colors[tcam],
                    marker="o" if variant == "AMPER-k" else "^",
                    linestyle="-" if variant == "AMPER-k" else ":", label=f"{tcam} {variant}")
        ax.set(xscale="log", yscale="log", xlabel="replay buffer size (entries)", ylabel=label)
        ax.set_xscale("log", base=2)
    axes[0].set_title(f"batch {b}: sampling one minibatch (TCAM: searches, H-tree, merge, "
                      "RNG, candidate reads)")
    axes[1].set_title(f"batch {b}: energy (GPU at full board power: an upper bound)")
    axes[1].legend(fontsize=6, ncol=2)
    return save_figure(fig, out, "latency_vs_buffer")


def fig_ratio(lat: pd.DataFrame, p: Params, out: Path) -> Path:
    sub = lat[lat.gpu == p.latency.figure_gpu]
    g = sns.relplot(data=sub, x="buffer", y="ratio_sample", hue="batch", style="variant",
                    col="tcam", col_wrap=4, kind="line", markers=True, height=3,
                    palette="viridis")
    for ax in g.axes.flat:
        ax.axhspan(p.published.ratio_low, p.published.ratio_high, color="orange", alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    g.set_axis_labels("buffer size", f"{p.latency.figure_gpu} / TCAM latency")
    g.set_titles("{col_name}")
    if len(p.latency.tcams) % 4:  # an empty panel slot: the legend goes there
        sns.move_legend(g, "center", bbox_to_anchor=(0.88, 0.25))
    return save_figure(g.figure, out, "latency_ratio")


def fig_learning(curves: pd.DataFrame, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for replay, grp in curves.groupby("replay", sort=False):
        stats = grp.groupby("env_step")["return"].agg(["mean", "min", "max"])
        ax.plot(stats.index, stats["mean"], label=replay)
        ax.fill_between(stats.index, stats["min"], stats["max"], alpha=0.15)
    ax.set(xlabel="env steps", ylabel="mean return of the last 10 episodes",
           title="DQN on CartPole: mean over seeds (band: min-max)")
    ax.legend()
    return save_figure(fig, out, "learning_curves")
