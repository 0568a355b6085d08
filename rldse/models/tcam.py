"""Associative-memory (TCAM) part: arrays of rows searched all at once, and the periphery
that organises them into one searchable memory (CAMASim / Eva-CAM-style).

One search is the stages CAMASim models (Li et al., arXiv 2403.03442): the key broadcast
through an H-tree to every array, every array's search (Eva-CAM / CAMASim / chip numbers,
unchanged), and the match merge back over the same tree; a sampler such as AMPER adds
random numbers and candidate reads, and nothing is pipelined (an upper bound on
latency). The H-tree's geometry and each stage's latency and energy formula:
docs/architecture.md, "The TCAM part".
"""

from __future__ import annotations

import math

import numpy as np

from rldse.models.kinds import Check, PartKind, PartTime, ReplayJob, Runs, register
from rldse.models.ops import ArrayLike
from rldse.models.power import EnergyEstimate, IdlePlusActionsPower, action_joules
from rldse.models.spec import PartSpec, quantity

#: Labels of a sample's per-action energy (replay_joules) and latency (sample_parts_s).
SAMPLE_LABELS = ("search", "htree", "merge", "rng", "candidate_read")


class TcamSpec(PartSpec):
    arrays: int = quantity("count", "TCAM arrays searched in parallel", ge=1, le=10**7)
    rows: int = quantity("count", "rows (stored words) per array", ge=1, le=65_536)
    bits_per_row: int = quantity("bit", "key width", ge=1, le=65_536)
    search_ns: float = quantity("ns", "one array's search latency", gt=0, le=1e6,
                                plausible=(0.01, 1000))
    search_pj: float = quantity("pJ", "one array's search energy", ge=0, le=1e9,
                                plausible=(0.01, 100000))
    periph_ns: float = quantity("ns", "peripheral latency per search, where listed apart",
                                ge=0, le=1e6, plausible=(0.0001, 1000))
    periph_pj: float = quantity("pJ", "peripheral energy per array search, where listed apart",
                                ge=0, le=1e9, plausible=(0.0001, 10000))
    icnt_ns: float = quantity("ns", "array-interconnect latency per array access (search "
                              "or row write), where listed apart", ge=0, le=1e6,
                              plausible=(0.0001, 1000))
    icnt_pj: float = quantity("pJ", "array-interconnect energy per array access (search "
                              "or row write), where listed apart", ge=0, le=1e9,
                              plausible=(0.0001, 10000))
    write_ns: float = quantity("ns", "latency to write one row", gt=0, le=1e9,
                               plausible=(0.01, 100000))
    write_pj: float = quantity("pJ", "energy to write one row", ge=0, le=1e9,
                               plausible=(0.01, 100000))
    leakage_w: float = quantity("W", "leakage power per array", ge=0, le=1e3,
                                plausible=(1e-7, 100))
    array_price_usd: float = quantity("USD", "price of one array", ge=0, le=1e6,
                                      plausible=(0.001, 10000))
    # ---- array organisation (periphery across arrays) ----------------------------------
    cell_area_um2: float = quantity("um^2", "area of one TCAM cell (one key bit of one row)",
                                    gt=0, le=1e4)
    array_efficiency: float = quantity(
        "fraction", "share of an array's area that is cells (the rest: drivers, sense "
        "amplifiers, encoder); sets the array pitch of the H-tree", gt=0, le=1)
    wire_ps_per_mm: float = quantity("ps/mm", "delay of a repeated on-chip wire per mm",
                                     ge=0, le=1e5)
    wire_pj_per_bit_mm: float = quantity("pJ/bit/mm", "energy to move one bit one mm on chip",
                                         ge=0, le=1e3)
    merge_ns: float = quantity("ns", "latency of one merge stage (a 2:1 priority select of "
                                     "two arrays' match results)", ge=0, le=1e6,
                               plausible=(0.0001, 1000))
    merge_pj: float = quantity("pJ", "energy to merge the match results of one array pair",
                               ge=0, le=1e6, plausible=(0.0001, 10000))
    rng_ns: float = quantity("ns", "latency to draw one random number", ge=0, le=1e6,
                             plausible=(0.001, 1000))
    rng_pj: float = quantity("pJ", "energy to draw one random number", ge=0, le=1e6,
                             plausible=(0.001, 10000))
    candidate_read_ns: float = quantity("ns", "latency to read one candidate-buffer entry",
                                        ge=0, le=1e6, plausible=(0.001, 1000))
    candidate_read_pj: float = quantity("pJ", "energy to read one candidate-buffer entry",
                                        ge=0, le=1e6, plausible=(0.001, 10000))
    energy_accuracy: str = quantity("", "accuracy the energy numbers' sources claim")

    @property
    def capacity_rows(self) -> int:
        """Rows in all arrays: how many entries (e.g. quantized priorities) fit."""
        return self.arrays * self.rows

    @property
    def price_usd(self) -> float:
        return self.array_price_usd * self.arrays


