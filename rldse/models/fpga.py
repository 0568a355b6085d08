"""FPGA part: PEARL's on-chip sum-tree replay manager (Meng et al., "PEARL", arXiv
2311.09445 / ACM CF 2024; code: github.com/CatherineMeng/HeteroRL).

The tree is a pipeline of one stage per level. A sample's cycles are PEARL's own
estimator's (``SysConfig/FPGA_perfmodel.py``, ``RM_perf``), 2·K·(B + D); updates and
inserts are pipelined the same way (rldse's reading of its hardware: PEARL's formula
charges 2·D per batch); DDR traffic, the host link and on-chip capacity are added. The
formulas, which parts are PEARL's and which are reconstructed, and a hand check:
docs/architecture.md, "The FPGA replay manager".

Energy: the utilisation model over board power (``UtilisationPower``); no per-action term.
"""

from __future__ import annotations

from rldse.errors import RldseError
from rldse.models.kinds import Check, PartKind, PartTime, ReplayJob, Runs, register
from rldse.models.link import LinkModel, LinkSpec
from rldse.models.power import UtilisationPower
from rldse.models.spec import PartSpec, idle_at_most, quantity


class FpgaSpec(PartSpec):
    clock_mhz: float = quantity("MHz", "kernel clock of the replay design", gt=0, le=2000,
                                plausible=(10, 2000))
    tree_fanout: int = quantity("count", "children per sum-tree node (K)", ge=2, le=4096)
    sample_cycles_per_child: float = quantity(
        "cycles", "cycles a tree level spends per child it scans when sampling", gt=0, le=1e3)
    update_cycles_per_level: float = quantity(
        "cycles", "cycles a tree level spends per item on an update or insert", gt=0, le=1e3)
    ddr_bytes_per_item: float = quantity(
        "B", "card-memory bytes moved per sampled, updated or inserted item", ge=0, le=1e6)
    ddr_bw_gbs: float = quantity("GB/s", "card DDR bandwidth (all channels)", ge=0.001, le=1e5,
                                 plausible=(0.1, 5000))
    tree_node_bytes: float = quantity("B", "on-chip bytes per sum-tree node", gt=0, le=1e3)
    onchip_sram_bytes: int = quantity("B", "on-chip SRAM (BRAM/URAM/M20K) for the tree",
                                      ge=1, le=2**40, plausible=(2**10, 2**34))
    data_on_card: bool = quantity("", "transitions kept in card DDR (else in host memory)")
    host_link: str = quantity("", "link preset to the host (PCIe generation)")
    max_w: float = quantity("W", "board power at full load (max total power)", gt=0, le=1e4,
                            plausible=(1, 2000))
    idle_w: float = quantity("W", "board power when idle (≤ max_w)", ge=0, le=1e4,
                             plausible=(0.1, 2000))
    price_usd: float = quantity("USD", "price of one card", ge=0, le=1e7, plausible=(10, 1e6))
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    _idle_at_most_max = idle_at_most("idle_w", "max_w")


def tree_depth(capacity: int, fanout: int) -> int:
    """ceil(log_fanout(capacity)), at least 1: the levels below the root (exact integers)."""
    if capacity < 1:
        raise RldseError(f"fpga: replay capacity must be at least 1 (got {capacity})")
    depth, leaves = 0, 1
    while leaves < capacity:
        leaves *= fanout
        depth += 1
    return max(depth, 1)


