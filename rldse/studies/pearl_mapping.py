"""PEARL (Meng et al., arXiv 2311.09445): which device runs the replay manager, the learner
and the data storage.

Part 1 replays DQN through the engine with PEARL's own measured tables as table-driven
parts, for every replay-manager/learner pair, and keeps the fastest, as PEARL's system
composer (SysCon.py) does from its analytical model; then places the data storage with
PEARL's traffic model (hops × (latency + bytes / bandwidth); two accelerators talk
through the CPU). Part 2 lets rldse's spec-based parts choose the placement for DQN and
DDPG traces captured by rldse, and compares with the "CPU-GPU library" mapping.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import seaborn as sns
from pydantic import BaseModel, ConfigDict, Field
from tqdm import tqdm

from rldse.files import atomic_write
from rldse.models.table import load_link_table
from rldse.sim import simulate
from rldse.sim.bands import design, percentiles, sampled_spec, uncertain_params
from rldse.studies.common import load_params, save_figure
from rldse.studies.plan import Planned
from rldse.studies.report import Claim, Report, markdown_table
from rldse.system import parse_spec
from rldse.workloads import open_trace as load_trace


class Published(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rm: str
    learner: str
    data_storage: str
    peak_samples_per_s: float


class PearlTables(BaseModel):
    model_config = ConfigDict(extra="forbid")
    latency_csv: str
    link_csv: str
    train_batch_size: int
    insert_batch_size: int
    state_size: int
    action_size: int
    published: Published


class FpgaPlatform(BaseModel):
    model_config = ConfigDict(extra="forbid")
    traces: dict[str, str]
    cpu: str
    gpu: str
    fpga: str
    env_steps: int = Field(ge=1)
    actors: int = Field(ge=1)
    replays: list[str] = Field(min_length=1, description="replay devices PEARL's mapping "
                                                         "searches")
    learners: list[str] = Field(min_length=1, description="learner devices it searches")
    bands: int = Field(ge=1, description="Latin-hypercube draws over every assumed number")
    seed: int = 0
    published_throughput: float = Field(gt=0)
    published_perf_per_w: float = Field(gt=0)


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pearl_tables: PearlTables
    fpga_platform: FpgaPlatform


def _devices(latency_csv: Path) -> list[str]:
    lines = latency_csv.read_text().strip().splitlines()[1:]
    return [line.split(",")[0].strip() for line in lines]


#: env steps of each RM/learner pair's simulation on PEARL's tables
TABLE_STEPS = 5000


def _table_spec(csv: Path, rm: str, learner: str):
    return parse_spec({
        "name": f"pearl-{rm}-{learner}",
        "table": {"latency_csv": str(csv), "replay": rm, "learn": learner},
        "placement": {"replay": "table", "learn": "table"},
        "workload": {"env_steps": TABLE_STEPS, "learner": "async", "actors": 4}})


def _table_runs(p: PearlTables, base: Path, trace, bar) -> pd.DataFrame:
    """Every RM/learner pair through the engine on PEARL's tables."""
    csv = base / p.latency_csv
    rows = []
    for rm, learner in itertools.product(_devices(csv), repeat=2):
        r = simulate(trace, _table_spec(csv, rm, learner))
        it = r.breakdown_s["iteration_s"]
        rows.append({"rm": rm, "learner": learner, "colocated": rm == learner,
                     "iteration_ms": it * 1e3,
                     "samples_per_s": p.train_batch_size / it})
        bar.update()
    return pd.DataFrame(rows)


def storage_traffic_ms(p: PearlTables, links, store: str, learner: str, actor: str,
                       rm: str, rm_gb: float) -> float:
    """PEARL's data-storage cost: Σ over the learner, actor and RM of hops × (latency +
    GB / bandwidth); a path between two accelerators is two hops through the CPU."""
    lnr_gb = p.train_batch_size * (p.state_size * 2 + p.action_size + 3) * 4 / 1e9
    act_gb = p.insert_batch_size * (p.state_size * 2 + p.action_size + 2) * 4 / 1e9
    total = 0.0
    for other, gb in ((learner, lnr_gb), (actor, act_gb), (rm, rm_gb)):
        if "CPU" in (store, other) or store == other:
            hops = [(store, other)]
        else:
            hops = [("CPU", store), ("CPU", other)]
        for a, b in hops:
            link = links.get(a, b)
            total += link.latency_s * 1e3 + gb / (link.bandwidth_gbs / 1e3)
    return total


