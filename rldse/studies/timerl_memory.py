"""TimeRL / Tempo (Silvestre and Pietzuch, arXiv 2501.05408): on-policy rollout storage
against GPU memory.

Part 1 (PPO): rldse's actor-learner program with TimeRL's large-observation setting
(256 envs × 1,000 steps, fp32 observations of 3×64×64, 3×128×128 and 3×256×256, an RTX
A6000 with 48 GiB; the baselines' minibatch is the whole rollout, one pass per iteration,
as TimeRL's reproduction scripts set them). For each size: the GPU buffers the program
needs against the capacity (out of memory or not, without swapping), and the iteration
time with swapping to host memory. Part 2 (TD vs Monte-Carlo, 3×256×256): a Monte-Carlo
objective must keep the whole rollout resident (``resident_steps`` = the rollout), an
n-step TD objective only n + 1 steps; memory and iteration time of each, then the same
comparison for observations born on the GPU (TimeRL's environment runs there), where the
Monte-Carlo rollout must be swapped out and back in over the host link.
"""

from __future__ import annotations

import math
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.sim.machine import Machine
from rldse.studies.common import load_params, save_figure
from rldse.studies.report import Claim, Report, markdown_table, pct
from rldse.system import SystemSpec, parse_spec
from rldse.trace import Trace, load_trace
from rldse.workloads.actor_learner.program import gpu_memory

#: A relative difference up to this is "reproduced", up to PARTLY "partly reproduced".
CLOSE, PARTLY = 0.25, 0.5
GB = 1e9
PHASES = (("rollout_s", "rollout (actors)"), ("handoff_s", "rollout hand-off to learner"),
          ("sync_s", "parameter broadcast"), ("compute_s", "learner compute"),
          ("copy_s", "rollout copy to GPU"), ("swap_s", "swap traffic"))


class PpoPublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    obs_gb: dict[int, float]
    oom: dict[int, bool]


