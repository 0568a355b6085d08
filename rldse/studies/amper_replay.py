"""AMPER (Li et al., ICCAD 2022, arXiv 2207.07791): prioritized replay whose sum-tree
sampling is replaced by nearest-neighbour searches over quantized priorities in TCAM.

Part 1 (latency): for buffer sizes 2^13..2^20 and several batch sizes, the AMPER sampler
(rldse.workloads.offpolicy.amper) runs on priorities drawn from a real PER buffer and counts its
TCAM searches and candidate-set entries; each TCAM preset turns those counts into
latency and energy (rldse.models.tcam: every search's H-tree key broadcast, array search
and match merge, the random numbers and the candidate-buffer reads), and each GPU preset
costs PER's sum-tree descent (rldse.models.gpu.sumtree_seconds). The GPU/TCAM latency ratio is set beside the
published 55×–270×. Part 2 (learning): DQN on CartPole with uniform, PER, AMPER-k and
AMPER-fr replay, same seeds; final returns and learning curves. Part 3: the first
seed's AMPER-k trace replayed by the engine with replay on CPU, GPU and TCAM.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns
from pydantic import BaseModel, ConfigDict, Field, model_validator
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.files import atomic_write
from rldse.models.gpu import GpuModel
from rldse.models.presets import get_preset, load_part, make_model
from rldse.models.tcam import SAMPLE_LABELS, TcamModel, TcamSpec
from rldse.sim import simulate
from rldse.sim.bands import UncertainParam, design, percentiles
from rldse.studies.common import load_params, save_figure
from rldse.studies.plan import Planned
from rldse.studies.report import Claim, Report, markdown_table, pct
from rldse.system import parse_spec
from rldse.threads import single_blas_thread
from rldse.workloads.offpolicy.amper import AmperReplay
from rldse.workloads.offpolicy.dqn import DQNConfig, amper_info, capture_config, train

VARIANTS = ("k", "fr")
EVA_CAM = ("fefet-tcam-64", "fefet-tcam-128", "fefet-tcam-256")  # AMPER's group's tool


class Design(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bits: int
    k: int
    radius: int
    max_per_search: int
    target: Literal["proportional", "uniform"]
    targets_per_item: float


class Latency(BaseModel):
    model_config = ConfigDict(extra="forbid")
    gpus: list[str]
    ams: list[str]
    buffer_log2: list[int]
    batches: list[int]
    batches_per_point: int
    figure_gpu: str
    figure_batch: int
    bands: int = Field(ge=1, description="Latin-hypercube draws over the presets' ranges")
    bands_seed: int = 0

    @model_validator(mode="after")
    def _figure_in_sweep(self) -> Latency:
        if self.figure_gpu not in self.gpus or self.figure_batch not in self.batches:
            raise ValueError("figure_gpu must be one of gpus and figure_batch one of batches")
        return self


class Learning(BaseModel):
    model_config = ConfigDict(extra="forbid")
    env_id: str
    steps: int
    seeds: list[int]
    replays: list[Literal["uniform", "per", "amper_k", "amper_fr"]]
    last_episodes: int


class EndToEnd(BaseModel):
    model_config = ConfigDict(extra="forbid")
    cpu: str
    gpu: str
    am: str
    env_steps: int


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    ratio_low: float
    ratio_high: float


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    amper: Design
    latency: Latency
    learning: Learning
    end_to_end: EndToEnd
    published: Published


# ---- part 2: learning ------------------------------------------------------------------

def _dqn_config(p: Params, replay: str, seed: int) -> DQNConfig:
    d, lr = p.amper, p.learning
    return DQNConfig(env_id=lr.env_id, steps=lr.steps, seed=seed, replay=replay,
                     amper_bits=d.bits, amper_k=d.k, amper_radius=d.radius,
                     amper_max_per_search=d.max_per_search, amper_target=d.target,
                     amper_targets_per_item=d.targets_per_item)


def _curve(returns: list[float], steps: int, env_id: str, window: int = 10) -> pd.DataFrame:
    """Mean return of the last `window` finished episodes, on a grid of env steps.

    CartPole pays +1 per step, so an episode ends at the cumulative return; other envs
    are put on an episode axis scaled to the run length instead."""
    r = np.asarray(returns, dtype=np.float64)
    if r.size == 0:
        return pd.DataFrame({"env_step": [], "return": []})
    ends = np.cumsum(r) if env_id.startswith("CartPole") else \
        np.linspace(steps / r.size, steps, r.size)
    grid = np.linspace(steps / 40, steps, 40)
    done = np.searchsorted(ends, grid, side="right")
    vals = [float(r[max(0, n - window):n].mean()) if n else np.nan for n in done]
    return pd.DataFrame({"env_step": grid, "return": vals})


def _learning(p: Params, bar):
    """Every replay × seed: final return, curve; PER priorities and the AMPER-k trace."""
    lr = p.learning
    rows, curves, per_priorities, trace = [], [], None, None
    for seed in lr.seeds:
        for replay in lr.replays:
            cfg = _dqn_config(p, replay, seed)
            info = None
            if replay == "amper_k" and seed == lr.seeds[0]:
                trace = capture_config(cfg)
                returns = trace.meta.episode_returns
                info = trace.meta.workload_info["amper"]
            else:
                returns, agent = train(cfg)
                if replay.startswith("amper"):
                    info = amper_info(agent.replay)
                if replay == "per" and per_priorities is None:
                    per_priorities = agent.replay.tree.priorities(np.arange(agent.replay.size))
            c = _curve(returns, lr.steps, lr.env_id).assign(replay=replay, seed=seed)
            curves.append(c)
            rows.append({"replay": replay, "seed": seed, "episodes": len(returns),
                         "final_return": float(np.mean(returns[-lr.last_episodes:]))
                         if returns else np.nan,
                         "curve_mean_return": float(c["return"].mean()),
                         "searches_per_item": info["searches_per_item"] if info else np.nan,
                         "candidates_per_item": info["candidates_per_item"] if info else np.nan,
                         "writes_per_update_item":
                             info["writes_per_update_item"] if info else np.nan})
            bar.update()
    return pd.DataFrame(rows), pd.concat(curves, ignore_index=True), per_priorities, trace


# ---- part 1: latency -------------------------------------------------------------------

def _sampler_counts(p: Params, priorities: np.ndarray, bar) -> pd.DataFrame:
    """TCAM searches and CSP entries per batch, measured on the AMPER sampler for every
    buffer size (priorities resampled from a PER buffer), batch and variant."""
    d, lat = p.amper, p.latency
    rng = np.random.default_rng(0)
    rows = []
    for log2 in lat.buffer_log2:
        n = 1 << log2
        pr = rng.choice(priorities, size=n)
        for variant in VARIANTS:
            r = AmperReplay(n, 1, rng, variant=variant, bits=d.bits, k=d.k, radius=d.radius,
                            max_per_search=d.max_per_search, target=d.target,
                            targets_per_item=d.targets_per_item)
            r.fill(n)
            r.set_priorities(pr)
            for batch in lat.batches:
                s0, c0 = r.stats.searches, r.stats.candidates
                for _ in range(lat.batches_per_point):
                    r.sample(batch)
                k = lat.batches_per_point
                rows.append({"variant": variant, "buffer": n, "batch": batch,
                             "searches": (r.stats.searches - s0) / k,
                             "candidates": (r.stats.candidates - c0) / k})
            bar.update()
    return pd.DataFrame(rows)


def _am_model(name: str, buffer: int, bits: int, overrides: dict | None = None) -> TcamModel:
    """The TCAM part sized to hold one priority row per replay slot."""
    overrides = overrides or {}
    base = load_part("tcam", name, **overrides)
    assert isinstance(base, TcamSpec)
    if base.bits_per_row < (1 << bits) - 1:
        raise RldseError(f"am preset '{name}': {base.bits_per_row}-bit rows cannot hold "
                         f"{bits}-bit thermometer-coded priorities ({(1 << bits) - 1} bits)")
    model = make_model(load_part("tcam", name, **overrides,
                                 arrays=math.ceil(buffer / base.rows)))
    assert isinstance(model, TcamModel)
    return model


def _ranged(kind: str, name: str) -> list[UncertainParam]:
    """Every ranged (assumed or UNVERIFIED) number of a preset, as rldse.sim.bands varies
    them."""
    out = []
    for field, q in get_preset(kind, name).params.items():
        if q.range is None or q.range[0] == q.range[1]:
            continue
        integer = isinstance(q.value, int) and not isinstance(q.value, bool)
        out.append(UncertainParam(f"{kind}.{field}", name, float(q.range[0]),
                                  float(q.range[1]), float(q.value), integer, q.source))
    return out


def _draw_values(params: list[UncertainParam], row) -> dict[str, dict]:
    """A hypercube row (None: the presets' values) as overrides by kind."""
    out: dict[str, dict] = {"gpu": {}, "tcam": {}}
    for q, v in zip(params, [q.nominal for q in params] if row is None else row,
                    strict=True):
        kind, field = q.path.split(".", 1)
        out[kind][field] = int(v) if q.integer else float(v)
    return out


def _latency(p: Params, counts: pd.DataFrame) -> pd.DataFrame:
    """Per (GPU, TCAM, variant, buffer, batch, draw): PER's sum tree on the GPU beside AMPER
    on the TCAM part, whose sampling is the whole device path (rldse.models.tcam): every
    search's H-tree key broadcast, array search and match merge, the random numbers (a
    target per item, `targets_per_item`, and a pick from the candidate set per item) and
    the candidate-buffer reads (every CSP entry, and the drawn entry per item). The arrays'
    searches alone are kept beside it (`am_search_only_s`) for comparison. Draw -1 is the
    presets' values; draws 0..bands-1 a Latin hypercube (rldse.sim.bands.design) over every
    ranged number of the GPU and TCAM presets, the same row for both GPU implementations:
    a hand-written fused kernel (the strongest) and eager framework ops per level (what
    PyTorch PER code runs)."""
    rows = []
    lat = p.latency
    for g in lat.gpus:
        for am_name in lat.ams:
            params = _ranged("gpu", g) + _ranged("tcam", am_name)
            points = design(params, lat.bands, lat.bands_seed)
            for draw in range(-1, lat.bands):
                vals = _draw_values(params, None if draw < 0 else points[draw])
                fused = make_model(load_part("gpu", g, **{**vals["gpu"], "sumtree": "fused"}))
                eager = make_model(load_part("gpu", g, **{**vals["gpu"], "sumtree": "eager"}))
                assert isinstance(fused, GpuModel) and isinstance(eager, GpuModel)
                models = {}
                for c in counts.itertuples(index=False):
                    if c.buffer not in models:
                        models[c.buffer] = _am_model(am_name, c.buffer, p.amper.bits,
                                                     vals["tcam"])
                    rows.append({"gpu": g, "am": am_name, "draw": draw,
                                 **_point(p, c, fused, eager, models[c.buffer])})
    return pd.DataFrame(rows)


def _point(p: Params, c, gm: GpuModel, eager: GpuModel, amm: TcamModel) -> dict:
    s = amm.spec
    randoms = round(c.batch * p.amper.targets_per_item) + c.batch
    reads = c.candidates + c.batch
    parts = amm.sample_parts_s(c.searches, reads, randoms)
    am_sample = sum(parts.values())
    am_search_only = c.searches * (s.search_ns + s.periph_ns + s.icnt_ns) * 1e-9
    am_update = float(amm.write_seconds(c.batch))
    am_j = (sum(amm.sample_joules(c.searches, reads, randoms).values())
            + float(amm.write_joules(c.batch)))
    g_time = gm.sumtree_time(c.batch, c.buffer)
    g_sample, g_update = g_time.wall_s, g_time.wall_s
    g_eager = eager.sumtree_time(c.batch, c.buffer).wall_s
    return {"variant": f"AMPER-{c.variant}", "buffer": c.buffer, "batch": c.batch,
            "arrays": s.arrays, "htree_levels": amm.levels,
            "searches_per_batch": c.searches, "csp_entries_per_batch": c.candidates,
            "gpu_sample_s": g_sample, "am_sample_s": am_sample,
            **{f"am_{k}_s": v for k, v in parts.items()},
            "am_search_only_s": am_search_only,
            "ratio_sample": g_sample / am_sample,
            "gpu_sample_eager_s": g_eager, "ratio_sample_eager": g_eager / am_sample,
            "ratio_search_only": g_sample / am_search_only,
            "gpu_update_s": g_update, "am_update_s": am_update,
            "ratio_sample_update": (g_sample + g_update) / (am_sample + am_update),
            "gpu_energy_j": float(gm.energy(busy_s=2 * g_time.device_s,
                                            wall_s=2 * g_time.wall_s).joules),
            "am_energy_j": am_j}


#: a configuration of the latency sweep; the draws, and the choices the paper's text does not
#: fix for us (GPU model, Eva-CAM array size, AMPER variant), make up each one's band
CONFIGURATION = ("buffer", "batch")


def _config_label(keys: dict) -> str:
    return " ".join(f"buffer 2^{int(v).bit_length() - 1}" if k == "buffer" else
                    f"batch {v}" if k == "batch" else str(v) for k, v in keys.items())


def _band_claim(claim: str, lat: pd.DataFrame, column: str, pub: Published, note: str,
                by: tuple[str, ...] = CONFIGURATION) -> Claim:
    """The ratio against the published range in every configuration (`by`): each
    configuration's band over the draws, GPUs, array sizes and variants
    (rldse.studies.report.Claim.per_configuration)."""
    bands = {_config_label(dict(zip(by, key, strict=True))): percentiles(g[column].to_numpy())
             for key, g in lat.groupby(list(by))}
    return Claim.per_configuration(claim, published=f"{pub.ratio_low:g}x-{pub.ratio_high:g}x",
                                   low=pub.ratio_low, high=pub.ratio_high, bands=bands,
                                   unit="x", note=note)


def _ends(lat: pd.DataFrame, column: str, pub: Published) -> pd.DataFrame:
    """Per configuration (buffer, batch): the ratio's band over the draws and which end of
    the published range it gives."""
    rows = []
    for (buffer, batch), g in lat.groupby(list(CONFIGURATION)):
        p5, p50, p95 = percentiles(g[column].to_numpy())
        mid = math.sqrt(pub.ratio_low * pub.ratio_high)  # geometric middle of the range
        end = ("below the range" if p95 < pub.ratio_low else "above the range"
               if p5 > pub.ratio_high else "low end" if p50 < mid else "high end")
        rows.append({"buffer": f"2^{int(buffer).bit_length() - 1}", "batch": batch,
                     "p5": p5, "p50": p50, "p95": p95, "gives": end})
    return pd.DataFrame(rows)


#: "comparable to PER": AMPER's mean return within this fraction of PER's
LEARNING_TOLERANCE = 0.10


def _learning_claim(runs: pd.DataFrame, variant: str) -> Claim | None:
    per, am = runs[runs.replay == "per"], runs[runs.replay == variant]
    if per.empty or am.empty:
        return None
    parts, close, within = [], [], []
    for col, label in (("final_return", "final"), ("curve_mean_return", "whole-run mean")):
        a, b = am[col].to_numpy(), per[col].to_numpy()
        diff = a.mean() - b.mean()
        se = math.sqrt((a.var(ddof=1) if a.size > 1 else 0) / a.size
                       + (b.var(ddof=1) if b.size > 1 else 0) / b.size)
        close.append(abs(diff) <= LEARNING_TOLERANCE * abs(b.mean()))
        within.append(abs(diff) <= 2 * se)
        parts.append(f"{label} {a.mean():.0f} vs PER {b.mean():.0f} ({pct(a.mean(), b.mean())}"
                     f"{f', 2 SE = {2 * se:.0f}' if se else ''})")
    verdict = ("reproduced" if all(close) else "consistent within uncertainty"
               if all(c or w for c, w in zip(close, within, strict=True)) else "not reproduced")
    n = len(am)
    return Claim(f"DQN CartPole learning, AMPER-{variant.removeprefix('amper_')} vs PER",
                 "comparable to PER", "; ".join(parts),
                 "within 10 % of PER" if all(close) else "outside 10 % of PER",
                 verdict,
                 tolerance=f"mean return within {LEARNING_TOLERANCE:.0%} of PER's "
                           "(consistent: within 2 standard errors)",
                 note=f"{n} seed(s) × {int(runs.episodes.min())}+ episodes can only show large "
                      "differences; the paper's runs are longer and on more tasks")


# ---- part 3: the engine ----------------------------------------------------------------

def _end_to_end(p: Params, trace) -> pd.DataFrame:
    e = p.end_to_end
    info = trace.meta.workload_info
    rows_per_array = load_part("tcam", e.am).rows
    arrays = math.ceil(info["replay_capacity"] / rows_per_array)
    out = []
    for replay in END_TO_END_REPLAYS:
        spec = parse_spec({"name": f"amper-replay_{replay}", "cpu": {"preset": e.cpu},
                           "gpu": {"preset": e.gpu}, "tcam": {"preset": e.am, "arrays": arrays},
                           "placement": {"replay": replay, "learn": "gpu"},
                           "workload": {"env_steps": e.env_steps, "learner": "async",
                                        "actors": 8}})
        r = simulate(trace, spec, seed=0)
        phases = r.phases_frame()
        sample = phases[(phases.phase == "replay_sample")]["time_s"].sum()
        out.append({"replay": replay, "updates": r.updates,
                    "iteration_us": r.breakdown_s.get("iteration_s", np.nan) * 1e6,
                    "replay_sample_us_per_update": sample / max(r.updates, 1) * 1e6,
                    "updates_per_s": r.updates_per_s, "power_w": r.avg_power_w,
                    "bottleneck": r.bottleneck})
    return pd.DataFrame(out)


# ---- figures ---------------------------------------------------------------------------

def _fig_latency(lat: pd.DataFrame, p: Params, out: Path) -> Path:
    b = p.latency.figure_batch
    sub = lat[lat.batch == b]
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for ax, (col, label, gcol) in zip(axes, (("am_sample_s", "sample latency per batch (s)",
                                               "gpu_sample_s"),
                                              ("am_energy_j", "energy per batch, sample + "
                                               "update (J)", "gpu_energy_j")), strict=True):
        for g, grp in sub.groupby("gpu"):
            one = grp[(grp.am == p.latency.ams[0]) & (grp.variant == "AMPER-k")]
            ax.plot(one.buffer, one[gcol], "k-" if g == p.latency.figure_gpu else "k--",
                    marker="s", label=f"GPU {g} (PER sum tree)")
        colors = dict(zip(p.latency.ams, sns.color_palette("tab10", len(p.latency.ams)),
                          strict=True))
        for (am, variant), grp in sub[sub.gpu == p.latency.figure_gpu].groupby(["am",
                                                                               "variant"]):
            ax.plot(grp.buffer, grp[col], color=colors[am],
                    marker="o" if variant == "AMPER-k" else "^",
                    linestyle="-" if variant == "AMPER-k" else ":", label=f"{am} {variant}")
        ax.set(xscale="log", yscale="log", xlabel="replay buffer size (entries)", ylabel=label)
        ax.set_xscale("log", base=2)
    axes[0].set_title(f"batch {b}: sampling one minibatch (TCAM: searches, H-tree, merge, "
                      "RNG, candidate reads)")
    axes[1].set_title(f"batch {b}: energy (GPU at full board power: an upper bound)")
    axes[1].legend(fontsize=6, ncol=2)
    return save_figure(fig, out, "latency_vs_buffer")


def _fig_ratio(lat: pd.DataFrame, p: Params, out: Path) -> Path:
    sub = lat[lat.gpu == p.latency.figure_gpu]
    g = sns.relplot(data=sub, x="buffer", y="ratio_sample", hue="batch", style="variant",
                    col="am", col_wrap=4, kind="line", markers=True, height=3,
                    palette="viridis")
    for ax in g.axes.flat:
        ax.axhspan(p.published.ratio_low, p.published.ratio_high, color="orange", alpha=0.2)
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
    g.set_axis_labels("buffer size", f"{p.latency.figure_gpu} / TCAM latency")
    g.set_titles("{col_name}")
    if len(p.latency.ams) % 4:  # an empty panel slot: the legend goes there
        sns.move_legend(g, "center", bbox_to_anchor=(0.88, 0.25))
    return save_figure(g.figure, out, "latency_ratio")


def _fig_learning(curves: pd.DataFrame, out: Path) -> Path:
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for replay, grp in curves.groupby("replay", sort=False):
        stats = grp.groupby("env_step")["return"].agg(["mean", "min", "max"])
        ax.plot(stats.index, stats["mean"], label=replay)
        ax.fill_between(stats.index, stats["min"], stats["max"], alpha=0.15)
    ax.set(xlabel="env steps", ylabel="mean return of the last 10 episodes",
           title="DQN on CartPole: mean over seeds (band: min-max)")
    ax.legend()
    return save_figure(fig, out, "learning_curves")


# ---- the study -------------------------------------------------------------------------

#: where the end-to-end part places replay (one simulation each)
END_TO_END_REPLAYS = ("cpu", "gpu", "tcam")


def plan(study_dir: Path) -> list[Planned]:
    """The study's work, for its up-front estimate (rldse.studies.plan): real learning
    runs (priced per replay), sampler measurements, and simulations of a trace the
    learning captures, so those cannot be priced before it runs."""
    from functools import partial

    from rldse.sim.run_cost import learning_run
    from rldse.workloads.offpolicy.dqn import capture_request

    p = load_params(study_dir, Params)
    lr = p.learning
    return [*(Planned(f"real DQN learning runs of {lr.steps:,} env steps with {replay} "
                      "replay", len(lr.seeds),
                      learning=partial(learning_run, capture_request(
                          _dqn_config(p, replay, lr.seeds[0]))))
              for replay in lr.replays),
            Planned("AMPER sampler measurements",
                    len(p.latency.buffer_log2) * len(VARIANTS)),
            Planned("simulations of the captured AMPER-k trace", len(END_TO_END_REPLAYS))]


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    p = load_params(study_dir, Params)
    lat_p, lr, pub = p.latency, p.learning, p.published
    if "per" not in lr.replays or "amper_k" not in lr.replays:
        raise RldseError(f"{study_dir / 'study.yaml'}: learning.replays must include per "
                         "(its priorities feed the latency part) and amper_k")
    total = len(lr.seeds) * len(lr.replays) + len(lat_p.buffer_log2) * len(VARIANTS)
    with (tqdm(total=total, desc="amper_replay", disable=not progress, unit="run") as bar,
          single_blas_thread()):  # as captures do (rldse.threads)
        runs, curves, priorities, trace = _learning(p, bar)
        counts = _sampler_counts(p, priorities, bar)
    lat_all = _latency(p, counts)
    lat = lat_all[lat_all.draw == -1]  # the presets' values: figures and tables
    drawn = lat_all[lat_all.draw >= 0]  # the bands
    e2e = _end_to_end(p, trace)

    out.mkdir(parents=True, exist_ok=True)
    for name, frame in (("results", lat_all), ("learning", runs),
                        ("learning_curves", curves), ("end_to_end", e2e)):
        atomic_write(out / f"{name}.csv", lambda tmp, f=frame: f.to_csv(tmp, index=False))

    report = Report(
        draws=p.latency.bands,
        name="amper_replay",
        title="AMPER: prioritized replay by nearest-priority search in TCAM",
        source="Li, Kazemi, Laguna and Hu, Associative Memory Based Experience Replay for "
               "Deep Reinforcement Learning, ICCAD 2022, arXiv 2207.07791",
        summary="The AMPER sampler (quantized priorities, random targets, TCAM radius "
                "searches, candidate-set buffer) runs for real: it trains DQN and its "
                "counted searches are costed on TCAM presets, beside PER's sum-tree "
                "descent on GPU presets. The design details the paper's text would fix "
                "(generator, k, radius, bits, readout) are assumptions: see README.md.")
    eva = drawn[drawn.am.isin(EVA_CAM)]
    why = ("the GPU side is one fused kernel (dispatch 10 µs on the host, 3 µs on the device, "
           "assumed) walking ceil(log2 N) dependent loads at L2 latency (200 ns) while the "
           "levels fit in L2 and device-memory latency (500 ns) below, with no host sync or "
           "copies; the TCAM "
           "side is, per search, the key's broadcast over an H-tree of ceil(log2 N) levels "
           f"(up to {int(lat.htree_levels.max())} for {int(lat.arrays.max()):,} arrays), "
           "one array's search and a merge tree of as many priority-select stages, plus two "
           "random numbers per item and a candidate-buffer read per CSP entry and draw, "
           "all one after another (no pipelining: an upper bound); the wire and merge "
           "constants are assumptions with ranges (tcam.yaml), and at 2^20 entries the merge "
           "stages alone take longer than an Eva-CAM array search. The ratio falls with "
           "batch size (searches are serial, the GPU descends all items at once); with "
           "buffer size both the sum tree and the TCAM's H-tree and merge tree deepen by "
           "a level per doubling. The GPU presets share the assumed dispatch and "
           "latencies and differ in L2 size (6 MiB V100, 40 MiB A100), which only matters "
           "below the top 20 levels; the fused descent is dispatch-bound. Judged per "
           f"configuration (buffers 2^{min(lat_p.buffer_log2)}-2^{max(lat_p.buffer_log2)} "
           f"× batches {min(lat_p.batches)}-{max(lat_p.batches)}), each band over "
           f"{lat_p.bands} Latin-hypercube draws of every ranged GPU and TCAM number, the "
           "GPU presets, the Eva-CAM array sizes and both AMPER variants")
    see = " (and the reasons under the first claim)"
    report.claims.append(_band_claim(
        "replay sampling latency, PER on GPU as a fused sum-tree kernel / AMPER on TCAM "
        "(Eva-CAM FeFET arrays; key broadcast, match merge, RNG and candidate reads "
        "included)", eva, "ratio_sample", pub, why))
    report.claims.append(_band_claim(
        "same, with the GPU sum tree as eager PyTorch ops (5 per level)",
        eva, "ratio_sample_eager", pub,
        "each of the ceil(log2 N) levels costs 5 framework ops of 10 µs host dispatch, "
        "so the GPU side grows to about 1 ms" + see))
    report.claims.append(_band_claim(
        "same, the arrays' searches only (no periphery, no candidate reads)",
        eva, "ratio_search_only", pub,
        "leaves out the H-tree, the merge across arrays, the random numbers and the "
        f"candidate buffer (AMPER-fr fills up to {p.amper.max_per_search} entries per "
        "search); shown to measure what they cost" + see))
    report.claims.append(_band_claim(
        "sampling + priority update latency (Eva-CAM FeFET, periphery included)",
        eva, "ratio_sample_update", pub,
        "a priority update rewrites B rows at ≈10 ns each on FeFET, more than the "
        "searches" + see))
    report.claims.append(_band_claim(
        "replay sampling latency, all GPU and TCAM presets (periphery included, fused "
        "GPU kernel)", drawn, "ratio_sample", pub,
        "CAMASim's SPICE arrays (2.6-4.2 ns + 1.47 ns peripherals + 0.18-0.28 ns interconnect) and the RRAM chip "
        "(3.43 ns) are 7-11x slower per search than Eva-CAM's, and larger or sparser "
        "cells (RRAM at 0.18 µm, 16T SRAM) lengthen the H-tree" + see, by=("am", *CONFIGURATION)))
    for variant in ("amper_k", "amper_fr"):
        claim = _learning_claim(runs, variant)
        if claim is not None:
            report.claims.append(claim)

    report.figures.append((_fig_latency(lat, p, out),
                           "Sampling latency and energy per minibatch vs buffer size"))
    report.figures.append((_fig_ratio(lat, p, out),
                           f"{lat_p.figure_gpu} sum-tree latency / TCAM AMPER sampling latency "
                           f"(periphery and candidate reads included); shaded: the published "
                           f"{pub.ratio_low:g}x-{pub.ratio_high:g}x"))
    report.figures.append((_fig_learning(curves, out), "Learning curves"))

    summary = (lat.groupby(["gpu", "am", "variant"])
               .agg(ratio_min=("ratio_sample", "min"), ratio_max=("ratio_sample", "max"),
                    search_only_min=("ratio_search_only", "min"),
                    search_only_max=("ratio_search_only", "max"),
                    with_update_min=("ratio_sample_update", "min"),
                    with_update_max=("ratio_sample_update", "max"))
               .reset_index())
    report.sections.append(("Latency ratio ranges (over buffer sizes and batches, presets' "
                            "values)", markdown_table(summary, 3)))
    for column, label in (("ratio_sample", "fused GPU kernel"),
                          ("ratio_sample_eager", "eager PyTorch ops")):
        ends = _ends(eva, column, pub)
        report.sections.append((
            f"Which end of {pub.ratio_low:g}x-{pub.ratio_high:g}x each configuration gives: "
            f"{label} / Eva-CAM FeFET TCAM (band over the draws, GPUs, arrays and variants)",
            markdown_table(ends, 3) + "\n\n`gives`: below or above the range when the whole "
            "band is; otherwise the low or high end by where p50 lies against the range's "
            "geometric middle."))
    fb = lat[(lat.gpu == lat_p.figure_gpu) & (lat.batch == lat_p.figure_batch)
             & (lat.am == lat_p.ams[0])]
    cols = ["variant", "buffer", "arrays", "searches_per_batch", "csp_entries_per_batch",
            "gpu_sample_s", "am_sample_s", "am_search_only_s", "ratio_sample",
            "ratio_search_only", "gpu_energy_j", "am_energy_j"]
    report.sections.append((f"{lat_p.figure_gpu} vs {lat_p.ams[0]}, batch "
                            f"{lat_p.figure_batch}", markdown_table(fb[cols], 3)))
    stages = ["variant", "buffer", "htree_levels", *(f"am_{k}_s" for k in SAMPLE_LABELS)]
    report.sections.append((f"{lat_p.ams[0]}, batch {lat_p.figure_batch}: TCAM sampling "
                            "latency by stage (s per batch; rldse.models.tcam)",
                            markdown_table(fb[stages], 3)))
    final = (runs.groupby("replay", sort=False)
             .agg(seeds=("seed", "count"), final_mean=("final_return", "mean"),
                  final_sd=("final_return", "std"), final_min=("final_return", "min"),
                  whole_run_mean=("curve_mean_return", "mean"),
                  searches_per_item=("searches_per_item", "mean"),
                  csp_entries_per_item=("candidates_per_item", "mean"),
                  writes_per_update_item=("writes_per_update_item", "mean"))
             .reset_index())
    report.sections.append((f"Final returns (mean of the last {lr.last_episodes} episodes, "
                            f"{lr.steps} env steps)", markdown_table(final, 4)))
    report.sections.append((
        f"End to end: the AMPER-k trace (seed {lr.seeds[0]}) in the engine, learner on "
        f"{p.end_to_end.gpu}, 8 async actors on {p.end_to_end.cpu}",
        markdown_table(e2e, 4)))
    d = p.amper
    report.parameters = {
        "AMPER design (assumed)": f"{d.bits} bits, k {d.k}, radius {d.radius}, "
                                  f"≤ {d.max_per_search} CSP entries per search, "
                                  f"{d.target} targets, {d.targets_per_item} per item",
        "GPU presets": ", ".join(lat_p.gpus), "TCAM presets": ", ".join(lat_p.ams),
        "buffer sizes": f"2^{min(lat_p.buffer_log2)}-2^{max(lat_p.buffer_log2)}",
        "batches": ", ".join(map(str, lat_p.batches)),
        "latency priorities": f"resampled from the PER buffer of seed {lr.seeds[0]}",
        "learning": f"{lr.env_id}, {lr.steps} steps, seeds {lr.seeds}",
    }
    return report
