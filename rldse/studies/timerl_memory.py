"""TimeRL / Tempo (Silvestre and Pietzuch, arXiv 2501.05408): on-policy rollout storage
against GPU memory, in TimeRL's own program.

TimeRL runs REINFORCE and PPO as one compiled program with the environment on the GPU
(rldse.workloads.timerl.program: observations are born in device memory). Part 1 (PPO,
256 envs × 1,000 steps, fp32 observations of 3×64², 3×128², 3×256² on a 48 GiB RTX
A6000): which sizes the baselines' buffers do not fit without swapping, and whether
Tempo's swapping completes them within TimeRL's 384 GiB host. Part 2 (REINFORCE,
3×256²): Monte-Carlo keeps the whole rollout and swaps it out and back over the host
link; n-step TD frees each stored step after its backward, n + 1 steps later. Every
time is the part models' (GPU roofline, dispatch and kernel counts, host-link copies),
with a band over every ranged preset number (rldse.sim.bands' Latin hypercube); no
published time is an input.
"""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from rldse.sim.bands import design, percentiles, sampled_spec, uncertain_params
from rldse.sim.machine import Machine
from rldse.studies.common import load_params, save_figure
from rldse.studies.plan import Planned
from rldse.studies.report import Claim, Report, markdown_table, pct
from rldse.system import SystemSpec, parse_spec
from rldse.workloads import open_trace as load_trace
from rldse.workloads.timerl.program import (
    JAX_JIT_DISPATCH_RANGE_S,
    JAX_JIT_DISPATCH_S,
    TEMPO_STEP_XLA,
    TempoShape,
    ppo,
    ppo_baseline_need,
    reinforce,
    step_calls,
    step_costs,
    step_times,
    stream,
    tempo_step,
)

GB = 1e9


class PpoPublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    obs_gb: dict[int, float]
    oom: dict[int, bool]


class Ppo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sides: list[int] = Field(min_length=1)
    published: PpoPublished


class ReinforcePublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    td_s: float = Field(gt=0)
    mc_s: float = Field(gt=0)
    ratio: float = Field(gt=0)


class Reinforce(BaseModel):
    model_config = ConfigDict(extra="forbid")
    side: int = Field(gt=0)
    td_steps: list[int] = Field(min_length=1)
    published: ReinforcePublished


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str
    cpu: str
    gpu: str
    published_link_gbs: float
    envs: int = Field(gt=0)
    steps: int = Field(gt=0)
    hidden: list[int] = Field(min_length=1)
    ppo: Ppo
    reinforce: Reinforce
    bands: int = Field(ge=2, le=1024, description="Latin-hypercube draws per band")
    seed: int = 0


def _spec(p: Params) -> SystemSpec:
    return parse_spec({"name": "timerl", "cpu": {"preset": p.cpu}, "gpu": {"preset": p.gpu},
                       "placement": {"act": "gpu", "learn": "gpu"}}, where="timerl_memory")


