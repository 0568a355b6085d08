"""Data set "nccl": published nccl-tests bus bandwidth (and small-message time) of
all-reduce and all-gather on 8-GPU nodes, one node and two, predicted from the fabric and
network presets by ``rldse.models.collectives`` (data/nccl_busbw.csv; data/README.md).

Systems and the presets that predict them (nothing is fitted to these numbers: the
fabric's and network's efficiencies come from an NCCL maintainer's statements, their
sources in presets/fabric.yaml and network.yaml):

- ``ND A100 v4`` and ``NDm A100 v4`` (Azure, 8 A100 SXM4 on second-generation NVSwitch,
  8 HDR InfiniBand NICs): ``dgx-a100`` with ``ib-hdr``;
- ``ND H100 v5`` and ``ND H200 v5`` (8 H100 / H200 SXM5 on third-generation NVSwitch
  with NVLink SHARP, 8 NDR NICs): ``dgx-h100`` with ``ib-ndr`` (H200 has H100's NVLink 4).

Regimes by size (decimal MB): latency-bound below 1 MB, bandwidth-bound above 64 MB,
transition between; each row's subset is its collective. Every row is bus bandwidth (a
published small-message time is converted with nccl-tests' definition), so a positive
error means rldse predicts more bandwidth (a faster collective) than was measured.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rldse.external import ROW_COLUMNS, SUBSET, Dataset, register
from rldse.models.collectives import Cluster, bus_gbs, choose
from rldse.models.presets import load_part

TABLE = Path(__file__).with_name("data") / "nccl_busbw.csv"
#: system -> (fabric preset, network preset)
SYSTEMS = {"ND A100 v4": ("dgx-a100", "ib-hdr"), "NDm A100 v4": ("dgx-a100", "ib-hdr"),
           "ND H100 v5": ("dgx-h100", "ib-ndr"), "ND H200 v5": ("dgx-h100", "ib-ndr")}
LATENCY_BOUND_BELOW_BYTES = 1e6
BANDWIDTH_BOUND_ABOVE_BYTES = 64e6


def regime(bytes_: float) -> str:
    if bytes_ < LATENCY_BOUND_BELOW_BYTES:
        return "latency-bound"
    return "bandwidth-bound" if bytes_ > BANDWIDTH_BOUND_ABOVE_BYTES else "transition"


def cluster_of(system: str, nodes: int, gpus_per_node: int) -> Cluster:
    fabric, network = SYSTEMS[system]
    return Cluster(load_part("fabric", fabric), nodes=nodes, gpus_per_node=gpus_per_node,
                   network=load_part("network", network))


def predict_bus_gbs(system: str, nodes: int, gpus_per_node: int, collective: str,
                    bytes_: float) -> float:
    """Bus bandwidth (GB/s) of one collective as rldse predicts it."""
    cluster = cluster_of(system, nodes, gpus_per_node)
    seconds = float(choose(cluster, collective, bytes_).seconds)
    return float(bus_gbs(collective, cluster.ranks, bytes_, seconds))


def measured_bus_gbs(r) -> float:
    """A row's published bus bandwidth; a published time (µs) is turned into one with
    nccl-tests' own definition, so every row reads the same way."""
    if r.metric == "busbw_gbs":
        return float(r.value)
    return float(bus_gbs(r.collective, r.nodes * r.gpus_per_node, r.bytes, r.value * 1e-6))


def rows() -> pd.DataFrame:
    table = pd.read_csv(TABLE)
    out = []
    for r in table.itertuples(index=False):
        case = f"{r.collective} {r.nodes}x{r.gpus_per_node} {int(r.bytes)} B"
        out.append(("nccl", r.system, regime(r.bytes), case, measured_bus_gbs(r),
                    predict_bus_gbs(r.system, r.nodes, r.gpus_per_node, r.collective,
                                    r.bytes), "GB/s busbw", r.collective.replace("_", "-")))
    return pd.DataFrame(out, columns=[*ROW_COLUMNS, SUBSET])


register(Dataset(
    name="nccl",
    description="nccl-tests all-reduce and all-gather bus bandwidth against size on 8-GPU "
                "A100, H100 and H200 nodes (NVSwitch, HDR/NDR InfiniBand), one and two "
                "nodes, from the fabric and network presets",
    citation="Azure/AI-benchmarking-guide Azure_Results (ND A100 v4, ND H100 v5, ND H200 "
             "v5 results); microsoft/mscclpp docs/performance-ndmv4.md (NDm A100 v4); "
             "see rldse/external/data/README.md",
    rows=rows,
    part_of=lambda device: f"fabric/{SYSTEMS[device][0]}"))
