"""The study's report: the claims (memory by size and objective, then REINFORCE's times
against TimeRL's), the sections and figures, from what ``runs.collect`` produced."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.report import Report, markdown_table, pct
from rldse.studies.timerl_memory import claims, figures
from rldse.studies.timerl_memory.params import GB
from rldse.studies.timerl_memory.runs import Collected
from rldse.workloads.timerl.program import (
    JAX_JIT_DISPATCH_S,
    TEMPO_STEP_XLA,
    step_calls,
    step_costs,
    step_times,
    tempo_step,
)


def build(c: Collected, out: Path) -> Report:
    """The report: claims, then sections, figures and parameters."""
    p = c.p
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
                f"Latin-hypercube draws of {c.uncertain} ranged preset numbers; the "
                "published times are compared against, never used.")
    report.claims.extend(claims.ppo_claims(c.ppo, p))
    report.claims.extend(claims.reinforce_claims(c))
    _sections(report, c)
    report.figures.append((figures.memory_figure(c.ppo, c.reinforce, out),
                           "GPU memory needed without swapping against the A6000's capacity"))
    report.figures.append((figures.td_mc_figure(c.band, p.reinforce, out),
                           "Monte-Carlo against n-step TD at 3×256×256: the models' p5-p95 "
                           "band and TimeRL's measurements"))
    report.parameters = _parameters(c)
    return report


def _sections(report: Report, c: Collected) -> None:
    gpu, rf, host_cap = c.gpu, c.p.reinforce, c.host_capacity_bytes
    link_gbs = float(gpu.link.bandwidth_gbs)
    report.sections.append((
        "Host link", f"The rtx-a6000 preset's host link is `{gpu.spec.host_link}` at "
        f"{link_gbs:g} GB/s per direction (PCI-SIG line rate, 128b/130b); TimeRL states "
        f"{c.p.published_link_gbs:g} GB/s ({pct(link_gbs, c.p.published_link_gbs)}), the same "
        "link rounded. Swaps run at the preset's copy_efficiency "
        f"({gpu.spec.copy_efficiency:.0%}, an assumption with a range) of the line rate, "
        f"{gpu.copy_bps / GB:.3g} GB/s effective. Host memory: "
        f"{host_cap / GB:.0f} GB ({host_cap / 2**30:.0f} GiB, Tempo's repro README)."))
    report.sections.append((f"REINFORCE at 3×{rf.side}×{rf.side}: one TD time step, nominal "
                            "presets (ms)", markdown_table(_td_step_table(c), 4)))
    report.sections.append(("PPO: memory and time per iteration (s)",
                            markdown_table(c.ppo.drop(columns=["capacity_gb",
                                                               "host_capacity_gb"]), 4)))
    report.sections.append((f"REINFORCE at 3×{rf.side}×{rf.side}: memory and time per "
                            "iteration (s), nominal presets", markdown_table(c.reinforce, 4)))
    band = c.band
    q = {col: percentiles(band[col].to_numpy()) for col in band.columns}
    report.sections.append(("REINFORCE iteration time bands (s, with swapping)",
                            markdown_table(pd.DataFrame(
                                [(col, *q[col]) for col in band.columns],
                                columns=["objective", "p5", "p50", "p95"]), 4)))
    report.sections.append(("One iteration booked on the Machine (nominal presets, swapping "
                            "enabled)", _events_text(c)))


def _events_text(c: Collected) -> str:
    """The event runs (runs._event_rows): each configuration's iteration as booked against
    the closed form, and what the Machine accounts."""
    return ("Each configuration TimeRL runs, booked operation by operation on the Machine "
            "(rldse.workloads.timerl.program.events: each step's dispatch on a host core, its "
            "kernels on the GPU's stream, its swaps on the GPU's copy engine): the iteration "
            "as booked against the closed form every other table uses, the GPU's busy "
            "seconds (stream and copy engine together) and the energy the Machine accounts "
            "(each device's idle power over the iteration plus the dynamic share of each "
            "booking). TimeRL publishes no energy, so nothing here is compared.\n\n"
            + markdown_table(c.events.drop(columns=["closed_form_iter_s"]), 4))


def _td_step_table(c: Collected) -> pd.DataFrame:
    """One n-step TD time step: the GPU time of each operation, the host time of Tempo's
    counted jitted calls, and the step (the later of the two), in ms, set against Tempo's
    measured TD iteration over its steps (comparison)."""
    gpu, shape, rf = c.gpu, c.shape, c.p.reinforce
    names = ("env step (writes the observations)", "forward and stores (XLA's count)",
             "backward (XLA's count, per-sample products fused into their reductions)")
    n = rf.td_steps[0]
    costs = step_costs(shape, n)
    rows = [{"operation": name, "xla_mb": costs[ph][1] / 1e6, "host_ms": "",
             "gpu_ms": 1e3 * float(t.device_s), "wall_ms": ""}
            for name, ph, t in zip(names, ("env_step", "act", "learn"),
                                   step_times(gpu, shape, n), strict=True)]
    step = tempo_step(gpu, shape, n)
    rows.append({"operation": f"step (rldse: {step_calls(n).jit} jitted calls × "
                              f"{JAX_JIT_DISPATCH_S * 1e6:.1f} µs on the host)",
                 "xla_mb": sum(b for _, b in costs.values()) / 1e6,
                 "host_ms": 1e3 * float(step.host_s), "gpu_ms": 1e3 * float(step.device_s),
                 "wall_ms": 1e3 * float(step.wall_s)})
    unfused_s = float(sum(t.device_s for t in step_times(gpu, shape, n,
                                                          fuse_reductions=False)))
    rows.append({"operation": "step with the backward as XLA:CPU compiles it (per-sample "
                              "products written and read back; not charged)",
                 "xla_mb": TEMPO_STEP_XLA["td"].bytes.at(shape) / 1e6,
                 "host_ms": 1e3 * float(step.host_s), "gpu_ms": 1e3 * unfused_s,
                 "wall_ms": 1e3 * max(float(step.host_s), unfused_s)})
    rows.append({"operation": f"step (Tempo measured: {rf.published.td_s:g} s / {shape.steps})",
                 "xla_mb": "", "host_ms": "not published", "gpu_ms": "not published",
                 "wall_ms": 1e3 * rf.published.td_s / shape.steps})
    return pd.DataFrame(rows)


def _parameters(c: Collected) -> dict:
    p = c.p
    return {
        "CPU, GPU": f"{p.cpu}, {p.gpu}", "envs × steps": f"{p.envs} × {p.steps}",
        "network": f"Linear(F, {p.hidden[0]}) + {len(p.hidden)} × Linear({p.hidden[0]}, "
                   f"{p.hidden[-1]}) + heads, tanh",
        "PPO": "1 epoch, the whole rollout as one minibatch (repro)",
        "TD steps": p.reinforce.td_steps, "band draws, seed": f"{p.bands}, {p.seed}",
        "trace": f"{p.trace} (resolves the system only)",
        "verdict rule": "rldse.studies.report.band_verdict: reproduced when the p50 lies "
                        "within ±25 % of the published value, consistent within uncertainty "
                        "when only p5-p95 overlaps that window"}

