"""CpuModel: a target CPU's time for traced operations, scaled from the capture host's
measured times (docs/architecture.md, "The CPU model"), its power and DRAM energy; and the
registered kind."""

from __future__ import annotations

import numpy as np

from rldse.errors import RldseError
from rldse.models.cpu.host_preset import NO_GEMM_CURVE
from rldse.models.cpu.roofline import WorkColumns, rescaled, roofline_seconds, rows_roofline_s
from rldse.models.cpu.spec import CpuSpec
from rldse.models.kinds import Check, ModelContext, PartKind, Runs, register
from rldse.models.ops import ArrayLike, OpColumns
from rldse.models.power import UTILISATION, EnergyEstimate, dram_joules, utilisation_joules

#: Busy cores of the capture host while it captured: rldse's loops run one busy thread per
#: process (one BLAS thread), and the fingerprint's clock is the clock a busy core reaches
#: (cpufreq's max; rldse.host.HostFingerprint.clock_mhz), so the host preset's clock is
#: this count's clock (it has no single_core_mhz: every count gives it)
CAPTURE_BUSY_CORES = 1


class CpuModel:
    """A target CPU, with the capture host it scales measured times from, its cores
    running at the clock ``busy_cores`` busy cores allow (rldse.models.cpu, "Clock under
    load"; None: the all-core clock_mhz)."""

    def __init__(self, spec: CpuSpec, capture_host: CpuSpec,
                 busy_cores: int | None = None) -> None:
        self.spec = spec
        self.capture_host = capture_host
        self.busy_cores = busy_cores
        #: the target's core as it runs: every per-cycle rate (GEMM flops, element-wise
        #: and contiguous bytes) at the busy clock; DRAM and latencies do not scale
        self.core = spec if busy_cores is None else spec.model_copy(
            update={"clock_mhz": spec.busy_clock_mhz(busy_cores)})
        #: factor on interpreter time: the capture host's busy core's single-thread speed
        #: / the target's (the host's clock is already a busy clock: CAPTURE_BUSY_CORES)
        self.interp_scale = self.single_thread_scale(busy_cores)
        #: factor on the host's GEMM time: its core_gflops / the target's (the host curve's
        #: shape carries over; small call-bound GEMMs may scale nearer interp_scale)
        self.gemm_scale = capture_host.core_gflops / self.core.core_gflops

    def single_thread_scale(self, busy_cores: int | None) -> float:
        """Host interpreter time → the target's with ``busy_cores`` of its cores busy
        (turbo; None: all of them), against the capture host's busy clock."""
        return (self.capture_host.interp_speed(CAPTURE_BUSY_CORES)
                / self.spec.interp_speed(busy_cores))

    def subprocess_batch_seconds(self, step_s: float, workers: int, round_trip_s: float,
                                 per_worker_s: float) -> float:
        """One batch step of a subprocess vector env with ``workers`` worker processes on
        the target, from the host's CPU seconds of one env step, wall seconds of one
        worker's round trip with no env work, and the main process's serial seconds per
        further worker (rldse.models.cpu, "Clock under load, and vector envs")."""
        n = max(int(workers), 1)
        scale = self.single_thread_scale(n)
        runnable = n + 1  # the workers and the main process
        stretch = runnable / self.spec.core_throughput(runnable)  # 1 while cores suffice
        return scale * (step_s * stretch + round_trip_s + (n - 1) * per_worker_s)

    def op_seconds(self, ops: OpColumns) -> np.ndarray:
        """Seconds each traced operation takes on one core of the target (docs/architecture.md,
        "The CPU model")."""
        dur = ops.host_dur_s
        r_host = rows_roofline_s(self.capture_host, ops)
        r_target = rows_roofline_s(self.core, ops, ops.gemm_host_s * self.gemm_scale
                                   if isinstance(ops, WorkColumns) else None)
        work = np.minimum(dur, r_host)
        return self.interp_scale * (dur - work) + rescaled(work, r_host, r_target)

    @property
    def warnings(self) -> list[str]:
        """What the Result should say about this model's inputs."""
        return [f"cpu: {NO_GEMM_CURVE}"] if not self.capture_host.gemm_curve else []

    def roofline_seconds(self, flops: ArrayLike, bytes_: ArrayLike,
                         touches: ArrayLike = 0) -> np.ndarray:
        """Seconds for work nobody measured (e.g. a reduction the engine adds), one core."""
        return roofline_seconds(self.core, flops, bytes_, touches)

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


def _capture_host(spec: CpuSpec, ctx: ModelContext) -> CpuSpec:
    """A CPU model scales measured times from the capture host: it cannot be built alone."""
    if ctx.capture_host is None:
        raise RldseError(f"cpu '{spec.name}': its model scales measured times from the "
                         "capture host: pass capture_host=trace.meta.host")
    return ctx.capture_host


register(PartKind(
    name="cpu", spec=CpuSpec,
    model=lambda spec, ctx: CpuModel(spec, _capture_host(spec, ctx), ctx.busy_cores),
    description="CPU sockets: cores run env steps and any placed phase",
    serves={"act": Runs.CORES, "learn": Runs.CORES, "replay": Runs.CORES,
            "q_update": Runs.CORES},
    checks=(Check("host_memory", "what the program keeps in host memory fits the CPU's "
                  "DRAM (mem_bytes × sockets)"),)))
