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

Assumptions (each a parameter with a range): one operation runs on one core; a core gets
an equal share of its socket's DRAM bandwidth (all cores busy, the case that matters when
every core runs an actor); numpy's BLAS reaches ``blas_efficiency`` of the core's peak;
interpreted code runs ``ipc_factor`` times the host's instructions per cycle.
"""

from __future__ import annotations

import numpy as np
from pydantic import field_validator

from rldse.errors import RldseError
from rldse.host import HostFingerprint
from rldse.models.kinds import ModelContext, PartKind, register
from rldse.models.ops import ArrayLike, OpColumns
from rldse.models.power import UTILISATION, EnergyEstimate, dram_joules, utilisation_joules
from rldse.models.spec import Param, PartSpec, idle_at_most_max, quantity


class CpuSpec(PartSpec):
    cores: int = quantity("count", "physical cores per socket (logical CPUs for 'host')",
                          ge=1, le=1024)
    sockets: int = quantity("count", "sockets", ge=1, le=8)
    clock_mhz: float = quantity("MHz", "clock a busy core sustains", ge=1, le=10_000)
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
    max_w: float = quantity("W", "power per socket at full load (TDP)", gt=0, le=5_000)
    idle_w: float = quantity("W", "power per socket when idle (≤ max_w)", ge=0, le=5_000)
    dram_pj_per_bit: float = quantity("pJ/bit", "DRAM access energy per bit", ge=0, le=1_000)
    socket_price_usd: float = quantity("USD", "price of one socket's processor", ge=0, le=1e6)
    energy_accuracy: str = quantity("", "accuracy the power numbers' sources claim")

    _idle_at_most_max = field_validator("idle_w")(idle_at_most_max)

    @property
    def lanes(self) -> int:
        """Cores in all sockets: one operation at a time each."""
        return self.cores * self.sockets

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
    def price_usd(self) -> float:
        return self.socket_price_usd * self.sockets


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
    scale = np.divide(new, old, out=np.ones_like(old), where=old > 0)
    return OpColumns(phase=ops.phase, dtype=ops.dtype, items=np.full(n, float(items)),
                     flops=flops, bytes=bytes_, touches=ops.touches,
                     host_dur_s=ops.host_dur_s - explained + explained * scale)


class CpuModel:
    """A target CPU, with the capture host it scales measured times from."""

    def __init__(self, spec: CpuSpec, host: CpuSpec) -> None:
        self.spec = spec
        self.host = host
        #: factor on interpreter time: host single-thread speed / target's
        self.interp_scale = (host.clock_mhz * host.ipc_factor) / (spec.clock_mhz * spec.ipc_factor)

    def op_seconds(self, ops: OpColumns) -> np.ndarray:
        """Seconds each traced operation takes on one core of the target (module docstring)."""
        dur = ops.host_dur_s
        r_host = roofline_seconds(self.host, ops.flops, ops.bytes, ops.touches)
        r_target = roofline_seconds(self.spec, ops.flops, ops.bytes, ops.touches)
        work = np.minimum(dur, r_host)
        ratio = np.divide(r_target, r_host, out=np.ones_like(r_host), where=r_host > 0)
        return self.interp_scale * (dur - work) + ratio * work

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
        """Utilisation model over all sockets; u = busy core-seconds / (cores × wall)."""
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
HOST_CLOCK_MHZ = Param(2500.0, "MHz", "assumption: the fingerprint has no clock (clock_mhz 0); "
                       "replays on 'host' are exact, scaling to other CPUs is not", (1000.0, 5000.0))


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
    max_w = HOST_W_PER_CPU.value * n
    ranges = {k: (p.range[0] * n, p.range[1] * n) for k, p in
              (("w", HOST_W_PER_CPU), ("usd", HOST_USD_PER_CPU))}
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
        "max_w": Param(max_w, "W", f"{HOST_W_PER_CPU.value:g} W per logical CPU × {n} "
                       f"({HOST_W_PER_CPU.source})", ranges["w"]),
        "idle_w": Param(max_w * HOST_IDLE_SHARE.value, "W",
                        f"{HOST_IDLE_SHARE.value:g} × max_w ({HOST_IDLE_SHARE.source})",
                        (max_w * HOST_IDLE_SHARE.range[0], max_w * HOST_IDLE_SHARE.range[1])),
        "socket_price_usd": Param(HOST_USD_PER_CPU.value * n, "USD",
                                  f"{HOST_USD_PER_CPU.value:g} USD per logical CPU × {n} "
                                  f"({HOST_USD_PER_CPU.source})", ranges["usd"]),
    }



def _capture_host(spec: CpuSpec, ctx: ModelContext) -> CpuSpec:
    """A CPU model scales measured times from the capture host: it cannot be built alone."""
    if ctx.host is None:
        raise RldseError(f"cpu '{spec.name}': its model scales measured times from the "
                         "capture host: pass host=trace.meta.host")
    return ctx.host


register(PartKind(
    name="cpu", spec=CpuSpec, model=lambda spec, ctx: CpuModel(spec, _capture_host(spec, ctx)),
    description="CPU sockets: cores run env steps and any placed phase",
    roles=frozenset({"act", "learn", "replay", "q_update"})))
