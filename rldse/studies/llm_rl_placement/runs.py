"""The study's parameters and runs: each configuration simulated once at the presets'
values, and the claimed configurations again at every band draw (a Latin hypercube over
every ranged preset number, rldse.sim.bands)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from rldse.sim import simulate
from rldse.sim.bands import design, sampled_spec, uncertain_params
from rldse.studies.common import load_params
from rldse.studies.plan import Planned
from rldse.system import load_spec
from rldse.workloads import open_trace

#: Protocols the split sweep runs, as (label, placement.protocol, extra knobs).
SPLITS: tuple[tuple[str, str, dict[str, Any]], ...] = (
    ("disaggregated", "disaggregated", {}),
    ("one_step_off", "one_step_off", {}),
    ("async, staleness 0", "async", {"staleness_threshold": 0.0}),
    ("async, staleness 0.5, partial", "async",
     {"staleness_threshold": 0.5, "partial_rollout": True}),
)
#: The split the page's 128-GPU async rows use: half the GPUs roll out.
HALF = 0.5


class ByMode(BaseModel):
    model_config = ConfigDict(extra="forbid")
    colocated: dict[int, float]
    async_: dict[int, float] = Field(alias="async")


class Published(ByMode):
    stream: float = Field(gt=0)
    update_actor: ByMode


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    trace: str
    system: str
    workload: dict[str, Any]
    colocated: dict[str, Any]
    split: dict[str, Any]
    gpus: int = Field(gt=0)
    rollout_gpus: list[int] = Field(min_length=1)
    colocated_gpus: list[int] = Field(min_length=1)
    staleness: list[float] = Field(min_length=1)
    published: Published
    bands: int = Field(ge=2, le=1024, description="Latin-hypercube draws per band")
    seed: int = 0


@dataclass(frozen=True)
class Config:
    """One configuration: its label, GPUs, rollout GPUs (0: colocated), protocol and the
    knobs it sets besides the study's workload."""

    label: str
    gpus: int
    rollout_gpus: int
    protocol: str
    knobs: tuple[tuple[str, Any], ...] = ()


@dataclass(frozen=True)
class Collected:
    p: Params
    results: pd.DataFrame  # one row per configuration
    bands: pd.DataFrame  # step_s per (claimed configuration, draw)
    uncertain: int  # ranged preset numbers the bands draw over


def configurations(p: Params) -> list[Config]:
    """Colocated at each GPU count; on ``p.gpus`` GPUs every split under each protocol
    of SPLITS; the staleness ablation at the half split (partial rollout)."""
    out = [Config(f"colocated {g}", g, 0, "colocated", tuple(p.colocated.items()))
           for g in p.colocated_gpus]
    for label, protocol, extra in SPLITS:
        out += [Config(f"{label} {r}:{p.gpus - r}", p.gpus, r, protocol,
                       tuple({**p.split, **extra}.items())) for r in p.rollout_gpus]
    half = int(p.gpus * HALF)
    for s in p.staleness:
        out.append(Config(f"staleness {s:g} {half}:{p.gpus - half}", p.gpus, half, "async",
                          tuple({**p.split, "staleness_threshold": s,
                                 "partial_rollout": s > 0}.items())))
    for g in p.colocated_gpus:  # the page's async rows: half of each cluster rolls out
        if g != p.gpus:
            out.append(Config(f"async {g // 2}:{g // 2}", g, g // 2, "async",
                              tuple({**p.split, "staleness_threshold": 0.5,
                                     "partial_rollout": True}.items())))
    return out


def claimed(p: Params) -> list[str]:
    """The configurations the claims compare, banded."""
    half = int(p.gpus * HALF)
    return [f"colocated {g}" for g in (p.gpus // 2, p.gpus)] + [
        f"staleness 0 {half}:{p.gpus - half}", f"staleness 0.5 {half}:{p.gpus - half}"]


def spec_of(study_dir: Path, p: Params, c: Config) -> Any:
    """The study's system file with the configuration's nodes, protocol and knobs."""
    sets: dict[str, Any] = {f"workload.{k}": v for k, v in p.workload.items()}
    sets.update({f"workload.{k}": v for k, v in c.knobs})
    sets.update({"nodes": c.gpus // _per_node(study_dir, p),
                 "placement.protocol": c.protocol})
    if c.rollout_gpus:
        sets["workload.rollout_gpus"] = c.rollout_gpus
    return load_spec(study_dir / p.system, sets)


def _per_node(study_dir: Path, p: Params) -> int:
    return load_spec(study_dir / p.system).gpu.count


def plan(study_dir: Path) -> list[Planned]:
    """The runs to price: every configuration once and the claimed ones at each draw, all
    of the costliest shape (128 GPUs)."""
    p = load_params(study_dir, Params)
    trace = open_trace(study_dir / p.trace)
    configs = configurations(p)
    big = next(c for c in configs if c.gpus == p.gpus)
    return [Planned("llm_rl steps", len(configs) + p.bands * len(claimed(p)), trace,
                    spec_of(study_dir, p, big))]


def _row(c: Config, result: Any) -> dict[str, Any]:
    b = result.breakdown_s
    return {"configuration": c.label, "gpus": c.gpus, "rollout_gpus": c.rollout_gpus,
            "train_gpus": c.gpus - c.rollout_gpus if c.rollout_gpus else c.gpus,
            "protocol": c.protocol, **dict(c.knobs), "step_s": b["step_s"],
            "generate_s": b["generate_s"], "logprob_s": b["logprob_s"],
            "train_s": b["train_s"], "weight_sync_s": b["weight_sync_s"],
            "trainer_wait_s": b.get("trainer_wait_s", 0.0),
            "staleness_mean_updates": result.staleness_mean_updates,
            "fits": bool(result.checks.get("gpu_memory", True))}


def collect(study_dir: Path, out: Path, progress: bool = True) -> Collected:
    """Every configuration at the presets' values (results.csv), the claimed ones at each
    band draw (bands.csv)."""
    p = load_params(study_dir, Params)
    trace = open_trace(study_dir / p.trace)
    configs = configurations(p)
    rows = [_row(c, simulate(trace, spec_of(study_dir, p, c)))
            for c in tqdm(configs, desc="llm_rl_placement", disable=None if progress else True,
                          unit="configuration")]
    results = pd.DataFrame(rows)
    by_label = {c.label: c for c in configs}
    draws, uncertain = [], 0
    for label in claimed(p):
        spec = spec_of(study_dir, p, by_label[label])
        params = uncertain_params(spec, trace)
        uncertain = max(uncertain, len(params))
        for i, values in enumerate(design(params, p.bands, p.seed)):
            r = simulate(trace, sampled_spec(spec, trace, params, values))
            draws.append({"configuration": label, "draw": i,
                          "step_s": r.breakdown_s["step_s"]})
    bands = pd.DataFrame(draws)
    out.mkdir(parents=True, exist_ok=True)
    results.to_csv(out / "results.csv", index=False)
    bands.to_csv(out / "bands.csv", index=False)
    return Collected(p, results, bands, uncertain)
