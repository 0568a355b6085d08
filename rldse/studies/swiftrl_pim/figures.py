"""The study's figures, from the presets' values (results.csv's draw -1)."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from matplotlib.ticker import NullLocator

from rldse.studies.common import save_figure
from rldse.studies.swiftrl_pim.params import (
    PAPER_ALGORITHM,
    PAPER_DTYPE,
    SPLIT,
    SPLIT_LABELS,
    Params,
)


def _grid(rows: int, cols: int):
    fig, axes = plt.subplots(rows, cols, figsize=(5.6 * cols, 4.3 * rows), squeeze=False)
    return fig, axes


def _dpu_axis(ax, dpus: list[int], label: str = "DPUs (upmem-p21)") -> None:
    ax.set_xscale("log")
    ax.set_xticks(dpus, [str(d) for d in dpus])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xlabel(label)


#: the PIM programs the figures draw: results.csv's dtype -> (label, colour)
PROGRAMS = {PAPER_DTYPE: ("released kernel (paper's program)", "C2"),
            "int32": ("what-if: split INT32", "C0"), "fp32": ("what-if: split FP32", "C3")}


def fig_scaling(res: pd.DataFrame, p: Params, out: Path) -> Path:
    alg, passes = PAPER_ALGORITHM, p.scaling.passes[0]
    pim = res[(res.device == "pim") & (res.passes == passes) & (res.algorithm == alg)]
    fig, axes = _grid(1, len(p.envs))
    for ax, env in zip(axes[0], p.envs, strict=True):
        for dtype, (name, c) in PROGRAMS.items():
            g = pim[(pim.env == env) & (pim["dtype"] == dtype)].sort_values("dpus")
            ax.plot(g.dpus, g.kernel_s, "-o", color=c, label=f"{name}: DPU kernel")
            ax.plot(g.dpus, g.total_s, "--s", color=c, alpha=0.6,
                    label=f"{name}: total (with transfers)")
            ax.plot(g.dpus, g.kernel_s.iloc[0] * g.dpus.iloc[0] / g.dpus, ":", color=c,
                    label=f"{name}: ideal")
        _dpu_axis(ax, p.scaling.dpus)
        ax.set(yscale="log", ylabel="time (s)",
               title=f"{env}, {alg}: {p.scaling.transitions:,} transitions, {passes} pass(es)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "strong_scaling")


def fig_split(res: pd.DataFrame, p: Params, out: Path) -> Path:
    """SwiftRL's time split of the paper's program (the released kernel)."""
    pim = res[(res.device == "pim") & (res.algorithm == PAPER_ALGORITHM)
              & (res["dtype"] == PAPER_DTYPE)]
    fig, axes = _grid(len(p.scaling.passes), len(p.envs))
    colors = ("C2", "C0", "C3", "C1")
    for i, passes in enumerate(p.scaling.passes):
        for ax, env in zip(axes[i], p.envs, strict=True):
            g = pim[(pim.env == env) & (pim.passes == passes)].sort_values("dpus")
            x = np.arange(len(g))
            bottom = np.zeros(len(g))
            for col, name, c in zip(SPLIT, SPLIT_LABELS, colors, strict=True):
                share = (g[col] / g.total_s).to_numpy() * 100
                ax.bar(x, share, bottom=bottom, color=c, label=name)
                bottom += share
            for xi, total in zip(x, g.total_s, strict=True):
                ax.text(xi, 101.5, f"{total * 1e3:.3g} ms", ha="center", fontsize=7)
            ax.set_xticks(x, [str(d) for d in g.dpus])
            ax.set(xlabel="DPUs (upmem-p21)", ylabel="share of total time (%)", ylim=(0, 110),
                   title=f"{env}, released kernel, {passes} pass(es)")
    axes[0][0].legend(fontsize=7, loc="lower left", framealpha=0.9)
    return save_figure(fig, out, "time_split")


def fig_dtype(res: pd.DataFrame, p: Params, out: Path) -> Path:
    """FP32 time over INT32 time per DPU count, kernel and total: rldse's split kernel
    (the what-if; the released kernel has neither format)."""
    passes = p.scaling.passes[0]
    pim = res[(res.device == "pim") & (res.passes == passes)
              & res["dtype"].isin(["int32", "fp32"])]
    both = pim.pivot_table(index=["env", "algorithm", "dpus"], columns="dtype",
                           values=["kernel_s", "total_s"]).reset_index()
    fig, axes = _grid(1, 1)
    ax = axes[0][0]
    for i, ((env, alg), g) in enumerate(both.groupby(["env", "algorithm"])):
        g = g.sort_values("dpus")
        c = f"C{i}"
        ax.plot(g.dpus, g["kernel_s"]["fp32"] / g["kernel_s"]["int32"], "-o", color=c,
                label=f"{env}, {alg}: DPU kernel")
        ax.plot(g.dpus, g["total_s"]["fp32"] / g["total_s"]["int32"], "--s", color=c,
                alpha=0.6, label=f"{env}, {alg}: total")
    ax.axhline(1, color="k", linewidth=0.8)
    _dpu_axis(ax, p.scaling.dpus)
    ax.set(ylabel="FP32 time / INT32 time (x)", ylim=(0, None),
           title=f"What-if (split kernel): emulated FP32 vs INT32 on DPUs ({passes} "
                 "pass(es))")
    ax.legend(fontsize=6)
    return save_figure(fig, out, "int32_vs_fp32")


def fig_devices(res: pd.DataFrame, p: Params, out: Path) -> Path:
    """Total time of the released kernel and the split what-ifs on PIM, the compiled CPU
    loop and the GPU (one line each: their times do not depend on the format)."""
    s, alg = p.scaling, PAPER_ALGORITHM
    sub = res[(res.passes == s.passes[0]) & (res.algorithm == alg)]
    fig, axes = _grid(1, len(p.envs))
    lines = [(f"PIM {s.pim}, {name}", "pim", dtype, c, "-" if dtype == PAPER_DTYPE else "--")
             for dtype, (name, c) in PROGRAMS.items()]
    lines += [(f"CPU {s.cpu} (compiled, one thread)", "cpu", "int32", "C1", "-"),
              (f"GPU {s.gpu}", "gpu", "int32", "C4", "-")]
    for ax, env in zip(axes[0], p.envs, strict=True):
        for label, device, dtype, c, style in lines:
            g = sub[(sub.env == env) & (sub.device == device)
                    & (sub["dtype"] == dtype)].sort_values("dpus")
            ax.plot(g.dpus, g.total_s * 1e3, marker="o", linestyle=style, color=c,
                    label=label)
        _dpu_axis(ax, s.dpus, "agents (= DPUs on PIM)")
        ax.set(yscale="log", ylabel="training time, total (ms)",
               title=f"{env}, {alg}: {s.transitions:,} transitions, {s.passes[0]} pass(es)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "pim_cpu_gpu")


def fig_learning(learn: pd.DataFrame, optimal: dict, out: Path) -> Path:
    envs = list(dict.fromkeys(learn.env))
    sizes = [learn[learn.env == e].groupby(["part", "algorithm", "agents",
                                            "passes_per_round"]).ngroups for e in envs]
    fig, axes = plt.subplots(1, len(envs), figsize=(sum(0.75 * n + 2 for n in sizes), 4.8),
                             width_ratios=sizes, squeeze=False)
    for ax, env in zip(axes[0], envs, strict=True):
        g = learn[learn.env == env]
        keys = list(dict.fromkeys(zip(g.part, g.algorithm, g.agents, g.passes_per_round,
                                      strict=True)))
        labels = [f"{a}, " + ("1 agent" if n == 1 else f"{n} DPUs")
                  + ("" if part == "scaling" else f"\nmulti-agent, {ppr} pass(es)/round")
                  for part, a, n, ppr in keys]
        x = np.arange(len(keys))
        for i, dtype in enumerate(("int32", "fp32")):
            vals = [g[(g.part == k[0]) & (g.algorithm == k[1]) & (g.agents == k[2])
                      & (g.passes_per_round == k[3]) & (g["dtype"] == dtype)]
                    .success_rate.iloc[0] * 100 for k in keys]
            bars = ax.bar(x + (i - 0.5) * 0.38, vals, 0.38, label=dtype)
            ax.bar_label(bars, fmt="%.0f", fontsize=6)
        ax.axhline(optimal[env] * 100, color="k", linestyle=":", label="optimal policy (γ)")
        ax.set_xticks(x, labels, fontsize=7, rotation=35, ha="right")
        ax.set(ylabel="greedy policy success rate (%)", ylim=(0, 108),
               title=f"{env}: policies learned offline (exact evaluation)")
        ax.legend(fontsize=7)
    return save_figure(fig, out, "learning")

