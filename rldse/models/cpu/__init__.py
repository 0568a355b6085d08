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
``interp_speed(k)`` is the one place a busy-core count becomes single-thread speed
(clock × ipc_factor); ``single_thread_scale(k)`` is interp_scale at that clock.

In ``simulate`` a CpuModel is built for the cores its program keeps busy
(``CpuModel(..., busy_cores)``; ``rldse.sim.machine.busy_cores``): each family's
``Workload.busy_processes`` counts the processes that run on CPU cores at its busiest
moment (off-policy: the actors, capped at ``cores``, plus learner and replay manager when
``async``; actor-learner: the actors, plus each central inference server and an
``async`` learner; tabular: the offline workers, else the one loop), at most the CPU's
cores (``lanes``, every socket's): processes beyond them run as SMT siblings or
time-sliced on busy cores, which lowers no clock further (turbo counts active cores).
Every per-cycle rate of that core runs at ``busy_clock_mhz(k)``: the interpreter (the
overhead share), the GEMM and ``other_flops`` rate, element-wise and contiguous bytes
(``CpuModel.core``); DRAM bandwidth, latencies and caches do not follow the clock. The
GPU's issuing core takes the same count (``GpuModel.issue_from``). One count per run: a
phase that runs with fewer cores busy (a sync learner while the actors wait) runs at the
busiest moment's clock, so the model understates turbo there. Without a count (``rldse
parts cost``, a model built alone) every core is busy: the base clock.

The capture host's side is a busy clock too: rldse's loops run one busy thread per
process (one BLAS thread), and the fingerprint's ``clock_mhz`` is cpufreq's
``cpuinfo_max_freq``, the clock a busy core reaches; its measured rates (GEMM curve,
copy, element-wise) were timed at that clock. The ``host`` preset has no
``single_core_mhz``, so its ``interp_speed`` is that clock at any count
(``CAPTURE_BUSY_CORES``), and a trace replayed on ``host`` scales by exactly 1. Where the
kernel exposes no cpufreq (many VMs) the fingerprint's clock is /proc/cpuinfo's, the
hypervisor's nominal clock, which may sit below what the busy vCPU ran at: scaling from
such a host then overstates the target's speed-up by that ratio (unknown; stated here).
A subprocess vector env (gym's
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

The package: ``spec`` (CpuSpec: a CPU's numbers and what follows from them alone),
``gemm_curve`` (GEMM time on a measured curve), ``roofline`` (one core's roofline of
counted work and the rules that rescale trace rows by it), ``model`` (CpuModel, the
registered kind), ``host_preset`` (the ``host`` preset from a trace's host fingerprint).
"""

from rldse.models.cpu.model import CpuModel
from rldse.models.cpu.spec import CpuSpec

__all__ = ["CpuModel", "CpuSpec"]
