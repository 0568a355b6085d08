"""The study's report from what ``runs.collect`` produced: the consistency claims on
PEARL's tables, the platform claims judged per workload (rldse.studies.report), figures,
sections and parameters."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rldse.sim.bands import percentiles
from rldse.studies.pearl_mapping import figures
from rldse.studies.pearl_mapping.params import FpgaPlatform, PearlTables
from rldse.studies.pearl_mapping.runs import Runs
from rldse.studies.report import Claim, Report, markdown_table


def _verdict(same: bool) -> str:
    return "reproduced" if same else "not reproduced"


def _table_claims(p: PearlTables, r: Runs) -> list[Claim]:
    """PEARL's mapping, peak throughput and storage placement from its own tables."""
    pub, best, storage = p.published, r.best, r.storage
    same_pair = (best.rm, best.learner) == (pub.rm, pub.learner)
    err = abs(best.samples_per_s - pub.peak_samples_per_s) / pub.peak_samples_per_s
    store = storage.store
    return [
        Claim("mapping of replay manager / learner (PEARL's own tables)",
              f"RM {pub.rm}, learner {pub.learner}", f"RM {best.rm}, learner {best.learner}",
              "same" if same_pair else "different", _verdict(same_pair),
              kind="consistency", tolerance="the same replay-manager and learner devices"),
        Claim("theoretical peak throughput (samples/s, batch 512)",
              f"{pub.peak_samples_per_s:,.2f}", f"{best.samples_per_s:,.2f}",
              f"{err:.1e} relative", _verdict(err < 1e-9), kind="consistency",
              p5=best.samples_per_s, p50=best.samples_per_s, p95=best.samples_per_s,
              tolerance="relative error below 1e-9 (the same formula)"),
        Claim("data storage placement (PEARL traffic model)", pub.data_storage, store,
              "same" if store == pub.data_storage else "different",
              _verdict(store == pub.data_storage), kind="consistency",
              tolerance="the same placement",
              note="" if store == storage.store_indices else
              f"with the RM traffic counted as {p.train_batch_size} 4-byte indices instead "
              f"of SysCon.py's {p.train_batch_size} GB, storage would go to "
              f"{storage.store_indices}"),
    ]


def _fpga_note(grp: pd.DataFrame) -> str:
    """Why the ratio is what it is: the bottleneck of each side at the presets' values."""
    nom = grp[grp.draw == -1]
    top = nom[nom.role == "pearl"].iloc[0]
    lib = nom[nom.role == "library"].iloc[0]
    return (f"at the presets' values PEARL's mapping is bound by {top.bottleneck} "
            f"({top.power_w:.0f} W), the library's by {lib.bottleneck} ({lib.power_w:.0f} W)")


def _platform_claim(fpga: pd.DataFrame, col: str, label: str, pub_x: float) -> Claim:
    """PEARL's mapping over the library's in ``col``, one band per workload, against a gain
    of 1x to the published ``pub_x``."""
    bands, notes = {}, []
    for workload, grp in fpga.groupby("workload", sort=False):
        drawn = grp[grp.draw >= 0]
        pearl = drawn[drawn.role == "pearl"].set_index("draw")
        lib = drawn[drawn.role == "library"].set_index("draw")
        top = grp[(grp.draw == -1) & (grp.role == "pearl")].iloc[0]
        bands[f"{workload} (replay {top.replay}, learner {top.learn})"] = percentiles(
            (pearl[col] / lib[col]).to_numpy())
        notes.append(f"{workload}: {_fpga_note(grp)}")
    return Claim.per_configuration(
        f"{label}, PEARL's mapping on CPU+FPGA / CPU-GPU library mapping, per workload",
        published=f"up to {pub_x:g}x (each workload a gain of 1x-{pub_x:g}x)", low=1.0,
        high=pub_x, bands=bands, unit="x",
        note="; ".join(notes) + ". rldse's traces are small CartPole/Pendulum MLPs "
        "captured here, where the GPU learner pays its per-op host dispatch and a CPU "
        f"learner wins; PEARL's {label} gain came from its own programs and batch sizes")


def _platform_claims(s: FpgaPlatform, fpga: pd.DataFrame) -> list[Claim]:
    return [_platform_claim(fpga, "samples_per_s", "throughput", s.published_throughput),
            _platform_claim(fpga, "samples_per_j", "performance per watt",
                            s.published_perf_per_w)]


def _summary(s: FpgaPlatform) -> str:
    return ("Consistency check: the engine replays a DQN trace with PEARL's measured "
            "latencies as table-driven parts for all 16 replay-manager/learner pairs; "
            "the fastest pair and its throughput are what PEARL's composer computes "
            "from the same tables, so agreement shows rldse evaluates PEARL's formula "
            "as PEARL does, not that PEARL's numbers are reproduced. Reproduction: "
            f"PEARL's CPU+FPGA platform ({s.cpu}, {s.fpga} running PEARL's on-chip "
            f"sum-tree replay manager, {s.gpu}) with PEARL's best mapping for DQN and "
            "DDPG against a CPU-GPU library's mapping (replay on the CPU, learner on "
            "the GPU) on a CPU+GPU machine of the same parts, banded over every "
            "assumed number.")


def _sections(r: Runs, nominal: pd.DataFrame) -> list[tuple[str, str]]:
    traffic = pd.DataFrame({
        "storage": list(r.storage.traffic_ms),
        "traffic_ms (SysCon.py units)": list(r.storage.traffic_ms.values()),
        "traffic_ms (RM as 4-byte indices)": list(r.storage.traffic_indices_ms.values())})
    return [("All pairs on PEARL's tables", markdown_table(r.tables)),
            ("Data-storage traffic per iteration", markdown_table(traffic, 6)),
            ("CPU+FPGA platform: placements (presets' values)",
             markdown_table(nominal.drop(columns="draw")))]


def _parameters(p: PearlTables, s: FpgaPlatform) -> dict:
    return {"PEARL tables": f"{p.latency_csv.name}, {p.link_csv.name}",
            "train / insert batch": f"{p.train_batch_size} / {p.insert_batch_size}",
            "platform CPU, GPU, FPGA": f"{s.cpu}, {s.gpu}, {s.fpga}",
            "PEARL's mapping searched over": f"replay {s.replays}, learner {s.learners}",
            "env steps per simulation": s.env_steps,
            "actors, learner": f"{s.actors}, async",
            "bands": f"{s.bands} Latin-hypercube draws, seed {s.seed}"}


def build(r: Runs, out: Path) -> Report:
    """The report: claims, figures (written into ``out``), sections and parameters."""
    p, s = r.params.pearl_tables, r.params.fpga_platform
    nominal = r.fpga[r.fpga.draw == -1]
    report = Report(
        draws=s.bands,
        name="pearl_mapping", title="PEARL: mapping replay, learner and storage to devices",
        source="Meng et al., PEARL, arXiv 2311.09445 (CF 2024); tables and composer from the "
               "public repository CatherineMeng/HeteroRL, SysConfig/",
        summary=_summary(s))
    report.claims = _table_claims(p, r) + _platform_claims(s, r.fpga)
    report.figures = [
        (figures.fig_pairs(r.tables, out),
         "Iteration time of every RM/learner pair on PEARL's tables"),
        (figures.fig_platform(nominal, out),
         "PEARL's CPU+GPU+FPGA platform by placement, and the CPU-GPU library mapping "
         "(presets' values)")]
    report.sections = _sections(r, nominal)
    report.parameters = _parameters(p, s)
    return report
