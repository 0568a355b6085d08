"""The study's figures: GPU memory against the A6000's capacity, and Monte-Carlo against
n-step TD (the models' band beside TimeRL's measurements)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.common import save_figure
from rldse.studies.timerl_memory.params import Reinforce


def memory_figure(ppo_df: pd.DataFrame, rl: pd.DataFrame, out: Path) -> Path:
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    base = ppo_df[~ppo_df.swap]
    sw = ppo_df[ppo_df.swap]
    x = np.arange(len(base))
    a.bar(x - 0.2, base.baseline_need_gb, 0.4, label="baselines, no swapping")
    a.bar(x + 0.2, sw.resident_gb, 0.4, label="Tempo's program, with swapping")
    cap = float(base.capacity_gb.iloc[0])
    for ax in (a, b):
        ax.axhline(cap, color="black", ls="--", lw=1, label=f"A6000 {cap:.1f} GB")
        ax.set_yscale("log")
        ax.set_ylabel("GPU memory (GB, log scale)")
    a.set_xticks(x, [f"3×{s}×{s}" for s in base.side])
    a.set(xlabel="observation shape (fp32)", title="PPO, 256 envs × 1,000 steps")
    a.legend(fontsize=8)
    r = rl[~rl.swap]
    b.bar(np.arange(len(r)), r.need_gb, 0.6, color="tab:purple")
    b.set_xticks(np.arange(len(r)), r.objective, rotation=20)
    b.set(xlabel="REINFORCE objective (3×256×256)", title="needed without swapping")
    b.legend(fontsize=8)
    return save_figure(fig, out, "memory_need")


def td_mc_figure(band: pd.DataFrame, rf: Reinforce, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    cols = list(band.columns)
    q = np.array([percentiles(band[c].to_numpy()) for c in cols])
    x = np.arange(len(cols))
    ax.bar(x, q[:, 1], 0.5, yerr=[q[:, 1] - q[:, 0], q[:, 2] - q[:, 1]], capsize=4,
           label="rldse: TimeRL's program on the part models (p50, p5-p95)")
    pub = [rf.published.mc_s if c == "Monte-Carlo" else rf.published.td_s for c in cols]
    ax.scatter(x, pub, color="black", marker="D", zorder=3, label="TimeRL measured (Tempo)")
    ax.set_xticks(x, cols)
    ax.set(xlabel="REINFORCE objective (3×256×256, swapping where needed)",
           ylabel="time per iteration (s)", title="Monte-Carlo vs n-step TD")
    ax.legend(fontsize=8, loc="upper right")
    return save_figure(fig, out, "td_vs_mc")
