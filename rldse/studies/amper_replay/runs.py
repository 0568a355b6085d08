"""The study's runs: real DQN learning with every replay (part 2, whose PER priorities feed
part 1), the AMPER sampler's counted searches costed on every GPU and TCAM preset and
Latin-hypercube draw (part 1), and the shipped capture of the AMPER-k run (end_to_end.trace)
replayed by the engine (part 3). The learning runs are deterministic for their seed; the
engine's op durations come from the shipped capture, so nothing here is timed live."""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd
from tqdm import tqdm

from rldse.errors import RldseError
from rldse.files import atomic_write
from rldse.models.gpu import GpuModel
from rldse.models.presets import get_preset, load_part, make_model
from rldse.models.tcam import TcamModel, TcamSpec
from rldse.sim import simulate
from rldse.sim.bands import UncertainParam, design
from rldse.studies.amper_replay.params import END_TO_END_REPLAYS, VARIANTS, Params
from rldse.studies.common import load_params
from rldse.studies.plan import Planned
from rldse.system import parse_spec
from rldse.threads import single_blas_thread
from rldse.trace import Trace
from rldse.workloads import open_trace
from rldse.workloads.offpolicy.amper import AmperReplay
from rldse.workloads.offpolicy.dqn import DQNConfig, amper_info, train

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
    """Every replay × seed: final return, curve; PER priorities and the episode returns of
    the first seed's AMPER-k run."""
    lr = p.learning
    rows, curves, per_priorities, amper_k_returns = [], [], None, None
    for seed in lr.seeds:
        for replay in lr.replays:
            returns, agent = train(_dqn_config(p, replay, seed))
            info = amper_info(agent.replay) if replay.startswith("amper") else None
            if replay == "per" and per_priorities is None:
                per_priorities = agent.replay.tree.priorities(np.arange(agent.replay.size))
            if replay == "amper_k" and amper_k_returns is None:
                amper_k_returns = returns
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
    return (pd.DataFrame(rows), pd.concat(curves, ignore_index=True), per_priorities,
            amper_k_returns)


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
        raise RldseError(f"tcam preset '{name}': {base.bits_per_row}-bit rows cannot hold "
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
    searches alone are kept beside it (`tcam_search_only_s`) for comparison. Draw -1 is the
    presets' values; draws 0..bands-1 a Latin hypercube (rldse.sim.bands.design) over every
    ranged number of the GPU and TCAM presets, the same row for both GPU implementations:
    a hand-written fused kernel (the strongest) and eager framework ops per level (what
    PyTorch PER code runs)."""
    rows = []
    lat = p.latency
    for g in lat.gpus:
        for tcam_name in lat.tcams:
            params = _ranged("gpu", g) + _ranged("tcam", tcam_name)
            points = design(params, lat.bands, lat.bands_seed)
            for draw in range(-1, lat.bands):
                vals = _draw_values(params, None if draw < 0 else points[draw])
                fused = make_model(load_part("gpu", g, **{**vals["gpu"], "sumtree": "fused"}))
                eager = make_model(load_part("gpu", g, **{**vals["gpu"], "sumtree": "eager"}))
                assert isinstance(fused, GpuModel) and isinstance(eager, GpuModel)
                models = {}
                for c in counts.itertuples(index=False):
                    if c.buffer not in models:
                        models[c.buffer] = _am_model(tcam_name, c.buffer, p.amper.bits,
                                                     vals["tcam"])
                    rows.append({"gpu": g, "tcam": tcam_name, "draw": draw,
                                 **_point(p, c, fused, eager, models[c.buffer])})
    return pd.DataFrame(rows)


def _point(p: Params, c, gm: GpuModel, eager: GpuModel, amm: TcamModel) -> dict:
    s = amm.spec
    randoms = round(c.batch * p.amper.targets_per_item) + c.batch
    reads = c.candidates + c.batch
    parts = amm.sample_parts_s(c.searches, reads, randoms)
    tcam_sample = sum(parts.values())
    tcam_search_only = c.searches * (s.search_ns + s.periph_ns + s.icnt_ns) * 1e-9
    tcam_update = float(amm.write_seconds(c.batch))
    tcam_j = (sum(amm.sample_joules(c.searches, reads, randoms).values())
            + float(amm.write_joules(c.batch)))
    g_time = gm.sumtree_time(c.batch, c.buffer)
    g_sample, g_update = g_time.wall_s, g_time.wall_s
    g_eager = eager.sumtree_time(c.batch, c.buffer).wall_s
    return {"variant": f"AMPER-{c.variant}", "buffer": c.buffer, "batch": c.batch,
            "arrays": s.arrays, "htree_levels": amm.levels,
            "searches_per_batch": c.searches, "csp_entries_per_batch": c.candidates,
            "gpu_sample_s": g_sample, "tcam_sample_s": tcam_sample,
            **{f"tcam_{k}_s": v for k, v in parts.items()},
            "tcam_search_only_s": tcam_search_only,
            "ratio_sample": g_sample / tcam_sample,
            "gpu_sample_eager_s": g_eager, "ratio_sample_eager": g_eager / tcam_sample,
            "ratio_search_only": g_sample / tcam_search_only,
            "gpu_update_s": g_update, "tcam_update_s": tcam_update,
            "ratio_sample_update": (g_sample + g_update) / (tcam_sample + tcam_update),
            "gpu_energy_j": float(gm.energy(busy_s=2 * g_time.device_s,
                                            wall_s=2 * g_time.wall_s).joules),
            "tcam_energy_j": tcam_j}


# ---- part 3: the engine ----------------------------------------------------------------

def _shipped_trace(study_dir: Path, p: Params) -> Trace:
    """The capture end_to_end.trace names, checked to be DQN on the study's env with
    AMPER-k replay of the study's design (its steps and seed may differ: the report says
    which run it is)."""
    where = f"{study_dir / 'study.yaml'}: end_to_end.trace"
    try:
        trace = _open_once(p.end_to_end.trace)
    except RldseError as exc:
        raise exc.within(where) from None
    meta = trace.meta
    want = _dqn_config(p, "amper_k", p.learning.seeds[0]).model_dump()
    keys = ["replay", *sorted(k for k in want if k.startswith("amper_"))]
    got = {"workload": meta.workload, "env_id": meta.env_id,
           **{k: meta.hyperparameters.get(k) for k in keys}}
    for key, value in {"workload": "dqn", "env_id": want["env_id"],
                       **{k: want[k] for k in keys}}.items():
        if got[key] != value:
            raise RldseError(f"{p.end_to_end.trace}: its {key} is {got[key]!r}, this study's "
                             f"AMPER-k run has {value!r} (capture it again: traces/make.sh)",
                             where=where)
    return trace


def _open_once(path: Path) -> Trace:
    """``open_trace``, read once per version of the file in a process: `study run` prices
    the plan (which replays this capture) and then runs the study, and both need it."""
    try:
        st = path.stat()
    except OSError:
        return open_trace(path)  # its one-line error
    return _opened(path.resolve(), (st.st_ino, st.st_size, st.st_mtime_ns))


@lru_cache(maxsize=1)
def _opened(path: Path, version: tuple[int, int, int]) -> Trace:
    return open_trace(path)


def _arrays(p: Params, trace: Trace) -> int:
    """TCAM arrays holding the trace's replay buffer, a row per item."""
    rows_per_array = load_part("tcam", p.end_to_end.tcam).rows
    return math.ceil(trace.meta.workload_info["replay_capacity"] / rows_per_array)