class TcamModel(IdlePlusActionsPower):
    """All arrays of one associative-memory part, with the H-tree that joins them."""

    def __init__(self, spec: TcamSpec) -> None:
        self.spec = spec
        s = spec
        self.levels = math.ceil(math.log2(s.arrays)) if s.arrays > 1 else 0
        self.pitch_mm = math.sqrt(s.rows * s.bits_per_row * s.cell_area_um2
                                  / s.array_efficiency) * 1e-3
        j = np.arange(1, self.levels + 1)
        seg_mm = self.pitch_mm / 2 * 2.0 ** ((j - 1) // 2)  # ℓ_j: doubles every two levels
        segments = np.ceil(s.arrays / 2.0 ** (j - 1))  # ceil(N / 2^(j-1)) branches at level j
        self.path_mm = float(seg_mm.sum())  # root to one array
        self.tree_mm = float((segments * seg_mm).sum())  # every branch of the tree
        self.result_bits = 1 + math.ceil(math.log2(s.capacity_rows)) if s.capacity_rows > 1 \
            else 1  # hit flag + row address

    # ---- one search, by stage -------------------------------------------------------------
    def search_parts_ns(self) -> dict[str, float]:
        """Latency of one search by stage: broadcast ('htree'), the arrays ('search'), the
        merge tree and its way back ('merge')."""
        s = self.spec
        wire_ns = self.path_mm * s.wire_ps_per_mm * 1e-3
        return {"htree": wire_ns, "search": s.search_ns + s.periph_ns + s.icnt_ns,
                "merge": self.levels * s.merge_ns + wire_ns}

    def search_parts_pj(self) -> dict[str, float]:
        """Energy of one search by stage: the key over the tree, every array's search, the
        N−1 pair merges plus the results over the tree."""
        s = self.spec
        return {"htree": s.bits_per_row * self.tree_mm * s.wire_pj_per_bit_mm,
                "search": s.arrays * (s.search_pj + s.periph_pj + s.icnt_pj),
                "merge": (s.arrays - 1) * s.merge_pj
                + self.result_bits * self.tree_mm * s.wire_pj_per_bit_mm}

    def search_joules(self, n_searches: ArrayLike) -> np.ndarray:
        """Every array spends its search energy on every key, plus broadcast and merge."""
        return action_joules(n_searches, sum(self.search_parts_pj().values()))

    def write_seconds(self, rows: ArrayLike) -> np.ndarray:
        """``rows`` row writes, one after another, each sent down one root-to-array path."""
        s = self.spec
        return np.asarray(rows, dtype=np.float64) * (
            s.write_ns + s.icnt_ns + self.path_mm * s.wire_ps_per_mm * 1e-3) * 1e-9

    def write_parts_joules(self, rows: ArrayLike) -> dict[str, np.ndarray]:
        """Row writes with their array interconnect ('write') and the row's data down one
        path of the tree ('htree')."""
        s = self.spec
        return {"write": action_joules(rows, s.write_pj + s.icnt_pj),
                "htree": action_joules(rows, s.bits_per_row * self.path_mm
                                       * s.wire_pj_per_bit_mm)}

    def write_joules(self, rows: ArrayLike) -> np.ndarray:
        return sum(self.write_parts_joules(rows).values())

    # ---- a sampler's work: searches, random numbers, candidate reads ----------------------
    def sample_parts_s(self, searches: float, candidate_reads: float,
                       randoms: float) -> dict[str, float]:
        """Seconds of a sampler's work on the part by label (SAMPLE_LABELS), each step after
        the other: ``searches`` searches, ``candidate_reads`` candidate-buffer entries
        read, ``randoms`` random numbers drawn."""
        s = self.spec
        parts = {k: searches * v * 1e-9 for k, v in self.search_parts_ns().items()}
        parts["rng"] = randoms * s.rng_ns * 1e-9
        parts["candidate_read"] = candidate_reads * s.candidate_read_ns * 1e-9
        return {k: float(parts[k]) for k in SAMPLE_LABELS}

    def sample_seconds(self, searches: float, candidate_reads: float, randoms: float) -> float:
        return sum(self.sample_parts_s(searches, candidate_reads, randoms).values())

    def sample_joules(self, searches: float, candidate_reads: float,
                      randoms: float) -> dict[str, float]:
        """Joules of the same work by label (SAMPLE_LABELS)."""
        s = self.spec
        parts = {k: searches * v * 1e-12 for k, v in self.search_parts_pj().items()}
        parts["rng"] = randoms * s.rng_pj * 1e-12
        parts["candidate_read"] = candidate_reads * s.candidate_read_pj * 1e-12
        return {k: float(parts[k]) for k in SAMPLE_LABELS}

    # ---- the replay role: priorities in the arrays, transitions in host memory ----------
    @staticmethod
    def _sample_counts(job: ReplayJob, n: int) -> tuple[float, float, float]:
        """(searches, candidate reads, random numbers) of n sampled batches: searches_per_item
        searches per item; each candidate a search put in the buffer read once, plus one read
        of the drawn entry per item; two random numbers per item (its target priority and
        its pick from the candidate set)."""
        items = n * job.batch
        candidates = job.candidates_per_item
        return items * job.searches_per_item, items * (candidates + 1.0), 2.0 * items

    def _write_rows(self, job: ReplayJob, op: str, n: int) -> float:
        if op == "update":
            return n * job.batch * job.writes_per_update_item
        if op == "insert":
            return float(n)
        raise ValueError(f"replay op must be 'sample', 'update' or 'insert', got {op!r}")

    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> PartTime:
        """A sample is the arrays' work (searches with broadcast and merge, random numbers,
        candidate reads) and then the host's gather of the batch from host memory; an update
        rewrites rows; an insert writes one row each."""
        if op == "sample":
            device = self.sample_seconds(*self._sample_counts(job, n))
            return PartTime.serial(n * job.host_gather_s, device)
        return PartTime.serial(0.0, float(self.write_seconds(self._write_rows(job, op, n))))

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]:
        if op == "sample":
            return self.sample_joules(*self._sample_counts(job, n))
        return {k: float(v) for k, v in
                self.write_parts_joules(self._write_rows(job, op, n)).items()}

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]:
        """One row per buffered priority."""
        return {"tcam_capacity": job.capacity <= self.spec.capacity_rows}

    # ---- power (IdlePlusActionsPower, rldse.models.power) --------------------------------
    lanes = 1  # a search occupies every array at once

    @property
    def idle_w(self) -> float:
        """Leakage of all arrays."""
        return self.spec.leakage_w * self.spec.arrays

    def energy(self, n_searches: ArrayLike, rows_written: ArrayLike,
               wall_s: ArrayLike) -> EnergyEstimate:
        """Searches (with broadcast and merge) and writes per action, plus leakage."""
        return self.idle_plus(self.search_joules(n_searches) + self.write_joules(rows_written),
                              wall_s)


register(PartKind(
    name="tcam", spec=TcamSpec, model=lambda spec, ctx: TcamModel(spec),
    description="associative-memory (TCAM) arrays", serves={"replay": Runs.SERVER},
    checks=(Check("tcam_capacity", "the replay buffer's entries fit the arrays' rows"),)))