def plan(study_dir: Path) -> list[Planned]:
    """No simulations (rldse.studies.plan): the study evaluates TimeRL's program in
    closed form, at its presets and at its band draws."""
    return []


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    p = load_params(study_dir, Params)
    rf = p.reinforce
    trace = load_trace(study_dir / p.trace)
    spec = _spec(p)
    m = Machine(trace, spec)
    gpu, host_cap = stream(m), m.host_memory_capacity
    cap = int(gpu.spec.mem_bytes)

    def shape(side: int, value_head: bool) -> TempoShape:
        return TempoShape(p.envs, p.steps, side, tuple(p.hidden), value_head=value_head)

    # ---- part 1: PPO, nominal presets ----------------------------------------------------
    ppo_rows = []
    for side in p.ppo.sides:
        sh = shape(side, True)
        for swap in (False, True):
            it = ppo(gpu, sh, swap, cap)
            ppo_rows.append({
                "side": side, "swap": swap, "obs_gb": sh.rollout_bytes / GB,
                "baseline_need_gb": ppo_baseline_need(sh) / GB, "capacity_gb": cap / GB,
                "baseline_fits": ppo_baseline_need(sh) <= cap,
                "resident_gb": it.resident_bytes / GB, "fits": it.resident_bytes <= cap,
                "swapped_gb": it.swapped_bytes / GB, "host_gb": it.host_bytes / GB,
                "host_capacity_gb": host_cap / GB, "host_ok": it.host_bytes <= host_cap,
                "act_s": it.act_s, "learn_s": it.learn_s, "iter_s": it.iter_s})
    ppo_df = pd.DataFrame(ppo_rows)

    # ---- part 2: REINFORCE, nominal presets and bands -------------------------------------
    objectives: list[tuple[str, int | None]] = [("Monte-Carlo", None)] + \
        [(f"TD {n}-step", n) for n in rf.td_steps]
    rsh = shape(rf.side, False)
    rl_rows = []
    for name, n in objectives:
        for swap in (False, True):
            it = reinforce(gpu, rsh, n, swap, cap)
            rl_rows.append({"objective": name, "swap": swap,
                            "need_gb": it.gpu_need_bytes / GB, "ok": it.gpu_need_bytes <= cap
                            or (swap and it.resident_bytes <= cap),
                            "resident_gb": it.resident_bytes / GB,
                            "swapped_gb": it.swapped_bytes / GB, "host_gb": it.host_bytes / GB,
                            "act_s": it.act_s, "learn_s": it.learn_s,
                            "copies_s": it.copies_s, "iter_s": it.iter_s})
    rl = pd.DataFrame(rl_rows)

    params = uncertain_params(spec, trace)
    points = design(params, p.bands, p.seed)
    # JAX's per-call dispatch is not a preset number: drawn uniformly over its sourced range,
    # one draw per band point, from the study's seed
    lo, hi = JAX_JIT_DISPATCH_RANGE_S
    dispatch_s = np.random.default_rng(p.seed).uniform(lo, hi, len(points))
    draws = []
    for row, d in tqdm(zip(points, dispatch_s, strict=True), total=len(points),
                       desc="timerl_memory bands", disable=not progress, unit="draw"):
        g = stream(Machine(trace, sampled_spec(spec, trace, params, row)))
        times = {name: reinforce(g, rsh, n, True, cap, float(d)).iter_s
                 for name, n in objectives}
        draws.append(times)
    band = pd.DataFrame(draws)
    tds = [name for name, _ in objectives[1:]]

    out.mkdir(parents=True, exist_ok=True)
    pd.concat([ppo_df.assign(part="ppo"), rl.assign(part="reinforce", side=rf.side)]) \
        .to_csv(out / "results.csv", index=False)

    report = Report(
        draws=p.bands,
        name="timerl_memory",
        title="TimeRL: on-policy rollout storage against GPU memory",
        source="Silvestre and Pietzuch, TimeRL / Tempo, arXiv 2501.05408; settings from "
               "its reproduction scripts (github.com/lsds/Tempo, repro/sec7_3_rl_train and "
               "repro/sec7_4_algo_specific_sched)",
        summary="TimeRL's single-process program (environment on the GPU, observations born "
                "in device memory; rldse.workloads.timerl.program) on the rtx-a6000 and "
                "epyc-7402p presets: which observation sizes run out of GPU memory, whether "
                "swapping to host memory completes them, and Monte-Carlo against n-step TD. "
                f"Times come from the part models alone, with p5-p95 bands over {p.bands} "
                f"Latin-hypercube draws of {len(params)} ranged preset numbers; the "
                "published times are compared against, never used.")
    _ppo_claims(report, ppo_df, p)
    _reinforce_claims(report, rl, band, tds, rsh, gpu, p)

    link_gbs = float(gpu.link.bandwidth_gbs)
    report.sections.append((
        "Host link", f"The rtx-a6000 preset's host link is `{gpu.spec.host_link}` at "
        f"{link_gbs:g} GB/s per direction (PCI-SIG line rate, 128b/130b); TimeRL states "
        f"{p.published_link_gbs:g} GB/s ({pct(link_gbs, p.published_link_gbs)}), the same "
        "link rounded. Swaps run at the preset's copy_efficiency "
        f"({gpu.spec.copy_efficiency:.0%}, an assumption with a range) of the line rate, "
        f"{gpu.copy_bps / GB:.3g} GB/s effective. Host memory: "
        f"{host_cap / GB:.0f} GB ({host_cap / 2**30:.0f} GiB, Tempo's repro README)."))
    report.sections.append((f"REINFORCE at 3×{rf.side}×{rf.side}: one TD time step, nominal "
                            "presets (ms)", markdown_table(_td_step_table(gpu, rsh, rf), 4)))
    report.sections.append(("PPO: memory and time per iteration (s)",
                            markdown_table(ppo_df.drop(columns=["capacity_gb",
                                                                "host_capacity_gb"]), 4)))
    report.sections.append((f"REINFORCE at 3×{rf.side}×{rf.side}: memory and time per "
                            "iteration (s), nominal presets", markdown_table(rl, 4)))
    q = {c: percentiles(band[c].to_numpy()) for c in band.columns}
    report.sections.append(("REINFORCE iteration time bands (s, with swapping)",
                            markdown_table(pd.DataFrame(
                                [(c, *q[c]) for c in band.columns],
                                columns=["objective", "p5", "p50", "p95"]), 4)))
    report.figures.append((_memory_figure(ppo_df, rl, out),
                           "GPU memory needed without swapping against the A6000's capacity"))
    report.figures.append((_td_mc_figure(band, rf, out),
                           "Monte-Carlo against n-step TD at 3×256×256: the models' p5-p95 "
                           "band and TimeRL's measurements"))
    report.parameters = {
        "CPU, GPU": f"{p.cpu}, {p.gpu}", "envs × steps": f"{p.envs} × {p.steps}",
        "network": f"Linear(F, {p.hidden[0]}) + {len(p.hidden)} × Linear({p.hidden[0]}, "
                   f"{p.hidden[-1]}) + heads, tanh",
        "PPO": "1 epoch, the whole rollout as one minibatch (repro)",
        "TD steps": rf.td_steps, "band draws, seed": f"{p.bands}, {p.seed}",
        "trace": f"{p.trace} (resolves the system only)",
        "verdict rule": "rldse.studies.report.band_verdict: reproduced when the p50 lies "
                        "within ±25 % of the published value, consistent within uncertainty "
                        "when only p5-p95 overlaps that window"}
    return report