def _end_to_end_spec(p: Params, arrays: int, replay: str):
    e = p.end_to_end
    return parse_spec({"name": f"amper-replay_{replay}", "cpu": {"preset": e.cpu},
                       "gpu": {"preset": e.gpu}, "tcam": {"preset": e.tcam, "arrays": arrays},
                       "placement": {"replay": replay, "learn": "gpu"},
                       "workload": {"env_steps": e.env_steps, "learner": "async",
                                    "actors": 8}})


def _end_to_end(p: Params, trace: Trace) -> pd.DataFrame:
    arrays = _arrays(p, trace)
    out = []
    for replay in END_TO_END_REPLAYS:
        r = simulate(trace, _end_to_end_spec(p, arrays, replay), seed=0)
        phases = r.phases_frame()
        sample = phases[(phases.phase == "replay_sample")]["time_s"].sum()
        out.append({"replay": replay, "updates": r.updates,
                    "iteration_us": r.breakdown_s.get("iteration_s", np.nan) * 1e6,
                    "replay_sample_us_per_update": sample / max(r.updates, 1) * 1e6,
                    "updates_per_s": r.updates_per_s, "power_w": r.avg_power_w,
                    "bottleneck": r.bottleneck})
    return pd.DataFrame(out)


# ---- the runs together -----------------------------------------------------------------

