"""GPU part: the framework dispatches kernels from a host core; the GPU runs them.

An operation's cost has two sides (``GpuTimes``), because they occupy different hardware:

- **Host dispatch**: the framework's per-operator overhead (PyTorch eager: argument
  parsing, dispatcher, allocator, the CUDA launch call) runs on the CPU core that issues
  the kernels: ``kernels × dispatch_s``. It keeps that core busy and draws CPU power, not
  GPU power. dispatch_s is per a core of ``dispatch_core`` (a CPU preset, or the trace's
  capture host); the machine has the model dispatch from its system's CPU
  (``GpuModel.issue_from``), scaling by single-thread speed (clock × ipc_factor).
- **Device time**: what the GPU is busy for, priced operator by operator by
  ``rldse.models.gpu_ops`` (the model ``rldse parts cost`` answers with and ``rldse
  validate external`` checks against NeuSight's measurements): each GEMM of an
  operation's Work by its shape (sustained clock under the power limit, thread-block
  tiles and waves, k-fill: ``GpuModel.work_costs``), its other kernels as
  ``kernels × kernel_overhead_s`` plus their bytes at achieved bandwidth, plus dependent
  levels × load latency. Work without shapes (a kernel the engine makes up) has its flops
  at the large-GEMM limit of the same model (``gpu_ops.large_gemm_flops``), a lower bound.

Power (``GpuTimes.active_s``): while a kernel runs the board draws
P = idle_w + (max_w − idle_w) × (static_share + (1 − static_share) × occupancy), the
structure of AccelWattch (Kandiah et al., MICRO 2021) and GPUWattch (Leng et al., ISCA
2013): a constant part, static power of the active SMs, and dynamic power proportional
to activity; static_share is what any running kernel costs above idle however small
(clocks up, L2, NoC and memory controller active), the rest scales with the SMs the
kernel keeps busy. Occupancy = min(1, SMs used / sm_count), SMs used = ceil(work units /
units one SM holds): a GEMM's output tiles (``gemm_tile_elements`` each, one per SM), an
element-wise kernel's threads (``threads_per_sm`` per SM). A trace row does not give its
kernels' shapes, so each of an operation's K kernels is taken to move bytes / K, and its
work units to be that many 4-byte elements (the most parallelism the bytes allow).
A full-occupancy kernel draws max_w, as the utilisation model did; a launch-bound one of
a few tiles draws little more than idle + static_share. A copy occupies no SM
(occupancy 0). ``active_s`` is device time weighted by that power share, so the dynamic
energy is (max_w − idle_w) × active_s. The engine books device seconds by phase; each
phase's share is the device-time-weighted mean over the operations this model costed
for it (``GpuModel.dynamic_share``).

The host issues asynchronously, so an operation ends after max(host, device) (the final
synchronisation makes the host wait for the last kernel, idle, not busy). A launch-bound
learner (small networks, tens of kernels of microseconds each) therefore shows a busy
CPU core and a mostly idle GPU, which is what profilers show for RL on small MLPs.

- Kernels per operation: kernels_fixed[phase] + kernels_per_layer[phase] × layers, with
  ``layers`` the network depth the engine reads from the trace (an MLP forward of L
  layers is 2L kernels: GEMM with bias, then activation).
- Host↔device copies: the host dispatches one operator; the copy engine takes
  copy_fixed_s + bytes / (copy_efficiency × link bandwidth). A copy the host blocks on
  (an act's observation in and action read back) waits for the kernels still queued and
  then that long (``GpuModel.blocking_copy_times``; the wait is not busy host time).
- Dependent loads (a sum-tree descent) cost the L2 latency while the data they walk fits
  in L2 (``l2_bytes``), the device-memory latency beyond it.
- A sum tree (prioritized replay) of capacity C is ceil(log2 C) levels per sampled item,
  levels in sequence, items in parallel; an update climbs the same levels. Two
  implementations real code uses (``sumtree``): ``eager``, framework ops per level
  (``sumtree_ops_per_level`` kernels each: gather children, compare, select, subtract,
  index), and ``fused``, one kernel that walks every level.
- ``mem_bytes`` is the capacity the engine checks for out-of-memory (``fits``).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Annotated, Any, Literal, cast

import numpy as np
from pydantic import Field, field_validator

from rldse.errors import RldseError
from rldse.kernels.network_work import gemm_shape
from rldse.models.cpu import CpuSpec
from rldse.models.cpu.roofline import WorkColumns, WorkLike, framework_s
from rldse.models.gpu_ops import (
    OpCost,
    achieved_bps,
    large_gemm_flops,
    op_cost,
    price,
)
from rldse.models.kinds import Check, PartKind, PartTime, ReplayJob, Runs, register
from rldse.models.link import LinkSpec
from rldse.models.ops import DTYPE_NAMES, PHASE_NAMES, ArrayLike, OpColumns, Phase, per_phase
from rldse.models.power import OCCUPANCY, UtilisationPower, utilisation_power_w
from rldse.models.spec import PartSpec, quantity

KernelCounts = dict[Phase, Annotated[float, Field(ge=0, le=1e6)]]

#: How far real training code's framework ops may exceed the kernel counts before a CPU
#: row's unexplained time is taken for compute, not framework (``GpuModel.moved_host_s``):
#: the CPU captures' learn steps count 63 aten ops (DQN, 2 layers) and 236 (PPO) against 43
#: and 55 kernels (benchmarks/fidelity/gpu_vs_h200.py counts them).
TRAIN_OPS_MARGIN = 4.0
#: Phases whose CPU-timed rows are framework code (the network's forward, backward and
#: optimizer) that runs the same with its tensors on a GPU (``GpuModel.moved_host_s``).
FRAMEWORK_PHASES = ("act", "learn")

#: Bytes one dependent global-memory load moves: a 32-byte sector (CUDA's transaction size).
SECTOR_BYTES = 32
#: Bytes of one sum-tree node: a float32 priority sum (the tree's working set per level).
SUMTREE_NODE_BYTES = 4
#: Bytes of one element of parallel work (fp32/int32): the occupancy estimate's unit.
ELEMENT_BYTES = 4
#: Tensor-core dtypes (not trace dtypes: operators priced by shape name them) -> the
#: GpuSpec field holding their dense peak.
TENSOR_PEAKS = {"tf32": "tf32_tflops", "bf16": "bf16_tflops", "fp8": "fp8_tflops"}
#: Ledger key of work costed without a phase (copies, the engine's own kernels).
UNPHASED = ""


class GpuSpec(PartSpec):
    fp32_tflops: float = quantity("TFLOP/s", "peak FP32 (non-tensor)", ge=0.001, le=1e4,
                                  plausible=(0.1, 1000))
    fp64_tflops: float = quantity("TFLOP/s", "peak FP64 (non-tensor)", ge=0.001, le=1e4,
                                  plausible=(0.01, 500))
    int32_tops: float = quantity("TOP/s", "peak INT32 (int64 is costed at this rate)",
                                 ge=0.001, le=1e4, plausible=(0.1, 1000))
    tf32_tflops: float = quantity("TFLOP/s", "peak TF32 tensor-core (dense); 0 if none",
                                  ge=0, le=1e5, plausible=(1, 10000))
    use_tf32: bool = quantity("", "let fp32 work run at the TF32 tensor rate")
    bf16_tflops: float = quantity("TFLOP/s", "peak BF16 tensor-core (dense, FP32 "
                                  "accumulate); 0 if none", ge=0, le=1e5,
                                  plausible=(1, 100000))
    fp8_tflops: float = quantity("TFLOP/s", "peak FP8 tensor-core (dense); 0 if none",
                                 ge=0, le=1e5, plausible=(1, 100000))
    tensor_gemm_efficiency: float = quantity(
        "fraction", "share of the dense BF16/FP8 tensor-core peak a large aligned GEMM "
        "reaches (gpu_ops.tensor_gemm_work)", gt=0, le=1)
    mem_bw_gbs: float = quantity("GB/s", "device memory bandwidth", ge=0.001, le=1e5,
                                 plausible=(20, 50000))
    mem_bytes: int = quantity("B", "device memory capacity", ge=1, le=2**50,
                              plausible=(2**16, 2**41))
    mem_latency_ns: float = quantity("ns", "latency of one dependent load that misses L2",
                                     ge=0, le=1e5, plausible=(50, 5000))
    l2_bytes: int = quantity("B", "L2 cache capacity", ge=0, le=2**40, plausible=(2**16, 2**31))
    l2_latency_ns: float = quantity("ns", "latency of one dependent load that hits L2",
                                    ge=0, le=1e5, plausible=(10, 2000))
    dispatch_s: float = quantity("s", "host CPU time per framework operator (occupies the "
                                 "issuing core)", ge=0, le=1.0, plausible=(1e-7, 0.001))
    kernel_overhead_s: float = quantity("s", "GPU time per kernel beyond its work (launch "
                                        "latency and a minimal kernel's duration)", ge=0, le=1.0,
                                        plausible=(1e-8, 0.001))
    copy_fixed_s: float = quantity("s", "fixed cost of one host↔device copy", ge=0, le=1.0,
                                   plausible=(1e-8, 0.01))
    copy_efficiency: float = quantity("fraction", "share of the host link's line rate a "
                                      "pinned host↔device copy reaches", gt=0, le=1)
    host_link: str = quantity("", "link preset to the host (PCIe generation)")
    kernels_fixed: KernelCounts = quantity("kernels", "kernels per operation, by phase "
                                           "(phases not listed: 1)")
    kernels_per_layer: KernelCounts = quantity("kernels", "extra kernels per network layer, "
                                               "by phase (phases not listed: 0)")
    sumtree: Literal["eager", "fused"] = quantity(
        "", "sum-tree implementation: framework ops per level, or one fused kernel")
    sumtree_ops_per_level: float = quantity("kernels", "framework ops per sum-tree level "
                                            "(sumtree: eager)", ge=1, le=1000)
    sm_count: int = quantity("SMs", "streaming multiprocessors", ge=1, le=10000,
                             plausible=(1, 1024))
    threads_per_sm: int = quantity("threads", "resident threads per SM (element-wise "
                                   "kernels' occupancy)", ge=32, le=8192)
    gemm_tile_elements: int = quantity("elements", "output elements of one GEMM "
                                       "thread-block tile, one resident per SM", ge=1, le=2**20)
    static_share: float = quantity("fraction", "share of max_w − idle_w any running kernel "
                                   "draws however few SMs it occupies", ge=0, le=1)
    max_w: float = quantity("W", "board power at full load (TDP)", gt=0, le=1e4,
                            plausible=(5, 5000))
    idle_w: float = quantity("W", "board power when idle (≤ max_w)", ge=0, le=1e4,
                             plausible=(0.5, 1000))
    price_usd: float = quantity("USD", "price of one GPU", ge=0, le=1e7, plausible=(50, 1e6))
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")
    process_node: str = quantity("", "foundry node (a key of gpu_ops.PROCESS_POWER)")
    flop_energy_pj: float = quantity("pJ", "board energy per FP32 flop at the boost clock on "
                                     "16 nm (sets the power-limited clock)", gt=0, le=1e4,
                                     plausible=(0.1, 1000))
    node_power_exponent: float = quantity("", "share of the node's logic power reduction "
                                          "(PROCESS_POWER) a board's energy per flop "
                                          "follows, as an exponent", ge=0, le=2)
    base_clock_mhz: float = quantity("MHz", "base clock (guaranteed under the power limit)",
                                     gt=0, le=1e5, plausible=(100, 5000))
    boost_clock_mhz: float = quantity("MHz", "boost clock (fp32_tflops is at this clock)",
                                      gt=0, le=1e5, plausible=(100, 5000))
    unaligned_energy_share: float = quantity(
        "fraction", "extra board energy per flop of a GEMM whose operands are not 16-byte "
        "aligned (gpu_ops.operands_aligned: four 32-bit loads for each 128-bit one)",
        ge=0, le=10)
    gemm_tile_half: float = quantity("elements", "tile reuse tm·tn/(tm+tn) at which a GEMM "
                                     "tile reaches half of the SM's peak", ge=0, le=1e4)
    fp32_lanes_per_scheduler: Literal[16, 32] = quantity(
        "lanes", "FP32 lanes per warp scheduler (an FMA warp instruction takes 32 / this "
        "cycles of its lanes; one instruction issues per cycle)")
    gemm_k_fill: float = quantity("k-steps", "a GEMM tile's pipeline fill and epilogue, in "
                                  "reduction steps", ge=0, le=1e5)
    mem_bw_efficiency: float = quantity("fraction", "share of mem_bw_gbs a streaming "
                                        "(element-wise) kernel reaches", gt=0, le=1)
    op_dispatch_calls: dict[str, Annotated[float, Field(ge=0, le=100)]] = quantity(
        "dispatches", "host dispatch of one eager call of an operator, in dispatch_s units "
        "(operators not listed: 1)")
    launch_share: float = quantity("fraction", "share of an eager operator's host dispatch "
                                   "that precedes its kernel launch (the rest overlaps the "
                                   "kernel)", ge=0, le=1)
    dispatch_core: str = quantity("", "CPU preset whose single core dispatch_s was measured "
                                  "or assumed on")
    framework_op_host_s: float = quantity(
        "s", "host time of one framework op of a training step timed on the CPU (Python, "
        "autograd, dispatcher, its tiny kernel), on a core of dispatch_core: bounds what "
        "a CPU row's unexplained time counts as framework (GpuModel.moved_host_s)",
        ge=0, le=1.0, plausible=(1e-7, 0.01))

    @field_validator("idle_w")  # stricter than models.spec.idle_at_most, which others use
    @classmethod
    def _below_max(cls, value: float, info) -> float:
        """A GPU's sustained clock is set by the power it may draw above idle
        (rldse.models.gpu_ops.sustained_clock_share): none leaves it no clock at all."""
        top = info.data.get("max_w")
        if top is not None and value >= top:
            raise ValueError(f"idle_w must be below max_w ({top:g} W): a GPU runs on the "
                             "power it may draw above idle")
        return value

    @field_validator("process_node")
    @classmethod
    def _known_node(cls, v: str) -> str:
        from rldse.models.gpu_ops import PROCESS_POWER

        if v not in PROCESS_POWER:
            raise ValueError(f"'{v}' is not one of {', '.join(PROCESS_POWER)}")
        return v


@dataclass(frozen=True)
class GpuTimes:
    """Per operation: seconds on the issuing host core and on the GPU, and the GPU's
    seconds weighted by the share of its dynamic power they draw (module docstring)."""

    host_s: np.ndarray
    device_s: np.ndarray
    #: None: every device second draws the full dynamic power (the utilisation model), for
    #: times a caller assembles without the model's occupancy
    active_s: np.ndarray | None = None
    #: host seconds spent waiting, not busy, for the GPU at blocking copies
    #: (``GpuModel.blocking_copy_times``); None: none
    wait_s: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.active_s is None:
            object.__setattr__(self, "active_s", self.device_s)
        if self.wait_s is None:
            object.__setattr__(self, "wait_s", np.zeros_like(np.asarray(self.host_s, float)))

    @property
    def wall_s(self) -> np.ndarray:
        """The host issues asynchronously: an operation is done after the later of its
        host side (busy and waiting at blocking copies) and the device."""
        return np.maximum(self.host_s + cast(np.ndarray, self.wait_s), self.device_s)

    def __add__(self, other: GpuTimes) -> GpuTimes:
        """One after the other on the same stream (e.g. a copy in, then the kernels)."""
        return GpuTimes(self.host_s + other.host_s, self.device_s + other.device_s,
                        cast(np.ndarray, self.active_s) + cast(np.ndarray, other.active_s),
                        cast(np.ndarray, self.wait_s) + cast(np.ndarray, other.wait_s))

    def total(self) -> PartTime:
        """All operations one after another, as one PartTime."""
        host, device = float(np.sum(self.host_s)), float(np.sum(self.device_s))
        return PartTime(host, device, max(host + float(np.sum(self.wait_s)), device))


@dataclass
class PhaseOperators:
    """The operators priced for one phase: rows priced, and per (op, shape, dtype) the
    calls summed over those rows with one call's cost; the rows' operator dispatch and
    booked host seconds (``GpuModel.operator_rows``)."""

    rows: int = 0
    calls: dict[tuple[str, tuple[int, ...], str], tuple[int, OpCost]] = field(
        default_factory=dict)
    operator_host_s: float = 0.0  # the rows' operators' dispatch, summed
    booked_host_s: float = 0.0  # the rows' host seconds as costed (captured or moved)

    def add(self, cost: OpCost, rows: int) -> None:
        key = (cost.op, cost.shape, cost.dtype)
        calls, _ = self.calls.get(key, (0, cost))
        self.calls[key] = (calls + rows, cost)


class GpuModel(UtilisationPower):
    """One GPU and the link that connects it to the host. Energy: idle power for the run
    plus (max_w − idle_w) × the share each kernel or copy draws (module docstring), never
    for dispatch; HBM/GDDR energy is inside board power, so no per-bit term is added.

    The engine books device seconds by phase, not by kernel, so the model keeps a ledger
    of the device and active seconds it costed per phase (``op_times`` knows the phase;
    copies and the engine's own kernels go under ``UNPHASED``) and ``dynamic_share(phase)``
    is their ratio: exact for a phase whose operations share one occupancy, a
    device-time-weighted mean over the operations costed (not over those booked) otherwise.
    """

    method = OCCUPANCY

    def __init__(self, spec: GpuSpec, link: LinkSpec, dispatch_ref: CpuSpec | None = None,
                 capture_host: CpuSpec | None = None) -> None:
        self.spec = spec
        self.link = link
        fp32 = spec.tf32_tflops if spec.use_tf32 and spec.tf32_tflops > 0 else spec.fp32_tflops
        peak = {"fp32": fp32, "fp64": spec.fp64_tflops, "int32": spec.int32_tops,
                "int64": spec.int32_tops, "none": fp32}
        #: peak operations per second at the boost clock, indexed by dtype code (gpu_ops
        #: scales them by the sustained clock)
        self.peak_ops = np.array([peak[d] * 1e12 for d in DTYPE_NAMES])
        #: host seconds per dispatched operator on the issuing core (``issue_from``)
        self.dispatch_s = spec.dispatch_s
        #: host seconds of one framework op timed on a CPU, on the issuing core
        self.framework_op_s = spec.framework_op_host_s
        self._dispatch_ref = dispatch_ref
        self._capture_host = capture_host
        #: phase codes whose trace rows were timed dispatching to a GPU (``anchor_dispatch``)
        self._anchored = np.zeros(len(PHASE_NAMES), dtype=bool)
        #: capture host core's speed over the issuing core's (``issue_from``)
        self._capture_scale = 1.0
        #: phase codes whose CPU-timed rows are framework code (``moved_host_s``)
        self._framework = np.isin(np.arange(len(PHASE_NAMES)),
                                  [PHASE_NAMES.index(p) for p in FRAMEWORK_PHASES])
        self._fixed = per_phase(spec.kernels_fixed, 1.0)
        self._per_layer = per_phase(spec.kernels_per_layer, 0.0)
        #: effective host↔device copy bandwidth, bytes/s
        self.copy_bps = spec.copy_efficiency * link.bandwidth_gbs * 1e9
        #: phase -> [device seconds, active seconds] costed so far (class docstring)
        self._ledger: dict[str, list[float]] = {}
        #: phase -> the operators priced for it (``operator_rows``)
        self._operators: dict[str, PhaseOperators] = {}
        #: (id(work), kernels, dtype) -> (work, its operators' costs) (``work_costs``)
        self._work_memo: dict[tuple[int, float, str], tuple[WorkLike, tuple[OpCost, ...]]] = {}
        #: flop/s of shape-less work by dtype code (``_unshaped_times``)
        self._unshaped_rate = np.array([large_gemm_flops(spec, p, self.is_tensor(d))
                                        for d, p in zip(DTYPE_NAMES, self.peak_ops,
                                                        strict=True)])

    def issue_from(self, core: CpuSpec, busy_cores: int = 1) -> None:
        """Dispatch from a core of ``core`` while ``busy_cores`` of its cores are busy (one:
        the issuing thread alone, at single-core turbo): dispatch_s, framework work measured
        or assumed on one busy core of ``dispatch_core``, scaled by the single-thread speed
        (``CpuSpec.interp_speed``: the clock that many busy cores allow × ipc_factor) of
        that core over the issuing core's. Without a reference core (``host`` with no
        capture host) dispatch_s stays as given."""
        speed = core.interp_speed(busy_cores)
        if self._dispatch_ref is not None:
            ref = self._dispatch_ref.interp_speed(1)
            self.dispatch_s = self.spec.dispatch_s * ref / speed
            self.framework_op_s = self.spec.framework_op_host_s * ref / speed
        if self._capture_host is not None:
            self._capture_scale = self._capture_host.interp_speed(1) / speed

    def anchor_dispatch(self, phases: Iterable[str]) -> None:
        """The trace was captured with its networks on a GPU: its rows of ``phases`` are the
        framework's host time for exactly this code on the capture host (dispatch, Python,
        autograd, the optimizer; 31-48 µs per op on an H200's host, 4.5-7x the tight-loop
        ``dispatch_s``, benchmarks/fidelity/gpu_vs_h200.py). ``op_times`` then takes those
        rows' host time from the capture, scaled to the issuing core, instead of kernels x
        dispatch_s; the device side is the model's either way. Dispatch does not grow with
        the batch, so a batch what-if keeps it, as launch-bound learners show."""
        for phase in phases:
            self._anchored[PHASE_NAMES.index(phase)] = True

    def peak_flops(self, dtype: str) -> float:
        """Peak operations per second at the boost clock for ``dtype`` ('tf32': the tensor
        cores' rate); RldseError naming --dtype where the part has no such path."""
        if dtype in TENSOR_PEAKS:
            peak = getattr(self.spec, TENSOR_PEAKS[dtype])
            if peak <= 0:
                raise RldseError(f"--dtype {dtype}: this GPU has no {dtype.upper()} tensor "
                                 f"cores (gpu.{TENSOR_PEAKS[dtype]} is 0)")
            return peak * 1e12
        if dtype not in DTYPE_NAMES or dtype == "none":
            raise RldseError(f"--dtype {dtype}: unknown (expected one of tf32, bf16, fp8, "
                             f"{', '.join(d for d in DTYPE_NAMES if d != 'none')})")
        return float(self.peak_ops[DTYPE_NAMES.index(dtype)])

    def is_tensor(self, dtype: str) -> bool:
        """Whether ``dtype``'s work runs on tensor cores: tf32, bf16, fp8, or fp32 with
        use_tf32."""
        return dtype in TENSOR_PEAKS or (dtype in ("fp32", "none") and self.spec.use_tf32
                                   and self.spec.tf32_tflops > 0)

    def op_cost(self, op: str, shape: str | tuple[int, ...], dtype: str = "fp32") -> OpCost:
        """One eager call of a framework operator of known shape (``gpu_ops``)."""
        return op_cost(self, op, shape, dtype)

    def kernels(self, ops: OpColumns, layers: ArrayLike = 0) -> np.ndarray:
        """Kernel launches per operation: fixed[phase] + per_layer[phase] × layers."""
        return self._fixed[ops.phase] + self._per_layer[ops.phase] * np.asarray(layers, float)

    def occupancy(self, flops: ArrayLike, bytes_: ArrayLike, kernels: ArrayLike) -> np.ndarray:
        """Fraction of the SMs each of an operation's kernels keeps busy: min(1, ceil(units
        / units per SM) / sm_count), units = bytes / (K × 4-byte elements); a GEMM (flops
        > 0) holds one tile of gemm_tile_elements per SM, an element-wise kernel
        threads_per_sm elements (module docstring)."""
        s = self.spec
        f, b, k = (np.asarray(x, dtype=np.float64) for x in (flops, bytes_, kernels))
        elements = b / (ELEMENT_BYTES * np.maximum(k, 1.0))
        per_sm = np.where(f > 0, float(s.gemm_tile_elements), float(s.threads_per_sm))
        return np.minimum(1.0, np.ceil(elements / per_sm) / s.sm_count)

    def power_share(self, occupancy: ArrayLike) -> np.ndarray:
        """Share of max_w − idle_w a kernel at this occupancy draws:
        static_share + (1 − static_share) × occupancy."""
        c = self.spec.static_share
        return c + (1.0 - c) * np.clip(np.asarray(occupancy, dtype=np.float64), 0.0, 1.0)

    @property
    def min_dynamic_share(self) -> float:
        """The least share of max_w − idle_w a booked second draws (a copy, or a kernel on
        no SM: the static share): what a lower bound on energy may assume."""
        return float(self.spec.static_share)

    def power_w(self, occupancy: ArrayLike) -> np.ndarray:
        """Board power while a kernel at this occupancy runs."""
        return utilisation_power_w(self.spec.idle_w, self.spec.max_w,
                                   self.power_share(occupancy))

    def _unshaped_times(self, kernels: np.ndarray, flops: np.ndarray, bytes_: np.ndarray,
                        dtype: np.ndarray | int, levels: np.ndarray | float = 0.0,
                        level_s: float = 0.0) -> GpuTimes:
        """Work whose operators' shapes are unknown (a made-up kernel, a bare trace row):
        kernels × overhead + the longer of its flops at the large-GEMM rate
        (``gpu_ops.large_gemm_flops``: a lower bound) and its bytes at achieved bandwidth,
        plus dependent levels × their latency."""
        s = self.spec
        rate = self._unshaped_rate[dtype]
        roof = np.maximum(np.divide(flops, rate), bytes_ / achieved_bps(s))
        device = kernels * s.kernel_overhead_s + roof + levels * level_s
        active = device * self.power_share(self.occupancy(flops, bytes_, kernels))
        return GpuTimes(host_s=kernels * self.dispatch_s, device_s=device, active_s=active)

    def work_costs(self, work: WorkLike, kernels: float, dtype: str = "fp32"
                   ) -> tuple[OpCost, ...]:
        """The operators of one operation doing ``work`` (an analytic Work: its GEMMs by
        shape, the rest in total) in ``kernels`` eager kernels (the phase's framework
        count): each GEMM as the ``linear`` operator ``rldse parts cost`` prices, the other
        kernels as one ``kernels`` operator moving the non-GEMM bytes (cold-state bytes are
        the CPU's cache misses: every kernel's operands already come from device memory).
        Memoized per work and count: programs price the same few works for many rows."""
        key = (id(work), float(kernels), dtype)
        hit = self._work_memo.get(key)
        if hit is not None and hit[0] is work:
            return hit[1]
        peak_dtype = "fp32" if dtype == "none" else dtype
        gemms = tuple(price(self, "linear", gemm_shape(*g), peak_dtype) for g in work.gemms)
        rest_bytes = max(work.bytes - work.gemm_bytes - work.cold_bytes, 0)
        rest_flops = max(work.flops - work.gemm_flops, 0)
        rest_kernels = max(int(round(kernels)) - len(gemms), 0)
        if rest_kernels == 0 and (rest_bytes or rest_flops):
            rest_kernels = 1  # work outside the GEMMs runs in at least one kernel
        rest = (price(self, "kernels", (rest_kernels, rest_bytes, rest_flops), peak_dtype),) \
            if rest_kernels else ()
        costs = gemms + rest
        self._work_memo[key] = (work, costs)
        return costs

    def _record(self, phase: str, device_s: ArrayLike, active_s: ArrayLike) -> None:
        """Add costed seconds to the phase's ledger entry (class docstring)."""
        entry = self._ledger.setdefault(phase, [0.0, 0.0])
        entry[0] += float(np.sum(device_s))
        entry[1] += float(np.sum(active_s))

    def dynamic_share(self, phase: str) -> float:
        """Share of max_w − idle_w a device second booked in ``phase`` draws: the phase's
        costed active / device seconds, else those of the work costed without a phase;
        1 (the utilisation model's full dynamic power) only for seconds the model never
        costed, which the engine does not book."""
        for key in (phase, UNPHASED):
            device_s, active_s = self._ledger.get(key, (0.0, 0.0))
            if device_s > 0:
                return active_s / device_s
        return 1.0

    def kernel_times(self, kernels: ArrayLike, flops: ArrayLike, bytes_: ArrayLike,
                     dtype: str = "fp32") -> GpuTimes:
        """Kernels the engine makes up (no trace row, no shapes): dispatch, and on the
        device ``_unshaped_times``."""
        if dtype not in DTYPE_NAMES:
            raise RldseError(f"gpu: dtype '{dtype}' is not one of {', '.join(DTYPE_NAMES)}")
        k, f, b = np.broadcast_arrays(*(np.asarray(x, dtype=np.float64)
                                        for x in (kernels, flops, bytes_)))
        t = self._unshaped_times(k.copy(), f.copy(), b.copy(), DTYPE_NAMES.index(dtype))
        self._record(UNPHASED, t.device_s, t.active_s)
        return t

    def op_times(self, ops: OpColumns, layers: ArrayLike = 0) -> GpuTimes:
        """Each traced operation run on this GPU (its data already on the device).

        Rows that carry their operators (``WorkColumns.works``, the analytic Work of the
        operation at this system's shapes) are priced operator by operator
        (``work_costs``: each GEMM exactly as ``rldse parts cost`` prices it); others by
        ``_unshaped_times``. The kernel count is the phase's eager count
        (``kernels_fixed`` + ``kernels_per_layer`` × ``layers``). Touches are dependent
        loads, touches / items levels in sequence (a descent per item), items in
        parallel, each at device-memory latency (a trace row does not say what its loads
        walk, so L2 hits are not assumed)."""
        levels = ops.touches / np.maximum(ops.items, 1.0)
        kernels = np.broadcast_to(self.kernels(ops, layers), ops.flops.shape).astype(np.float64)
        level_s = self.spec.mem_latency_ns * 1e-9
        t = self._unshaped_times(kernels, ops.flops, ops.bytes, ops.dtype, levels, level_s)
        if getattr(ops, "works", ()):
            t = self._priced_by_operators(cast(WorkColumns, ops), kernels, levels * level_s, t)
        op_host_s = t.host_s
        anchored = self._anchored[ops.phase]
        if anchored.any():  # host time measured dispatching this code (anchor_dispatch)
            t = GpuTimes(np.where(anchored, ops.host_dur_s * self._capture_scale, t.host_s),
                         t.device_s, t.active_s)
        moved = ~anchored & self._framework[ops.phase] & (ops.host_dur_s > 0)  # CPU-timed
        if moved.any() and self._capture_host is not None:
            t = GpuTimes(np.where(moved, self.moved_host_s(ops, kernels), t.host_s),
                         t.device_s, t.active_s)
        for code in np.unique(ops.phase):
            rows = ops.phase == code
            phase = PHASE_NAMES[int(code)]
            self._record(phase, t.device_s[rows], t.active_s[rows])
            entry = self._operators.setdefault(phase, PhaseOperators())
            entry.rows += int(rows.sum())
            entry.operator_host_s += float(np.sum(op_host_s[rows]))
            entry.booked_host_s += float(np.sum(t.host_s[rows]))
        return t

    def _priced_by_operators(self, ops: WorkColumns, kernels: np.ndarray,
                             level_s: np.ndarray, t: GpuTimes) -> GpuTimes:
        """``t`` with the rows that carry a Work priced by its operators (``work_costs``),
        each distinct (work, kernel count, dtype) once; their operators are entered in the
        phase's operator ledger (``operator_rows``)."""
        host, device, active = t.host_s.copy(), t.device_s.copy(), t.active_s.copy()
        has = ops.work_index >= 0
        keys = np.stack([ops.work_index, kernels, ops.dtype, ops.phase], axis=1)[has]
        groups, inverse = _distinct_rows(keys)
        where = np.flatnonzero(has)
        for g, (j, k, d, code) in enumerate(groups):
            rows = where[inverse.reshape(-1) == g]
            costs = self.work_costs(ops.works[int(j)], float(k), DTYPE_NAMES[int(d)])
            host[rows] = sum(c.host_s for c in costs)
            device[rows] = sum(c.device_s for c in costs) + level_s[rows]
            active[rows] = sum(self._active_s(c) for c in costs) + level_s[rows] \
                * self.power_share(0.0)
            entry = self._operators.setdefault(PHASE_NAMES[int(code)], PhaseOperators())
            for c in costs:
                entry.add(c, len(rows))
        return GpuTimes(host, device, active)

    def _active_s(self, c: OpCost) -> float:
        """An operator's device seconds weighted by the dynamic-power share it draws."""
        kernels = c.shape[0] if c.op == "kernels" else 1
        return float(c.device_s * self.power_share(self.occupancy(c.flops, c.bytes, kernels)))

    def operator_rows(self) -> list[dict[str, Any]]:
        """Per phase, each operator priced for it: calls per operation (over the rows
        priced), one call's device seconds and bound as ``op_cost`` gives them, and its
        host seconds as booked: where a captured host time or the framework share set the
        rows' host side (``anchor_dispatch``, ``moved_host_s``), the operators' dispatch
        scaled to it."""
        out = []
        for phase, entry in self._operators.items():
            if not entry.rows:
                continue
            scale = entry.booked_host_s / entry.operator_host_s if entry.operator_host_s \
                else 1.0
            for (op, shape, dtype), (calls, c) in entry.calls.items():
                out.append({"phase": phase, "op": op, "shape": ",".join(map(str, shape)),
                            "dtype": dtype, "part": f"gpu/{self.spec.name}",
                            "calls_per_operation": calls / entry.rows,
                            "host_s": c.host_s * scale, "device_s": c.device_s,
                            "bound": c.bound})
        return out

    def moved_host_s(self, ops: OpColumns, kernels: np.ndarray) -> np.ndarray:
        """Host seconds of CPU-timed framework rows (``FRAMEWORK_PHASES``) whose code now
        runs with its tensors on this GPU, with no coefficient taken from a GPU run of that
        code: the rows' framework share on the capture host (``cpu.roofline.framework_s``,
        the split the CPU model makes: their time less their work on the capture host's
        roofline, GEMMs on its measured curve), scaled to the issuing core, since the Python,
        autograd and dispatcher work of each op runs whichever device holds the tensors;
        plus each kernel's launch path, ``dispatch_s`` (one eager GPU op in a tight loop on
        the issuing core). The arithmetic moves to the device; copies are the caller's.

        The share is capped at ``TRAIN_OPS_MARGIN`` × kernels × ``framework_op_host_s``: a
        compute-bound CPU row (a CNN learner whose convolutions ran below the capture host's
        GEMM curve) leaves compute in the unexplained time that no GPU host pays; DQN's and
        PPO's learn steps stay below it."""
        share_s = framework_s(cast(CpuSpec, self._capture_host), ops) * self._capture_scale
        cap_s = TRAIN_OPS_MARGIN * kernels * self.framework_op_s
        return np.minimum(share_s, cap_s) + kernels * self.dispatch_s

    def copy_times(self, bytes_: ArrayLike) -> GpuTimes:
        """One host↔device copy: one operator dispatched; the copy engine takes
        copy_fixed_s + bytes / (copy_efficiency × link bandwidth), with no SM occupied."""
        b = np.asarray(bytes_, dtype=np.float64)
        device = self.spec.copy_fixed_s + b / self.copy_bps
        t = GpuTimes(host_s=np.full(b.shape, self.dispatch_s), device_s=device,
                     active_s=device * self.power_share(0.0))
        self._record(UNPHASED, t.device_s, t.active_s)
        return t

    def blocking_copy_times(self, bytes_: ArrayLike, after: GpuTimes | None = None
                            ) -> GpuTimes:
        """``after`` (None: nothing queued), then a copy the host blocks on: PyTorch copies
        between pageable host memory and the GPU with ``non_blocking=False`` (``int()``,
        ``.item()``, ``.cpu()`` of a result, ``torch.as_tensor(array, device=...)``) as an
        asynchronous copy followed by a stream synchronisation, and CUDA returns from a copy
        to pageable host memory only once it has completed (CUDA Runtime API, "API
        synchronization behavior"). So the host, once it has issued ``after``, waits for the
        kernels still queued (the model's device time beyond the host's) and then for the
        copy (``copy_times``' device time, a whole blocking small copy; it includes the
        copy's own dispatch)."""
        before = after if after is not None else GpuTimes(np.zeros(()), np.zeros(()))
        c = self.copy_times(bytes_)
        issued = before.host_s + cast(np.ndarray, before.wait_s)
        drain = np.maximum(before.device_s - issued, 0.0)
        wait = drain + np.maximum(c.device_s - c.host_s, 0.0)
        return before + GpuTimes(c.host_s, c.device_s, c.active_s, wait)

    def level_latencies_s(self, depth: int) -> np.ndarray:
        """Latency of a dependent load at each sum-tree level (root first): L2 while the
        levels above and including it fit in L2, device memory below."""
        s = self.spec
        level = np.arange(depth, dtype=np.float64)
        resident = (2.0 ** (level + 1) - 1) * SUMTREE_NODE_BYTES <= s.l2_bytes
        return np.where(resident, s.l2_latency_ns, s.mem_latency_ns) * 1e-9

    def sumtree_time(self, batch: int, capacity: int) -> PartTime:
        """Sample (or update) ``batch`` leaves of a sum tree over ``capacity`` priorities,
        in the spec's implementation (module docstring); one thread per item."""
        s = self.spec
        depth = int(np.ceil(np.log2(max(capacity, 2))))
        walk_s = float(self.level_latencies_s(depth).sum())
        traffic_s = batch * depth * SECTOR_BYTES / (s.mem_bw_gbs * 1e9)
        kernels = depth * s.sumtree_ops_per_level if s.sumtree == "eager" else 1.0
        device_s = kernels * s.kernel_overhead_s + max(walk_s, traffic_s)
        occupancy = self.occupancy(0.0, batch * ELEMENT_BYTES, 1.0)
        self._record(UNPHASED, device_s, device_s * self.power_share(occupancy))
        return PartTime.overlapped(kernels * self.dispatch_s, device_s)

    def replay_seconds(self, job: ReplayJob, op: str, n: int) -> PartTime:
        """The replay role with buffer and sum tree in device memory: a prioritized sample or
        update is a sum-tree pass; a uniform sample two kernels (indices, gather); an insert
        of n transitions one copy in and one scatter kernel."""
        if op == "insert":
            if not n:
                return PartTime(0.0, 0.0, 0.0)
            nbytes = n * job.transition_bytes
            return (self.copy_times(nbytes) + self.kernel_times(1, 0, nbytes)).total()
        if job.prioritized:
            return self.sumtree_time(job.batch, job.capacity) * n
        if op != "sample":
            return PartTime(0.0, 0.0, 0.0)
        return self.kernel_times(2, 0, job.batch * job.transition_bytes).total() * n

    def replay_joules(self, job: ReplayJob, op: str, n: int) -> dict[str, float]:
        """Nothing beyond board power (the utilisation model)."""
        return {}

    def replay_checks(self, job: ReplayJob) -> dict[str, bool]:
        """None of its own: the buffer counts towards the program's GPU memory check."""
        return {}

    def fits(self, bytes_: ArrayLike) -> np.ndarray:
        """Whether this many bytes fit in device memory (False: the run is out of memory)."""
        return np.asarray(bytes_, dtype=np.float64) <= self.spec.mem_bytes


def _distinct_rows(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """``np.unique(keys, axis=0, return_inverse=True)``, the same rows in the same order,
    by one integer code per row (each column's rank, mixed-radix): np.unique over rows
    sorts them as records, 6 ms for a trace phase's 20,000 rows, in every costing."""
    code = np.zeros(len(keys), np.int64)
    for column in keys.T:
        values, rank = np.unique(column, return_inverse=True)
        code = code * len(values) + rank.reshape(-1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    return keys[first], inverse.reshape(-1)


register(PartKind(
    name="gpu", spec=GpuSpec,
    model=lambda spec, ctx: GpuModel(
        spec, ctx.load("link", spec.host_link, "gpu.host_link"),
        ctx.capture_host if spec.dispatch_core == "host" else
        cast(CpuSpec, ctx.load("cpu", spec.dispatch_core, "gpu.dispatch_core")), ctx.capture_host),
    description="GPUs behind a host link",
    serves={"act": Runs.KERNELS, "learn": Runs.KERNELS, "replay": Runs.SERVER,
            "q_update": Runs.KERNELS},
    countable=True, preset_refs={"host_link": "link"},
    checks=(Check("gpu_memory", "what the program keeps on the GPU fits its memory",
                  memory=True),)))
