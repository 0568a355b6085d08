"""The offline twin on a GPU: one thread per agent, the dataset resident in its memory."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.models.kinds import KernelModel
from rldse.models.spec import Param
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.tabular.program.offline import Offline
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES

#: GPU twin: what one update costs on a thread's dependent chain.
GPU_DEPENDENT_LOADS = Param(2, "count", "global loads in sequence per update: the "
                            "transition, then the Q entries at the states it names (a plain "
                            "kernel; 1 if the next transition is prefetched)", (1, 2))
GPU_DEPENDENT_OP = Param(2.7e-9, "s", "one dependent ALU op: about 4 cycles of issue "
                         "latency (Jia et al., arXiv 1804.06826) at about 1.5 GHz",
                         (1.5e-9, 5e-9))


@dataclass(frozen=True)
class _GpuCosts:
    """Seconds on the GPU: the dataset in, a round's update and averaging kernels, the
    final table out; and the bytes it holds."""

    h2d_s: float
    kernel_s: float
    average_s: float
    d2h_s: float
    need_bytes: int


def gpu_program(m: Machine, sh: Offline) -> Outcome:
    """The dataset resident in GPU memory; per round one kernel updates every agent's table
    (one thread per agent: agents in parallel, an agent's transitions in order), then an
    averaging kernel writes the next start table. Agents: ``workload.agents``, else the
    trace's.

    A thread's transitions form a dependent chain: each update loads its transition, then
    the Q entries at the states it names (row s' for the max, Q[s,a]), then computes the
    max over actions and the TD step, and stores Q[s,a], which the next update may read.
    So an update costs GPU_DEPENDENT_LOADS loads in sequence: the transition from device
    memory (the part's ``mem_latency_ns``), then the Q entries, at the L2 latency
    (``l2_latency_ns``) when every agent's table fits in L2 (``l2_bytes``), else device
    memory; plus its flops as dependent ALU ops (GPU_DEPENDENT_OP each). The kernel is one
    hand-written CUDA launch per round (SwiftRL's GPU baseline; no framework dispatch):
    its device time is the kernel overhead + max(longest chain, the roofline of all
    updates' flops and bytes): the GPU model's kernel form with the chain as its latency
    term, like its sum-tree descent. Copies: the dataset in once, the final table out once
    (``copy_times``). Memory: dataset + every agent's table + the average. Sources:
    GPU_DEPENDENT_* above, and rldse/models/gpu.py for overheads, latencies, roofline.
    """
    q = m.runner("q_update")
    c = _costs(q.model, sh)
    m.env.process(_host(m, sh, c))
    m.env.run()
    split = {"h2d_s": c.h2d_s, "kernel_s": c.kernel_s * sh.rounds,
             "average_s": c.average_s * sh.rounds, "d2h_s": c.d2h_s}
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   gpu_memory_peak_bytes=int(c.need_bytes),
                   checks={"gpu_memory": bool(q.model.fits(c.need_bytes))},
                   host_memory_bytes=int(sh.transitions * OFFLINE_TRANSITION_BYTES + sh.q_bytes))


def _costs(gm: KernelModel, sh: Offline) -> _GpuCosts:
    """gpu_program's docstring, on the GPU model ``gm``."""
    chunk = -(-sh.transitions // sh.agents) * sh.passes_per_round
    tables_in_l2 = (sh.agents + 1) * sh.q_bytes <= gm.spec.l2_bytes
    table_ns = gm.spec.l2_latency_ns if tables_in_l2 else gm.spec.mem_latency_ns
    per_update_s = ((gm.spec.mem_latency_ns + (GPU_DEPENDENT_LOADS.value - 1) * table_ns) * 1e-9
                    + sh.flops_per * GPU_DEPENDENT_OP.value)
    n_round = sh.transitions * sh.passes_per_round
    roof_s = float(gm.kernel_times(0, n_round * sh.flops_per,
                                   n_round * sh.bytes_per + sh.agents * sh.q_bytes,
                                   sh.dtype).device_s)
    cells = sh.n_states * sh.n_actions
    return _GpuCosts(
        h2d_s=float(gm.copy_times(sh.transitions * OFFLINE_TRANSITION_BYTES).wall_s),
        kernel_s=gm.spec.kernel_overhead_s + max(chunk * per_update_s, roof_s),
        average_s=float(gm.kernel_times(1, (sh.agents + 1) * cells,
                                        sh.q_bytes * (sh.agents + 1), sh.dtype).device_s),
        d2h_s=float(gm.copy_times(sh.q_bytes).wall_s),
        need_bytes=sh.transitions * OFFLINE_TRANSITION_BYTES + (sh.agents + 1) * sh.q_bytes)


def _host(m: Machine, sh: Offline, c: _GpuCosts):
    """Copy in, per round the two kernels, copy out."""
    env, clock, gpu = m.env, m.clock, m.runner("q_update").device
    t = gpu.book(env.now, c.h2d_s, "load")
    clock.spend("host", "load", gpu.kind, c.h2d_s)
    for _ in range(sh.rounds):
        t = gpu.book(t, c.kernel_s, "q_update")
        t = gpu.book(t, c.average_s, "aggregate")
        yield env.timeout(t - env.now)
        m.mark_iterations(t)
    clock.spend("host", "q_update", gpu.kind, c.kernel_s * sh.rounds, sh.agents * sh.rounds)
    clock.spend("host", "aggregate", gpu.kind, c.average_s * sh.rounds, sh.rounds)
    t = gpu.book(env.now, c.d2h_s, "sync")
    clock.spend("host", "sync", gpu.kind, c.d2h_s)
    yield env.timeout(t - env.now)
