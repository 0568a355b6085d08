"""The study's report: the page's ratios against the simulated ones (banded), the split
that the models find fastest, where the two part ways (the trainer's GPU-seconds), the
figures, from what ``runs.collect`` produced."""

from __future__ import annotations

from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.common import save_figure
from rldse.studies.llm_rl_placement.runs import HALF, SPLITS, Collected, Params, claimed
from rldse.studies.report import Claim, Report, markdown_table


def trainer_note(c: Collected) -> str:
    """Why the ratios miss, read off the page's own phase columns (section "Where the
    trainer parts ways"): the one reason the claims share."""
    t = trainer_table(c).set_index("GPUs")
    share = t["published split / colocated"]
    g = c.p.gpus
    growth = t.loc[g, "published colocated GPU·s"] / t.loc[g // 2, "published colocated GPU·s"]
    return (f"the page's split runs' trainers spend {share.min():.2f}-{share.max():.2f} of "
            "the colocated runs' trainer GPU-seconds on the same responses (update_actor × "
            f"trainer GPUs; rldse: {t['rldse split / colocated'].min():.2f}-"
            f"{t['rldse split / colocated'].max():.2f}), and its {g}-GPU colocated run "
            f"{growth:.2f}× its {g // 2}-GPU run's; the models price the same tokens at the "
            "same GPU-seconds, so response lengths that differ between runs (which the page "
            "reports drift with the mode and require_batches) are the likely cause")


def _ratio(c: Collected, top: str, bottom: str) -> tuple[float, tuple[float, float, float]]:
    """Nominal ratio of two configurations' steps, and its band over paired draws (the
    same Latin-hypercube points: both systems have the same ranged numbers)."""
    r = c.results.set_index("configuration").step_s
    b = c.bands.pivot(index="draw", columns="configuration", values="step_s")
    return float(r[top] / r[bottom]), percentiles((b[top] / b[bottom]).to_numpy())


def claims(c: Collected) -> list[Claim]:
    p, pub = c.p, c.p.published
    g, half = p.gpus, int(p.gpus * HALF)
    co_half, co_full, stream, stale = claimed(p)
    out, note = [], trainer_note(c)
    for name, published, top, bottom, text in (
            (f"colocated {g // 2} → {g} GPUs barely helps: step({g // 2}) / step({g})",
             pub.colocated[g // 2] / pub.colocated[g], co_half, co_full,
             f"{pub.colocated[g // 2]:g} s → {pub.colocated[g]:g} s"),
            (f"async {half}:{g - half} (staleness 0.5, partial rollout) against colocated "
             f"{g}: colocated / async step", pub.colocated[g] / pub.async_[g], co_full, stale,
             f"{pub.colocated[g]:g} s / {pub.async_[g]:g} s"),
            (f"streaming alone (stream off-policy pipeline, {half}:{g - half}, staleness 0) "
             f"against colocated {g}", pub.colocated[g] / pub.stream, co_full, stream,
             f"{pub.colocated[g]:g} s / {pub.stream:g} s (the page: ≈1.6×)")):
        _, (lo, mid, hi) = _ratio(c, top, bottom)
        out.append(Claim.banded(name, published=f"{published:.3g}× ({text})", low=published,
                                high=None, p5=lo, p50=mid, p95=hi, unit="×",
                                note=note))
    best = _best_split(c)
    out.append(Claim(f"the fastest split of {g} GPUs (async, staleness 0.5, partial "
                     "rollout)", published="not published (the page runs 64:64 only)",
                     simulated=f"{best.rollout_gpus}:{best.train_gpus} at "
                     f"{best.step_s:.0f} s per step", difference="–",
                     verdict="not comparable", kind="prediction"))
    return out


def _best_split(c: Collected) -> pd.Series:
    label = SPLITS[-1][0]
    rows = c.results[c.results.configuration.str.startswith(label)]
    return rows.loc[rows.step_s.idxmin()]


def trainer_table(c: Collected) -> pd.DataFrame:
    """Trainer GPU-seconds per step, published (update_actor × trainer GPUs) and simulated
    (train_s × trainer GPUs), colocated against the page's half splits."""
    up, r = c.p.published.update_actor, c.results.set_index("configuration")
    rows = []
    for g in c.p.colocated_gpus:
        split = f"async {g // 2}:{g // 2}" if g != c.p.gpus else \
            f"{SPLITS[-1][0]} {g // 2}:{g // 2}"
        pub_co, pub_as = up.colocated[g] * g, up.async_[g] * g / 2
        sim_co = r.loc[f"colocated {g}", "train_s"] * g
        sim_as = r.loc[split, "train_s"] * g / 2
        rows.append({"GPUs": g, "published colocated GPU·s": pub_co,
                     "published split GPU·s": pub_as, "published split / colocated":
                     pub_as / pub_co, "rldse colocated GPU·s": sim_co,
                     "rldse split GPU·s": sim_as, "rldse split / colocated": sim_as / sim_co})
    return pd.DataFrame(rows)


def split_figure(c: Collected, out: Path) -> Path:
    p, res = c.p, c.results
    fig, ax = plt.subplots(figsize=(8, 4.8))
    for label, _, _ in SPLITS:
        rows = res[res.configuration.str.startswith(f"{label} ")]
        ax.plot(rows.rollout_gpus, rows.step_s, marker="o", label=f"rldse: {label}")
    colo = res.set_index("configuration").step_s[f"colocated {p.gpus}"]
    ax.axhline(colo, color="tab:gray", ls="--", label=f"rldse: colocated {p.gpus}")
    ax.axhline(p.published.colocated[p.gpus], color="black", ls=":",
               label=f"verl: colocated {p.gpus}")
    half = int(p.gpus * HALF)
    ax.scatter([half, half], [p.published.async_[p.gpus], p.published.stream], color="black",
               marker="D", zorder=3,
               label=f"verl: async {half}:{p.gpus - half} (staleness 0.5; 0)")
    ax.set(xlabel=f"rollout GPUs of {p.gpus} H20 (the rest train)", ylabel="s per step",
           title="Step time against the rollout:train split")
    ax.set_ylim(0, min(float(res.step_s.max()), 3 * colo) * 1.05)
    ax.legend(fontsize=7, loc="upper center", ncol=2)
    return save_figure(fig, out, "step_vs_split")


def modes_figure(c: Collected, out: Path) -> Path:
    p, r = c.p, c.results.set_index("configuration").step_s
    gs = p.colocated_gpus
    split = [r[f"async {g // 2}:{g // 2}"] if g != p.gpus else
             r[f"{SPLITS[-1][0]} {g // 2}:{g // 2}"] for g in gs]
    bars = {"rldse colocated": [r[f"colocated {g}"] for g in gs],
            "verl colocated": [p.published.colocated[g] for g in gs],
            "rldse async (half)": split,
            "verl async (half)": [p.published.async_[g] for g in gs]}
    fig, ax = plt.subplots(figsize=(8, 4.5))
    x, w = np.arange(len(gs)), 0.2
    for i, (label, values) in enumerate(bars.items()):
        ax.bar(x + (i - 1.5) * w, values, w, label=label,
               hatch="//" if label.startswith("verl") else None)
    ax.set_xticks(x, [f"{g} H20" for g in gs])
    ax.set(ylabel="s per step", title="Colocated against async (staleness 0.5, partial)")
    ax.legend(fontsize=8)
    return save_figure(fig, out, "colocated_vs_async")


def build(c: Collected, out: Path) -> Report:
    p: Params = c.p
    report = Report(
        draws=p.bands, name="llm_rl_placement",
        title="llm_rl_placement: rollout against training GPUs for verl's DAPO on H20",
        source="verl-project/verl docs/advance/fully_async.md, 'Experiments' (commit "
               "1947b75; Apache-2.0); settings from its fully_async and colocated DAPO "
               "scripts",
        summary=(f"Qwen2.5-Math-7B DAPO ({p.workload['prompts_per_step']} prompts × "
                 f"{p.workload['responses_per_prompt']} responses per step, up to 28K "
                 f"tokens) on H20 nodes, every configuration simulated by the llm_rl "
                 f"family from the presets and the model's config; the mean response "
                 f"length ({p.workload['response_tokens']['mean']:g} tokens) is the one "
                 f"inferred number, from the 32-GPU colocated row. Bands: {p.bands} "
                 f"draws of {c.uncertain} ranged preset numbers."))
    report.claims.extend(claims(c))
    cols = ["configuration", "step_s", "generate_s", "logprob_s", "train_s",
            "trainer_wait_s", "staleness_mean_updates", "fits"]
    report.sections.append(("Every configuration", markdown_table(c.results[cols])))
    report.sections.append((
        "Where the trainer parts ways",
        "Trainer GPU-seconds per step: the page's update_actor times the trainer's GPUs, "
        "and rldse's train_s times the same. The page's split runs train the same "
        "512 × 16 responses in about half the colocated runs' GPU-seconds; rldse, "
        "pricing the same tokens, finds them equal. No published setting accounts for "
        "the difference (both train with FSDP2, gradient checkpointing, Ulysses 4 and "
        "the same token budget per GPU); the page notes that response lengths change "
        "with the mode and with require_batches (its require_batches ablation: "
        "update_actor 95-181 s on the same 64:64 GPUs).\n\n" + markdown_table(
            trainer_table(c))))
    report.figures.append((split_figure(c, out), f"Step time against the split of "
                           f"{p.gpus} H20, each protocol; verl's published points"))
    report.figures.append((modes_figure(c, out), "Colocated against async at 32, 64 and "
                           "128 H20: rldse and verl"))
    report.parameters = {"system": p.system, "trace": p.trace,
                         **{f"workload.{k}": v for k, v in p.workload.items()},
                         "colocated": p.colocated, "split": p.split,
                         "bands": p.bands, "seed": p.seed}
    return report