def _platform(s: FpgaPlatform, workload: str, parts: tuple[str, ...], replay: str,
              learn: str) -> dict:
    raw = {"name": f"{workload}-{'+'.join(parts)}-replay_{replay}-learn_{learn}",
           "placement": {"replay": replay, "learn": learn},
           "workload": {"env_steps": s.env_steps, "learner": "async", "actors": s.actors}}
    return raw | {kind: {"preset": getattr(s, kind)} for kind in parts}


LIBRARY = (("cpu", "gpu"), "cpu", "gpu")  # parts, replay, learner: a CPU-GPU RL library
PEARL_PARTS = ("cpu", "gpu", "fpga")  # PEARL's heterogeneous platform, the FPGA card added


def _fpga_runs(s: FpgaPlatform, base: Path, bar) -> pd.DataFrame:
    """Per workload: PEARL's mapping on the CPU+GPU+FPGA platform (the fastest placement at
    the presets' values, as its composer picks one) against the library's CPU-GPU mapping on
    the CPU+GPU machine, both at the presets' values (draw -1) and at ``bands`` draws of
    one Latin hypercube over the union of both systems' assumed numbers (shared parts take
    the same value in a draw, so the ratios pair up; rldse.sim.bands)."""
    rows = []
    for workload, rel in s.traces.items():
        trace = load_trace(base / rel)
        joint = list({q.path: q for parts in (LIBRARY[0], PEARL_PARTS) for q in
                      uncertain_params(parse_spec(_platform(s, workload, parts, "cpu",
                                                            "cpu"), where="pearl"),
                                       trace)}.values())
        points = design(joint, s.bands, s.seed)
        one = {"s": s, "workload": workload, "trace": trace, "joint": joint, "bar": bar}
        nominal = [_one(**one, parts=PEARL_PARTS, replay=r, learn=ln)
                   for r in s.replays for ln in s.learners]
        best = max(nominal, key=lambda row: row["samples_per_s"])
        rows += [{**row, "role": "pearl" if row is best else "candidate"} for row in nominal]
        library = dict(zip(("parts", "replay", "learn"), LIBRARY, strict=True))
        rows.append({**_one(**one, **library), "role": "library"})
        for i in range(s.bands):
            values = {q.path: v for q, v in zip(joint, points[i], strict=True)}
            rows.append({**_one(**one, parts=PEARL_PARTS, replay=best["replay"],
                                learn=best["learn"], draw=i, values=values), "role": "pearl"})
            rows.append({**_one(**one, **library, draw=i, values=values), "role": "library"})
    return pd.DataFrame(rows)


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


def _runs_per_workload(s: FpgaPlatform) -> int:
    """Simulations per workload on the FPGA platform: every mapping, the library's, and
    both at each band draw."""
    return len(s.replays) * len(s.learners) + 1 + 2 * s.bands


def plan(study_dir: Path) -> list[Planned]:
    """The study's simulations, for its up-front estimate (rldse.studies.plan): each group
    priced at its largest design (PEARL's platform with the last replay and learner)."""
    params = load_params(study_dir, Params)
    p, s = params.pearl_tables, params.fpga_platform
    csv = study_dir / p.latency_csv
    devices = _devices(csv)
    out = [Planned("RM/learner pairs on PEARL's tables", len(devices) ** 2,
                   load_trace(study_dir / s.traces["dqn"]),
                   _table_spec(csv, devices[-1], devices[-1]))]
    for workload, rel in s.traces.items():
        spec = parse_spec(_platform(s, workload, PEARL_PARTS, s.replays[-1], s.learners[-1]),
                          where="pearl")
        out.append(Planned(f"{workload} platform runs", _runs_per_workload(s),
                           load_trace(study_dir / rel), spec))
    return out