class FpgaModel(UtilisationPower):
    """One FPGA card running PEARL's replay manager, and the link to its host."""

    lanes = 1  # one tree pipeline: operations run one after another

    def __init__(self, spec: FpgaSpec, link: LinkSpec) -> None:
        self.spec = spec
        self.link = link

    # ---- the sum tree on chip (PEARL's RM_perf) ------------------------------------------
    def depth(self, capacity: int) -> int:
        """Tree levels for ``capacity`` leaves: ceil(log_K capacity), at least 1."""
        return tree_depth(capacity, self.spec.tree_fanout)

    def _ddr_seconds(self, nbytes: float) -> float:
        return nbytes / (self.spec.ddr_bw_gbs * 1e9)

    def _cycles_seconds(self, cycles: float) -> float:
        return cycles / (self.spec.clock_mhz * 1e6)

    def sample_seconds(self, batch: int, capacity: int, transition_bytes: float = 0) -> float:
        """c_s·K·(B + D) / f + B·(ddr_bytes_per_item + transition_bytes) / DDR bandwidth.

        PEARL's s-latency when transition_bytes = 0 (the transitions are not on the card)."""
        s = self.spec
        cycles = s.sample_cycles_per_child * s.tree_fanout * (batch + self.depth(capacity))
        return (self._cycles_seconds(cycles)
                + self._ddr_seconds(batch * (s.ddr_bytes_per_item + transition_bytes)))

    def update_seconds(self, batch: int, capacity: int) -> float:
        """c_u·(B + D) / f + B·ddr_bytes_per_item / DDR bandwidth (PEARL's u-latency
        pipelined over the batch; PEARL's own is the B = 0 case of the cycle term)."""
        s = self.spec
        cycles = s.update_cycles_per_level * (batch + self.depth(capacity))
        return self._cycles_seconds(cycles) + self._ddr_seconds(batch * s.ddr_bytes_per_item)

    def insert_seconds(self, n: int, capacity: int, transition_bytes: float = 0) -> float:
        """n new priorities through the tree as an update (PEARL's i-latency equals its
        u-latency), plus n × transition_bytes written to card DDR (0: kept on the host)."""
        if n <= 0:
            return 0.0
        return self.update_seconds(n, capacity) + self._ddr_seconds(n * transition_bytes)

    def tree_bytes(self, capacity: int) -> float:
        """On-chip bytes of the tree: tree_node_bytes × Σ_{i=1..D} K^i (PEARL's RM_perf)."""
        k = self.spec.tree_fanout
        return self.spec.tree_node_bytes * sum(k**i for i in range(1, self.depth(capacity) + 1))

    def tree_fits(self, capacity: int) -> bool:
        """Whether the sum tree over ``capacity`` priorities fits the on-chip SRAM."""
        return self.tree_bytes(capacity) <= self.spec.onchip_sram_bytes

    # ---- the host link -------------------------------------------------------------------
    def link_seconds(self, bytes_in: float, bytes_out: float) -> float:
        """One transfer to the card and one back: 2 × latency + bytes / bandwidth."""
        there = LinkModel(self.link).transfer_seconds(bytes_in + bytes_out)
        return float(there) + self.link.latency_s

    # ---- the replay role -----------------------------------------------------------------
    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> PartTime:
        """The replay role with the tree on chip and the transitions in card DDR
        (``data_on_card``) or host memory: the card's time (on-card work plus the link's
        transfers), then, for a sample from host-resident data, the host core's gather."""
        if n <= 0:
            return PartTime(0.0, 0.0, 0.0)
        s = self.spec
        tb = job.transition_bytes if s.data_on_card else 0
        if op == "insert":
            words = n * s.ddr_bytes_per_item / 2
            card = (self.insert_seconds(n, job.capacity, tb) if job.prioritized
                    else self._ddr_seconds(n * (s.ddr_bytes_per_item + tb)))
            return PartTime.serial(0.0, card + self.link_seconds(words + n * tb, words))
        words = job.batch * s.ddr_bytes_per_item / 2
        if op == "sample":
            if job.prioritized:
                card = self.sample_seconds(job.batch, job.capacity, tb)
            else:  # uniform: one random index per cycle (assumption), then the data
                card = (self._cycles_seconds(job.batch)
                        + self._ddr_seconds(job.batch * (s.ddr_bytes_per_item + tb)))
            gather = 0.0 if s.data_on_card else job.host_gather_s
            return PartTime.serial(gather, card + self.link_seconds(words, words + job.batch * tb)) * n
        if op == "update":
            if not job.prioritized:
                return PartTime(0.0, 0.0, 0.0)
            return PartTime.serial(0.0, self.update_seconds(job.batch, job.capacity)
                                   + self.link_seconds(words, words)) * n
        raise RldseError(f"fpga: unknown replay operation '{op}' (sample, update, insert)")

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]:
        """Nothing beyond board power (the utilisation model)."""
        return {}

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]:
        """PEARL keeps the whole tree on chip."""
        return {"fpga_tree": self.tree_fits(job.capacity)}


register(PartKind(
    name="fpga", spec=FpgaSpec,
    model=lambda spec, ctx: FpgaModel(spec, ctx.load("link", spec.host_link, "fpga.host_link")),
    description="FPGA cards running PEARL's on-chip sum-tree replay manager",
    serves={"replay": Runs.SERVER}, preset_refs={"host_link": "link"},
    checks=(Check("fpga_tree", "the sum tree fits the card's on-chip memory"),)))
