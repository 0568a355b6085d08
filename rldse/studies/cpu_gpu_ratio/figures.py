"""The study's figures: the sweep against the analytic rates, and the search's trials."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rldse.search.figures import trials_figure
from rldse.sim.bands import percentiles
from rldse.studies.common import save_figure
from rldse.studies.cpu_gpu_ratio.rates import consumption, production


def sweep_figure(sweep, knees, units, optima, ratios, out: Path) -> Path:
    envs = list(knees)
    fig, axes = plt.subplots(2, len(envs), figsize=(5.5 * len(envs), 7.5), squeeze=False)
    n = np.geomspace(ratios[0], ratios[-1], 200)
    for j, env in enumerate(envs):
        cur = sweep[sweep.environment == env]
        a, b = axes[0, j], axes[1, j]
        a.plot(cur.actors_per_gpu, cur.env_steps_per_s, "o-", ms=4, label="simulated")
        a.plot(n, production(units[env], n, n), "--", color="tab:red", label="production")
        a.plot(n, consumption(units[env], n), "--", color="tab:blue", label="consumption")
        b.plot(cur.actors_per_gpu, cur.steps_per_joule, "o-", ms=4, color="tab:green",
               label="simulated (nominal presets)")
        lo, _, hi = percentiles(optima[env].astype(float))
        b.axvspan(lo, hi, color="tab:green", alpha=0.15, label="optimal ratio p5-p95")
        for ax in (a, b):
            if np.isfinite(knees[env]):
                ax.axvline(knees[env], color="grey", ls=":",
                           label=f"knee {knees[env]:.1f}")
            ax.set_xscale("log", base=2)
            ax.legend(fontsize=7)
        a.set(title=env, ylabel="throughput (env steps/s)")
        a.set_ylim(0, 1.4 * float(cur.env_steps_per_s.max()))
        b.set(xlabel="actors per GPU (one core each, + 1 for the learner)",
              ylabel="env steps per joule")
    return save_figure(fig, out, "ratio")


def search_figure(trials: pd.DataFrame, sf, out: Path) -> Path:
    """The search's trials as every search draws them (rldse.search.figures.trials_figure)."""
    objective = (sf.objectives[0].metric, sf.objectives[0].direction)
    return save_figure(trials_figure(trials, objective, sf.parsed_constraints), out, "search")