def run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    params = load_params(study_dir, Params)
    p, s = params.pearl_tables, params.fpga_platform
    dqn = load_trace(study_dir / s.traces["dqn"])
    n_pairs = len(_devices(study_dir / p.latency_csv)) ** 2
    n_fpga = _runs_per_workload(s) * len(s.traces)
    with tqdm(total=n_pairs + n_fpga, desc="pearl_mapping", disable=not progress,
              unit="sim") as bar:
        tables = _table_runs(p, study_dir, dqn, bar)
        fpga = _fpga_runs(s, study_dir, bar)

    best = tables.loc[tables["samples_per_s"].idxmax()]
    links = load_link_table(study_dir / p.link_csv)
    stores = _devices(study_dir / p.latency_csv)
    traffic_code = {d: storage_traffic_ms(p, links, d, best.learner, "CPU", best.rm,
                                          rm_gb=p.train_batch_size) for d in stores}
    traffic_bytes = {d: storage_traffic_ms(p, links, d, best.learner, "CPU", best.rm,
                                           rm_gb=p.train_batch_size * 4 / 1e9) for d in stores}
    store = min(traffic_code, key=traffic_code.get)
    store_bytes = min(traffic_bytes, key=traffic_bytes.get)

    out.mkdir(parents=True, exist_ok=True)
    atomic_write(out / "results.csv", lambda tmp: tables.assign(study="pearl_tables")
                 .to_csv(tmp, index=False))
    atomic_write(out / "fpga_platform.csv", lambda tmp: fpga.to_csv(tmp, index=False))

    pub = p.published
    report = Report(
        draws=s.bands,
        name="pearl_mapping", title="PEARL: mapping replay, learner and storage to devices",
        source="Meng et al., PEARL, arXiv 2311.09445 (CF 2024); tables and composer from the "
               "public repository CatherineMeng/HeteroRL, SysConfig/",
        summary="Consistency check: the engine replays a DQN trace with PEARL's measured "
                "latencies as table-driven parts for all 16 replay-manager/learner pairs; "
                "the fastest pair and its throughput are what PEARL's composer computes "
                "from the same tables, so agreement shows rldse evaluates PEARL's formula "
                "as PEARL does, not that PEARL's numbers are reproduced. Reproduction: "
                f"PEARL's CPU+FPGA platform ({s.cpu}, {s.fpga} running PEARL's on-chip "
                f"sum-tree replay manager, {s.gpu}) with PEARL's best mapping for DQN and "
                "DDPG against a CPU-GPU library's mapping (replay on the CPU, learner on "
                "the GPU) on a CPU+GPU machine of the same parts, banded over every "
                "assumed number.")
    report.claims.append(Claim(
        "mapping of replay manager / learner (PEARL's own tables)",
        f"RM {pub.rm}, learner {pub.learner}", f"RM {best.rm}, learner {best.learner}",
        "same" if (best.rm, best.learner) == (pub.rm, pub.learner) else "different",
        "reproduced" if (best.rm, best.learner) == (pub.rm, pub.learner) else "not reproduced",
        kind="consistency", tolerance="the same replay-manager and learner devices"))
    err = abs(best.samples_per_s - pub.peak_samples_per_s) / pub.peak_samples_per_s
    report.claims.append(Claim(
        "theoretical peak throughput (samples/s, batch 512)", f"{pub.peak_samples_per_s:,.2f}",
        f"{best.samples_per_s:,.2f}", f"{err:.1e} relative",
        "reproduced" if err < 1e-9 else "not reproduced", kind="consistency",
        p5=best.samples_per_s, p50=best.samples_per_s, p95=best.samples_per_s,
        tolerance="relative error below 1e-9 (the same formula)"))
    report.claims.append(Claim(
        "data storage placement (PEARL traffic model)", pub.data_storage, store,
        "same" if store == pub.data_storage else "different",
        "reproduced" if store == pub.data_storage else "not reproduced", kind="consistency",
        tolerance="the same placement",
        note="" if store == store_bytes else
        f"with the RM traffic counted as {p.train_batch_size} 4-byte indices instead of "
        f"SysCon.py's {p.train_batch_size} GB, storage would go to {store_bytes}"))
    for col, label, pub_x in (("samples_per_s", "throughput", s.published_throughput),
                              ("samples_per_j", "performance per watt", s.published_perf_per_w)):
        bands, notes = {}, []
        for workload, grp in fpga.groupby("workload", sort=False):
            drawn = grp[grp.draw >= 0]
            pearl = drawn[drawn.role == "pearl"].set_index("draw")
            lib = drawn[drawn.role == "library"].set_index("draw")
            top = grp[(grp.draw == -1) & (grp.role == "pearl")].iloc[0]
            bands[f"{workload} (replay {top.replay}, learner {top.learn})"] = percentiles(
                (pearl[col] / lib[col]).to_numpy())
            notes.append(f"{workload}: {_fpga_note(grp)}")
        report.claims.append(Claim.per_configuration(
            f"{label}, PEARL's mapping on CPU+FPGA / CPU-GPU library mapping, per workload",
            published=f"up to {pub_x:g}x (each workload a gain of 1x-{pub_x:g}x)", low=1.0, high=pub_x, bands=bands, unit="x",
            note="; ".join(notes) + ". rldse's traces are small CartPole/Pendulum MLPs "
            "captured here, where the GPU learner pays its per-op host dispatch and a CPU "
            f"learner wins; PEARL's {label} gain came from its own programs and batch sizes"))

    fig_data = tables.assign(pair=tables.rm + " / " + tables.learner)
    ax = sns.barplot(data=fig_data, x="pair", y="iteration_ms", hue="colocated")
    ax.set(xlabel="replay manager / learner (PEARL table rows)",
           ylabel="iteration time (ms)", title="PEARL tables through the engine")
    ax.tick_params(axis="x", rotation=60)
    report.figures.append((save_figure(ax.figure, out, "pearl_pairs"),
                           "Iteration time of every RM/learner pair on PEARL's tables"))
    nominal = fpga[fpga.draw == -1]
    g = sns.catplot(data=nominal.assign(placement=nominal.system + "\nreplay " + nominal.replay
                                        + "\nlearn " + nominal.learn),
                    x="placement", y="samples_per_s", col="workload", kind="bar",
                    sharey=False, height=4.5, aspect=1.4)
    g.set_axis_labels("system, placement", "training samples / s")
    report.figures.append((save_figure(g.figure, out, "fpga_platform"),
                           "PEARL's CPU+GPU+FPGA platform by placement, and the CPU-GPU "
                           "library mapping (presets' values)"))
    report.sections.append(("All pairs on PEARL's tables",
                            markdown_table(fig_data.drop(columns="pair"))))
    traffic = pd.DataFrame({"storage": list(traffic_code),
                            "traffic_ms (SysCon.py units)": list(traffic_code.values()),
                            "traffic_ms (RM as 4-byte indices)": list(traffic_bytes.values())})
    report.sections.append(("Data-storage traffic per iteration", markdown_table(traffic, 6)))
    report.sections.append(("CPU+FPGA platform: placements (presets' values)",
                            markdown_table(nominal.drop(columns="draw"))))
    report.parameters = {"PEARL tables": f"{p.latency_csv}, {p.link_csv}",
                         "train / insert batch": f"{p.train_batch_size} / {p.insert_batch_size}",
                         "platform CPU, GPU, FPGA": f"{s.cpu}, {s.gpu}, {s.fpga}",
                         "PEARL's mapping searched over": f"replay {s.replays}, learner "
                                                          f"{s.learners}",
                         "env steps per simulation": s.env_steps,
                         "actors, learner": f"{s.actors}, async",
                         "bands": f"{s.bands} Latin-hypercube draws, seed {s.seed}"}
    return report


def _fpga_note(grp: pd.DataFrame) -> str:
    """Why the ratio is what it is: the bottleneck of each side at the presets' values."""
    nom = grp[grp.draw == -1]
    top = nom[nom.role == "pearl"].iloc[0]
    lib = nom[nom.role == "library"].iloc[0]
    return (f"at the presets' values PEARL's mapping is bound by {top.bottleneck} "
            f"({top.power_w:.0f} W), the library's by {lib.bottleneck} ({lib.power_w:.0f} W)")