@dataclass(frozen=True)
class Runs:
    """What the runs produced, for the report: every latency point (``latency``:
    results.csv; draw -1 the presets' values, 0.. the bands), every learning run
    (``learning``: learning.csv) and its curve (``curves``: learning_curves.csv), and the
    engine's replays of the shipped AMPER-k capture (``end_to_end``: end_to_end.csv) with
    that capture (``trace``) and whether its episode returns equal those of this run's
    first AMPER-k seed (``trace_matches_run``; None where its seed or steps differ)."""

    params: Params
    latency: pd.DataFrame
    learning: pd.DataFrame
    curves: pd.DataFrame
    end_to_end: pd.DataFrame
    trace: Trace
    trace_matches_run: bool | None


def plan(study_dir: Path) -> list[Planned]:
    """The study's work, for its up-front estimate (rldse.studies.plan): real learning
    runs (priced per replay), the engine's replays of the shipped AMPER-k capture (priced
    per design), and sampler measurements (listed)."""
    from functools import partial

    from rldse.sim.run_cost import learning_run
    from rldse.workloads.offpolicy.dqn import capture_request

    p = load_params(study_dir, Params)
    lr = p.learning
    trace = _shipped_trace(study_dir, p)
    arrays = _arrays(p, trace)
    return [*(Planned(f"real DQN learning runs of {lr.steps:,} env steps with {replay} "
                      "replay", len(lr.seeds),
                      learning=partial(learning_run, capture_request(
                          _dqn_config(p, replay, lr.seeds[0]))))
              for replay in lr.replays),
            *(Planned(f"simulation of the shipped AMPER-k capture, replay on {replay}", 1,
                      trace=trace, spec=_end_to_end_spec(p, arrays, replay))
              for replay in END_TO_END_REPLAYS),
            Planned("AMPER sampler measurements",
                    len(p.latency.buffer_log2) * len(VARIANTS))]


def collect(study_dir: Path, out: Path, progress: bool = True) -> Runs:
    """Run the three parts; write results.csv, learning.csv, learning_curves.csv and
    end_to_end.csv in out."""
    p = load_params(study_dir, Params)
    lat_p, lr = p.latency, p.learning
    if "per" not in lr.replays or "amper_k" not in lr.replays:
        raise RldseError(f"{study_dir / 'study.yaml'}: learning.replays must include per "
                         "(its priorities feed the latency part) and amper_k")
    trace = _shipped_trace(study_dir, p)
    total = len(lr.seeds) * len(lr.replays) + len(lat_p.buffer_log2) * len(VARIANTS)
    with (tqdm(total=total, desc="amper_replay", disable=None if progress else True,
               unit="run") as bar,
          single_blas_thread()):  # as captures do (rldse.threads)
        runs, curves, priorities, amper_k_returns = _learning(p, bar)
        counts = _sampler_counts(p, priorities, bar)
    lat_all = _latency(p, counts)
    e2e = _end_to_end(p, trace)

    out.mkdir(parents=True, exist_ok=True)
    for name, frame in (("results", lat_all), ("learning", runs),
                        ("learning_curves", curves), ("end_to_end", e2e)):
        atomic_write(out / f"{name}.csv", lambda tmp, f=frame: f.to_csv(tmp, index=False))
    return Runs(p, lat_all, runs, curves, e2e, trace,
                _same_run(trace, p, amper_k_returns))


def _same_run(trace: Trace, p: Params, returns: list[float]) -> bool | None:
    """Whether the capture's episode returns equal this run's first AMPER-k seed's (a
    capture of the same run: the recorder changes no result); None when its seed or
    steps differ."""
    meta = trace.meta
    if meta.seed != p.learning.seeds[0] or meta.hyperparameters.get("steps") != p.learning.steps:
        return None
    return list(meta.episode_returns) == list(returns)
