"""The machine each ratio provisions: the search base's CPU part, bought with a core per
actor and one for the learner on the fewest sockets."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.models.presets import get_preset
from rldse.studies.cpu_gpu_ratio.params import Params
from rldse.system import parse_spec


@dataclass(frozen=True)
class Host:
    """The search base's CPU part: its preset, cores per socket (the part's) and sockets
    (the machine's: the DGX-1 has two E5-2698 v4)."""

    preset: str
    cores: int
    sockets: int


def host_of(sf) -> Host:
    cpu = sf.base["cpu"]
    name = cpu["preset"]
    cores = int(cpu.get("cores") or get_preset("cpu", name).params["cores"].value)
    return Host(name, cores, int(cpu.get("sockets", 1)))


def provisioned(cores_needed: int, host: Host) -> tuple[int, int]:
    """(cores per socket, sockets) that provision ``cores_needed`` cores on the host's
    part: the fewest sockets, never more cores per socket than the part has (a socket
    with fewer cores stands for a smaller SKU of the same part)."""
    sockets = -(-cores_needed // host.cores)
    if sockets > host.sockets:
        raise RldseError(f"{cores_needed} cores exceed the {host.preset} host "
                         f"({host.sockets} × {host.cores})")
    return -(-cores_needed // sockets), sockets


def ratio_spec(p: Params, sf, host: Host, r: int):
    """The sweep's design at ``r`` actors per GPU: a core per actor, one for the learner."""
    where = f"{p.search}: ratio {r}"
    base = sf.search_space.spec({"workload.actors": r, "workload.cores": r, "gpu.count": 1,
                                 "workload.env_steps": p.env_steps}, where=where)
    raw = base.model_dump(mode="json", exclude_none=True)
    cores, sockets = provisioned(r + 1, host)
    raw["cpu"].update(cores=cores, sockets=sockets)
    return parse_spec(raw, where=where)


#: The whole DGX-1: its 8 V100s in the hybrid cube mesh (NVIDIA DGX-1 with Tesla V100
#: datasheet), one data-parallel learner and one inference server on each
DGX1_GPUS, DGX1_FABRIC = 8, "dgx1-v100"


def whole_ratios(ratios: list[int], host: Host) -> list[int]:
    """The ratios the whole DGX-1 can provision: r actors and a learner's core per GPU
    for all eight GPUs within the host's sockets."""
    return [r for r in ratios if DGX1_GPUS * (r + 1) <= host.cores * host.sockets]


def whole_spec(p: Params, sf, host: Host, r: int):
    """The whole DGX-1 at ``r`` actors per GPU: 8 V100s, 8 data-parallel learners whose
    gradients are all-reduced over the NVLink fabric, 8r actors on 8r cores, and the CPU
    provisioned with r + 1 cores per GPU as in the one-GPU sweep."""
    where = f"{p.search}: whole DGX-1, ratio {r}"
    n = DGX1_GPUS
    base = sf.search_space.spec({"workload.actors": n * r, "workload.cores": n * r,
                                 "gpu.count": n, "workload.learner_gpus": n,
                                 "fabric.preset": DGX1_FABRIC,
                                 "workload.env_steps": p.env_steps}, where=where)
    raw = base.model_dump(mode="json", exclude_none=True)
    cores, sockets = provisioned(n * (r + 1), host)
    raw["cpu"].update(cores=cores, sockets=sockets)
    return parse_spec(raw, where=where)
