"""Inci et al., "The Architectural Implications of Distributed Reinforcement Learning on
CPU-GPU Systems" (EMC2 2020, arXiv 2012.04210): the CPU/GPU ratio of an actor-learner
system, actors on CPU cores, learner and batched inference on the GPU.

The ratio is provisioned hardware: r actors per GPU each get a core of their own, and the
CPU is bought with r + 1 cores per GPU (the learner's dispatch keeps one) of the DGX-1's
part, the Xeon E5-2698 v4, on the fewest sockets (never more than the part's 20 cores per
socket nor the DGX-1's two sockets), so every core adds its price and its idle power
(rldse.models.cpu's provisioned socket). Part 1 sweeps r with one V100 (the machine, trace
and workload are the `base` of the study's search file) for each environment in
study.yaml, each with its own capture (CartPole-v1 with an MLP; ALE Pong with the Nature
CNN, whose env steps cost about 60 times more), the actors' and learner's costs from the
captures' per-op CPU time (rldse.trace.host_cost_s). It records throughput, steps per
joule and the engine's bottleneck, and the optimal ratio (most steps/J) with its band:
every ranged preset number sampled by rldse.sim.bands' Latin hypercube, the same draws at
every ratio, so each draw has its own optimum. Part 2 computes, from the same unit costs
the simulation books (`rldse.workloads.actor_learner.program.unit_costs.unit_costs`), the actors'
production rate and the learner's consumption rate, and the knee where they meet: a
consistency check of the simulation against closed-form rates, not a published value.
Part 3 runs the search file (an Optuna study, `rldse.search.run_study`) for the best
design under a power cap. Inci et al.'s readable publication here is the abstract: only
what it states is compared with (``ABSTRACT``); other rows say that nothing can be.

The analytic rates, for N actors with E envs each, C cores, one GPU:

- production P(N) = min(N·E / (t_env + t_inf(N) + w), C·E / t_env): an actor's vector
  step is its env step on a core (t_env), one inference batch of the N actors (t_inf)
  and, when inference shares the learner's GPU, a wait w = g_learn / 2 behind the
  kernels of the minibatch step in progress (g_learn: its GPU time; the learner is busy
  at and past the knee); C cores step at most C·E / t_env;
- consumption L(N) = 1 / (h / (E·T) + max(epochs·t_learn / B, epochs·g_learn / B +
  g_inf(N) / (N·E))): per env step the learner receives its share of a rollout (h per
  rollout of E·T steps) and trains it `epochs` times in minibatches of B; a minibatch
  step takes t_learn (the later of its core's dispatch and its kernels), unless the GPU,
  which also runs its share of an inference batch's kernels (g_inf) when inference
  shares it, is busier than that;
- the knee N* is where P(N*) = L(N*); below it the actors limit throughput, above it the
  learner.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.models.presets import get_preset
from rldse.paths import StudyOutput
from rldse.search import load_study_file, run_study
from rldse.sim import simulate
from rldse.sim.bands import bands, percentiles
from rldse.sim.machine import Machine
from rldse.studies.common import load_params, save_figure
from rldse.studies.plan import Planned
from rldse.studies.report import Claim, Report, Tolerance, markdown_table
from rldse.system import parse_spec
from rldse.trace import compute_mask
from rldse.workloads import open_trace as load_trace
from rldse.workloads.actor_learner.program.unit_costs import UnitCosts, unit_costs

#: the search's outputs, under the study's out/
SEARCH_OUT = "search"
#: steps per joule "peaks near the knee": its best ratio within this factor of the knee
NEAR_FACTOR = 2.0
#: What Inci et al. published that can be read and cited: the abstract of arXiv 2012.04210
#: (the paper's figures and numbers are not available to this study). Every row that
#: compares rldse with rldse (its analytic knee, its bottleneck label) is a consistency
#: check, and says so.
ABSTRACT = ("Inci et al. (arXiv 2012.04210, abstract): \"the number of actors running the "
            "environment interactions and the amount of hardware resources available to them "
            "are the primary performance and power efficiency limiters\"")
NOTHING_PUBLISHED = "nothing published can be read for this (no value, no curve)"


class Environment(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str | None = Field(default=None, description="its capture, relative to the "
                              "study folder; unset: the search file's trace")


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    search: StudyOutput  # its outputs go to the study's out/search; kept inside the study
    ratios: list[int] = Field(min_length=3, description="actors per GPU, one core each")
    env_steps: int = Field(gt=0, description="env steps per sweep simulation")
    environments: dict[str, Environment] = Field(min_length=1)
    atari: str = Field(description="the environment the steps/J claim is judged on")
    bands: int = Field(ge=2, le=256, description="Latin-hypercube draws per ratio "
                       "(rldse.sim.bands) behind the optimal ratio's band")
    band_window: float = Field(gt=1, le=64, description="bands are drawn at the ratios "
                               "within this factor of each environment's nominal optimum")


# ---- analytic rates ---------------------------------------------------------------------

def _infer_s(u: UnitCosts, n: np.ndarray) -> np.ndarray:
    """One inference batch of n actors (interpolated; n beyond the table: its last row)."""
    table = np.asarray(u.act_s)
    return np.interp(n, np.arange(len(table)), table)


def production(u: UnitCosts, n, cores: int) -> np.ndarray:
    """Env steps/s that n actors on `cores` cores produce (module docstring)."""
    n = np.asarray(n, np.float64)
    e = u.envs_per_actor
    wait = u.learn_step_device_s / 2 if u.inference_on_learner_gpu else 0.0
    free = n * e / (u.env_step_s + _infer_s(u, n) + wait)
    return np.minimum(free, cores * e / u.env_step_s)


def consumption(u: UnitCosts, n) -> np.ndarray:
    """Env steps/s the learner can train with n actors (module docstring)."""
    n = np.asarray(n, np.float64)
    e = u.envs_per_actor
    gpu_s = u.epochs * u.learn_step_device_s / u.minibatch
    if u.inference_on_learner_gpu:
        gpu_s = gpu_s + np.interp(n, np.arange(len(u.act_device_s)), u.act_device_s) / (n * e)
    per_step = (u.handoff_s / (e * u.rollout_len)
                + np.maximum(u.epochs * u.learn_step_s / u.minibatch, gpu_s))
    return 1.0 / per_step


def knee(u: UnitCosts, cores: int, top: float) -> float:
    """Actors where production first reaches consumption, in [1, top]: 1.0 if it already
    does with one actor, inf if it never does."""
    n = np.geomspace(1.0, top, 2000)
    gap = production(u, n, cores) - consumption(u, n)
    if gap[0] >= 0:
        return 1.0
    up = np.flatnonzero(gap >= 0)
    if not len(up):
        return float("inf")
    i = up[0]
    return float(n[i - 1] + (n[i] - n[i - 1]) * -gap[i - 1] / (gap[i] - gap[i - 1]))



# ---- the machine ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Host:
    """The search base's CPU part: its preset, cores per socket (the part's) and sockets
    (the machine's: the DGX-1 has two E5-2698 v4)."""

    preset: str
    cores: int
    sockets: int


def _host(sf) -> Host:
    cpu = sf.base["cpu"]
    name = cpu["preset"]
    cores = int(cpu.get("cores") or get_preset("cpu", name).params["cores"].value)
    return Host(name, cores, int(cpu.get("sockets", 1)))


def provisioned(cores_needed: int, host: Host) -> tuple[int, int]:
    """(cores per socket, sockets) that provision ``cores_needed`` cores on the host's
    part: the fewest sockets, never more cores per socket than the part has (a socket
    with fewer cores stands for a smaller SKU of the same part)."""
    sockets = -(-cores_needed // host.cores)
    if sockets > host.sockets:
        raise RldseError(f"{cores_needed} cores exceed the {host.preset} host "
                         f"({host.sockets} × {host.cores})")
    return -(-cores_needed // sockets), sockets


# ---- the study ------------------------------------------------------------------------------

def _ratio_spec(p: Params, sf, host: Host, r: int):
    """The sweep's design at ``r`` actors per GPU: a core per actor, one for the learner."""
    where = f"{p.search}: ratio {r}"
    base = sf.search_space.spec({"workload.actors": r, "workload.cores": r, "gpu.count": 1,
                                 "workload.env_steps": p.env_steps}, where=where)
    raw = base.model_dump(mode="json", exclude_none=True)
    cores, sockets = provisioned(r + 1, host)
    raw["cpu"].update(cores=cores, sockets=sockets)
    return parse_spec(raw, where=where)


def _setup(study_dir: Path) -> tuple[Params, object, list[int], Host]:
    """The study's parameters, its search file, its ratios (sorted) and its host, checked."""
    p = load_params(study_dir, Params)
    if p.atari not in p.environments:
        raise RldseError(f"{study_dir / 'study.yaml'}: atari: '{p.atari}' is not one of "
                         f"environments ({', '.join(p.environments)})")
    sf = load_study_file(study_dir / p.search)
    ratios = sorted(set(p.ratios))
    host = _host(sf)
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
    spec = _ratio_spec(p, sf, host, ratios[-1])
    out = []
    for env, e in p.environments.items():
        trace = sf.loaded_trace if e.trace is None else load_trace(study_dir / e.trace)
        out.append(Planned(f"{env} sweep and band runs (at most)",
                           len(ratios) + window * p.bands, trace, spec))
    return [*out, Planned("search", 1, search=study_dir / p.search)]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    p, sf, ratios, host = _setup(study_dir)
    search_file = study_dir / p.search

    def spec(r: int):
        return _ratio_spec(p, sf, host, r)

    rows, optima, knees, units, traces = [], {}, {}, {}, {}
    with tqdm(total=len(p.environments) * len(ratios), desc="cpu_gpu_ratio sweep",
              disable=not progress, unit="sim") as bar:
        for env, e in p.environments.items():
            trace = sf.loaded_trace if e.trace is None else load_trace(study_dir / e.trace)
            traces[env] = trace
            for r in ratios:
                sp = spec(r)
                res = simulate(trace, sp, seed=sf.seed)
                rows.append({"environment": env, "actors_per_gpu": r, "cores_per_gpu": r + 1,
                             "provisioned_cores": sp.cpu.cores * sp.cpu.sockets,
                             "sockets": sp.cpu.sockets,
                             "env_steps_per_s": res.env_steps_per_s,
                             "steps_per_joule": res.steps_per_joule,
                             "avg_power_w": res.avg_power_w, "bottleneck": res.bottleneck,
                             **{f"{kind}_mj_per_step": 1e3 * sum(
                                 d.energy_j for d in res.devices if d.kind == kind)
                                / res.env_steps for kind in ("cpu", "gpu")}})
                bar.update()
            u = units[env] = unit_costs(Machine(trace, spec(ratios[-1])))
            knees[env] = knee(u, ratios[-1], float(ratios[-1]))
            cur = pd.DataFrame([x for x in rows if x["environment"] == env])
            best = int(cur.loc[cur.steps_per_joule.idxmax(), "actors_per_gpu"])
            window = [r for r in ratios if best / p.band_window <= r <= best * p.band_window]
            draws = np.array([bands(trace, spec(r), p.bands, seed=sf.seed)
                              .runs["steps_per_joule"] for r in window])
            optima[env] = np.asarray(window)[np.argmax(draws, axis=0)]
    sweep = pd.DataFrame(rows)
    sweep["production"] = [float(production(units[e], r, r)) for e, r in
                           zip(sweep.environment, sweep.actors_per_gpu, strict=True)]
    sweep["consumption"] = [float(consumption(units[e], r)) for e, r in
                            zip(sweep.environment, sweep.actors_per_gpu, strict=True)]

    # ---- the Optuna search (fresh each run, in the new out/: every number is this run's) ---
    # priced: with the study, before it ran (plan); not again after the sweep
    rep = run_study(search_file, progress=progress, out_dir=out / SEARCH_OUT, priced=True)
    trials = pd.read_parquet(rep.files["trials.parquet"])

    out.mkdir(parents=True, exist_ok=True)
    sweep.to_csv(out / "results.csv", index=False)
    report = Report(
        draws=p.bands,
        name="cpu_gpu_ratio", title="Inci et al.: the CPU/GPU ratio of actor-learner RL",
        source="Inci, Bolotin, Fu, Dalal, Mannor, Nellans and Marculescu, \"The "
               "Architectural Implications of Distributed Reinforcement Learning on CPU-GPU "
               "Systems\", EMC2 2020, arXiv 2012.04210",
        summary="rldse's actor-learner PPO program (actors on CPU cores, one batching "
                "inference server per GPU, an asynchronous learner) on the DGX-1's parts: "
                f"{host.preset} sockets (the DGX-1 has {host.sockets} × {host.cores} cores) "
                "and one V100, the CPU provisioned per ratio: r actors per GPU on r + 1 "
                f"cores of the part, on the fewest sockets (never more than {host.cores} "
                "cores per socket or the host's sockets), each core with its price and idle "
                "power. Swept for the CartPole and the ALE Pong captures, whose actor and "
                "learner costs are their per-op CPU time (rldse.trace.host_cost_s; the "
                "hand-offs between processes are waits, costed from wall time); the "
                f"optimal ratio's band over {p.bands} Latin-hypercube draws of the presets' "
                "ranged numbers; the production and consumption rates from the same unit "
                "costs (a consistency check of the simulation, not a published value); an "
                "Optuna search under a power cap. What Inci et al. published that can be "
                "read here is the paper's abstract: rows it cannot back are consistency "
                "checks or not comparable, never reproductions.")
    for env in p.environments:
        _env_claims(report, env, sweep[sweep.environment == env].set_index("actors_per_gpu"),
                    knees[env], optima[env], atari=env == p.atari)
    _moves_claim(report, p, optima, units, ratios)
    _search_claim(report, rep, trials, sf, sweep[sweep.environment == next(iter(
        p.environments))])

    # ---- sections and figures -------------------------------------------------------------
    report.sections.append(("Unit costs behind the analytic rates", markdown_table(
        pd.DataFrame([(env, f"{u.env_step_s / u.envs_per_actor * 1e6:.1f}",
                       f"{u.learn_step_s * 1e6:.0f}", f"{float(consumption(u, ratios[-1])):,.0f}",
                       f"{knees[env]:.1f}",
                       "{:.0f} / {:.0f} / {:.0f}".format(*percentiles(optima[env])))
                      for env, u in units.items()],
                     columns=["environment", "env step per env (µs)", "learner minibatch "
                              "step (µs)", "learner's consumption (steps/s)", "knee "
                              "(actors/GPU)", "optimal actors/GPU p5 / p50 / p95"]))))
    report.sections.append(("Captured costs: CPU time and wall time per op",
                            _costs_section(traces)))
    report.sections.append(("Sweep", markdown_table(sweep, 4)))
    report.sections.append(("Optuna search (CartPole, the search file's base)",
                            _search_section(rep, trials, sf)))
    report.figures.append((_sweep_figure(sweep, knees, units, optima, ratios, out),
                           "Throughput and steps per joule against actors per GPU (one "
                           "provisioned core each): simulated, the analytic rates, the knee, "
                           "and the optimal ratio's band"))
    report.figures.append((_search_figure(trials, sf, out), "The Optuna search: every trial's "
                           "power and throughput, and the best feasible so far"))
    report.parameters = {
        "search file": search_file.name, "trace": sf.trace,
        "machine": f"{host.preset} (the DGX-1's {host.sockets} × {host.cores} cores) "
                   "provisioned with r + 1 cores on the fewest sockets; "
                   f"{sf.base['gpu']['preset']}, one GPU",
        "environments": "; ".join(f"{k}: {e.trace or sf.trace}"
                                  for k, e in p.environments.items()),
        "ratios (actors per GPU)": ratios, "env steps per simulation": p.env_steps,
        "band draws per ratio": f"{p.bands}, at ratios within {p.band_window:g}× of the "
                                "nominal optimum",
        "search space": ", ".join(sf.space), "objective": ", ".join(
            f"{o.direction} {o.metric}" for o in sf.objectives),
        "constraints": "; ".join(sf.constraints), "trials": rep.budget,
        "sampler": sf.sampler.name, "seed": sf.seed,
        "verdict rules": "rldse.studies.report.band_verdict; steps/J near the knee: the "
                         f"optimal ratio's band against [knee / {NEAR_FACTOR:g}, knee × "
                         f"{NEAR_FACTOR:g}]; the optimum grows: per paired draw, the "
                         f"Atari optimum / the cheap one's ≥ one step of the ratio grid"}
    return report


def _env_claims(report: Report, env: str, cur: pd.DataFrame, n_star: float,
                optimum: np.ndarray, atari: bool) -> None:
    """Throughput rising to the learner's plateau, and steps/J peaking near the knee."""
    low, high = cur.index.min(), cur.index.max()
    rises = cur.bottleneck.loc[low].startswith("actor") and \
        cur.bottleneck.loc[high].startswith("learner")
    report.claims.append(Claim(
        f"{env}: throughput rises with actors until the GPU-side learner saturates "
        "(consistency: rldse's bottleneck label)",
        f"{NOTHING_PUBLISHED} on saturation; {ABSTRACT}",
        f"{cur.env_steps_per_s.loc[low]:,.0f} → {cur.env_steps_per_s.max():,.0f} steps/s; "
        f"bottleneck '{cur.bottleneck.loc[low]}' at {low}, '{cur.bottleneck.loc[high]}' at "
        f"{high} actors/GPU; rates meet at {n_star:.1f}",
        "same" if rises else "different", "reproduced" if rises else "not reproduced",
        note="a consistency check, not a reproduction: the bottleneck is rldse's own label "
             "(the device the simulation waits on most)" + (
                 "" if rises else "; the sweep does not cross from actor-bound to "
                                  "learner-bound"),
        kind="consistency",
        tolerance="the bottleneck is the actors at the sweep's low end, the learner at its "
                  "high end"))
    lo, mid, hi = percentiles(optimum.astype(np.float64))
    best = cur.loc[int(mid)] if int(mid) in cur.index else cur.loc[cur.steps_per_joule.idxmax()]
    c = Claim.banded(
        f"{env}: steps per joule peaks near the analytic knee (consistency: optimal actors "
        "per GPU against rldse's own knee)",
        published=f"{NOTHING_PUBLISHED}; the check: rldse's analytic knee, where actor "
                  f"production meets learner consumption from the same unit costs (here "
                  f"{n_star:.1f} actors/GPU; near: within {NEAR_FACTOR:g}×)",
        low=n_star / NEAR_FACTOR, high=n_star * NEAR_FACTOR, p5=lo, p50=mid, p95=hi,
        kind="consistency", tolerance=Tolerance(
            n_star / NEAR_FACTOR, n_star * NEAR_FACTOR,
            f"p50 within {NEAR_FACTOR:g}× of rldse's analytic knee "
            f"({n_star / NEAR_FACTOR:.3g}-{n_star * NEAR_FACTOR:.3g} actors/GPU)"),
        note="a consistency check of the simulation against rldse's closed-form rates, not "
             "a published value; "
             f"nominal presets: {cur.steps_per_joule.max():.1f} steps/J at "
             f"{int(cur.steps_per_joule.idxmax())} actors/GPU ({best.avg_power_w:.0f} W)"
             + _past_knee(cur, n_star))
    report.claims.append(c)
    if atari:
        report.claims.append(Claim(
            f"optimal CPU cores per V100 (DGX-1: 2 × Xeon E5-2698 v4, {env} env cost)",
            f"{NOTHING_PUBLISHED} (a DGX-1 ships 40 cores for 8 V100s: 5 per GPU)",
            f"{mid + 1:.0f} cores per GPU (p5-p95 {lo + 1:.0f}-{hi + 1:.0f}): "
            f"{mid:.0f} actors and the learner's core",
            "n/a", "not comparable", kind="prediction", p5=lo + 1, p50=mid + 1, p95=hi + 1,
            tolerance="none (no value)",
            note="nothing Inci et al. published for this machine and workload can be read; "
                 "the row states rldse's answer and its band, not a reproduction"))


def _past_knee(cur: pd.DataFrame, n_star: float) -> str:
    """Where steps/J peaks well past the knee, what keeps it rising: the sweep's energy per
    env step by device, from the first ratio on the throughput plateau to the optimum."""
    best = int(cur.steps_per_joule.idxmax())
    flat = [r for r in cur.index if r >= n_star and r < best]
    if best <= NEAR_FACTOR * n_star or not flat:
        return ""
    a, b = cur.loc[flat[0]], cur.loc[best]
    return (f"; from {flat[0]} to {best} actors/GPU throughput stays flat "
            f"({a.env_steps_per_s:,.0f} → {b.env_steps_per_s:,.0f} steps/s) and the cores' "
            f"energy per env step rises ({a.cpu_mj_per_step:.2f} → {b.cpu_mj_per_step:.2f} "
            "mJ: each actor's core adds its idle power), but the GPU's falls more "
            f"({a.gpu_mj_per_step:.2f} → {b.gpu_mj_per_step:.2f} mJ): more actors make "
            "bigger central inference batches, the same launch-bound kernels for more "
            "observations, and rldse charges a running kernel the board's full dynamic "
            "power (max_w − idle_w), however few SMs it occupies. Batching is real; its "
            "energy saving is overstated for small MLP kernels, which is most likely why "
            "the optimum lies past the knee (rldse.models.gpu's power model)")


def _moves_claim(report: Report, p: Params, optima: dict[str, np.ndarray],
                 units: dict[str, UnitCosts], ratios: list[int]) -> None:
    """The optimum moves with the env step's cost: per draw (the same Latin-hypercube row
    for both environments), the Atari optimum over the cheap one's, against "grows": at
    least one step of the ratio grid."""
    others = [e for e in p.environments if e != p.atari]
    if not others:
        return
    cheap = others[0]
    a, c = optima[p.atari].astype(float), optima[cheap].astype(float)
    step = min(hi / lo for lo, hi in zip(ratios, ratios[1:], strict=False))
    pa, pc = percentiles(a), percentiles(c)
    ua, uc = units[p.atari], units[cheap]
    report.claims.append(Claim.per_configuration(
        f"the optimal ratio grows with the env step's cost ({cheap} → {p.atari})",
        published=f"{ABSTRACT}; implied: a costlier env step needs more actors per GPU, "
                  f"so the optimum grows (here: {p.atari} / {cheap} optimum ≥ "
                  f"{step:.3g}, one step of the ratio grid)",
        low=step, high=math.inf, unit="x",
        bands={"paired draws": percentiles(a / c)},
        tolerance=Tolerance.at_least(step, "x", "grows: at least one step of the ratio grid"),
        note=f"{cheap} {pc[1]:.0f} actors/GPU (p5-p95 {pc[0]:.0f}-{pc[2]:.0f}) at "
             f"{uc.env_step_s / uc.envs_per_actor * 1e6:.0f} µs per env step; {p.atari} "
             f"{pa[1]:.0f} ({pa[0]:.0f}-{pa[2]:.0f}) at "
             f"{ua.env_step_s / ua.envs_per_actor * 1e6:.0f} µs"))


def _search_claim(report: Report, rep, trials: pd.DataFrame, sf, sweep: pd.DataFrame) -> None:
    if not rep.best:
        report.claims.append(Claim("best CPU/GPU ratio under the power cap (Optuna)",
                                   NOTHING_PUBLISHED, "no feasible trial", "n/a",
                                   "not comparable", kind="prediction",
                                   tolerance="none (no value)"))
        return
    b = rep.best[0]
    prm, val = b["params"], b["values"]
    g = int(prm.get("gpu.count", 1))
    n, c = int(prm["workload.actors"]), int(prm["workload.cores"])
    metric = sf.objectives[0].metric
    grid_best = sweep[metric].max() if metric in sweep else float("nan")
    report.claims.append(Claim(
        f"best CPU/GPU ratio under the power cap ({'; '.join(sf.constraints)}), Optuna",
        f"balance CPU and GPU resources; {NOTHING_PUBLISHED} for this system",
        f"{n / g:g} actors and {c / g:g} cores per GPU, {g} GPU(s): {val[metric]:,.0f} "
        f"{metric} (trial {b['number']} of {rep.finished_now})",
        f"{val[metric] / grid_best - 1:+.1%} vs the sweep's best (1 GPU)",
        "not comparable", kind="prediction", tolerance="none (no value)",
        note="the paper reports no ratio for this machine and workload; the row checks "
             "that the search finds what the sweep found"))


def _costs_section(traces: dict) -> str:
    """Per capture and phase: mean wall and CPU time per op and which one the simulator
    costs the op from (rldse.trace.host_cost_s: CPU time where the op computes on the
    host, wall time where it waits), with the capture host's wall/CPU ratio."""
    rows = []
    for env, trace in traces.items():
        ops = trace.ops
        uses_cpu = compute_mask(ops, trace.meta) & ops["cpu_s"].notna().to_numpy()
        for phase, g in ops.assign(cpu_used=uses_cpu).groupby("phase", observed=True):
            rows.append({"environment": env, "phase": phase, "ops": len(g),
                         "wall per op (ms)": 1e3 * float(g.dur_s.mean()),
                         "CPU per op (ms)": 1e3 * float(g.cpu_s.mean()),
                         "costed from": "CPU time" if g.cpu_used.all() else "wall time"})
    ratio = "; ".join(f"{env} {t.compute_wall_per_cpu:.2f}" for env, t in traces.items()
                      if t.compute_wall_per_cpu)
    return (markdown_table(pd.DataFrame(rows), 4) + "\n\nWall time over CPU time of the "
            f"computing ops, per capture: {ratio} (1 on a quiet host). The computing ops "
            "(env steps, inference, learning) are costed from their CPU time, so the time "
            "the capture host's OS gave other processes is not theirs. The hand-offs "
            "between processes (rollout_add, sync and the gaps trace_handoffs reads from "
            "the shared clock) are waits, costed from wall time: on these contended "
            "two-vCPU captures they still carry the contention, and they set the "
            "learner's consumption rate (the knee).")


def _search_section(rep, trials: pd.DataFrame, sf) -> str:
    lines = [f"Search file `{sf.file.name}`: space {', '.join(sf.space)}; objective "
             f"{', '.join(f'{o.direction} {o.metric}' for o in sf.objectives)}; constraints "
             f"{'; '.join(sf.constraints)}; sampler {sf.sampler.name}, seed {sf.seed}.",
             "",
             f"{rep.finished_now} trials in {rep.elapsed_s:.1f} s: {rep.simulated} simulated, "
             f"{rep.pruned_by_estimate} ruled out by the analytic bound, {rep.cache_hits} "
             f"from the cache, {rep.invalid} invalid. Output (trials table, Optuna's "
             f"figures, the best SystemSpec): `out/{SEARCH_OUT}/`.", ""]
    done = trials[trials.source.isin(["simulated", "cache"])].copy()
    if len(done):
        cols = [c for c in ("number", "workload.actors", "workload.cores", "gpu.count",
                            "env_steps_per_s", "steps_per_joule", "avg_power_w", "feasible",
                            "bottleneck") if c in done]
        top = done.sort_values(sf.objectives[0].metric,
                               ascending=sf.objectives[0].direction == "minimize")
        lines.append(markdown_table(top[cols].head(10), 4))
    return "\n".join(lines)



# ---- figures ----------------------------------------------------------------------------------

def _sweep_figure(sweep, knees, units, optima, ratios, out: Path) -> Path:
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


def _search_figure(trials: pd.DataFrame, sf, out: Path) -> Path:
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