class Ppo(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sides: list[int] = Field(min_length=1)
    envs: int = Field(gt=0)
    rollout_len: int = Field(gt=0)
    actors: int = Field(gt=0)
    epochs: int = Field(gt=0)
    minibatch: int = Field(gt=0)
    iterations: int = Field(gt=0)
    published: PpoPublished


class ReinforcePublished(BaseModel):
    model_config = ConfigDict(extra="forbid")
    td_s: float
    mc_s: float
    ratio: float


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
    ppo: Ppo
    reinforce: Reinforce
    seed: int = 0


def _spec(p: Params, side: int, swap: bool, resident: int | None = None) -> SystemSpec:
    q = p.ppo
    if q.envs % q.actors:
        raise RldseError(f"ppo.envs ({q.envs}) must be a multiple of ppo.actors ({q.actors})")
    return parse_spec({
        "name": f"timerl-3x{side}x{side}",
        "cpu": {"preset": p.cpu}, "gpu": {"preset": p.gpu},
        "placement": {"act": "gpu", "learn": "gpu"},
        "workload": {"actors": q.actors, "envs_per_actor": q.envs // q.actors,
                     "rollout_len": q.rollout_len, "obs_bytes": 3 * side * side * 4,
                     "batch_size": q.minibatch, "epochs": q.epochs,
                     "env_steps": q.iterations * q.envs * q.rollout_len,
                     "gpu_swap": swap, "resident_steps": resident}},
        where="timerl_memory")


def _run(p: Params, trace: Trace, side: int, swap: bool, resident: int | None = None) -> dict:
    """One simulation: GPU memory (before swapping) and the per-iteration time split."""
    spec = _spec(p, side, swap, resident)
    mem = gpu_memory(Machine(trace, spec))
    r = simulate(trace, spec, seed=p.seed)
    its = r.env_steps / (p.ppo.envs * p.ppo.rollout_len)
    b = {k: v / its for k, v in r.breakdown_s.items() if k not in ("iter_s", "startup_s")}
    b["compute_s"] = b.get("learn_s", 0.0) - b.get("copy_s", 0.0) - b.get("swap_s", 0.0)
    return {"side": side, "swap": swap, "need_gb": mem.need / GB,
            "obs_gb": mem.buffers["rollout observations"] / GB,
            "capacity_gb": mem.capacity / GB, "fits": mem.need <= mem.capacity,
            "ok": r.checks["gpu_memory"], "resident_gb": r.gpu_memory_peak_bytes / GB,
            "host_gb": r.host_memory_peak_bytes / GB,
            "host_capacity_gb": Machine(trace, spec).host_memory_capacity / GB,
            "host_ok": r.checks.get("host_memory", True),
            "swapped_gb": r.swapped_bytes / GB, "iter_s": r.breakdown_s["iter_s"],
            "learner_s": b.get("learn_s", 0.0),
            **{k: b.get(k, 0.0) for k, _ in PHASES}}


def _verdict(rel: float) -> str:
    rel = abs(rel)
    return "reproduced" if rel <= CLOSE else "partly reproduced" if rel <= PARTLY \
        else "not reproduced"


def run(study_dir: Path, progress: bool = True) -> Report:
    p = load_params(study_dir, Params)
    q, rf = p.ppo, p.reinforce
    out = study_dir / "out"
    trace = load_trace(study_dir / p.trace)
    objectives = [("Monte-Carlo", None)] + [(f"TD {n}-step", n + 1) for n in rf.td_steps]
    with tqdm(total=2 * len(q.sides) + 2 * len(objectives), desc="timerl_memory",
              disable=not progress, unit="sim") as bar:
        ppo_rows = []
        for side in q.sides:
            for swap in (False, True):
                ppo_rows.append(_run(p, trace, side, swap))
                bar.update()
        rl_rows = []
        for name, resident in objectives:
            for swap in (False, True):
                rl_rows.append({"objective": name, "resident_steps": resident or q.rollout_len,
                                **_run(p, trace, rf.side, swap, resident)})
                bar.update()
    ppo = pd.DataFrame(ppo_rows)
    rl = pd.DataFrame(rl_rows)

    # the host link, and the Monte-Carlo swap when observations are born on the GPU
    m = Machine(trace, _spec(p, rf.side, True))
    gpu = m.model("gpu")
    link_gbs = float(gpu.link.bandwidth_gbs)
    copy_gbs = gpu.copy_bps / GB  # what a pinned copy reaches of the line rate
    rollout_obs = q.envs * q.rollout_len * 3 * rf.side * rf.side * 4
    swap_round_trip_s = 2 * float(gpu.copy_times(rollout_obs).wall_s)
    mc_gpu_born_s = rf.published.td_s + swap_round_trip_s
    ratio_gpu_born = mc_gpu_born_s / rf.published.td_s
    implied_gbs = 2 * rollout_obs / (rf.published.mc_s - rf.published.td_s) / GB

    out.mkdir(parents=True, exist_ok=True)
    pd.concat([ppo.assign(part="ppo", objective="PPO"), rl.assign(part="reinforce")]) \
        .to_csv(out / "results.csv", index=False)

    report = Report(
        name="timerl_memory",
        title="TimeRL: on-policy rollout storage against GPU memory",
        source="Silvestre and Pietzuch, TimeRL / Tempo, arXiv 2501.05408; settings from "
               "its reproduction scripts (github.com/lsds/Tempo, repro/sec7_3_rl_train and "
               "repro/sec7_4_algo_specific_sched)",
        summary="rldse's actor-learner PPO program, run with TimeRL's large-observation "
                "setting on the rtx-a6000 preset, decides from its GPU buffer model which "
                "observation sizes run out of memory, how long an iteration takes when the "
                "rollout is swapped to host memory, and what a Monte-Carlo objective "
                "(whole rollout resident) costs against n-step TD (a window of n + 1 "
                "steps). Times are per iteration, from one simulation each.")

    # ---- claims: PPO ------------------------------------------------------------------
    base = ppo[~ppo.swap].set_index("side")
    swapped = ppo[ppo.swap].set_index("side")
    sizes = " / ".join(f"3×{s}×{s}" for s in q.sides)
    pub_obs = [q.published.obs_gb.get(s) for s in q.sides]
    sim_obs = [base.loc[s, "obs_gb"] for s in q.sides]
    worst = max((abs(a - b) / b for a, b in zip(sim_obs, pub_obs, strict=True) if b),
                default=float("nan"))
    report.claims.append(Claim(
        f"rollout observations, {sizes} (GB)",
        " / ".join(f"{v:g}" for v in pub_obs if v is not None),
        " / ".join(f"{v:.1f}" for v in sim_obs), f"at most {worst:.1%}",
        "reproduced" if worst < 0.01 else "not reproduced"))
    for s in q.sides:
        row, pub = base.loc[s], q.published.oom.get(s)
        oom = not bool(row.ok)
        same = pub is not None and pub == oom
        report.claims.append(Claim(
            f"PPO 3×{s}×{s}: out of GPU memory without swapping",
            "n/a" if pub is None else ("yes" if pub else "no"),
            f"{'yes' if oom else 'no'}: needs {row.need_gb:.1f} GB of {row.capacity_gb:.1f} GB",
            "same" if same else "different",
            "reproduced" if same else "not comparable" if pub is None else "not reproduced",
            note="" if same or pub is None else
            "the need is rldse's buffer model (rollout, whole-rollout minibatch copy, "
            "parameters and activations); the baselines' allocator may hold more or less"))
    big = [s for s in q.sides if not base.loc[s, "ok"]]
    if big:
        done = all(bool(swapped.loc[s, "ok"]) and bool(swapped.loc[s, "host_ok"])
                   for s in big)
        report.claims.append(Claim(
            "with swapping to host memory, the sizes that ran out of memory complete",
            "they complete (times in the paper's Fig. 14, not in its text)",
            "; ".join(f"3×{s}×{s}: {swapped.loc[s, 'resident_gb']:.1f} GB resident, "
                      f"{swapped.loc[s, 'swapped_gb']:.0f} GB swapped, "
                      f"{swapped.loc[s, 'host_gb']:.0f} GB in host memory of "
                      f"{swapped.loc[s, 'host_capacity_gb']:.0f} GB"
                      + ("" if swapped.loc[s, "host_ok"] else " (does not fit: infeasible)")
                      + f", {swapped.loc[s, 'iter_s']:.1f} s/iteration" for s in big),
            "same" if done else "different", "reproduced" if done else "not reproduced",
            note="" if done else
            "rldse's actor processes each keep their rollout in host memory and the learner "
            "keeps the streamed buffers there too; Tempo's environment and its swapped "
            "blocks are its own (its README reports up to 200 GB of CPU memory)"))

    # ---- claims: TD vs Monte-Carlo ----------------------------------------------------
    nos = rl[~rl.swap].set_index("objective")
    sw = rl[rl.swap].set_index("objective")
    mc, tds = nos.loc["Monte-Carlo"], [o for o, _ in objectives[1:]]
    td_fit = all(bool(nos.loc[o, "ok"]) for o in tds)
    report.claims.append(Claim(
        f"REINFORCE 3×{rf.side}×{rf.side}: Monte-Carlo must keep the whole rollout on the "
        "GPU and swap; TD variants fit",
        "MC swaps, TD does not",
        f"MC needs {mc.need_gb:.0f} GB ({'out of memory' if not mc.ok else 'fits'} "
        f"without swapping); " + ", ".join(f"{o} {nos.loc[o, 'need_gb']:.1f} GB" for o in tds),
        "same" if (not mc.ok and td_fit) else "different",
        "reproduced" if (not mc.ok and td_fit) else "not reproduced"))
    mc_s = sw.loc["Monte-Carlo", "iter_s"]
    td_s = [sw.loc[o, "iter_s"] for o in tds]
    ratios = [mc_s / t for t in td_s]
    mid = float(np.median(ratios))
    report.claims.append(Claim(
        "iteration time, Monte-Carlo / TD (rldse's actor-learner program)",
        f"{rf.published.mc_s:g} s / {rf.published.td_s:g} s = {rf.published.ratio:g}×",
        f"{mc_s:.1f} s / {min(td_s):.1f}–{max(td_s):.1f} s = "
        f"{min(ratios):.2f}–{max(ratios):.2f}×", pct(mid, rf.published.ratio),
        _verdict((mid - rf.published.ratio) / rf.published.ratio),
        note="rldse's actors step the environments on CPU cores, so every observation is "
             "born in host memory and crosses the host link once per epoch whether the "
             "learner keeps the rollout (Monte-Carlo, swapped: streamed from host memory) "
             "or a window of it (TD, streamed window by window); TimeRL's environment runs "
             "on the GPU, where Monte-Carlo's rollout must go out to host memory and come "
             "back (next row)"))
    report.claims.append(Claim(
        "Monte-Carlo's extra time per iteration, observations born on the GPU "
        "(rldse's link model: the rollout's observations out to host memory and back)",
        f"{rf.published.mc_s:g} − {rf.published.td_s:g} = "
        f"{rf.published.mc_s - rf.published.td_s:.1f} s",
        f"{swap_round_trip_s:.1f} s = 2 × {rollout_obs / GB:.0f} GB at {copy_gbs:.3g} GB/s "
        f"({gpu.spec.copy_efficiency:.0%} of the {link_gbs:g} GB/s line rate)",
        pct(swap_round_trip_s, rf.published.mc_s - rf.published.td_s),
        _verdict((swap_round_trip_s - (rf.published.mc_s - rf.published.td_s))
                 / (rf.published.mc_s - rf.published.td_s)),
        note=f"TimeRL's measured gap implies {implied_gbs:.1f} GB/s each way, "
             f"{implied_gbs / copy_gbs:.0%} of the effective copy rate rldse charges; "
             "staging through host buffers and swapping more than the observations "
             "(activations, returns) are the most likely reasons"))
    report.claims.append(Claim(
        "Monte-Carlo / TD with observations born on the GPU (published TD time + rldse's "
        "swap round trip)", f"{rf.published.ratio:g}×", f"{ratio_gpu_born:.2f}×",
        pct(ratio_gpu_born, rf.published.ratio),
        _verdict((ratio_gpu_born - rf.published.ratio) / rf.published.ratio)))
    td8 = next((o for o in tds if o.startswith("TD 8-")), tds[0])
    report.claims.append(Claim(
        f"iteration time, {td8} (absolute)", f"≈{rf.published.td_s:g} s (Tempo)",
        f"{sw.loc[td8, 'iter_s']:.1f} s (rldse's actor-learner program)",
        pct(sw.loc[td8, "iter_s"], rf.published.td_s), "not comparable",
        note="rldse replays its own CartPole PPO capture: 256 environments stepped on CPU "
             "cores, observations written and pickled through pipes by actor processes "
             f"({sw.loc[td8, 'rollout_s'] + sw.loc[td8, 'handoff_s']:.1f} s of the "
             "iteration); TimeRL's trivial environment runs on the GPU inside one "
             "compiled program"))

    # ---- sections ----------------------------------------------------------------------
    report.sections.append((
        "Host link", f"The rtx-a6000 preset's host link is `{gpu.spec.host_link}` at "
        f"{link_gbs:g} GB/s per direction (PCI-SIG line rate, 128b/130b); TimeRL states "
        f"{p.published_link_gbs:g} GB/s ({pct(link_gbs, p.published_link_gbs)}). The preset "
        "is kept, not overridden: the two are the same link rounded differently. Copies "
        f"run at the preset's copy_efficiency ({gpu.spec.copy_efficiency:.0%}, an assumption "
        f"with a range) of the line rate, {copy_gbs:.3g} GB/s."))
    cols = ["side", "swap", "obs_gb", "need_gb", "capacity_gb", "ok", "resident_gb",
            "swapped_gb", "host_gb", "host_ok", "iter_s", "rollout_s", "handoff_s", "compute_s", "copy_s", "swap_s"]
    report.sections.append(("PPO: memory and time per iteration (s)",
                            markdown_table(ppo[cols], 4)))
    report.sections.append(("REINFORCE-like objectives at 3×256×256",
                            markdown_table(rl[["objective", "resident_steps"] + cols[1:]], 4)))
    report.sections.append((
        "How to read the times", "A row with `ok` False ran out of GPU memory, one with "
        "`host_ok` False out of host memory (`host_gb`: what rldse's program keeps there, "
        "the actors' rollouts and the learner's received or swapped buffers, against the "
        "CPU preset's DRAM): its time is "
        "what the iteration would take if the memory were there, shown only to compare. "
        "`compute_s` is the learner's minibatch steps; `copy_s` the rollout's copy to the "
        "GPU (window by window for TD); `swap_s` the rollout streamed from host memory "
        "when it does not fit; `handoff_s` the learner receiving the actors' rollouts "
        "(unpickling, GAE). The objectives reuse the PPO program with one pass and a "
        "minibatch of everything resident: REINFORCE's learner does less work per sample, "
        "but the memory and the link traffic, which this study is about, are the same."))

    # ---- figures ----------------------------------------------------------------------
    report.figures.append((_memory_figure(ppo, rl, out), "GPU memory the program needs "
                           "against the A6000's capacity"))
    report.figures.append((_time_figure(ppo, out), "PPO iteration time by phase, without and "
                           "with swapping (hatched: out of memory, would not run)"))
    report.figures.append((_td_mc_figure(rl, rf, mc_gpu_born_s, out),
                           "Monte-Carlo against n-step TD at 3×256×256: rldse's program, "
                           "the GPU-born estimate and TimeRL's measurements"))

    report.parameters = {
        "trace": p.trace, "CPU, GPU": f"{p.cpu}, {p.gpu}",
        "envs × steps": f"{q.envs} × {q.rollout_len} ({q.actors} actor processes)",
        "minibatch, epochs": f"{q.minibatch} (the whole rollout), {q.epochs}",
        "placement": "act gpu (local inference), learn gpu; learner sync",
        "iterations simulated": q.iterations, "TD steps": rf.td_steps, "seed": p.seed,
        "verdict bands": f"reproduced ≤ {CLOSE:.0%}, partly ≤ {PARTLY:.0%} relative difference"}
    return report


def _memory_figure(ppo: pd.DataFrame, rl: pd.DataFrame, out: Path) -> Path:
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
    base = ppo[~ppo.swap]
    x = np.arange(len(base))
    a.bar(x - 0.2, base.need_gb, 0.4, label="needed without swapping")
    a.bar(x + 0.2, ppo[ppo.swap].resident_gb, 0.4, label="resident with swapping")
    cap = float(base.capacity_gb.iloc[0])
    for ax in (a, b):
        ax.axhline(cap, color="black", ls="--", lw=1,
                   label=f"capacity {cap:.1f} GB ({cap * GB / 2**30:.0f} GiB)")
        ax.set_yscale("log")
        ax.set_ylabel("GPU memory (GB, log scale)")
    a.set_xticks(x, [f"3×{s}×{s}" for s in base.side])
    a.set(xlabel="observation shape (fp32)", title="PPO, 256 envs × 1,000 steps")
    a.legend(fontsize=8)
    r = rl[~rl.swap]
    b.bar(np.arange(len(r)), r.need_gb, 0.6, color="tab:purple")
    b.set_xticks(np.arange(len(r)), r.objective, rotation=20)
    b.set(xlabel="objective (3×256×256)", title="needed without swapping")
    b.legend(fontsize=8)
    return save_figure(fig, out, "memory_need")


def _time_figure(ppo: pd.DataFrame, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sides = list(ppo[~ppo.swap].side)
    colors = plt.cm.tab10(np.arange(len(PHASES)))
    for j, swap in enumerate((False, True)):
        rows = ppo[ppo.swap == swap].set_index("side")
        x = np.arange(len(sides)) + (j - 0.5) * 0.4
        bottom = np.zeros(len(sides))
        for (key, label), c in zip(PHASES, colors, strict=True):
            vals = rows.loc[sides, key].to_numpy()
            hatch = ["//" if not ok else "" for ok in rows.loc[sides, "ok"]]
            bars = ax.bar(x, vals, 0.38, bottom=bottom, color=c,
                          label=label if j == 0 else None)
            for bar_, h in zip(bars, hatch, strict=True):
                bar_.set_hatch(h)
            bottom += vals
        for xi, tot, ok in zip(x, bottom, rows.loc[sides, "ok"], strict=True):
            ax.text(xi, tot, ("swap" if swap else "no swap") + ("" if ok else "\nOOM"),
                    ha="center", va="bottom", fontsize=7)
    ax.set_xticks(np.arange(len(sides)), [f"3×{s}×{s}" for s in sides])
    ax.set(xlabel="observation shape (fp32)", ylabel="time per iteration (s)",
           title="PPO on rtx-a6000: iteration time by phase")
    ax.set_ylim(0, 1.4 * float(ppo.iter_s.max()))
    ax.legend(fontsize=8, ncols=2, loc="upper left")
    return save_figure(fig, out, "iteration_time")


def _td_mc_figure(rl: pd.DataFrame, rf: Reinforce, mc_gpu_born_s: float, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(8, 4.5))
    sw = rl[rl.swap].reset_index(drop=True)
    x = np.arange(len(sw))
    ax.bar(x - 0.2, sw.iter_s, 0.4, label="rldse actor-learner program (CPU-born "
           "observations)")
    gpu_born = [mc_gpu_born_s if o == "Monte-Carlo" else rf.published.td_s for o in sw.objective]
    ax.bar(x + 0.2, gpu_born, 0.4, label="GPU-born: TimeRL's TD time + rldse's swap "
           "round trip for MC")
    pub = [rf.published.mc_s if o == "Monte-Carlo" else rf.published.td_s
           for o in sw.objective]
    ax.scatter(x + 0.2, pub, color="black", marker="D", zorder=3,
               label="TimeRL measured (Tempo)")
    ax.set_xticks(x, sw.objective)
    ax.set(xlabel="objective (REINFORCE-like, 3×256×256, with swapping where needed)",
           ylabel="time per iteration (s)", title="Monte-Carlo vs n-step TD")
    ax.legend(fontsize=8, loc="upper center")
    if math.isfinite(float(sw.iter_s.max())):
        ax.set_ylim(0, 1.45 * max(float(sw.iter_s.max()), rf.published.mc_s))
    return save_figure(fig, out, "td_vs_mc")
