"""The offline twin on UPMEM DPUs (SwiftRL): the dataset split over DPUs, rldse's split
kernel (dpu_kernel.py) or SwiftRL's released one (released.py)."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.models.pim import PimModel
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.tabular.program.dpu_kernel import dpu_mix, kernel_s
from rldse.workloads.tabular.program.offline import DpuLayout, Offline, dpu_layout
from rldse.workloads.tabular.program.released import released_program
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES


@dataclass(frozen=True)
class _Round:
    """Seconds of the split program's steps: the dataset to the DPUs (once), the start
    table's broadcast, a round's kernel, every DPU's tables back, the host's average."""

    load_s: float
    bcast_s: float
    kernel_s: float
    gather_s: float
    average_s: float


def pim_program(m: Machine, sh: Offline) -> Outcome:
    """SwiftRL on UPMEM: the dataset split over DPUs, one agent per DPU by default.

    Agents go to DPUs in contiguous blocks (D = min(agents, DPUs) DPUs used); a DPU runs
    its agents one after another, each with its chunk streamed from MRAM in its tasklets'
    buffers and its table in WRAM (``wram_layout``; else in MRAM, where each update pays
    a DMA for row s', one for Q[s,a] and a write-back). The tasklets share the agent's
    table and take interleaved slices of its chunk (SwiftRL's kernel, lock-free; one
    tasklet gives the strictly in-order loop at 1/11 of the issue rate). Kernel time =
    the busiest DPU's updates × ``dpu_mix`` through ``PimModel.kernel_seconds``' rule
    (compute and DMA overlap with ≥ 2 tasklets), plus loading and storing each agent's
    table (MRAM↔WRAM, not overlapped): dpu_kernel.kernel_s.

    Per run and round, SwiftRL's (and PrIM's) time split:
    - cpu_to_dpu: the dataset once (parallel per rank, ranks in parallel, padded to the
      largest chunk, as a parallel push is) and the first start table (broadcast);
    - kernel: every round;
    - inter_dpu: between rounds, every DPU's tables to the CPU (parallel per rank), the
      host's average (a roofline on one core of agents·S·A adds) and the broadcast of the
      new start table: there is no DPU↔DPU path. The last average is counted here too;
    - dpu_to_cpu: the last round's tables.
    Energy: DPU instructions (``instruction_joules``) on top of the DIMMs' idle power.
    """
    q = m.runner("q_update")
    pm, pim = q.model, q.device
    tasklets = m.knobs.tasklets or pm.spec.tasklets
    layout = dpu_layout(sh, pm.spec.dpus)
    if m.knobs.pim_kernel == "released":
        return released_program(m, sh, layout)
    mram_need = layout.busiest * OFFLINE_TRANSITION_BYTES + layout.agents_per_dpu * sh.q_bytes
    if mram_need > pm.spec.mram_bytes:
        raise RldseError(f"pim: {mram_need:,} bytes of transitions and tables per DPU exceed "
                         f"its MRAM ({pm.spec.mram_bytes:,} B); use more DPUs (workload.agents) "
                         "or fewer transitions")
    c = _round(m, pm, sh, layout, tasklets)
    m.env.process(_host(m, sh, c))
    m.env.run()
    split = _account(m, sh, c, layout.dpus)
    instructions = sh.updates * pm.instructions(dpu_mix(sh), sh.dtype)
    pim.add_action_energy("dpu_instructions", float(pm.instruction_joules(instructions)))
    # host DRAM: the dataset, every DPU's gathered tables and their average
    host_b = (sh.transitions * OFFLINE_TRANSITION_BYTES
              + (layout.dpus * layout.agents_per_dpu + 1) * sh.q_bytes)
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   host_memory_bytes=int(host_b))


def _round(m: Machine, pm: PimModel, sh: Offline, layout: DpuLayout, tasklets: int) -> _Round:
    """Transfers at the host's bandwidth (all ranks together: rldse.models.pim), the
    kernel, the average as a roofline on one host core."""
    host_gbs = m.cpu.model.spec.host_bw_gbs
    dpus = layout.dpus
    cells = sh.n_states * sh.n_actions
    return _Round(
        load_s=float(pm.cpu_to_dpu_seconds(layout.busiest * OFFLINE_TRANSITION_BYTES, dpus,
                                           "parallel", host_gbs=host_gbs)),
        bcast_s=float(pm.cpu_to_dpu_seconds(sh.q_bytes, dpus, "broadcast", host_gbs=host_gbs)),
        kernel_s=kernel_s(pm, sh, layout, tasklets),
        gather_s=float(pm.dpu_to_cpu_seconds(layout.agents_per_dpu * sh.q_bytes, dpus,
                                             "parallel", host_gbs=host_gbs)),
        average_s=float(m.cpu.model.roofline_seconds((sh.agents + 1) * cells,
                                                      sh.q_bytes * (sh.agents + 1))))


def _host(m: Machine, sh: Offline, c: _Round):
    """Load and the first start table, then per round on every DPU: the start table
    (after round 0), the kernel, the tables back; then the host's average."""
    env, pim, cpu = m.env, m.runner("q_update").device, m.cpu.device
    t = pim.book_all(env.now, c.load_s + c.bcast_s, "load")
    for r in range(sh.rounds):
        parts = ([("sync", c.bcast_s)] if r else []) + [("q_update", c.kernel_s),
                                                        ("sync", c.gather_s)]
        for phase, s in parts:
            t = pim.book_all(t, s, phase)
        t = cpu.book(t, c.average_s, "aggregate")
        yield env.timeout(t - env.now)
        m.mark_iterations(t)


def _account(m: Machine, sh: Offline, c: _Round, dpus: int) -> dict[str, float]:
    """Every round costs the same, so the accounting is in closed form: the workers'
    clock, and the time split (pim_program's docstring)."""
    clock, pim_kind, cpu_kind = m.clock, m.runner("q_update").device.kind, m.cpu.device.kind
    rounds = sh.rounds
    between = rounds - 1
    split = {"cpu_to_dpu_s": c.load_s + c.bcast_s, "kernel_s": c.kernel_s * rounds,
             "inter_dpu_s": (c.gather_s + c.bcast_s) * between + c.average_s * rounds,
             "dpu_to_cpu_s": c.gather_s, "inter_dpu_gather_s": c.gather_s * between,
             "inter_dpu_average_s": c.average_s * rounds,
             "inter_dpu_broadcast_s": c.bcast_s * between}
    host_s = (c.gather_s + c.bcast_s) * between + c.gather_s
    clock.spend("host", "load", pim_kind, c.load_s + c.bcast_s)
    clock.spend("host", "sync", pim_kind, host_s, 2 * rounds - 1)
    clock.spend("host", "aggregate", cpu_kind, c.average_s * rounds, rounds)
    clock.spend("host", "wait:agents", "any", c.kernel_s * rounds, 0)
    clock.spend("agent", "q_update", pim_kind, c.kernel_s * rounds * dpus, sh.agents * rounds)
    clock.spend("agent", "wait:host", "any", (host_s + c.average_s * rounds + c.load_s
                                              + c.bcast_s) * dpus, 0)
    return split
