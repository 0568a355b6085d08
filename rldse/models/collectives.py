"""Collectives over GPUs in nodes: all-reduce, reduce-scatter, all-gather, broadcast,
all-to-all and point-to-point, costed per hop with latency and bandwidth (α–β) the way
NCCL's own tuner costs them, and the algorithm and protocol chosen as NCCL chooses.

Sizes and bus bandwidth follow nccl-tests (doc/PERFORMANCE.md, ``BUS_FACTOR``); the
algorithms (ring, tree, nvls, chain, direct) are the α–β forms of Thakur, Rabenseifner
and Gropp (IJHPCA 2005) and ASTRA-sim's analytical backend; ``choose`` picks the fastest
as NCCL's tuner does, from its latency tables (``BASE_LAT_US``, ``HOP_LAT_US``). Each
form, the protocols and the tuner's sources: docs/architecture.md, "Collectives".
``event_seconds`` runs a ring collective or a send/receive message by message as SimPy
processes, equal to the closed form on idle links, contending when ``concurrent``.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rldse.errors import RldseError
from rldse.models.fabric import FabricSpec
from rldse.models.network import NetworkSpec
from rldse.models.ops import ArrayLike

COLLECTIVES = ("all_reduce", "reduce_scatter", "all_gather", "broadcast", "all_to_all",
               "send_recv")
PROTOCOLS = ("LL", "LL128", "Simple")
#: Share of the Simple protocol's bandwidth each protocol carries as data.
PROTOCOL_SHARE = {"LL": 0.5, "LL128": 120 / 128, "Simple": 1.0}
#: nccl-tests doc/PERFORMANCE.md: bus bandwidth = algorithm bandwidth × factor(n).
BUS_FACTOR: dict[str, Callable[[int], float]] = {
    "all_reduce": lambda n: 2 * (n - 1) / n,
    "reduce_scatter": lambda n: (n - 1) / n,
    "all_gather": lambda n: (n - 1) / n,
    "all_to_all": lambda n: (n - 1) / n,
    "broadcast": lambda n: 1.0,
    "send_recv": lambda n: 1.0,
}
#: Algorithms that can run each collective (nvls only where the fabric reduces).
ALGORITHMS = {"all_reduce": ("ring", "tree", "nvls"), "reduce_scatter": ("ring",),
              "all_gather": ("ring",), "broadcast": ("chain",), "all_to_all": ("direct",),
              "send_recv": ("direct",)}
#: NCCL tuning.cc baseLat (µs) by algorithm and protocol (chain and direct: ring's).
BASE_LAT_US = {"ring": {"LL": 6.6, "LL128": 14.0, "Simple": 8.4},
               "tree": {"LL": 6.8, "LL128": 14.0, "Simple": 8.4},
               "nvls": {"Simple": 0.0}}
#: NCCL tuning.cc hwLat (µs) per hop by link class, algorithm and protocol.
HOP_LAT_US = {
    "nvlink": {"ring": {"LL": 0.6, "LL128": 1.9, "Simple": 3.4},
               "tree": {"LL": 0.6, "LL128": 1.25, "Simple": 4.0}, "nvls": {"Simple": 25.0}},
    "pci": {"ring": {"LL": 1.0, "LL128": 2.5, "Simple": 5.7},
            "tree": {"LL": 1.0, "LL128": 1.9, "Simple": 4.0}},
    "net": {"ring": {"LL": 2.7, "LL128": 4.0, "Simple": 14.0},
            "tree": {"LL": 5.0, "LL128": 8.5, "Simple": 14.0}},
}


def _lat_algorithm(algorithm: str) -> str:
    return "ring" if algorithm in ("chain", "direct") else algorithm


@dataclass(frozen=True)
class Cluster:
    """GPUs taking part in a collective: ``gpus_per_node`` on each of ``nodes`` nodes, the
    node's fabric, and (across nodes) the network and the NICs each node uses."""

    fabric: FabricSpec
    nodes: int = 1
    gpus_per_node: int | None = None  # default: every GPU of the fabric
    network: NetworkSpec | None = None
    nics: int | None = None  # default: the fabric's

    def __post_init__(self) -> None:
        g = self.gpus_per_node if self.gpus_per_node is not None else self.fabric.gpus
        object.__setattr__(self, "gpus_per_node", g)
        object.__setattr__(self, "nics", self.nics if self.nics is not None
                           else self.fabric.nics)
        if self.nodes < 1:
            raise RldseError(f"nodes: {self.nodes} (expected at least 1)")
        if not 1 <= g <= self.fabric.gpus:
            raise RldseError(f"gpus_per_node: {g} (the {self.fabric.name} fabric has "
                             f"{self.fabric.gpus} GPUs)")
        if self.nodes > 1 and (self.network is None or not self.nics):
            raise RldseError(f"nodes: {self.nodes} nodes need a network and at least one "
                             "NIC per node (no path between nodes)")

    @property
    def ranks(self) -> int:
        return self.nodes * int(self.gpus_per_node or 1)

    @property
    def intra_hw(self) -> str:
        return "pci" if self.fabric.topology == "pcie" else "nvlink"

    def intra_gbs(self, protocol: str = "Simple") -> float:
        """One GPU's bandwidth into the fabric per direction at NCCL's efficiency, GB/s."""
        return self.fabric.gpu_gbs * self.fabric.efficiency * PROTOCOL_SHARE[protocol]

    def net_gbs(self, protocol: str = "Simple") -> float:
        """One node's bandwidth to the others per direction (the NICs its GPUs can use:
        one per GPU at most), GB/s; 0 on one node."""
        if self.nodes == 1 or self.network is None:
            return 0.0
        usable = min(int(self.nics or 0), int(self.gpus_per_node or 1))
        return usable * self.network.nic_gbs * PROTOCOL_SHARE[protocol]

    def edges(self, algorithm: str, protocol: str) -> list[tuple[float, float]]:
        """(hop latency s, bandwidth GB/s) of each kind of edge a ring crosses."""
        out = []
        lat = _lat_algorithm(algorithm)
        if int(self.gpus_per_node or 1) > 1:
            out.append((HOP_LAT_US[self.intra_hw][lat][protocol] * 1e-6,
                        self.intra_gbs(protocol)))
        if self.nodes > 1:
            out.append((HOP_LAT_US["net"][lat][protocol] * 1e-6, self.net_gbs(protocol)))
        return out