def _td_step_table(gpu, shape: TempoShape, rf: Reinforce) -> pd.DataFrame:
    """One n-step TD time step: the GPU time of each operation, the host time of Tempo's
    counted jitted calls, and the step (the later of the two), in ms, set against Tempo's
    measured TD iteration over its steps (comparison)."""
    names = ("env step (writes the observations)", "forward and stores (XLA's count)",
             "backward (XLA's count, per-sample products fused into their reductions)")
    n = rf.td_steps[0]
    costs = step_costs(shape, n)
    rows = [{"operation": name, "xla_mb": costs[ph][1] / 1e6, "host_ms": "",
             "gpu_ms": 1e3 * float(t.device_s), "wall_ms": ""}
            for name, ph, t in zip(names, ("env_step", "act", "learn"),
                                   step_times(gpu, shape, n), strict=True)]
    step = tempo_step(gpu, shape, n)
    calls = step_calls(n).jit
    rows.append({"operation": f"step (rldse: {calls} jitted calls × "
                              f"{JAX_JIT_DISPATCH_S * 1e6:.1f} µs on the host)",
                 "xla_mb": sum(c[1] for c in costs.values()) / 1e6,
                 "host_ms": 1e3 * float(step.host_s), "gpu_ms": 1e3 * float(step.device_s),
                 "wall_ms": 1e3 * float(step.wall_s)})
    unfused = step_times(gpu, shape, n, fuse_reductions=False)
    rows.append({"operation": "step with the backward as XLA:CPU compiles it (per-sample "
                              "products written and read back; not charged)",
                 "xla_mb": TEMPO_STEP_XLA["td"].bytes.at(shape) / 1e6,
                 "host_ms": 1e3 * float(step.host_s),
                 "gpu_ms": 1e3 * float(sum(t.device_s for t in unfused)),
                 "wall_ms": 1e3 * max(float(step.host_s),
                                      float(sum(t.device_s for t in unfused)))})
    rows.append({"operation": f"step (Tempo measured: {rf.published.td_s:g} s / {shape.steps})",
                 "xla_mb": "", "host_ms": "not published", "gpu_ms": "not published",
                 "wall_ms": 1e3 * rf.published.td_s / shape.steps})
    return pd.DataFrame(rows)


