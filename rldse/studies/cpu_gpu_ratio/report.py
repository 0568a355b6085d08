"""The study's report: what Inci et al.'s abstract backs, rldse's consistency checks against
its own analytic rates and bottleneck labels, and its predictions (the optimal cores per
GPU, the search's best), with tables and figures, from what ``runs.collect`` produced."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.cpu_gpu_ratio import figures
from rldse.studies.cpu_gpu_ratio.params import SEARCH_OUT, Params
from rldse.studies.cpu_gpu_ratio.rates import consumption
from rldse.studies.cpu_gpu_ratio.runs import Runs
from rldse.studies.report import Claim, Report, Tolerance, markdown_table
from rldse.trace import compute_mask
from rldse.workloads import workload_of
from rldse.workloads.actor_learner.program.unit_costs import UnitCosts

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


def build(r: Runs, out: Path) -> Report:
    """The report: claims, sections, figures (written into ``out``) and parameters."""
    p, sf, sweep = r.params, r.sf, r.sweep
    report = Report(
        draws=p.bands,
        name="cpu_gpu_ratio", title="Inci et al.: the CPU/GPU ratio of actor-learner RL",
        source="Inci, Bolotin, Fu, Dalal, Mannor, Nellans and Marculescu, \"The "
               "Architectural Implications of Distributed Reinforcement Learning on CPU-GPU "
               "Systems\", EMC2 2020, arXiv 2012.04210",
        summary=_summary(p, r))
    for env in p.environments:
        _env_claims(report, env, sweep[sweep.environment == env].set_index("actors_per_gpu"),
                    r.knees[env], r.optima[env], atari=env == p.atari)
    if r.whole is not None and len(r.whole):
        _whole_claim(report, p.atari, r.whole, sweep[sweep.environment == p.atari])
    _moves_claim(report, p, r.optima, r.units, r.ratios)
    _search_claim(report, r.search, r.trials, sf, sweep[sweep.environment == next(iter(
        p.environments))])

    # ---- sections and figures -------------------------------------------------------------
    report.sections.append(("Unit costs behind the analytic rates", _units_section(r)))
    report.sections.append(("Captured costs: CPU time and wall time per op",
                            _costs_section(r.traces)))
    report.sections.append(("Sweep", markdown_table(sweep, 4)))
    if r.whole is not None and len(r.whole):
        report.sections.append(("The whole DGX-1: 8 V100s, 8 data-parallel learners",
                                markdown_table(r.whole, 4)))
    report.sections.append(("Optuna search (CartPole, the search file's base)",
                            _search_section(r.search, r.trials, sf)))
    report.figures.append((figures.sweep_figure(sweep, r.knees, r.units, r.optima, r.ratios,
                                                 out),
                           "Throughput and steps per joule against actors per GPU (one "
                           "provisioned core each): simulated, the analytic rates, the knee, "
                           "and the optimal ratio's band"))
    report.figures.append((figures.search_figure(r.trials, sf, out), "The Optuna search: "
                           "every trial's power and throughput, and the best feasible so far"))
    report.parameters = _parameters(r)
    return report


def _summary(p: Params, r: Runs) -> str:
    host = r.host
    return ("rldse's actor-learner PPO program (actors on CPU cores, one batching "
            "inference server per GPU, an asynchronous learner) on the DGX-1's parts: "
            f"{host.preset} sockets (the DGX-1 has {host.sockets} × {host.cores} cores) "
            "and one V100, the CPU provisioned per ratio: r actors per GPU on r + 1 "
            f"cores of the part, on the fewest sockets (never more than {host.cores} "
            "cores per socket or the host's sockets), each core with its price and idle "
            "power. Swept for the CartPole and the ALE Pong captures, whose actor and "
            "learner costs are their per-op CPU time (rldse.trace.host_cost_s; start-up "
            "and the hand-offs between processes from the processes' CPU time where the "
            "capture recorded it, else from wall time: 'Captured costs'); the "
            f"optimal ratio's band over {p.bands} Latin-hypercube draws of the presets' "
            "ranged numbers; the production and consumption rates from the same unit "
            "costs (a consistency check of the simulation, not a published value); an "
            "Optuna search under a power cap. What Inci et al. published that can be "
            "read here is the paper's abstract: rows it cannot back are consistency "
            "checks or not comparable, never reproductions.")


def _units_section(r: Runs) -> str:
    """Per environment: the unit costs behind the analytic rates, the knee and the optimal
    ratio's band."""
    return markdown_table(
        pd.DataFrame([(env, f"{u.env_step_s / u.envs_per_actor * 1e6:.1f}",
                       f"{u.learn_step_s * 1e6:.0f}",
                       f"{float(consumption(u, r.ratios[-1])):,.0f}",
                       f"{r.knees[env]:.1f}",
                       "{:.0f} / {:.0f} / {:.0f}".format(*percentiles(r.optima[env])))
                      for env, u in r.units.items()],
                     columns=["environment", "env step per env (µs)", "learner minibatch "
                              "step (µs)", "learner's consumption (steps/s)", "knee "
                              "(actors/GPU)", "optimal actors/GPU p5 / p50 / p95"]))


