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
from pydantic import BaseModel, ConfigDict
from tqdm import tqdm

from rldse.models.table import load_link_table
from rldse.sim import simulate
from rldse.studies.common import load_params, save_figure
from rldse.studies.report import Claim, Report, markdown_table, pct
from rldse.system import parse_spec
from rldse.trace import load_trace


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


class SpecBased(BaseModel):
    model_config = ConfigDict(extra="forbid")
    traces: dict[str, str]
    cpu: str
    gpu: str
    am: dict
    env_steps: int
    seed: int = 0


class Params(BaseModel):
    model_config = ConfigDict(extra="forbid")
    pearl_tables: PearlTables
    spec_based: SpecBased


def _devices(latency_csv: Path) -> list[str]:
    lines = latency_csv.read_text().strip().splitlines()[1:]
    return [line.split(",")[0].strip() for line in lines]


def _table_runs(p: PearlTables, base: Path, trace, steps: int, bar) -> pd.DataFrame:
    """Every RM/learner pair through the engine on PEARL's tables."""
    csv = base / p.latency_csv
    rows = []
    for rm, learner in itertools.product(_devices(csv), repeat=2):
        spec = parse_spec({
            "name": f"pearl-{rm}-{learner}",
            "table": {"latency_csv": str(csv), "replay": rm, "learn": learner},
            "placement": {"replay": "table", "learn": "table"},
            "workload": {"env_steps": steps, "learner": "async", "actors": 4}})
        r = simulate(trace, spec)
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


def _spec_runs(s: SpecBased, base: Path, bar) -> pd.DataFrame:
    rows = []
    for workload, rel in s.traces.items():
        trace = load_trace(base / rel)
        batch = trace.meta.workload_info["batch_size"]
        for replay, learn in itertools.product(("cpu", "gpu", "am"), ("cpu", "gpu")):
            spec = parse_spec({
                "name": f"{workload}-replay_{replay}-learn_{learn}",
                "cpu": {"preset": s.cpu}, "gpu": {"preset": s.gpu}, "am": s.am,
                "placement": {"replay": replay, "learn": learn},
                "workload": {"env_steps": s.env_steps, "learner": "async", "actors": 8}})
            r = simulate(trace, spec, seed=s.seed)
            rows.append({"workload": workload, "replay": replay, "learn": learn,
                         "samples_per_s": r.updates_per_s * batch,
                         "env_steps_per_s": r.env_steps_per_s, "power_w": r.avg_power_w,
                         "samples_per_j": r.updates_per_s * batch / r.avg_power_w,
                         "bottleneck": r.bottleneck})
            bar.update()
    return pd.DataFrame(rows)


