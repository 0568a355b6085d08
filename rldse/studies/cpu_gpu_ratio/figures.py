"""The study's figures: the sweep against the analytic rates, and the search's trials."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

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
    metric = sf.objectives[0].metric
    ok_all = trials.feasible.fillna(False).astype(bool)  # no record: not feasible
    done = trials[trials.source.isin(["simulated", "cache"])]
    ok = ok_all[done.index]
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4.2))
    gpus = done["gpu.count"] if "gpu.count" in done else pd.Series(1, index=done.index)
    sc = a.scatter(done.avg_power_w[ok], done[metric][ok], c=gpus[ok], cmap="viridis", s=25,
                   label="feasible")
    a.scatter(done.avg_power_w[~ok], done[metric][~ok], marker="x", color="tab:red", s=25,
              label="infeasible (breaks a constraint)")
    fig.colorbar(sc, ax=a, label="GPUs")
    for con in sf.parsed_constraints:
        if con.names == ("avg_power_w",) and con.op == "<=":
            a.axvline(con.bound, color="tab:red", ls="--", label=f"cap {con.bound:g} W")
    label = "throughput (env steps/s)" if metric == "env_steps_per_s" else metric
    a.set(xlabel="average power (W)", ylabel=label, title="simulated trials")
    a.legend(fontsize=8)
    feas = trials.assign(v=trials[metric].where(ok_all))
    best = (feas.v.cummax() if sf.objectives[0].direction == "maximize"
            else feas.v.cummin()).ffill()
    b.plot(trials.number[ok_all], trials[metric][ok_all], ".", color="grey",
           label="feasible trial")
    b.plot(trials.number[~ok_all], trials[metric][~ok_all], "x", color="tab:red", ms=4,
           label="infeasible trial")
    b.step(trials.number, best, where="post", color="tab:green", label="best feasible so far")
    b.set(xlabel="trial number", ylabel=label, title="search history")
    b.legend(fontsize=8)
    return save_figure(fig, out, "search")