def _ppo_claims(report: Report, ppo_df: pd.DataFrame, p: Params) -> None:
    base = ppo_df[~ppo_df.swap].set_index("side")
    swapped = ppo_df[ppo_df.swap].set_index("side")
    sides = p.ppo.sides
    pub = [p.ppo.published.obs_gb.get(s) for s in sides]
    sim = [float(base.loc[s, "obs_gb"]) for s in sides]
    worst = max((abs(a - b) / b for a, b in zip(sim, pub, strict=True) if b), default=0.0)
    report.claims.append(Claim(
        "rollout observations, " + ", ".join(f"3×{s}×{s}" for s in sides) + " (GB)",
        " / ".join(f"{v:g}" for v in pub if v is not None),
        " / ".join(f"{v:.1f}" for v in sim), f"at most {worst:.1%}",
        "reproduced" if worst < 0.01 else "not reproduced", kind="consistency",
        tolerance="within 1 % of each published size",
        note="256 × 1,000 × 3·side² × 4 B: TimeRL's own shapes multiplied out, a check of "
             "the shapes rldse uses, not of a model"))
    for s in sides:
        row, pub_oom = base.loc[s], p.ppo.published.oom.get(s)
        oom = not bool(row.baseline_fits)
        same = pub_oom is not None and pub_oom == oom
        report.claims.append(Claim(
            f"PPO 3×{s}×{s}: the baselines run out of GPU memory without swapping",
            "n/a" if pub_oom is None else ("yes" if pub_oom else "no"),
            f"{'yes' if oom else 'no'}: need {row.baseline_need_gb:.1f} GB of "
            f"{row.capacity_gb:.1f} GB", "same" if same else "different",
            "reproduced" if same else "not comparable" if pub_oom is None
            else "not reproduced", tolerance="the same outcome (out of memory or not)",
            note="" if same or pub_oom is None else
            "the need is rldse's buffer model of the baselines (rollout, the gathered "
            "whole-rollout minibatch, parameters with Adam state, activations)"))
    big = [s for s in sides if not base.loc[s, "baseline_fits"]]
    if big:
        done = all(bool(swapped.loc[s, "fits"]) and bool(swapped.loc[s, "host_ok"])
                   for s in big)
        report.claims.append(Claim(
            "with swapping to host memory, the sizes the baselines cannot fit complete",
            "they complete (times in the paper's Fig. 14, not in its text)",
            "; ".join(f"3×{s}×{s}: {swapped.loc[s, 'resident_gb']:.1f} GB on the GPU, "
                      f"{swapped.loc[s, 'host_gb']:.0f} GB in {swapped.loc[s, 'host_capacity_gb']:.0f}"
                      f" GB of host memory, {swapped.loc[s, 'iter_s']:.1f} s/iteration"
                      for s in big),
            "same" if done else "different", "reproduced" if done else "not reproduced",
            tolerance="every such size completes (fits the GPU and the host)",
            note="" if done else "what Tempo's program keeps does not fit the GPU or the "
                                 "host even with swapping"))