def _parameters(r: Runs) -> dict:
    p, sf, host, rep = r.params, r.sf, r.host, r.search
    return {
        "search file": p.search.name, "trace": sf.trace,
        "machine": f"{host.preset} (the DGX-1's {host.sockets} × {host.cores} cores) "
                   "provisioned with r + 1 cores on the fewest sockets; "
                   f"{sf.base['gpu']['preset']}, one GPU",
        "environments": "; ".join(f"{k}: {e.trace or sf.trace}"
                                  for k, e in p.environments.items()),
        "ratios (actors per GPU)": r.ratios, "env steps per simulation": p.env_steps,
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


def _whole_claim(report: Report, env: str, whole: pd.DataFrame, one: pd.DataFrame) -> None:
    """The whole DGX-1's answer (most steps/J over the ratios its 40 cores provision for
    8 GPUs) beside the one-GPU sweep's, both at nominal presets."""
    cur = whole[whole.environment == env].set_index("actors_per_gpu")
    if not len(cur):
        return
    best = int(cur.steps_per_joule.idxmax())
    one_best = int(one.set_index("actors_per_gpu").steps_per_joule.idxmax())
    row = cur.loc[best]
    report.claims.append(Claim(
        f"optimal CPU cores per V100, whole DGX-1 (8 V100, 8 data-parallel learners, "
        f"2 × 20 cores, {env} env cost)",
        f"{NOTHING_PUBLISHED} (a DGX-1 ships 40 cores for 8 V100s: 5 per GPU)",
        f"{best + 1} cores per GPU ({best} actors and a learner's core each; "
        f"{row.steps_per_joule:.1f} steps/J, all-reduce {row.allreduce_share:.1%} of the "
        f"run) beside {one_best + 1} with one V100",
        "n/a", "not comparable", kind="prediction", p5=best + 1, p50=best + 1,
        p95=best + 1, tolerance="none (no value)",
        note=f"nominal presets (not banded) over the ratios 40 cores provision for 8 GPUs "
             f"({', '.join(str(int(x)) for x in cur.index)} actors/GPU); gradients "
             "all-reduced over the DGX-1's hybrid cube mesh (rldse.models.collectives)"))


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
    host; a hand-off, a wait, from the processes' CPU time where the capture recorded the
    receiving side, rldse.workloads.actor_learner.info, else wall time), with the
    capture host's wall/CPU ratio and each capture's start-up and receive notes."""
    rows, notes = [], []
    for env, trace in traces.items():
        ops = trace.ops
        info = workload_of(trace).read_info(trace)
        waits_from = "CPU time" if info.receive_cpu is not None else "wall time"
        uses_cpu = compute_mask(ops, trace.meta) & ops["cpu_s"].notna().to_numpy()
        for phase, g in ops.assign(cpu_used=uses_cpu).groupby("phase", observed=True):
            rows.append({"environment": env, "phase": phase, "ops": len(g),
                         "wall per op (ms)": 1e3 * float(g.dur_s.mean()),
                         "CPU per op (ms)": 1e3 * float(g.cpu_s.mean()),
                         "costed from": "CPU time" if g.cpu_used.all() else waits_from})
        notes += [f"{env}: {note}." for note in info.notes()]
    ratio = "; ".join(f"{env} {t.compute_wall_per_cpu:.2f}" for env, t in traces.items()
                      if t.compute_wall_per_cpu)
    return (markdown_table(pd.DataFrame(rows), 4) + "\n\nWall time over CPU time of the "
            f"computing ops, per capture: {ratio} (1 on a quiet host). The computing ops "
            "(env steps, inference, learning) are costed from their CPU time, so the time "
            "the capture host's OS gave other processes is not theirs. The hand-offs "
            "between processes (rollout_add, sync) and the processes' start-up are costed "
            "from the CPU time of the sender's and the receiver's work where the capture "
            "recorded it (without the wait for the partner); a capture from before it "
            "costs them from the gaps on the shared clock, contention included. They count in "
            "the learner's consumption rate (the knee).\n\n" + "\n".join(notes))


def _search_section(rep, trials: pd.DataFrame, sf) -> str:
    lines = [f"Search file `{sf.file.name}`: space {', '.join(sf.space)}; objective "
             f"{', '.join(f'{o.direction} {o.metric}' for o in sf.objectives)}; constraints "
             f"{'; '.join(sf.constraints)}; sampler {sf.sampler.name}, seed {sf.seed}.",
             "",
             f"{rep.finished_now} trials: {rep.simulated} simulated, "
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
