"""CPU part: cores that run the interpreted RL loop and numpy, scaled from the capture host.

Every operation in a Trace was measured on the capture host, so the CPU model scales that
measured time to a target CPU rather than predicting it from scratch. The scheme:

1. The host's share of an operation that its hardware explains is its *roofline* on the
   host, R_h = flops / core FLOP/s + bytes / core bandwidth + touches × random-access
   time, computed from the trace's host fingerprint (measured matmul GFLOP/s, copy GB/s,
   random-access ns). The explained part is w = min(measured, R_h); the rest,
   measured − w, is interpreter and dispatch overhead (Python, numpy call setup).
   The terms add rather than overlap (max) because a traced operation is a sequence of
   numpy calls run one after another: its GEMMs (compute-bound) and its element-wise
   kernels, reductions and copies (memory-bound) never run at the same time. Measured on
   a DQN learn step (benchmarks/fidelity_dqn.py), max() explained about half of the time
   each extra sample adds; the sum explains most of it. Allocating element-wise numpy
   calls on RL-sized (16-64 KiB, cache-resident) arrays ran at 10-22 GB/s per extra byte,
   the same range as the fingerprint's copy rate, so pricing bytes at that rate is fair.
2. On the target, the overhead scales with single-thread speed, host (clock × IPC) /
   target (clock × IPC); the explained part scales with the ratio of the same roofline
   on the two machines, R_t / R_h.

   t = (measured − w) · (clock_h·ipc_h) / (clock_t·ipc_t) + w · R_t / R_h

Why this scheme: an env step or a batch-1 act is almost all interpreter time and scales
with the clock; a large matmul is almost all hardware time and scales with SIMD width and
bandwidth; most RL operations are in between, and the split is per operation, from the
work the trace counted, with no per-phase special cases. It is homogeneous of degree one
(the same operation with k times the work and k times the measured time costs k times
as much) and reproduces measured times exactly on the ``host`` preset (scale factor 1).
With the measured time held fixed, more counted work means less of that time was
overhead, so the estimate can fall when the target's hardware speedup exceeds its
interpreter speedup: that is the model's statement, not a bug.

GEMMs, element-wise, caches. Trace rows whose work the formulas count exactly
(rldse.kernels.mlp.Work: learn, act, sync) are priced kernel class by kernel
class (``work_seconds``, rows from ``with_works``): each GEMM by its layer shape on the
host's measured GEMM curve (fwd x·W, dw xᵀ·dy, dx dy·Wᵀ on a batch × inputs × outputs
grid: a 4- or 2-wide layer runs at 1-15 % of the 128³ rate, and the curve holds the call
cost, so tiny products cost their call), element-wise bytes (bias adds, masks, TD
targets) at the measured marginal rate of the MLP's kernel mix, Adam's and target
updates' contiguous bytes at their own measured rate, and the state an update first
reads (parameters, moments, gradients) at the copy rate. A target scales the host's
GEMM time by core_gflops ratio (assumption: the curve's shape carries over; small
call-bound products may scale nearer the clock ratio, so between interp_scale and
gemm_scale), the element-wise and contiguous rates by clock (bytes per cycle, presets
assume the development host's with a range). Irregular accesses of a working set are
served by L1, L2, the LLC or DRAM in proportion to how much of it each holds
(``touch_ns``: the host's latencies are its measured gathers within each level, sizes
from sysfs). Rows without such counts (replay, env) keep the flat roofline above.

Clock under load, and vector envs. ``clock_mhz`` is the clock every core sustains with all
of them busy (a preset's base clock: what the vendor guarantees at TDP), ``single_core_mhz``
the one a lone busy core reaches (the datasheet's max turbo or boost); with k of the cores
busy a core runs at a linear mix of the two (``busy_clock_mhz``: an assumption; real turbo
tables step down by active cores, and power-limited laptops fall faster).
``single_thread_scale(k)`` is interp_scale at that clock: an interpreted env loop on an
otherwise idle machine runs at the single-core turbo. A subprocess vector env (gym's
AsyncVectorEnv, SB3's SubprocVecEnv: one worker process per env, the main process sends
each a command and collects each reply in turn) takes per batch step
``subprocess_batch_seconds``: the env step on a worker, stretched when the workers and the
main process outnumber the cores (``core_throughput``), plus one round trip's latency,
plus the main process's serial cost per further worker (a command written and a reply read
through a pipe, blocking, and that worker's observation moved: through shared memory and
copied, or pickled through the pipe); the serial costs run at the main process's
single-thread speed, not stretched (the scheduler runs a woken process promptly). All
three costs are measured on the capture host (benchmarks/envpool_capture.py) and scale by
single-thread speed; validated against EnvPool's published curves (rldse/external/envpool.py).

Assumptions (each a parameter with a range): one operation runs on one core; a core gets
an equal share of its socket's DRAM bandwidth (all cores busy, the case that matters when
every core runs an actor); numpy's BLAS reaches ``blas_efficiency`` of the core's peak;
interpreted code runs ``ipc_factor`` times the host's instructions per cycle.

Provisioned: ``cores`` is the hardware bought, not only a scheduling cap. A socket draws
P = uncore_w + cores × (core_idle_w + u × (core_active_w − core_idle_w)) at core
utilisation u (Fan et al.'s utilisation model per core), so idle_w = uncore_w + cores ×
core_idle_w and max_w = uncore_w + cores × core_active_w; it costs socket_base_usd +
cores × core_usd. Each preset's numbers split its datasheet TDP and list price (uncore
0.3 × TDP, idle 0.5 × TDP, 15 % of the price per socket: presets/cpu.yaml, with ranges),
so its own cores give the TDP and price back, and fewer cores mean a lower idle power, a
lower peak and a lower price: a smaller SKU of the same line at the same clock (a real
line's smaller parts often clock higher, which this ignores). ``mem_bytes`` per socket
is the host DRAM the ``host_memory`` check compares what programs keep there against.
Runnable processes beyond the cores share them (``core_throughput``): an extra hardware
thread adds ``smt_gain`` of a core; beyond every hardware thread the OS time-slices, and
``shared_core_slowdown`` (measured on the capture host: rldse.host) stretches the shared
time.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

import numpy as np
from pydantic import ValidationInfo, field_validator

from rldse.errors import RldseError
from rldse.host import HostFingerprint
from rldse.models.kinds import Check, ModelContext, PartKind, Runs, register
from rldse.models.ops import ArrayLike, OpColumns
from rldse.models.power import UTILISATION, EnergyEstimate, dram_joules, utilisation_joules
from rldse.models.spec import Param, PartSpec, quantity


class CpuSpec(PartSpec):
    cores: int = quantity("count", "physical cores per socket (logical CPUs for 'host')",
                          ge=1, le=1024)
    sockets: int = quantity("count", "sockets", ge=1, le=8)
    clock_mhz: float = quantity("MHz", "clock a busy core sustains with every core busy",
                                ge=1, le=10_000)
    single_core_mhz: float | None = quantity(
        "MHz", "clock one busy core reaches while the others idle (max turbo or boost); "
        "None: clock_mhz", default=None, ge=1, le=10_000)
    flops_per_cycle: float = quantity(
        "flop/cycle", "peak FP32 flops per core per cycle: SIMD lanes × 2 (FMA) × FMA units",
        ge=0.01, le=1024)
    blas_efficiency: float = quantity(
        "fraction", "share of peak FLOP/s numpy's BLAS reaches on small (128³) matrices",
        ge=0.001, le=1)
    mem_bw_gbs: float = quantity("GB/s", "peak DRAM bandwidth per socket", ge=0.001,
                                 le=100_000)
    dram_efficiency: float = quantity(
        "fraction", "share of peak DRAM bandwidth streaming code sustains", ge=0.001, le=1)
    mem_latency_ns: float = quantity("ns", "latency of one DRAM access (dependent load)",
                                     ge=0, le=10_000)
    mem_parallelism: float = quantity(
        "count", "cache misses one core keeps in flight for independent accesses", ge=0.01,
        le=1024)
    ipc_factor: float = quantity(
        "x", "instructions per cycle of interpreted Python relative to the capture host",
        ge=0.01, le=10)
    # ---- kernel rates beyond the roofline (module docstring, "GEMMs, element-wise, caches")
    gemm_curve: tuple[tuple[str, int, int, int, float], ...] | None = quantity(
        "GFLOP/s", "float32 GEMM rate on one core by MLP layer: (product 'fwd'|'dw'|'dx', "
        "batch, inputs, outputs, GFLOP/s) on a grid (rldse.host.GEMM_GRID); None: the "
        "capture host's curve × core_gflops ratio (a target), or core_gflops at every shape "
        "(a host without a curve)", default=None)
    elementwise_bytes_per_cycle: float = quantity(
        "B/cycle", "bytes per cycle one core moves through small allocating element-wise "
        "numpy kernels (bias add, masks, reductions) on cache-resident arrays (marginal, "
        "per-call cost excluded)", gt=0, le=1024)
    vector_bytes_per_cycle: float = quantity(
        "B/cycle", "bytes per cycle one core moves through contiguous same-shape float32 "
        "numpy kernels (Adam's, marginal)", gt=0, le=1024)
    numpy_call_ns: float | None = quantity(
        "ns", "fixed cost of one numpy call (None: not known; only the capture host's is used)",
        default=None, gt=0, le=1e6)
    scatter_add_ns: float | None = quantity(
        "ns", "np.add.at per element (None: not known; only the capture host's is used)",
        default=None, gt=0, le=1e6)
    sum_tree_level: tuple[float, float] | None = quantity(
        "ns, ns/item", "one level of a numpy sum-tree descent: (per level, per level and "
        "item) (None: not measured; only the capture host's is used)", default=None)
    l1_kib: float | None = quantity("KiB", "L1 data cache per core (None: unknown, every "
                                    "irregular access costs random_access_ns)",
                                    default=None, gt=0, le=2**20)
    l2_kib: float | None = quantity("KiB", "L2 cache per core", default=None, gt=0, le=2**20)
    llc_kib: float | None = quantity("KiB", "last-level cache one core can use", default=None,
                                     gt=0, le=2**30)
    l1_ns: float | None = quantity("ns", "one irregular access served by L1 (overlapped)",
                                   default=None, ge=0, le=10_000)
    l2_ns: float | None = quantity("ns", "one irregular access served by L2 (overlapped)",
                                   default=None, ge=0, le=10_000)
    llc_ns: float | None = quantity("ns", "one irregular access served by the LLC "
                                    "(overlapped)", default=None, ge=0, le=10_000)
    # ---- provisioning: power, price, memory, threads (module docstring, "Provisioned") --
    threads_per_core: int = quantity("count", "hardware threads per core (SMT; 1 for 'host', "
                                     "whose cores are logical CPUs)", ge=1, le=8)
    smt_gain: float = quantity(
        "fraction", "throughput an extra hardware thread adds to a busy core (0: none)",
        ge=0, le=1)
    shared_core_slowdown: float = quantity(
        "x", "wall time of two processes time-sliced on one core / twice one alone (≥ 1: "
        "context switches, cache sharing)", ge=1, le=10)
    uncore_w: float = quantity("W", "power per socket outside the cores (mesh or I/O die, "
                               "LLC, memory controllers), busy or idle", ge=0, le=5_000)
    core_active_w: float = quantity("W", "power of one busy core", gt=0, le=1_000)
    core_idle_w: float = quantity("W", "power of one idle core (≤ core_active_w)", ge=0,
                                  le=1_000)
    dram_pj_per_bit: float = quantity("pJ/bit", "DRAM access energy per bit", ge=0, le=1_000)
    socket_base_usd: float = quantity("USD", "price of one socket's processor besides its "
                                      "cores", ge=0, le=1e6)
    core_usd: float = quantity("USD", "price per provisioned core", ge=0, le=1e5)
    mem_bytes: int = quantity("B", "host DRAM per socket (DIMM capacity)", gt=0, le=2**50)
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    @field_validator("core_idle_w")
    @classmethod
    def _core_idle_at_most_active(cls, v: float, info: ValidationInfo) -> float:
        top = info.data.get("core_active_w")
        if top is not None and v > top:
            raise ValueError(f"core_idle_w must not exceed core_active_w ({top:g} W)")
        return v

    @property
    def lanes(self) -> int:
        """Cores in all sockets: one operation at a time each."""
        return self.cores * self.sockets

    def busy_clock_mhz(self, busy_cores: int) -> float:
        """Clock of a busy core while ``busy_cores`` cores are busy: single_core_mhz for one,
        clock_mhz for all, linear between (module docstring, "Clock under load")."""
        top = self.single_core_mhz or self.clock_mhz
        busy = min(max(int(busy_cores), 1), self.lanes)
        return top - (top - self.clock_mhz) * (busy - 1) / max(self.lanes - 1, 1)

    def interp_speed(self, busy_cores: int | None = None) -> float:
        """A core's single-thread speed for interpreted code, clock (MHz) × ipc_factor: at
        clock_mhz, or with ``busy_cores`` busy at ``busy_clock_mhz``. Ratios of it scale
        interpreter and framework time between cores (CpuModel, GpuModel.issue_from)."""
        clock = self.clock_mhz if busy_cores is None else self.busy_clock_mhz(busy_cores)
        return clock * self.ipc_factor

    @property
    def core_gflops(self) -> float:
        """FP32 GFLOP/s one core reaches in numpy."""
        return self.clock_mhz * 1e-3 * self.flops_per_cycle * self.blas_efficiency

    @property
    def core_bw_gbs(self) -> float:
        """DRAM bandwidth of one core when all cores of its socket stream."""
        return self.mem_bw_gbs * self.dram_efficiency / self.cores

    @property
    def random_access_ns(self) -> float:
        """Time per irregular access when many are independent (misses overlap)."""
        return self.mem_latency_ns / self.mem_parallelism

    @property
    def elementwise_gbs(self) -> float:
        """Marginal GB/s of small element-wise numpy kernels on one core."""
        return self.elementwise_bytes_per_cycle * self.clock_mhz * 1e-3

    @property
    def vector_gbs(self) -> float:
        """Marginal GB/s of contiguous float32 numpy kernels on one core."""
        return self.vector_bytes_per_cycle * self.clock_mhz * 1e-3

    def touch_ns(self, working_set_bytes: ArrayLike) -> np.ndarray:
        """Mean time of one irregular access spread uniformly over ``working_set_bytes``: a
        cache of size C holds a share min(1, C / ws) of it, so the access is served by L1,
        L2, the LLC or DRAM in those shares (random_access_ns beyond the caches, or for
        every access when the cache sizes are unknown)."""
        ws = np.maximum(np.asarray(working_set_bytes, dtype=np.float64), 1.0)
        levels = [(k, ns) for k, ns in ((self.l1_kib, self.l1_ns), (self.l2_kib, self.l2_ns),
                                        (self.llc_kib, self.llc_ns)) if k and ns is not None]
        out, served = np.zeros_like(ws), np.zeros_like(ws)
        for kib, ns in levels:
            share = np.minimum(1.0, kib * 1024 / ws)
            out += (share - served) * ns
            served = np.maximum(served, share)
        return out + (1.0 - served) * self.random_access_ns

    @property
    def max_w(self) -> float:
        """Power of one socket with every provisioned core busy:
        uncore_w + cores × core_active_w (the preset's TDP at its default cores)."""
        return self.uncore_w + self.cores * self.core_active_w

    @property
    def idle_w(self) -> float:
        """Power of one socket with every provisioned core idle:
        uncore_w + cores × core_idle_w."""
        return self.uncore_w + self.cores * self.core_idle_w

    @property
    def socket_price_usd(self) -> float:
        """socket_base_usd + cores × core_usd (the preset's list price at its default cores)."""
        return self.socket_base_usd + self.cores * self.core_usd

    @property
    def price_usd(self) -> float:
        return self.socket_price_usd * self.sockets

    @property
    def mem_capacity_bytes(self) -> int:
        """Host DRAM of all sockets: what the ``host_memory`` check compares against."""
        return self.mem_bytes * self.sockets

    @property
    def host_bw_gbs(self) -> float:
        """DRAM bandwidth all sockets sustain together: sockets × mem_bw_gbs ×
        dram_efficiency (what caps transfers between host memory and PIM DIMMs)."""
        return self.sockets * self.mem_bw_gbs * self.dram_efficiency

    def core_throughput(self, runnable: int, cores: int | None = None) -> float:
        """Core-equivalents of work ``runnable`` CPU-bound processes get from ``cores``
        cores (default: all): each its own core up to the cores; then one more hardware
        thread per busy core up to threads_per_core, each adding ``smt_gain`` of a core;
        beyond every hardware thread the OS time-slices, and the whole machine's
        throughput divides by ``shared_core_slowdown``."""
        c = self.lanes if cores is None else cores
        n = max(int(runnable), 0)
        if n <= c:
            return float(n)
        threads = c * self.threads_per_core
        smt = c + (min(n, threads) - c) * self.smt_gain
        return smt if n <= threads else smt / self.shared_core_slowdown


def roofline_seconds(spec: CpuSpec, flops: ArrayLike, bytes_: ArrayLike,
                     touches: ArrayLike) -> np.ndarray:
    """One core: flops / FLOP/s + bytes / bandwidth + touches × random-access time.

    A sum, not max(flops, bytes): an operation's numpy kernels run one after another, so
    its compute-bound and memory-bound parts do not overlap (module docstring)."""
    f = np.asarray(flops, dtype=np.float64)
    b = np.asarray(bytes_, dtype=np.float64)
    k = np.asarray(touches, dtype=np.float64)
    return (f / (spec.core_gflops * 1e9) + b / (spec.core_bw_gbs * 1e9)
            + k * spec.random_access_ns * 1e-9)


def rescaled(explained: np.ndarray, old_s: np.ndarray, new_s: np.ndarray) -> np.ndarray:
    """``explained`` seconds of a roofline time ``old_s`` at the roofline time ``new_s``:
    new × explained/old. explained ≤ old, so the share is at most 1, and a denormal
    ``old_s`` cannot overflow it the way new/old can (inf × 0 is NaN)."""
    share = np.divide(explained, old_s, out=np.zeros_like(old_s), where=old_s > 0)
    return new_s * share


def with_work(host: CpuSpec, ops: OpColumns, flops: ArrayLike, bytes_: ArrayLike,
              items: float) -> OpColumns:
    """Trace rows with their work replaced (another batch size, agent count, ...): the part
    of each row's measured time the host's roofline explains scales by new/old roofline;
    the rest (interpreter and call overhead) stays. The one rescaling rule every program
    uses when a knob changes an operation's size."""
    n = len(ops)
    flops = np.asarray(flops, np.float64) + np.zeros(n)
    bytes_ = np.asarray(bytes_, np.float64) + np.zeros(n)
    old = roofline_seconds(host, ops.flops, ops.bytes, ops.touches)
    new = roofline_seconds(host, flops, bytes_, ops.touches)
    explained = np.minimum(ops.host_dur_s, old)
    return OpColumns(phase=ops.phase, dtype=ops.dtype, items=np.full(n, float(items)),
                     flops=flops, bytes=bytes_, touches=ops.touches,
                     host_dur_s=ops.host_dur_s - explained + rescaled(explained, old, new))


def gemm_seconds(spec: CpuSpec, gemms: Sequence[tuple[str, int, int, int]]) -> float:
    """Seconds of GEMMs on one core, each given as (product, batch, inputs, outputs) of its
    layer (rldse.kernels.mlp.gemm): on the spec's measured curve, log time
    interpolated trilinearly in log batch, inputs and outputs; outside the grid the shape
    is clamped to it, and the time scaled by the flops above its top (the rate at the edge
    holds) but not below its bottom (thinner products are call- and output-bound). Where the
    spec has no curve, every GEMM runs at core_gflops."""
    if not gemms:
        return 0.0
    if not spec.gemm_curve:
        return sum(2.0 * b * i * o for _, b, i, o in gemms) / (spec.core_gflops * 1e9)
    return sum(_curve_seconds(spec.gemm_curve, g) for g in gemms)


@lru_cache(maxsize=8)
def _grids(curve: tuple) -> dict[str, tuple[list[np.ndarray], np.ndarray]]:
    """Per product: the grid's log axes and its log seconds."""
    out = {}
    for product in {c[0] for c in curve}:
        rows = [c for c in curve if c[0] == product]
        axes = [np.unique(np.log([r[k] for r in rows])) for k in (1, 2, 3)]
        table = np.full([len(a) for a in axes], np.nan)
        for _, b, i, o, gflops in rows:
            idx = tuple(int(np.searchsorted(a, np.log(v))) for a, v in zip(axes, (b, i, o),
                                                                           strict=True))
            table[idx] = np.log(2.0 * b * i * o / (gflops * 1e9))
        out[product] = (axes, table)
    return out


def _curve_seconds(curve: tuple, g: tuple[str, int, int, int]) -> float:
    product, *dims = g
    axes, table = _grids(curve)[product]
    logs = [float(np.clip(np.log(max(d, 1)), a[0], a[-1])) for d, a in zip(dims, axes,
                                                                          strict=True)]
    lo = [min(int(np.searchsorted(a, x, side="right")) - 1, len(a) - 2) for a, x in
          zip(axes, logs, strict=True)]
    w = [(x - a[k]) / (a[k + 1] - a[k]) for a, x, k in zip(axes, logs, lo, strict=True)]
    t = 0.0
    for corner in range(8):
        bits = [(corner >> j) & 1 for j in range(3)]
        weight = float(np.prod([wj if bj else 1 - wj for wj, bj in zip(w, bits, strict=True)]))
        if weight:
            t += weight * table[tuple(k + bj for k, bj in zip(lo, bits, strict=True))]
    above = np.exp(np.maximum(np.log(np.maximum(dims, 1)) - [a[-1] for a in axes], 0.0))
    return float(np.exp(t) * np.prod(above))


def work_seconds(spec: CpuSpec, work: WorkLike) -> float:
    """One core's roofline of an analytic Work (rldse.kernels.mlp): the GEMMs by
    the curve, contiguous-vector bytes at the vector rate, cold state at the copy rate
    (core_bw_gbs), the other bytes at the element-wise rate, the other flops at core_gflops. A sum: the kernels run one after
    another (module docstring)."""
    other = work.bytes - work.gemm_bytes - work.vector_bytes - work.cold_bytes
    return (gemm_seconds(spec, work.gemms)
            + (work.flops - work.gemm_flops) / (spec.core_gflops * 1e9)
            + work.vector_bytes / (spec.vector_gbs * 1e9)
            + work.cold_bytes / (spec.core_bw_gbs * 1e9)
            + other / (spec.elementwise_gbs * 1e9))


class WorkLike(Protocol):
    """An analytic Work (rldse.kernels.mlp.Work)."""

    flops: int
    bytes: int
    gemms: tuple[tuple[str, int, int, int], ...]
    gemm_bytes: int
    vector_bytes: int
    cold_bytes: int
    calls: int

    @property
    def gemm_flops(self) -> int: ...


@dataclass(frozen=True, eq=False)
class WorkColumns(OpColumns):
    """Trace rows rescaled to an analytic Work (``with_works``), with that Work's kernel
    classes, so ``op_seconds`` prices GEMMs, element-wise, contiguous and cold-state work
    each at its own rate. ``flops`` and ``bytes`` stay the trace's counts (scaled by the
    formulas' ratio), what other parts' models read."""

    gemm_host_s: np.ndarray  # float64: the GEMMs on the capture host's curve
    other_flops: np.ndarray  # float64: flops outside the GEMMs
    elementwise_bytes: np.ndarray  # float64: bytes of element-wise kernels
    vector_bytes: np.ndarray  # float64: bytes of contiguous kernels (Adam, Polyak)
    cold_bytes: np.ndarray  # float64: state read from memory


def with_works(host: CpuSpec, ops: OpColumns, new: WorkLike | Sequence[WorkLike],
               old: WorkLike | Sequence[WorkLike], items: ArrayLike,
               did: np.ndarray | None = None) -> WorkColumns:
    """Trace rows measured doing ``old`` (one Work, or one per row), rescaled to ``new``
    (another batch, network shape, ...): the part of each row's time the host's roofline
    of ``old`` explains (``work_seconds``) scales by new/old roofline; the rest
    (interpreter and call overhead) stays, plus the host's numpy call cost for each call
    ``new`` adds (or less for each it drops). ``did``: the rows that did the work (others,
    e.g. exploring acts, did none and stay as they are). The rows' flops and bytes become
    the trace's counts × new/old formula counts (unchanged at the trace's own shape). The
    rescaling rule for work the formulas count exactly; ``with_work`` is the one for bare
    flops and bytes."""
    n = len(ops)
    mask = np.ones(n, bool) if did is None else np.asarray(did, bool)
    news, olds = _per_row(new, n), _per_row(old, n)
    memo: dict[int, tuple[float, ...]] = {}  # by identity: rows share Work objects, and
    # hashing a Work (its GEMM tuples) per row costs more than the lookup saves

    def cols(w: WorkLike) -> tuple[float, ...]:
        key = id(w)
        if key not in memo:
            ew = w.bytes - w.gemm_bytes - w.vector_bytes - w.cold_bytes
            memo[key] = (work_seconds(host, w), w.calls, w.flops, w.bytes,
                         gemm_seconds(host, w.gemms), w.flops - w.gemm_flops, ew,
                         w.vector_bytes, w.cold_bytes)
        return memo[key]

    new_c = np.array([cols(w) for w in news], np.float64).reshape(-1, 9) * mask[:, None]
    old_c = np.array([cols(w) for w in olds], np.float64).reshape(-1, 9) * mask[:, None]
    r_new, r_old = new_c[:, 0], old_c[:, 0]
    calls_s = (new_c[:, 1] - old_c[:, 1]) * (host.numpy_call_ns or 0.0) * 1e-9
    explained = np.minimum(ops.host_dur_s, r_old)
    dur = np.maximum(ops.host_dur_s - explained + rescaled(explained, r_old, r_new) + calls_s,
                     0.0)

    def counted(column: np.ndarray, k: int) -> np.ndarray:
        """The trace's count × new/old formula count (the new count where old has none)."""
        ratio = np.divide(new_c[:, k], old_c[:, k], out=np.zeros(n), where=old_c[:, k] > 0)
        return np.where(~mask, column, np.where(old_c[:, k] > 0, column * ratio, new_c[:, k]))

    return WorkColumns(phase=ops.phase, dtype=ops.dtype,
                       items=np.where(mask, np.zeros(n) + items, ops.items),
                       flops=counted(ops.flops, 2), bytes=counted(ops.bytes, 3),
                       touches=ops.touches, host_dur_s=dur, gemm_host_s=new_c[:, 4],
                       other_flops=new_c[:, 5], elementwise_bytes=new_c[:, 6],
                       vector_bytes=new_c[:, 7], cold_bytes=new_c[:, 8])


def _per_row(work: WorkLike | Sequence[WorkLike], n: int) -> list[WorkLike]:
    """One Work per row; a single Work stands for every row (without a per-row loop)."""
    if not isinstance(work, Sequence):
        return [work] if n else []
    if len(work) != n:
        raise ValueError(f"{len(work)} works for {n} rows")
    return list(work)


class CpuModel:
    """A target CPU, with the capture host it scales measured times from."""

    def __init__(self, spec: CpuSpec, host: CpuSpec) -> None:
        self.spec = spec
        self.host = host
        #: factor on interpreter time: host single-thread speed / target's
        self.interp_scale = host.interp_speed() / spec.interp_speed()
        #: factor on the host's GEMM time: its core_gflops / the target's (the host curve's
        #: shape carries over; small call-bound GEMMs may scale nearer interp_scale)
        self.gemm_scale = host.core_gflops / spec.core_gflops

    def single_thread_scale(self, busy_cores: int) -> float:
        """interp_scale with ``busy_cores`` of the target's cores busy (turbo), against the
        host's measured clock."""
        return self.host.interp_speed() / self.spec.interp_speed(busy_cores)

    def subprocess_batch_seconds(self, step_s: float, workers: int, round_trip_s: float,
                                 per_worker_s: float) -> float:
        """One batch step of a subprocess vector env with ``workers`` worker processes on
        the target, from the host's CPU seconds of one env step, wall seconds of one
        worker's round trip with no env work, and the main process's serial seconds per
        further worker (module docstring, "Clock under load, and vector envs")."""
        n = max(int(workers), 1)
        scale = self.single_thread_scale(n)
        runnable = n + 1  # the workers and the main process
        stretch = runnable / self.spec.core_throughput(runnable)  # 1 while cores suffice
        return scale * (step_s * stretch + round_trip_s + (n - 1) * per_worker_s)

    def op_seconds(self, ops: OpColumns) -> np.ndarray:
        """Seconds each traced operation takes on one core of the target (module docstring)."""
        dur = ops.host_dur_s
        if isinstance(ops, WorkColumns):  # each kernel class at its own rate
            r_host, r_target = (
                gemm + ops.other_flops / (s.core_gflops * 1e9)
                + ops.elementwise_bytes / (s.elementwise_gbs * 1e9)
                + ops.vector_bytes / (s.vector_gbs * 1e9) + ops.cold_bytes / (s.core_bw_gbs * 1e9)
                + ops.touches * s.random_access_ns * 1e-9
                for s, gemm in ((self.host, ops.gemm_host_s),
                                (self.spec, ops.gemm_host_s * self.gemm_scale)))
        else:
            r_host = roofline_seconds(self.host, ops.flops, ops.bytes, ops.touches)
            r_target = roofline_seconds(self.spec, ops.flops, ops.bytes, ops.touches)
        work = np.minimum(dur, r_host)
        return self.interp_scale * (dur - work) + rescaled(work, r_host, r_target)

    @property
    def warnings(self) -> list[str]:
        """What the Result should say about this model's inputs."""
        return [f"cpu: {NO_GEMM_CURVE}"] if not self.host.gemm_curve else []

    def roofline_seconds(self, flops: ArrayLike, bytes_: ArrayLike,
                         touches: ArrayLike = 0) -> np.ndarray:
        """Seconds for work nobody measured (e.g. a reduction the engine adds), one core."""
        return roofline_seconds(self.spec, flops, bytes_, touches)

    # ---- power (see rldse.models.power) -------------------------------------------------
    method = UTILISATION

    @property
    def lanes(self) -> int:
        return self.spec.lanes

    @property
    def idle_w(self) -> float:
        return self.spec.idle_w * self.spec.sockets

    @property
    def max_w(self) -> float:
        return self.spec.max_w * self.spec.sockets

    @property
    def claimed_accuracy(self) -> str:
        return self.spec.energy_accuracy

    def energy(self, busy_core_s: ArrayLike, wall_s: ArrayLike) -> EnergyEstimate:
        """Utilisation model over all sockets; u = busy core-seconds / (cores × wall): the
        per-core form uncore + cores × (idle + u × (active − idle)) is linear in u, so it
        is this with idle_w and max_w of the provisioned cores."""
        busy = np.asarray(busy_core_s, dtype=np.float64) / self.spec.lanes
        return EnergyEstimate(utilisation_joules(self.idle_w, self.max_w, busy, wall_s),
                              UTILISATION, self.spec.energy_accuracy)

    def dram_energy(self, bytes_: ArrayLike) -> EnergyEstimate:
        """Energy of DRAM traffic; DIMMs are outside the processor's TDP, so this adds."""
        return EnergyEstimate(dram_joules(bytes_, self.spec.dram_pj_per_bit),
                              "energy per DRAM bit (Accelergy CACTI table)",
                              self.spec.energy_accuracy)


# ---- the 'host' preset ----------------------------------------------------------------

#: Stated assumptions for what a fingerprint does not measure (power, price, an unknown clock).
#: Across the CPU presets, TDP per hardware thread is 1.8-5.8 W and list price 26-54 USD.
HOST_W_PER_CPU = Param(5.0, "W", "assumption: presets' TDP per hardware thread is 1.8-5.8 W",
                       (2.0, 12.0))
HOST_IDLE_SHARE = Param(0.5, "fraction", "servers idle near half of peak power (Barroso and "
                        "Hölzle 2007, UNVERIFIED)", (0.2, 0.6))
HOST_USD_PER_CPU = Param(40.0, "USD", "assumption: presets' list price per hardware thread is "
                         "26-54 USD", (20.0, 100.0))
#: Where a trace's fingerprint predates the GEMM curve (said in the host preset and the Result).
NO_GEMM_CURVE = ("fingerprint has no GEMM curve (captured before it): every GEMM size runs at "
                 "the one 128³ matmul rate, which overstates thin layers' speed")
HOST_CLOCK_MHZ = Param(2500.0, "MHz", "assumption: the fingerprint has no clock (clock_mhz 0); "
                       "replays on 'host' are exact, scaling to other CPUs is not", (1000.0, 5000.0))
#: The presets' split of TDP and price (presets/cpu.yaml gives each preset's numbers from it).
HOST_UNCORE_SHARE = Param(0.3, "fraction", "assumption: the uncore draws 20-45 % of a server "
                          "package's TDP at full load (UNVERIFIED)", (0.2, 0.45))
HOST_BASE_SHARE = Param(0.15, "fraction", "assumption: 15 % of a processor's list price is "
                        "per socket, the rest per core", (0.0, 0.4))
HOST_MEM_PER_CPU = Param(4 * 2**30, "B", "assumption: the fingerprint has no memory size; "
                         "4 GiB per logical CPU", (2**30, 16 * 2**30))


def _host_provisioning(fp: HostFingerprint) -> dict[str, Param]:
    """The host's power, price, threads and memory (module docstring, "Provisioned"): the
    presets' split of a TDP (HOST_W_PER_CPU per logical CPU) and of a list price
    (HOST_USD_PER_CPU), the measured memory and shared-core slowdown where the fingerprint
    has them (else cpu.yaml's stated defaults fill shared_core_slowdown)."""
    n = fp.cores
    w, usd, unc, idle = (HOST_W_PER_CPU.value, HOST_USD_PER_CPU.value, HOST_UNCORE_SHARE.value,
                         HOST_IDLE_SHARE.value)
    tdp = w * n
    base = HOST_BASE_SHARE.value
    out = {
        "threads_per_core": Param(1, "count", "fingerprint: cores counts logical CPUs, SMT "
                                  "siblings included, so each runs one process"),
        "uncore_w": Param(unc * tdp, "W", f"{unc:g} × an assumed TDP of {w:g} W per logical "
                          f"CPU × {n} ({HOST_UNCORE_SHARE.source}; {HOST_W_PER_CPU.source})",
                          (HOST_UNCORE_SHARE.range[0] * HOST_W_PER_CPU.range[0] * n,
                           HOST_UNCORE_SHARE.range[1] * HOST_W_PER_CPU.range[1] * n)),
        "core_active_w": Param((1 - unc) * w, "W", f"(1 − {unc:g}) × {w:g} W per logical CPU: "
                               f"all {n} busy give the assumed TDP ({HOST_W_PER_CPU.source})",
                               ((1 - HOST_UNCORE_SHARE.range[1]) * HOST_W_PER_CPU.range[0],
                                (1 - HOST_UNCORE_SHARE.range[0]) * HOST_W_PER_CPU.range[1])),
        "core_idle_w": Param((idle - unc) * w, "W", f"({idle:g} − {unc:g}) × {w:g} W per "
                             f"logical CPU: idle at {idle:g} × TDP ({HOST_IDLE_SHARE.source})",
                             (0.0, 0.3 * HOST_W_PER_CPU.range[1])),
        "socket_base_usd": Param(base * usd * n, "USD", f"{base:g} × an assumed {usd:g} USD "
                                 f"per logical CPU × {n} ({HOST_BASE_SHARE.source}; "
                                 f"{HOST_USD_PER_CPU.source})",
                                 (0.0, HOST_BASE_SHARE.range[1] * HOST_USD_PER_CPU.range[1] * n)),
        "core_usd": Param((1 - base) * usd, "USD", f"(1 − {base:g}) × {usd:g} USD per logical "
                          f"CPU ({HOST_USD_PER_CPU.source})",
                          ((1 - HOST_BASE_SHARE.range[1]) * HOST_USD_PER_CPU.range[0],
                           HOST_USD_PER_CPU.range[1])),
    }
    if fp.mem_bytes is not None:
        out["mem_bytes"] = Param(int(fp.mem_bytes), "B", "fingerprint: physical memory")
    else:
        out["mem_bytes"] = Param(HOST_MEM_PER_CPU.value * n, "B", f"{HOST_MEM_PER_CPU.source} "
                                 f"× {n}", (HOST_MEM_PER_CPU.range[0] * n,
                                            HOST_MEM_PER_CPU.range[1] * n))
    if fp.shared_core_slowdown is not None:
        out["shared_core_slowdown"] = Param(
            max(1.0, fp.shared_core_slowdown), "x", "fingerprint: measured two processes on "
            f"one core, {fp.shared_core_slowdown:.3g} (floored at 1: a ratio below 1 is noise)")
    return out


def host_params(fp: HostFingerprint) -> dict[str, Param]:
    """The numbers of the ``host`` preset, from a trace's host fingerprint.

    The measured rates become the host's per-core roofline exactly (efficiencies of 1,
    one socket, random-access time as latency with parallelism 1), so replaying a trace on
    ``host`` gives scale factors of 1. Assumes the fingerprint's matmul ran on one core.
    """
    if fp.clock_mhz > 0:
        clock = Param(fp.clock_mhz, "MHz", "fingerprint: cpufreq max or /proc/cpuinfo clock")
    else:
        clock = HOST_CLOCK_MHZ
    n = fp.cores
    return {
        "cores": Param(n, "count", f"fingerprint: logical CPUs of '{fp.cpu_model}'"),
        "sockets": Param(1, "count", "fingerprint records no sockets: one assumed"),
        "clock_mhz": clock,
        "flops_per_cycle": Param(fp.matmul_gflops * 1e3 / clock.value, "flop/cycle",
                                 f"fingerprint: measured matmul {fp.matmul_gflops:.3g} GFLOP/s "
                                 "/ clock"),
        "blas_efficiency": Param(1.0, "fraction", "fingerprint: the matmul rate is measured, "
                                 "so it already is the achieved rate"),
        "mem_bw_gbs": Param(fp.copy_gbs * n, "GB/s", f"fingerprint: measured copy "
                            f"{fp.copy_gbs:.3g} GB/s × cores, so one core's share is the "
                            "measurement"),
        "dram_efficiency": Param(1.0, "fraction", "fingerprint: copy rate is measured"),
        "mem_latency_ns": Param(fp.random_access_ns, "ns", "fingerprint: measured random "
                                "gather, ns per element (overlapped misses)"),
        "mem_parallelism": Param(1.0, "count", "fingerprint: the measured gather already "
                                 "includes overlap"),
        "ipc_factor": Param(1.0, "x", "the host is the reference other CPUs are scaled from"),
        **_host_kernels(fp, clock.value),
        **_host_provisioning(fp),
    }


def _host_kernels(fp: HostFingerprint, clock_mhz: float) -> dict[str, Param]:
    """GEMM curve, element-wise rate and caches of the ``host`` preset; where a trace's
    fingerprint predates them, the fallback is named in each number's source."""
    out = {"numpy_call_ns": Param(fp.numpy_call_ns, "ns", "fingerprint: np.add on 8 floats")}
    if fp.scatter_add_ns:
        out["scatter_add_ns"] = Param(fp.scatter_add_ns, "ns", "fingerprint: np.add.at")
    if fp.sum_tree_level_ns:
        out["sum_tree_level"] = Param(tuple(fp.sum_tree_level_ns), "ns, ns/item",
                                      "fingerprint: SumTree.find, 2^10 vs 2^16 leaves")
    if fp.gemm_curve:
        out["gemm_curve"] = Param(tuple(map(tuple, fp.gemm_curve)), "GFLOP/s",
                                  "fingerprint: float32 matmul of MLP layer products on a "
                                  "batch × inputs × outputs grid, one thread")
    else:
        out["gemm_curve"] = Param(None, "GFLOP/s", NO_GEMM_CURVE)
    for field, gbs, what in (("elementwise_bytes_per_cycle", fp.elementwise_gbs,
                              "element-wise (MLP kernel mix)"),
                             ("vector_bytes_per_cycle", fp.vector_gbs, "Adam kernels")):
        if gbs:
            out[field] = Param(gbs * 1e3 / clock_mhz, "B/cycle",
                               f"fingerprint: measured {what} {gbs:.3g} GB/s / clock")
        else:
            out[field] = Param(fp.copy_gbs * 1e3 / clock_mhz, "B/cycle", "fingerprint "
                               f"predates the {what} rate: its copy rate {fp.copy_gbs:.3g} "
                               "GB/s / clock stands in")
    caches = fp.cache_bytes or {}
    gather = dict(fp.gather_ns or [])
    for field, key in (("l1", "L1d"), ("l2", "L2"), ("llc", "L3")):
        size = caches.get(key)
        if size and size / 2 in gather:
            out[f"{field}_kib"] = Param(size / 1024, "KiB", f"fingerprint: sysfs {key} size")
            out[f"{field}_ns"] = Param(gather[size / 2], "ns", "fingerprint: random gather "
                                       f"within half of {key}, ns per element")
    return out



def _capture_host(spec: CpuSpec, ctx: ModelContext) -> CpuSpec:
    """A CPU model scales measured times from the capture host: it cannot be built alone."""
    if ctx.host is None:
        raise RldseError(f"cpu '{spec.name}': its model scales measured times from the "
                         "capture host: pass host=trace.meta.host")
    return ctx.host


register(PartKind(
    name="cpu", spec=CpuSpec, model=lambda spec, ctx: CpuModel(spec, _capture_host(spec, ctx)),
    description="CPU sockets: cores run env steps and any placed phase",
    serves={"act": Runs.CORES, "learn": Runs.CORES, "replay": Runs.CORES,
            "q_update": Runs.CORES},
    checks=(Check("host_memory", "what the program keeps in host memory fits the CPU's "
                  "DRAM (mem_bytes × sockets)"),)))
