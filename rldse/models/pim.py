"""UPMEM processing-in-memory part: DIMMs of ranks of DPUs (UPMEM SDK docs; PrIM).

What a DPU costs, after the UPMEM SDK documentation (sdk.upmem.com) and the PrIM
characterization (Gómez-Luna et al., IEEE Access 2022, arXiv 2105.03814):

- Compute: a DPU issues one instruction per cycle once ≥ 11 tasklets fill its pipeline
  (a tasklet is re-dispatched every 11 cycles); with t < 11 tasklets it issues t/11 per
  cycle. INT32 add is one native instruction; multiply, divide and floating point are
  emulated in software. Per-operation instruction costs come from PrIM's microbenchmark
  throughputs: a loop of 6 instructions (load, add, store, index, compare, branch) gives
  58.3 MOPS at 350 MHz, so an operation costs 350 MHz / MOPS − 5 loop instructions.
  A kernel's work per item is an ``OpMix``: arithmetic in its data type plus native
  instructions (loads, stores, branches, address arithmetic).
- MRAM↔WRAM DMA: α + β·bytes cycles per transfer (α = 77 read / 61 write, β = 0.5).
  With one tasklet a DMA blocks compute, so times add; with more, other tasklets compute
  while one waits, so the kernel takes the longer of compute and DMA (PrIM's roofline).
- CPU↔DPU: per rank, ranks in parallel. Serial transfers visit DPUs one after another;
  parallel transfers move the same size to every DPU of a rank at once; broadcast sends
  one buffer to all (CPU→DPU only). PrIM measured one DPU and a full rank of 64; between
  them, bandwidth follows the power law through both points. All ranks' transfers together
  go through the host's memory system: given the target CPU's sustained DRAM bandwidth
  (``host_gbs``, CpuSpec.host_bw_gbs: sockets × mem_bw_gbs × dram_efficiency), a serial
  or parallel transfer takes at least its total bytes / host_gbs (a broadcast's one
  buffer is not capped). The program passes it in: the PIM
  model is built from its own spec alone, and the cap belongs to the CPU/PIM pair.
- No DPU↔DPU path: data goes DPU→CPU→DPU (``dpu_to_dpu_seconds``).
- Power: idle power per DPU over the run, plus energy per instruction, derived from the
  per-DPU power at full issue rate: (P_dpu − P_idle) / clock.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import ValidationInfo, field_validator

from rldse.errors import RldseError
from rldse.models.kinds import PartKind, Runs, register
from rldse.models.ops import ArrayLike
from rldse.models.power import EnergyEstimate, IdlePlusActionsPower, action_joules
from rldse.models.spec import PartSpec, allowed_range, idle_at_most, quantity

#: PrIM measured parallel transfers to the 64 DPUs of one rank.
PARALLEL_REF_DPUS = 64
#: UPMEM SDK: an MRAM DMA moves a multiple of 8 bytes, at most 2,048.
DMA_MIN_BYTES, DMA_MAX_BYTES = 8, 2048
#: UPMEM SDK: at most 24 tasklets per DPU (v1A; v1B allows 16).
MAX_TASKLETS = 24

Mode = Literal["serial", "parallel", "broadcast"]


@dataclass(frozen=True)
class OpMix:
    """Work per item (e.g. per transition): arithmetic operations in the kernel's data type
    and native INT32 instructions (loads, stores, branches, address arithmetic)."""

    add: float = 0.0  # add, subtract, compare
    mul: float = 0.0
    div: float = 0.0
    native: float = 0.0


class PimSpec(PartSpec):
    dimms: int = quantity("count", "PIM DIMMs", ge=1, le=256)
    ranks_per_dimm: int = quantity("count", "ranks per DIMM", ge=1, le=4)
    dpus_per_rank: int = quantity("count", "DPUs per rank (8 chips × 8 DPUs)", ge=1, le=64)
    faulty_dpus: int = quantity("count", "DPUs disabled in the system", ge=0, le=16_384)
    clock_mhz: float = quantity("MHz", "DPU clock", ge=1, le=5_000, plausible=(50, 2000))
    tasklets: int = quantity("count", "tasklets (hardware threads) a kernel runs", ge=1,
                             le=MAX_TASKLETS)
    pipeline_tasklets: int = quantity(
        "count", "tasklets that fill the pipeline (re-dispatch interval in cycles)", ge=1,
        le=MAX_TASKLETS)
    int32_add_instr: float = quantity("instr/op", "INT32 add (native)", gt=0, le=1e5)
    int32_mul_instr: float = quantity("instr/op", "INT32 multiply (shift-and-add)", gt=0, le=1e5)
    int32_div_instr: float = quantity("instr/op", "INT32 divide", gt=0, le=1e5)
    int64_add_instr: float = quantity("instr/op", "INT64 add", gt=0, le=1e5)
    int64_mul_instr: float = quantity("instr/op", "INT64 multiply", gt=0, le=1e5)
    int64_div_instr: float = quantity("instr/op", "INT64 divide", gt=0, le=1e5)
    fp32_add_instr: float = quantity("instr/op", "FP32 add (emulated)", gt=0, le=1e5)
    fp32_mul_instr: float = quantity("instr/op", "FP32 multiply (emulated)", gt=0, le=1e5)
    fp32_div_instr: float = quantity("instr/op", "FP32 divide (emulated)", gt=0, le=1e5)
    fp64_add_instr: float = quantity("instr/op", "FP64 add (emulated)", gt=0, le=1e5)
    fp64_mul_instr: float = quantity("instr/op", "FP64 multiply (emulated)", gt=0, le=1e5)
    fp64_div_instr: float = quantity("instr/op", "FP64 divide (emulated)", gt=0, le=1e6)
    mram_read_alpha_cycles: float = quantity("cycles", "fixed cost of an MRAM→WRAM DMA",
                                             ge=0, le=1e5)
    mram_write_alpha_cycles: float = quantity("cycles", "fixed cost of a WRAM→MRAM DMA",
                                              ge=0, le=1e5)
    mram_beta_cycles_per_byte: float = quantity("cycles/B", "DMA cost per byte", ge=0.001, le=1e3)
    mram_bytes: int = quantity("B", "MRAM per DPU", gt=0, le=2**40, plausible=(2**16, 2**36))
    wram_bytes: int = quantity("B", "WRAM per DPU (shared by its tasklets)", gt=0, le=2**30,
                               plausible=(2**10, 2**30))
    cpu_dpu_serial_gbs: float = quantity("GB/s", "CPU→DPU, one DPU at a time", ge=0.001, le=1e4,
                                         plausible=(0.01, 1000))
    cpu_dpu_parallel_gbs: float = quantity("GB/s", "CPU→DPU, all DPUs of a rank at once",
                                           ge=0.001, le=1e4, plausible=(0.01, 1000))
    cpu_dpu_broadcast_gbs: float = quantity(
        "GB/s", "CPU→DPU broadcast per rank, counting bytes delivered", ge=0.001, le=1e5,
                                            plausible=(0.01, 1000))
    dpu_cpu_serial_gbs: float = quantity("GB/s", "DPU→CPU, one DPU at a time", ge=0.001, le=1e4,
                                         plausible=(0.01, 1000))
    dpu_cpu_parallel_gbs: float = quantity("GB/s", "DPU→CPU, all DPUs of a rank at once",
                                           ge=0.001, le=1e4, plausible=(0.01, 1000))
    dpu_w: float = quantity("W", "power per DPU at full issue rate (DIMM share included)",
                            gt=0, le=100, plausible=(0.001, 10))
    dpu_idle_w: float = quantity("W", "power per DPU when idle (≤ dpu_w)", ge=0, le=100,
                                 plausible=(0.0001, 10))
    dimm_price_usd: float = quantity("USD", "price of one PIM DIMM", ge=0, le=1e6,
                                     plausible=(1, 100000))
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    _idle_at_most_active = idle_at_most("dpu_idle_w", "dpu_w")

    @field_validator("faulty_dpus")
    @classmethod
    def _some_dpus_work(cls, v: int, info: ValidationInfo) -> int:
        d = info.data
        if {"dimms", "ranks_per_dimm", "dpus_per_rank"} <= d.keys():
            total = d["dimms"] * d["ranks_per_dimm"] * d["dpus_per_rank"]
            if v >= total:
                raise ValueError(f"faulty_dpus must be below the {total} DPUs installed")
        return v

    @property
    def ranks(self) -> int:
        return self.dimms * self.ranks_per_dimm

    @property
    def dpus(self) -> int:
        """Working DPUs."""
        return self.ranks * self.dpus_per_rank - self.faulty_dpus

    @property
    def price_usd(self) -> float:
        return self.dimm_price_usd * self.dimms

    @property
    def instr_pj(self) -> float:
        """Energy of one instruction at full issue rate: (P_dpu − P_idle) / clock."""
        return (self.dpu_w - self.dpu_idle_w) / (self.clock_mhz * 1e6) * 1e12


class PimModel(IdlePlusActionsPower):
    """All DPUs of a PIM system."""

    def __init__(self, spec: PimSpec) -> None:
        self.spec = spec

    # ---- inside a DPU -------------------------------------------------------------------
    def instructions(self, mix: OpMix, dtype: str) -> float:
        """Instructions per item: native + Σ operations × instructions per operation."""
        if dtype == "none":
            return mix.native
        if dtype not in ("int32", "int64", "fp32", "fp64"):
            raise RldseError(f"pim: dtype '{dtype}' is not one of int32, int64, fp32, fp64, none")
        s = self.spec
        return (mix.native + mix.add * getattr(s, f"{dtype}_add_instr")
                + mix.mul * getattr(s, f"{dtype}_mul_instr")
                + mix.div * getattr(s, f"{dtype}_div_instr"))

    def issue_rate(self, tasklets: int | None = None) -> float:
        """Instructions per second of one DPU: clock × min(1, tasklets / 11)."""
        t = self._tasklets(tasklets)
        return self.spec.clock_mhz * 1e6 * min(1.0, t / self.spec.pipeline_tasklets)

    def compute_seconds(self, items_per_dpu: ArrayLike, mix: OpMix, dtype: str,
                        tasklets: int | None = None) -> np.ndarray:
        """Pipeline time for ``items_per_dpu`` items on each DPU (DPUs run in parallel)."""
        items = np.asarray(items_per_dpu, dtype=np.float64)
        return items * self.instructions(mix, dtype) / self.issue_rate(tasklets)

    def mram_seconds(self, bytes_: ArrayLike, transfer_bytes: int = DMA_MAX_BYTES,
                     write: bool = False) -> np.ndarray:
        """DMA time for ``bytes_`` moved in transfers of ``transfer_bytes``: per transfer
        α + β·size cycles."""
        if not (DMA_MIN_BYTES <= transfer_bytes <= DMA_MAX_BYTES and transfer_bytes % 8 == 0):
            raise RldseError(f"pim.transfer_bytes: {transfer_bytes!r} is out of range (allowed: "
                             f"a multiple of 8 from {DMA_MIN_BYTES} to {DMA_MAX_BYTES})")
        s = self.spec
        b = np.asarray(bytes_, dtype=np.float64)
        alpha = s.mram_write_alpha_cycles if write else s.mram_read_alpha_cycles
        cycles = np.ceil(b / transfer_bytes) * alpha + s.mram_beta_cycles_per_byte * b
        return cycles / (s.clock_mhz * 1e6)

    def kernel_seconds(self, items_per_dpu: ArrayLike, mix: OpMix, dtype: str, *,
                       mram_read_bytes_per_item: float = 0.0,
                       mram_write_bytes_per_item: float = 0.0,
                       transfer_bytes: int = DMA_MAX_BYTES,
                       tasklets: int | None = None) -> np.ndarray:
        """One kernel launch on every DPU: compute and MRAM streaming of its items.

        One tasklet waits for its own DMA (times add); several overlap compute with DMA,
        so the slower of the two bounds the kernel.
        """
        items = np.asarray(items_per_dpu, dtype=np.float64)
        compute = self.compute_seconds(items, mix, dtype, tasklets)
        dma = (self.mram_seconds(items * mram_read_bytes_per_item, transfer_bytes)
               + self.mram_seconds(items * mram_write_bytes_per_item, transfer_bytes, write=True))
        return compute + dma if self._tasklets(tasklets) == 1 else np.maximum(compute, dma)

    # ---- between the CPU and the DPUs ----------------------------------------------------
    def cpu_to_dpu_seconds(self, bytes_per_dpu: ArrayLike, n_dpus: int | None = None,
                           mode: Mode = "parallel", *,
                           host_gbs: float | None = None) -> np.ndarray:
        """Send ``bytes_per_dpu`` to each of ``n_dpus`` DPUs (all by default); ``host_gbs``
        caps all ranks together at the host's DRAM bandwidth (None: no cap)."""
        s = self.spec
        return self._transfer(bytes_per_dpu, n_dpus, mode, s.cpu_dpu_serial_gbs,
                              s.cpu_dpu_parallel_gbs, s.cpu_dpu_broadcast_gbs, host_gbs)

    def dpu_to_cpu_seconds(self, bytes_per_dpu: ArrayLike, n_dpus: int | None = None,
                           mode: Literal["serial", "parallel"] = "parallel", *,
                           host_gbs: float | None = None) -> np.ndarray:
        """Gather ``bytes_per_dpu`` from each of ``n_dpus`` DPUs (all by default); ``host_gbs``
        as in ``cpu_to_dpu_seconds``."""
        if mode == "broadcast":
            raise RldseError("pim.mode: 'broadcast' exists only from CPU to DPU "
                             "(allowed here: serial, parallel)")
        s = self.spec
        return self._transfer(bytes_per_dpu, n_dpus, mode, s.dpu_cpu_serial_gbs,
                              s.dpu_cpu_parallel_gbs, None, host_gbs)

    def dpu_to_dpu_seconds(self, bytes_per_dpu: ArrayLike, n_dpus: int | None = None,
                           broadcast: bool = True, *,
                           host_gbs: float | None = None) -> np.ndarray:
        """Exchange between DPUs, which have no path of their own: gather to the CPU in
        parallel, then send back (one broadcast buffer, or one buffer per DPU). The CPU's
        reduction in between is costed on the CPU."""
        back: Mode = "broadcast" if broadcast else "parallel"
        return (self.dpu_to_cpu_seconds(bytes_per_dpu, n_dpus, host_gbs=host_gbs)
                + self.cpu_to_dpu_seconds(bytes_per_dpu, n_dpus, back, host_gbs=host_gbs))

    @staticmethod
    def rank_bandwidth_gbs(dpus_in_rank: int, serial_gbs: float, parallel_gbs: float) -> float:
        """Parallel bandwidth of one rank with ``dpus_in_rank`` DPUs taking part: the power
        law through PrIM's two points (1 DPU: serial; 64: parallel), capped at the parallel
        rate and at k × serial (no DPU takes data faster than one alone)."""
        k = min(dpus_in_rank, PARALLEL_REF_DPUS)
        exponent = math.log(parallel_gbs / serial_gbs) / math.log(PARALLEL_REF_DPUS)
        return min(serial_gbs * k ** exponent, k * serial_gbs, parallel_gbs)

    def _transfer(self, bytes_per_dpu: ArrayLike, n_dpus: int | None, mode: str,
                  serial_gbs: float, parallel_gbs: float, broadcast_gbs: float | None,
                  host_gbs: float | None = None) -> np.ndarray:
        """Per-rank time (``_rank_transfer``); serial and parallel transfers move distinct
        bytes per DPU through host memory, so they take at least n × bytes / ``host_gbs``.
        A broadcast sends one buffer, and the channel traffic behind PrIM's per-rank rate
        (bytes delivered) is not known, so it is not capped."""
        s = self.spec
        n = s.dpus if n_dpus is None else n_dpus
        if not (isinstance(n, int | np.integer) and 1 <= n <= s.dpus):
            raise RldseError(f"pim.n_dpus: {n!r} is out of range (allowed: 1 ≤ n_dpus ≤ {s.dpus})")
        b = np.asarray(bytes_per_dpu, dtype=np.float64)
        t = self._rank_transfer(b, n, mode, serial_gbs, parallel_gbs, broadcast_gbs)
        if host_gbs is None or mode == "broadcast":
            return t
        if not host_gbs > 0:
            raise RldseError(f"pim.host_gbs: {host_gbs!r} must be positive")
        return np.maximum(t, n * b / (host_gbs * 1e9))

    def _rank_transfer(self, b: np.ndarray, n: int, mode: str, serial_gbs: float,
                       parallel_gbs: float, broadcast_gbs: float | None) -> np.ndarray:
        s = self.spec
        if mode == "serial":
            return n * b / (serial_gbs * 1e9)
        # ranks fill in order and run in parallel: the fullest rank sets the time
        k = min(n, s.dpus_per_rank)
        if mode == "parallel":
            return k * b / (self.rank_bandwidth_gbs(k, serial_gbs, parallel_gbs) * 1e9)
        if mode == "broadcast" and broadcast_gbs is not None:
            return k * b / (broadcast_gbs * 1e9)
        raise RldseError(f"pim.mode: {mode!r} is not one of serial, parallel, broadcast")

    def _tasklets(self, tasklets: int | None) -> int:
        t = self.spec.tasklets if tasklets is None else tasklets
        if not (isinstance(t, int | np.integer) and 1 <= t <= MAX_TASKLETS):
            raise RldseError(f"pim.tasklets: {t!r} is out of range "
                             f"(allowed: {allowed_range(PimSpec, 'tasklets')})")
        return int(t)

    # ---- power (see rldse.models.power) -------------------------------------------------
    @property
    def lanes(self) -> int:
        return self.spec.dpus

    @property
    def idle_w(self) -> float:
        return self.spec.dpu_idle_w * self.spec.dpus

    def instruction_joules(self, instructions: ArrayLike) -> np.ndarray:
        """Dynamic energy of executed instructions (summed over DPUs)."""
        return action_joules(instructions, self.spec.instr_pj)

    def energy(self, instructions: ArrayLike, wall_s: ArrayLike) -> EnergyEstimate:
        """Idle power of every DPU over the run plus energy per executed instruction
        (``instructions`` summed over all DPUs)."""
        return self.idle_plus(self.instruction_joules(instructions), wall_s)


register(PartKind(
    name="pim", spec=PimSpec, model=lambda spec, ctx: PimModel(spec),
    description="UPMEM processing-in-memory DIMMs (DPUs)", serves={"q_update": Runs.DPUS}))