def _reinforce_claims(report: Report, rl: pd.DataFrame, band: pd.DataFrame, tds: list[str],
                      rsh: TempoShape, gpu, p: Params) -> None:
    rf = p.reinforce
    nos = rl[~rl.swap].set_index("objective")
    mc = nos.loc["Monte-Carlo"]
    td_fit = all(bool(nos.loc[o, "ok"]) for o in tds)
    same = not mc.ok and td_fit
    report.claims.append(Claim(
        f"REINFORCE 3×{rf.side}×{rf.side}: Monte-Carlo must keep the whole rollout and swap; "
        "TD frees each step after its backward and fits",
        "MC swaps, TD does not",
        f"MC needs {mc.need_gb:.0f} GB ({'fits' if mc.ok else 'out of memory'} without "
        "swapping); " + ", ".join(f"{o} {nos.loc[o, 'need_gb']:.1f} GB" for o in tds),
        "same" if same else "different", "reproduced" if same else "not reproduced",
        tolerance="Monte-Carlo needs swapping and every TD variant fits"))
    pub = rf.published
    step = tempo_step(gpu, rsh, rf.td_steps[0])
    step_ms, host_ms = 1e3 * float(step.wall_s), 1e3 * float(step.host_s)
    calls = step_calls(rf.td_steps[0]).jit
    gap_ms = pub.td_s * 1e3 / rsh.steps - step_ms  # comparison only: what the models lack
    td_mean = band[tds].mean(axis=1).to_numpy()
    ratio = percentiles(band["Monte-Carlo"].to_numpy() / td_mean)
    report.claims.append(Claim.banded(
        "iteration time, Monte-Carlo / n-step TD (n = "
        + ", ".join(o.split()[1].split("-")[0] for o in tds) + ")",
        published=f"{pub.ratio:g}× ({pub.mc_s:g} s / {pub.td_s:g} s)", low=pub.ratio,
        high=None, p5=ratio[0], p50=ratio[1], p95=ratio[2], unit="×",
        note="the swap round trip is reproduced (next row) but TD's own iteration is "
             "shorter in the models than in Tempo. Tempo-JAX issues a time step as "
             f"{calls} jitted calls (counted by running Tempo itself, "
             "benchmarks/tempo_call_count.py): at jax-ml/jax PR #4128's "
             f"{JAX_JIT_DISPATCH_RANGE_S[0] * 1e6:.0f}-{JAX_JIT_DISPATCH_RANGE_S[1] * 1e6:.0f}"
             f" µs per call that is {host_ms:.2f} ms of host time at most, under the step's "
             f"GPU time ({1e3 * float(step.device_s):.2f} ms: "
             f"{sum(c[1] for c in step_costs(rsh, rf.td_steps[0]).values()) / 1e6:.0f} MB, "
             "XLA's own count of Tempo's compiled step, benchmarks/tempo_xla_cost.py), so "
             f"dispatch does not explain Tempo's {pub.td_s * 1e3 / rsh.steps:.1f} ms per step; "
             f"{gap_ms:.1f} ms stays unexplained. Tempo's backward forms each weight gradient "
             f"as a per-sample product reduced over the batch ({rsh.envs}×{rsh.features}×"
             f"{rsh.hidden[0]} for the encoder, not a GEMM); XLA:CPU writes those products "
             f"({TEMPO_STEP_XLA['td'].reduction_bytes.at(rsh) / 1e9:.0f} GB a step), the "
             "model assumes XLA:GPU fuses them into the reduction. Unmodelled candidates: "
             "that fused reduction's speed on CUDA cores, Tempo's per-instruction "
             "interpreter work beyond the jitted calls (tensor-store reads and writes), "
             "neither measured on the A6000"))
    gap = percentiles(band["Monte-Carlo"].to_numpy() - td_mean)
    report.claims.append(Claim.banded(
        "Monte-Carlo's extra time per iteration (the rollout out to host memory and back)",
        published=f"{pub.mc_s - pub.td_s:.1f} s ({pub.mc_s:g} − {pub.td_s:g})",
        low=pub.mc_s - pub.td_s, high=None, p5=gap[0], p50=gap[1], p95=gap[2], unit=" s",
        note=f"2 × {rsh.rollout_bytes / GB:.0f} GB over the host link at the preset's "
             f"copy_efficiency range; TimeRL's gap implies "
             f"{2 * rsh.rollout_bytes / (pub.mc_s - pub.td_s) / GB:.1f} GB/s each way"))
    td = percentiles(td_mean)
    report.claims.append(Claim.banded(
        "TD iteration time (mean of the TD variants)", published=f"≈{pub.td_s:g} s",
        low=pub.td_s, high=None, p5=td[0], p50=td[1], p95=td[2], unit=" s",
        note="the models count the kernels' roofline and Tempo's counted jitted calls at "
             f"JAX's dispatch ({step_ms:.2f} ms per step, section 'one TD time step'); "
             f"Tempo's measured step is {pub.td_s * 1e3 / rsh.steps / step_ms:.1f}× longer "
             "(see the Monte-Carlo / TD row)"))


def _memory_figure(ppo_df: pd.DataFrame, rl: pd.DataFrame, out: Path) -> Path:
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


def _td_mc_figure(band: pd.DataFrame, rf: Reinforce, out: Path) -> Path:
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
