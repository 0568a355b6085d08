"""The study's simulations: every replay-manager/learner pair on PEARL's tables (part 1),
and PEARL's CPU+GPU+FPGA platform against a CPU-GPU library's mapping (part 2), at the
presets' values (draw -1) and at ``bands`` draws of one Latin hypercube over the union of
both systems' assumed numbers (shared parts take the same value in a draw, so the ratios
pair up; rldse.sim.bands)."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

import pandas as pd
from tqdm import tqdm

from rldse.files import atomic_write
from rldse.models.table import load_link_table
from rldse.sim import simulate
from rldse.sim.bands import design, sampled_spec, uncertain_params
from rldse.studies.common import load_params
from rldse.studies.pearl_mapping.params import FpgaPlatform, Params, PearlTables, devices
from rldse.studies.pearl_mapping.storage import Storage, place_storage
from rldse.studies.plan import Planned
from rldse.system import parse_spec
from rldse.workloads import open_trace as load_trace

#: env steps of each RM/learner pair's simulation on PEARL's tables
TABLE_STEPS = 5000
LIBRARY = (("cpu", "gpu"), "cpu", "gpu")  # parts, replay, learner: a CPU-GPU RL library
PEARL_PARTS = ("cpu", "gpu", "fpga")  # PEARL's heterogeneous platform, the FPGA card added


# ---- part 1: PEARL's tables --------------------------------------------------------------------

def _table_spec(csv: Path, rm: str, learner: str):
    return parse_spec({
        "name": f"pearl-{rm}-{learner}",
        "table": {"latency_csv": str(csv), "replay": rm, "learn": learner},
        "placement": {"replay": "table", "learn": "table"},
        "workload": {"env_steps": TABLE_STEPS, "learner": "async", "actors": 4}})


def _table_runs(p: PearlTables, trace, bar) -> pd.DataFrame:
    """Every RM/learner pair through the engine on PEARL's tables."""
    csv = p.latency_csv
    rows = []
    for rm, learner in itertools.product(devices(csv), repeat=2):
        r = simulate(trace, _table_spec(csv, rm, learner))
        it = r.breakdown_s["iteration_s"]
        rows.append({"rm": rm, "learner": learner, "colocated": rm == learner,
                     "iteration_ms": it * 1e3,
                     "samples_per_s": p.train_batch_size / it})
        bar.update()
    return pd.DataFrame(rows)


# ---- part 2: PEARL's platform ------------------------------------------------------------------

def _platform(s: FpgaPlatform, workload: str, parts: tuple[str, ...], replay: str,
              learn: str) -> dict:
    raw = {"name": f"{workload}-{'+'.join(parts)}-replay_{replay}-learn_{learn}",
           "placement": {"replay": replay, "learn": learn},
           "workload": {"env_steps": s.env_steps, "learner": "async", "actors": s.actors}}
    return raw | {kind: {"preset": getattr(s, kind)} for kind in parts}


def _joint_params(s: FpgaPlatform, workload: str, trace) -> list:
    """The union of both systems' assumed numbers, each path once."""
    return list({q.path: q for parts in (LIBRARY[0], PEARL_PARTS) for q in
                 uncertain_params(parse_spec(_platform(s, workload, parts, "cpu", "cpu"),
                                             where="pearl"), trace)}.values())


def _one(s: FpgaPlatform, workload: str, trace, joint: list, bar, parts: tuple[str, ...],
         replay: str, learn: str, draw: int = -1, values: dict | None = None) -> dict:
    """One simulation: the presets' values (draw -1) or draw ``draw``'s ``values``."""
    spec = parse_spec(_platform(s, workload, parts, replay, learn), where="pearl")
    if draw >= 0:
        params = [q for q in joint if q.path.split(".")[0] in parts]
        spec = sampled_spec(spec, trace, params, [values[q.path] for q in params])
    r = simulate(trace, spec, seed=s.seed)
    bar.update()
    batch = trace.meta.workload_info["batch_size"]
    return {"workload": workload, "system": "+".join(parts), "replay": replay,
            "learn": learn, "draw": draw, "samples_per_s": r.updates_per_s * batch,
            "power_w": r.avg_power_w, "samples_per_j": r.updates_per_s * batch / r.avg_power_w,
            "bottleneck": r.bottleneck}