def run(study_dir: Path, progress: bool = True) -> Report:
    params = load_params(study_dir, Params)
    p, s = params.pearl_tables, params.spec_based
    out = study_dir / "out"
    dqn = load_trace(study_dir / s.traces["dqn"])
    n_pairs = len(_devices(study_dir / p.latency_csv)) ** 2
    with tqdm(total=n_pairs + 6 * len(s.traces), desc="pearl_mapping", disable=not progress,
              unit="sim") as bar:
        tables = _table_runs(p, study_dir, dqn, 5000, bar)
        spec_runs = _spec_runs(s, study_dir, bar)

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
    tables.assign(study="pearl_tables").to_csv(out / "results.csv", index=False)
    spec_runs.to_csv(out / "spec_based.csv", index=False)

    pub = p.published
    report = Report(
        name="pearl_mapping", title="PEARL: mapping replay, learner and storage to devices",
        source="Meng et al., PEARL, arXiv 2311.09445 (CF 2024); tables and composer from the "
               "public repository CatherineMeng/HeteroRL, SysConfig/",
        summary="The engine replays a DQN trace with PEARL's measured latencies as "
                "table-driven parts for all 16 replay-manager/learner pairs; the fastest "
                "pair and its throughput are what PEARL's composer computes analytically. "
                "Then rldse's spec-based parts choose placements for DQN and DDPG.")
    report.claims.append(Claim(
        "mapping of replay manager / learner (PEARL tables)",
        f"RM {pub.rm}, learner {pub.learner}", f"RM {best.rm}, learner {best.learner}",
        "same" if (best.rm, best.learner) == (pub.rm, pub.learner) else "different",
        "reproduced" if (best.rm, best.learner) == (pub.rm, pub.learner) else "not reproduced"))
    err = abs(best.samples_per_s - pub.peak_samples_per_s) / pub.peak_samples_per_s
    report.claims.append(Claim(
        "theoretical peak throughput (samples/s, batch 512)", f"{pub.peak_samples_per_s:,.2f}",
        f"{best.samples_per_s:,.2f}", f"{err:.1e} relative",
        "reproduced" if err < 1e-9 else "not reproduced"))
    report.claims.append(Claim(
        "data storage placement (PEARL traffic model)", pub.data_storage, store,
        "same" if store == pub.data_storage else "different",
        "reproduced" if store == pub.data_storage else "not reproduced",
        note="" if store == store_bytes else
        f"with the RM traffic counted as {p.train_batch_size} 4-byte indices instead of "
        f"SysCon.py's {p.train_batch_size} GB, storage would go to {store_bytes}"))
    for workload, grp in spec_runs.groupby("workload"):
        base = grp[(grp.replay == "cpu") & (grp.learn == "gpu")].iloc[0]
        top = grp.loc[grp["samples_per_s"].idxmax()]
        eff = grp.loc[grp["samples_per_j"].idxmax()]
        report.claims.append(Claim(
            f"{workload}: throughput of the best placement vs CPU-GPU library",
            "up to 2.1x (PEARL, measured on CPU+GPU and CPU+FPGA)",
            f"{top.samples_per_s / base.samples_per_s:.2f}x (replay {top.replay}, "
            f"learn {top.learn})", pct(top.samples_per_s / base.samples_per_s, 2.1),
            "not comparable",
            note="rldse searches CPU, GPU and TCAM parts from spec sheets for its own "
                 "numpy traces, not PEARL's FPGA design; the ratio depends on which "
                 "device the baseline leaves idle"))
        report.claims.append(Claim(
            f"{workload}: performance per watt of the best placement vs CPU-GPU library",
            "up to 3.4x", f"{eff.samples_per_j / base.samples_per_j:.2f}x (replay "
            f"{eff.replay}, learn {eff.learn})", pct(eff.samples_per_j / base.samples_per_j,
                                                     3.4), "not comparable"))

    fig_data = tables.assign(pair=tables.rm + " / " + tables.learner)
    ax = sns.barplot(data=fig_data, x="pair", y="iteration_ms", hue="colocated")
    ax.set(xlabel="replay manager / learner (PEARL table rows)",
           ylabel="iteration time (ms)", title="PEARL tables through the engine")
    ax.tick_params(axis="x", rotation=60)
    report.figures.append((save_figure(ax.figure, out, "pearl_pairs"),
                           "Iteration time of every RM/learner pair on PEARL's tables"))
    g = sns.catplot(data=spec_runs.assign(placement="replay " + spec_runs.replay + ", learn "
                                          + spec_runs.learn),
                    x="placement", y="samples_per_s", col="workload", kind="bar",
                    sharey=False, height=4)
    g.set_axis_labels("placement", "training samples / s")
    g.tick_params(axis="x", rotation=45)
    report.figures.append((save_figure(g.figure, out, "spec_based"),
                           "rldse's spec-based parts: throughput by placement"))
    report.sections.append(("All pairs on PEARL's tables",
                            markdown_table(fig_data.drop(columns="pair"))))
    traffic = pd.DataFrame({"storage": list(traffic_code),
                            "traffic_ms (SysCon.py units)": list(traffic_code.values()),
                            "traffic_ms (RM as 4-byte indices)": list(traffic_bytes.values())})
    report.sections.append(("Data-storage traffic per iteration", markdown_table(traffic, 6)))
    report.sections.append(("Spec-based placements", markdown_table(spec_runs)))
    report.parameters = {"PEARL tables": f"{p.latency_csv}, {p.link_csv}",
                         "train / insert batch": f"{p.train_batch_size} / {p.insert_batch_size}",
                         "spec-based CPU, GPU, AM": f"{s.cpu}, {s.gpu}, {s.am}",
                         "env steps per simulation": s.env_steps,
                         "actors, learner": "8, async", "seed": s.seed}
    return report
