"""Where PEARL puts the data storage: its traffic model (SysCon.py) over every device of
its tables, for the fastest replay-manager/learner pair."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.models.link import LinkModel
from rldse.studies.pearl_mapping.params import PearlTables


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
            total += float(LinkModel(links.get(a, b)).transfer_seconds(gb * 1e9)) * 1e3
    return total


@dataclass(frozen=True)
class Storage:
    """Traffic per iteration for each storage device, as SysCon.py counts the RM's traffic
    (``train_batch_size`` GB, its units) and as 4-byte indices, and the cheapest device of
    each."""

    traffic_ms: dict[str, float]
    traffic_indices_ms: dict[str, float]

    @property
    def store(self) -> str:
        return min(self.traffic_ms, key=self.traffic_ms.get)

    @property
    def store_indices(self) -> str:
        return min(self.traffic_indices_ms, key=self.traffic_indices_ms.get)


def place_storage(p: PearlTables, links, stores: list[str], rm: str, learner: str) -> Storage:
    """Every device's storage traffic with the actor on the CPU, as SysCon.py places it."""
    def traffic(rm_gb: float) -> dict[str, float]:
        return {d: storage_traffic_ms(p, links, d, learner, "CPU", rm, rm_gb=rm_gb)
                for d in stores}

    return Storage(traffic(p.train_batch_size), traffic(p.train_batch_size * 4 / 1e9))