def p2p_edge(cluster: Cluster, protocol: str) -> tuple[float, float]:
    """(hop latency s, GB/s) of one message between two ranks: in another node where
    there are several (over one NIC), else over the sender's fabric share."""
    if cluster.nodes > 1:
        assert cluster.network is not None  # Cluster checks it
        return (HOP_LAT_US["net"]["ring"][protocol] * 1e-6,
                cluster.network.nic_gbs * PROTOCOL_SHARE[protocol])
    return HOP_LAT_US[cluster.intra_hw]["ring"][protocol] * 1e-6, cluster.intra_gbs(protocol)


def ring_steps(collective: str, n: int) -> int:
    """Ring steps: 2(n−1) for all-reduce (reduce-scatter then all-gather), n−1 otherwise."""
    return 2 * (n - 1) if collective == "all_reduce" else n - 1


def available(cluster: Cluster, collective: str) -> list[tuple[str, str]]:
    """(algorithm, protocol) pairs NCCL could run this collective with on this cluster."""
    _check_collective(collective)
    pairs = []
    for algorithm in ALGORITHMS[collective]:
        if algorithm == "nvls" and not (cluster.fabric.nvls and cluster.nodes == 1):
            continue
        if algorithm == "tree" and cluster.ranks < 2:
            continue
        protocols = ("Simple",) if algorithm == "nvls" else PROTOCOLS
        pairs += [(algorithm, p) for p in protocols]
    return pairs


def collective_seconds(cluster: Cluster, collective: str, bytes_: ArrayLike,
                       algorithm: str, protocol: str, shared_by: int = 1) -> np.ndarray:
    """Seconds of one collective of ``bytes_`` (nccl-tests' size) by one algorithm and
    protocol; ``shared_by`` collectives run at once over the same links."""
    if (algorithm, protocol) not in available(cluster, collective):
        raise RldseError(f"{collective}: {algorithm}/{protocol} cannot run on this "
                         f"cluster (available: {available(cluster, collective)})")
    size = np.asarray(bytes_, dtype=np.float64)
    n, k = cluster.ranks, float(shared_by)
    if n == 1:
        return np.zeros_like(size)
    base = BASE_LAT_US[_lat_algorithm(algorithm)][protocol] * 1e-6
    edges = [(lat, gbs * 1e9 / k) for lat, gbs in cluster.edges(algorithm, protocol)]
    if algorithm == "ring":
        chunk = size / n
        step = np.max([lat + chunk / bw for lat, bw in edges], axis=0)
        return base + ring_steps(collective, n) * step
    slowest_bw = min(bw for _, bw in edges)
    if algorithm == "tree":
        g, hops = int(cluster.gpus_per_node or 1), math.ceil(math.log2(cluster.nodes))
        lat_intra = HOP_LAT_US[cluster.intra_hw]["tree"][protocol] * 1e-6
        lat_net = HOP_LAT_US["net"]["tree"][protocol] * 1e-6
        return base + 2 * ((g - 1) * lat_intra + hops * lat_net) + 2 * size / slowest_bw
    if algorithm == "nvls":
        line = cluster.fabric.gpu_gbs * cluster.fabric.nvls_efficiency * 1e9 / k
        return base + HOP_LAT_US["nvlink"]["nvls"]["Simple"] * 1e-6 + size / line
    hop = max(lat for lat, _ in edges)
    if algorithm == "chain":
        return base + (n - 1) * hop + size / slowest_bw
    if collective == "send_recv":
        lat, gbs = p2p_edge(cluster, protocol)
        return base + lat + size / (gbs * 1e9 / k)
    # all-to-all: each rank keeps 1/n, sends (g−1)/n inside its node, the rest out of it
    g = int(cluster.gpus_per_node or 1)
    intra_s = size * (g - 1) / n / (cluster.intra_gbs(protocol) * 1e9 / k) if g > 1 else 0.0
    net_s = (g * size * (n - g) / n / (cluster.net_gbs(protocol) * 1e9 / k)
             if cluster.nodes > 1 else 0.0)
    return base + (n - 1) * hop + np.maximum(intra_s, net_s)