def _workload_runs(s: FpgaPlatform, workload: str, trace, bar) -> list[dict]:
    """One workload: PEARL's mapping on the CPU+GPU+FPGA platform (the fastest placement at
    the presets' values, as its composer picks one) against the library's CPU-GPU mapping on
    the CPU+GPU machine, both at the presets' values and at every band draw."""
    joint = _joint_params(s, workload, trace)
    points = design(joint, s.bands, s.seed)
    one = {"s": s, "workload": workload, "trace": trace, "joint": joint, "bar": bar}
    nominal = [_one(**one, parts=PEARL_PARTS, replay=r, learn=ln)
               for r in s.replays for ln in s.learners]
    best = max(nominal, key=lambda row: row["samples_per_s"])
    rows = [{**row, "role": "pearl" if row is best else "candidate"} for row in nominal]
    library = dict(zip(("parts", "replay", "learn"), LIBRARY, strict=True))
    rows.append({**_one(**one, **library), "role": "library"})
    for i in range(s.bands):
        values = {q.path: v for q, v in zip(joint, points[i], strict=True)}
        rows.append({**_one(**one, parts=PEARL_PARTS, replay=best["replay"],
                            learn=best["learn"], draw=i, values=values), "role": "pearl"})
        rows.append({**_one(**one, **library, draw=i, values=values), "role": "library"})
    return rows


def _fpga_runs(s: FpgaPlatform, base: Path, bar) -> pd.DataFrame:
    """Every workload's platform runs (``_workload_runs``), in study.yaml's order."""
    rows = []
    for workload, rel in s.traces.items():
        rows += _workload_runs(s, workload, load_trace(base / rel), bar)
    return pd.DataFrame(rows)


def _runs_per_workload(s: FpgaPlatform) -> int:
    """Simulations per workload on the FPGA platform: every mapping, the library's, and
    both at each band draw."""
    return len(s.replays) * len(s.learners) + 1 + 2 * s.bands


# ---- the runs together -------------------------------------------------------------------------

def plan(study_dir: Path) -> list[Planned]:
    """The study's simulations, for its up-front estimate (rldse.studies.plan): each group
    priced at its largest design (PEARL's platform with the last replay and learner)."""
    params = load_params(study_dir, Params)
    p, s = params.pearl_tables, params.fpga_platform
    csv = p.latency_csv
    names = devices(csv)
    out = [Planned("RM/learner pairs on PEARL's tables", len(names) ** 2,
                   load_trace(study_dir / s.traces["dqn"]),
                   _table_spec(csv, names[-1], names[-1]))]
    for workload, rel in s.traces.items():
        spec = parse_spec(_platform(s, workload, PEARL_PARTS, s.replays[-1], s.learners[-1]),
                          where="pearl")
        out.append(Planned(f"{workload} platform runs", _runs_per_workload(s),
                           load_trace(study_dir / rel), spec))
    return out


@dataclass(frozen=True)
class Runs:
    """What the runs produced, for the report: every RM/learner pair on PEARL's tables
    (``tables``: results.csv), its fastest pair (``best``), the storage placement for that
    pair and every platform run (``fpga``: fpga_platform.csv)."""

    params: Params
    tables: pd.DataFrame
    best: pd.Series
    storage: Storage
    fpga: pd.DataFrame


def collect(study_dir: Path, out: Path, progress: bool = True) -> Runs:
    """Run every simulation; write results.csv and fpga_platform.csv in ``out``."""
    params = load_params(study_dir, Params)
    p, s = params.pearl_tables, params.fpga_platform
    links = load_link_table(p.link_csv)
    dqn = load_trace(study_dir / s.traces["dqn"])
    stores = devices(p.latency_csv)
    n_fpga = _runs_per_workload(s) * len(s.traces)
    with tqdm(total=len(stores) ** 2 + n_fpga, desc="pearl_mapping",
              disable=None if progress else True, unit="sim") as bar:
        tables = _table_runs(p, dqn, bar)
        fpga = _fpga_runs(s, study_dir, bar)
    best = tables.loc[tables["samples_per_s"].idxmax()]
    storage = place_storage(p, links, stores, best.rm, best.learner)

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "results.csv", lambda tmp: tables.assign(study="pearl_tables")
                 .to_csv(tmp, index=False))
    atomic_write(out / "fpga_platform.csv", lambda tmp: fpga.to_csv(tmp, index=False))
    return Runs(params, tables, best, storage, fpga)
