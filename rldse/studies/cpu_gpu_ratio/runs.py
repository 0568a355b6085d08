"""The study's runs: per environment the sweep over ratios, its unit costs and knee, and
the optimal ratio's band draws (parts 1 and 2); then the Optuna search (part 3)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.search import load_study_file, run_study
from rldse.sim import simulate
from rldse.sim.bands import bands
from rldse.sim.machine import Machine
from rldse.studies.common import load_params
from rldse.studies.cpu_gpu_ratio.machine import (
    Host,
    host_of,
    ratio_spec,
    whole_ratios,
    whole_spec,
)
from rldse.studies.cpu_gpu_ratio.params import SEARCH_OUT, Params
from rldse.studies.cpu_gpu_ratio.rates import consumption, knee, production
from rldse.studies.plan import Planned
from rldse.workloads import open_trace as load_trace
from rldse.workloads.actor_learner.program.unit_costs import UnitCosts, unit_costs


def _setup(study_dir: Path) -> tuple[Params, object, list[int], Host]:
    """The study's parameters, its search file, its ratios (sorted) and its host, checked."""
    p = load_params(study_dir, Params)
    if p.atari not in p.environments:
        raise RldseError(f"{study_dir / 'study.yaml'}: atari: '{p.atari}' is not one of "
                         f"environments ({', '.join(p.environments)})")
    sf = load_study_file(study_dir / p.search)
    ratios = sorted(set(p.ratios))
    host = host_of(sf)
    if ratios[-1] + 1 > host.cores * host.sockets:
        raise RldseError(f"{study_dir / 'study.yaml'}: ratios: {ratios[-1]} actors and the "
                         f"learner's core need {ratios[-1] + 1} cores; the {host.preset} "
                         f"host has {host.sockets} × {host.cores}")
    return p, sf, ratios, host


def plan(study_dir: Path) -> list[Planned]:
    """The study's simulations, for its up-front estimate (rldse.studies.plan): per
    environment the sweep and its band draws (at most the widest window of ratios the
    nominal optimum can pick), priced at the most actors; then the search, whole."""
    p, sf, ratios, host = _setup(study_dir)
    window = max(sum(r / p.band_window <= q <= r * p.band_window for q in ratios)
                 for r in ratios)
    spec = ratio_spec(p, sf, host, ratios[-1])
    out = []
    for env, e in p.environments.items():
        trace = sf.loaded_trace if e.trace is None else load_trace(study_dir / e.trace)
        out.append(Planned(f"{env} sweep and band runs (at most)",
                           len(ratios) + window * p.bands, trace, spec))
    return [*out, Planned("search", 1, search=study_dir / p.search)]


@dataclass(frozen=True)
class Runs:
    """What the runs produced, for the report: the study's parameters, search file, ratios
    (sorted) and host; the sweep (``sweep``: results.csv, with the analytic production and
    consumption at each point); per environment its trace, unit costs, knee and the
    optimal ratio of every band draw; and the search's report and trials."""

    params: Params
    sf: object
    ratios: list[int]
    host: Host
    sweep: pd.DataFrame
    traces: dict
    units: dict[str, UnitCosts]
    knees: dict[str, float]
    optima: dict[str, np.ndarray]
    search: object
    trials: pd.DataFrame
    #: the whole DGX-1 (8 V100s, 8 data-parallel learners, 2 × 20 cores) at the ratios
    #: it can provision: one row per environment and ratio (whole_dgx1.csv)
    whole: pd.DataFrame = None  # type: ignore[assignment]


def _point(env: str, r: int, sp, res) -> dict:
    """One sweep row: the provisioned machine at ``r`` actors per GPU and what it ran."""
    return {"environment": env, "actors_per_gpu": r, "cores_per_gpu": r + 1,
            "provisioned_cores": sp.cpu.cores * sp.cpu.sockets,
            "sockets": sp.cpu.sockets,
            "env_steps_per_s": res.env_steps_per_s,
            "steps_per_joule": res.steps_per_joule,
            "avg_power_w": res.avg_power_w, "bottleneck": res.bottleneck,
            **{f"{kind}_mj_per_step": 1e3 * sum(
                d.energy_j for d in res.devices if d.kind == kind)
               / res.env_steps for kind in ("cpu", "gpu")}}