@dataclass(frozen=True)
class Choice:
    """NCCL's pick per size: seconds, and the algorithm and protocol that give them."""

    seconds: np.ndarray
    algorithm: np.ndarray
    protocol: np.ndarray


def choose(cluster: Cluster, collective: str, bytes_: ArrayLike,
           shared_by: int = 1) -> Choice:
    """The fastest available algorithm and protocol at each size, as NCCL's tuner picks."""
    pairs = available(cluster, collective)
    times = np.stack([np.broadcast_to(collective_seconds(cluster, collective, bytes_, a, p,
                                                         shared_by), np.shape(bytes_))
                      for a, p in pairs])
    best = np.argmin(times, axis=0)
    names = np.array([a for a, _ in pairs]), np.array([p for _, p in pairs])
    return Choice(np.take_along_axis(times, best[None], axis=0)[0], names[0][best],
                  names[1][best])


def bus_gbs(collective: str, ranks: int, bytes_: ArrayLike, seconds: ArrayLike) -> np.ndarray:
    """nccl-tests' bus bandwidth, GB/s: bytes / seconds × BUS_FACTOR[collective](ranks)."""
    _check_collective(collective)
    return (np.asarray(bytes_, np.float64) / np.asarray(seconds, np.float64) / 1e9
            * BUS_FACTOR[collective](ranks))


def _check_collective(collective: str) -> None:
    if collective not in COLLECTIVES:
        raise RldseError(f"collective: unknown {collective!r} (expected one of "
                         f"{', '.join(COLLECTIVES)})")


def event_seconds(cluster: Cluster, collective: str, bytes_: float, protocol: str = "Simple",
                  concurrent: int = 1) -> float:
    """The reference: a ring collective (or one send/receive) run message by message in
    SimPy, each directed edge a resource a message holds for its bytes over the edge's
    bandwidth, then the hop latency in flight; a rank sends step k's chunk once step k−1's
    arrived and its own last message landed. ``concurrent`` copies start together and
    contend for the edges.
    Returns when the last copy finishes."""
    import simpy

    if collective not in ("all_reduce", "reduce_scatter", "all_gather", "send_recv"):
        raise RldseError(f"{collective}: the event reference runs ring collectives and "
                         "send_recv")
    algorithm = "direct" if collective == "send_recv" else "ring"
    if (algorithm, protocol) not in available(cluster, collective):
        raise RldseError(f"{collective}: {algorithm}/{protocol} cannot run here")
    env = simpy.Environment()
    n, g = cluster.ranks, int(cluster.gpus_per_node or 1)
    if n == 1:
        return 0.0
    base = BASE_LAT_US[_lat_algorithm(algorithm)][protocol] * 1e-6
    edges = cluster.edges(algorithm, protocol)

    def edge_of(rank: int) -> tuple[float, float]:
        """The edge from ``rank`` to the next: across nodes when the next is elsewhere."""
        crosses = cluster.nodes > 1 and (rank // g != ((rank + 1) % n) // g)
        return edges[-1] if crosses else edges[0]

    links = [simpy.Resource(env, capacity=1) for _ in range(n)]  # rank -> rank + 1
    done = []

    def send(rank: int, nbytes: float, arrived: simpy.Event):
        lat, gbs = p2p_edge(cluster, protocol) if collective == "send_recv" else edge_of(rank)
        with links[rank].request() as req:  # the edge carries one message's bytes at a time
            yield req
            yield env.timeout(nbytes / (gbs * 1e9))
        yield env.timeout(lat)  # in flight: the edge is free for the next message
        arrived.succeed()

    def ring(copy_done: simpy.Event):
        yield env.timeout(base)
        if collective == "send_recv":
            arrived = env.event()
            env.process(send(0, float(bytes_), arrived))
            yield arrived
            copy_done.succeed()
            return
        steps, chunk = ring_steps(collective, n), float(bytes_) / n
        # received[r][k]: rank r holds step k's chunk from rank r-1
        received = [[env.event() for _ in range(steps)] for _ in range(n)]

        def rank_proc(r: int):
            for k in range(steps):
                if k:
                    yield received[r][k - 1]
                yield env.process(send(r, chunk, received[(r + 1) % n][k]))

        procs = [env.process(rank_proc(r)) for r in range(n)]
        yield simpy.AllOf(env, procs)
        yield simpy.AllOf(env, [received[r][steps - 1] for r in range(n)])
        copy_done.succeed()

    for _ in range(concurrent):
        finished = env.event()
        done.append(finished)
        env.process(ring(finished))
    env.run()
    return float(env.now)
