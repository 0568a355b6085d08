"""CpuSpec: a CPU's numbers (per socket and per core) and what follows from them alone:
rooflines' rates, the clock under load, cache-level access times, power, price, memory
and how runnable processes share the cores (rldse.models.cpu says why each is so)."""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import field_validator

from rldse.host import check_gemm_curve
from rldse.models.ops import ArrayLike
from rldse.models.spec import PartSpec, idle_at_most, quantity


class CpuSpec(PartSpec):
    #: a preset names a SKU: provisioning fewer cores stands for a smaller SKU of its line,
    #: more cores or threads than it has is a part that does not exist
    SKU_LIMITS: ClassVar[tuple[str, ...]] = ("cores", "threads_per_core")

    cores: int = quantity("count", "physical cores per socket (logical CPUs for 'host')",
                          ge=1, le=1024, plausible=(1, 1024))
    sockets: int = quantity("count", "sockets", ge=1, le=8, plausible=(1, 8))
    clock_mhz: float = quantity("MHz", "clock a busy core sustains with every core busy",
                                ge=1, le=10_000, plausible=(300, 7000))
    single_core_mhz: float | None = quantity(
        "MHz", "clock one busy core reaches while the others idle (max turbo or boost); "
        "None: clock_mhz", default=None, ge=1, le=10_000, plausible=(300, 7000))
    flops_per_cycle: float = quantity(
        "flop/cycle", "peak FP32 flops per core per cycle: SIMD lanes × 2 (FMA) × FMA units",
        ge=0.01, le=1024, plausible=(0.5, 512))
    blas_efficiency: float = quantity(
        "fraction", "share of peak FLOP/s numpy's BLAS reaches on small (128³) matrices",
        ge=0.001, le=1)
    mem_bw_gbs: float = quantity("GB/s", "peak DRAM bandwidth per socket", ge=0.001,
                                 le=100_000, plausible=(2, 5000))
    dram_efficiency: float = quantity(
        "fraction", "share of peak DRAM bandwidth streaming code sustains", ge=0.001, le=1)
    mem_latency_ns: float = quantity("ns", "latency of one DRAM access (dependent load)",
                                     ge=0, le=10_000, plausible=(0.5, 2000))
    mem_parallelism: float = quantity(
        "count", "cache misses one core keeps in flight for independent accesses", ge=0.01,
        le=1024, plausible=(1, 64))
    ipc_factor: float = quantity(
        "x", "instructions per cycle of interpreted Python relative to the capture host",
        ge=0.01, le=10, plausible=(0.1, 5))
    # ---- kernel rates beyond the roofline (rldse.models.cpu, "GEMMs, element-wise, caches")
    gemm_curve: tuple[tuple[str, int, int, int, float], ...] | None = quantity(
        "GFLOP/s", "float32 GEMM rate on one core by MLP layer: (product 'fwd'|'dw'|'dx', "
        "batch, inputs, outputs, GFLOP/s) on a grid (rldse.host.GEMM_GRID); None: the "
        "capture host's curve × core_gflops ratio (a target), or core_gflops at every shape "
        "(a host without a curve)", default=None)
    @field_validator("gemm_curve")
    @classmethod
    def _gemm_curve(cls, curve: Any) -> Any:
        return check_gemm_curve(curve)
    elementwise_bytes_per_cycle: float = quantity(
        "B/cycle", "bytes per cycle one core moves through small allocating element-wise "
        "numpy kernels (bias add, masks, reductions) on cache-resident arrays (marginal, "
        "per-call cost excluded)", gt=0, le=1024, plausible=(0.05, 256))
    vector_bytes_per_cycle: float = quantity(
        "B/cycle", "bytes per cycle one core moves through contiguous same-shape float32 "
        "numpy kernels (Adam's, marginal)", gt=0, le=1024, plausible=(0.05, 512))
    numpy_call_ns: float | None = quantity(
        "ns", "fixed cost of one numpy call (None: not known; only the capture host's is used)",
        default=None, gt=0, le=1e6, plausible=(5, 100000))
    scatter_add_ns: float | None = quantity(
        "ns", "np.add.at per element (None: not known; only the capture host's is used)",
        default=None, gt=0, le=1e6, plausible=(0.05, 10000))
    sum_tree_level: tuple[float, float] | None = quantity(
        "ns, ns/item", "one level of a numpy sum-tree descent: (per level, per level and "
        "item) (None: not measured; only the capture host's is used)", default=None)
    l1_kib: float | None = quantity("KiB", "L1 data cache per core (None: unknown, every "
                                    "irregular access costs random_access_ns)",
                                    default=None, gt=0, le=2**20, plausible=(4, 2**10))
    l2_kib: float | None = quantity("KiB", "L2 cache per core", default=None, gt=0, le=2**20,
                                    plausible=(32, 2**16))
    llc_kib: float | None = quantity("KiB", "last-level cache one core can use", default=None,
                                     gt=0, le=2**30, plausible=(256, 2**21))
    l1_ns: float | None = quantity("ns", "one irregular access served by L1 (overlapped)",
                                   default=None, ge=0, le=10_000, plausible=(0.05, 200))
    l2_ns: float | None = quantity("ns", "one irregular access served by L2 (overlapped)",
                                   default=None, ge=0, le=10_000, plausible=(0.05, 200))
    llc_ns: float | None = quantity("ns", "one irregular access served by the LLC "
                                    "(overlapped)", default=None, ge=0, le=10_000,
                                    plausible=(0.05, 500))
    # ---- provisioning: power, price, memory, threads (rldse.models.cpu, "Provisioned") --
    threads_per_core: int = quantity("count", "hardware threads per core (SMT; 1 for 'host', "
                                     "whose cores are logical CPUs)", ge=1, le=8)
    smt_gain: float = quantity(
        "fraction", "throughput an extra hardware thread adds to a busy core (0: none)",
        ge=0, le=1)
    shared_core_slowdown: float = quantity(
        "x", "wall time of two processes time-sliced on one core / twice one alone (≥ 1: "
        "context switches, cache sharing)", ge=1, le=10)
    uncore_w: float = quantity("W", "power per socket outside the cores (mesh or I/O die, "
                               "LLC, memory controllers), busy or idle", ge=0, le=5_000,
                               plausible=(0.5, 5000))
    core_active_w: float = quantity("W", "power of one busy core", gt=0, le=1_000,
                                    plausible=(0.05, 60))
    core_idle_w: float = quantity("W", "power of one idle core (≤ core_active_w)", ge=0,
                                  le=1_000, plausible=(0, 30))
    dram_pj_per_bit: float = quantity("pJ/bit", "DRAM access energy per bit", ge=0, le=1_000,
                                      plausible=(0.5, 200))
    socket_base_usd: float = quantity("USD", "price of one socket's processor besides its "
                                      "cores", ge=0, le=1e6, plausible=(0, 100000))
    core_usd: float = quantity("USD", "price per provisioned core", ge=0, le=1e5,
                               plausible=(0.5, 2000))
    mem_bytes: int = quantity("B", "host DRAM per socket (DIMM capacity)", gt=0, le=2**50,
                              plausible=(2**16, 2**45))
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    _core_idle_at_most_active = idle_at_most("core_idle_w", "core_active_w")

    @property
    def lanes(self) -> int:
        """Cores in all sockets: one operation at a time each."""
        return self.cores * self.sockets

    def busy_clock_mhz(self, busy_cores: int) -> float:
        """Clock of a busy core while ``busy_cores`` cores are busy: single_core_mhz for one,
        clock_mhz for all, linear between (rldse.models.cpu, "Clock under load")."""
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