def _optima(p: Params, sf, host: Host, ratios: list[int], trace,
            cur: pd.DataFrame) -> np.ndarray:
    """Each band draw's optimal ratio (most steps/J): the same Latin-hypercube rows at the
    ratios within ``band_window`` of the nominal optimum."""
    best = int(cur.loc[cur.steps_per_joule.idxmax(), "actors_per_gpu"])
    window = [r for r in ratios if best / p.band_window <= r <= best * p.band_window]
    draws = np.array([bands(trace, ratio_spec(p, sf, host, r), p.bands, seed=sf.seed)
                      .runs["steps_per_joule"] for r in window])
    return np.asarray(window)[np.argmax(draws, axis=0)]


def _sweep(study_dir: Path, p: Params, sf, ratios: list[int], host: Host,
           progress: bool) -> tuple[pd.DataFrame, dict, dict, dict, dict]:
    """Per environment: the sweep's rows, its trace, unit costs, knee and band optima."""
    rows, optima, knees, units, traces = [], {}, {}, {}, {}
    with tqdm(total=len(p.environments) * len(ratios), desc="cpu_gpu_ratio sweep",
              disable=None if progress else True, unit="sim") as bar:
        for env, e in p.environments.items():
            trace = sf.loaded_trace if e.trace is None else load_trace(study_dir / e.trace)
            traces[env] = trace
            for r in ratios:
                sp = ratio_spec(p, sf, host, r)
                rows.append(_point(env, r, sp, simulate(trace, sp, seed=sf.seed)))
                bar.update()
            u = units[env] = unit_costs(Machine(trace, ratio_spec(p, sf, host, ratios[-1])))
            knees[env] = knee(u, ratios[-1], float(ratios[-1]))
            cur = pd.DataFrame([x for x in rows if x["environment"] == env])
            optima[env] = _optima(p, sf, host, ratios, trace, cur)
    sweep = pd.DataFrame(rows)
    sweep["production"] = [float(production(units[e], r, r)) for e, r in
                           zip(sweep.environment, sweep.actors_per_gpu, strict=True)]
    sweep["consumption"] = [float(consumption(units[e], r)) for e, r in
                            zip(sweep.environment, sweep.actors_per_gpu, strict=True)]
    return sweep, traces, units, knees, optima


def _whole(study_dir: Path, p: Params, sf, ratios: list[int], host: Host,
           traces: dict) -> pd.DataFrame:
    """The whole DGX-1 at each ratio it can provision, per environment: throughput,
    steps/J and the all-reduce's share of the run."""
    rows = []
    for env, trace in traces.items():
        for r in whole_ratios(ratios, host):
            sp = whole_spec(p, sf, host, r)
            res = simulate(trace, sp, seed=sf.seed)
            rows.append({**_point(env, r, sp, res), "gpus": sp.gpu.count,
                         "learner_gpus": sp.workload["learner_gpus"],
                         "allreduce_share": res.breakdown_s.get("allreduce_s", 0.0)
                         / res.sim_time_s})
    return pd.DataFrame(rows)


def collect(study_dir: Path, out: Path, progress: bool = True) -> Runs:
    """Run the sweep, its bands and the search (into out/search); write results.csv in
    out."""
    p, sf, ratios, host = _setup(study_dir)
    sweep, traces, units, knees, optima = _sweep(study_dir, p, sf, ratios, host, progress)
    whole = _whole(study_dir, p, sf, ratios, host, traces)
    # ---- the Optuna search (fresh each run, in the new out/: every number is this run's) ---
    # priced: with the study, before it ran (plan); not again after the sweep
    rep = run_study(study_dir / p.search, progress=progress, out_dir=out / SEARCH_OUT,
                    priced=True)
    trials = pd.read_parquet(rep.files["trials.parquet"])

    out.mkdir(parents=True, exist_ok=True)
    sweep.to_csv(out / "results.csv", index=False)
    whole.to_csv(out / "whole_dgx1.csv", index=False)
    return Runs(p, sf, ratios, host, sweep, traces, units, knees, optima, rep, trials, whole)
