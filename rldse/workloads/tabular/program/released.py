"""SwiftRL's released PIM program (kailashg26/SwiftRL, Multiagent_version.zip,
PIM_code/Qlearning.c and host.py), the ``pim_kernel: released`` twin: a uint8 Q-table in
WRAM, updated with double literals (0.1, 0.95), so the TD arithmetic is FP64 emulated in
software."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.models.pim import OpMix, PimModel
from rldse.models.spec import Param
from rldse.sim.machine import Machine, Outcome
from rldse.workloads.tabular.program.dpu_kernel import DPU_ADDRESS_OPS, DPU_LOOP_OPS
from rldse.workloads.tabular.program.offline import DpuLayout, Offline

RELEASED_Q_BYTES = 1  # uint8_t q_table[16][4]
RELEASED_TRANSITION_BYTES = 4  # four uint8 MRAM vectors: s, a, r, s'
RELEASED_VECTOR_ITEMS = 2 << 16  # VECTOR_SIZE: transitions each DPU's vectors hold
RELEASED_FIELD_DMAS = 4  # each field read straight from an __mram_noinit array: a DMA each
RELEASED_CONVERSIONS = Param(5, "count", "FP64 conversions per update, each costed as an "
                             "emulated FP64 add (assumption: the SDK's soft-float int↔double "
                             "routines are add-sized): r, max Q and Q[s,a] to double twice "
                             "(the subtraction and the +=), the sum back to uint8", (3, 8))


@dataclass(frozen=True)
class _Costs:
    """Seconds of the released program's steps: the vectors to the DPUs, the one launch,
    the tables back, the host's integer average."""

    load_s: float
    kernel_s: float
    gather_s: float
    average_s: float


def released_mix(sh: Offline) -> OpMix:
    """Work of one update of SwiftRL's released kernel, per tasklet (``RELEASED_*``):
    FP64 ``add`` = 3 (+r, −Q[s,a], Q[s,a] + α·δ) + the conversions; FP64 ``mul`` = 2
    (γ·max, α·δ); ``native``: A loads and compares of the max over row s' (uint8, native),
    the Q[s,a] load and store, address arithmetic and loop control."""
    native = (2 * sh.n_actions + 2 + DPU_ADDRESS_OPS + DPU_LOOP_OPS)
    return OpMix(add=3 + RELEASED_CONVERSIONS.value, mul=2, native=native)


def _kernel_s(pm: PimModel, sh: Offline, items: int, tasklets: int) -> float:
    """One launch of the released kernel on a DPU whose chunk holds ``items`` updates (all
    passes: it loops over them itself, with a barrier per pass). Every tasklet runs the
    whole loop on the shared table (no split), so the DPU does ``tasklets`` × the work;
    each update reads its four fields with one 8-byte MRAM DMA each."""
    compute_s = float(pm.compute_seconds(items * tasklets, released_mix(sh), "fp64",
                                         tasklets))
    dma_s = items * tasklets * RELEASED_FIELD_DMAS * float(pm.mram_seconds(8, 8))
    return compute_s + dma_s if tasklets == 1 else max(compute_s, dma_s)


def released_program(m: Machine, sh: Offline, layout: DpuLayout) -> Outcome:
    """SwiftRL's released PIM program (host.py + Qlearning.c): the dataset's uint8 vectors
    copied to each DPU, one launch that runs every pass, then one gather of the uint8
    tables and the host's integer average. No start table is broadcast (the binary's
    zeros) and nothing is averaged between passes."""
    _refuse(m, sh, layout)
    q = m.runner("q_update")
    pm, pim, cpu = q.model, q.device, m.cpu.device
    tasklets = m.knobs.tasklets or pm.spec.tasklets
    c = _costs(m, pm, sh, layout, tasklets)
    m.env.process(_host(m, c))
    m.env.run()
    split = {"cpu_to_dpu_s": c.load_s, "kernel_s": c.kernel_s, "inter_dpu_s": c.average_s,
             "dpu_to_cpu_s": c.gather_s, "inter_dpu_gather_s": 0.0,
             "inter_dpu_average_s": c.average_s, "inter_dpu_broadcast_s": 0.0}
    dpus, clock = layout.dpus, m.clock
    clock.spend("host", "load", pim.kind, c.load_s)
    clock.spend("host", "sync", pim.kind, c.gather_s, 1)
    clock.spend("host", "aggregate", cpu.kind, c.average_s, 1)
    clock.spend("host", "wait:agents", "any", c.kernel_s, 0)
    clock.spend("agent", "q_update", pim.kind, c.kernel_s * dpus, sh.agents)
    clock.spend("agent", "wait:host", "any", (c.gather_s + c.average_s + c.load_s) * dpus, 0)
    instructions = sh.updates * tasklets * pm.instructions(released_mix(sh), "fp64")
    pim.add_action_energy("dpu_instructions", float(pm.instruction_joules(instructions)))
    q_bytes = RELEASED_Q_BYTES * sh.n_states * sh.n_actions
    host_b = (sh.transitions * RELEASED_TRANSITION_BYTES
              + (dpus * layout.agents_per_dpu + 1) * q_bytes)
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   host_memory_bytes=int(host_b))


def _refuse(m: Machine, sh: Offline, layout: DpuLayout) -> None:
    """One-line errors for what the released binary cannot run."""
    if m.knobs.dtype != m.system.info.dtype:  # set away from the trace's
        raise RldseError("the released kernel's number format is fixed (a uint8 table, FP64 "
                         "arithmetic); drop workload.dtype or use pim_kernel: split",
                         where="workload.dtype")
    if sh.algorithm != "q_learning":
        raise RldseError(f"the released kernel is Q-learning; this trace is {sh.algorithm}",
                         where="workload.pim_kernel")
    if layout.busiest > RELEASED_VECTOR_ITEMS:
        raise RldseError(f"{layout.busiest:,} transitions per DPU exceed the released "
                         f"kernel's MRAM vectors ({RELEASED_VECTOR_ITEMS:,}: VECTOR_SIZE = "
                         "2 << 16); use more DPUs", where="workload.pim_kernel")


def _costs(m: Machine, pm: PimModel, sh: Offline, layout: DpuLayout, tasklets: int) -> _Costs:
    """Transfers at the host's bandwidth (all ranks together), the launch, the average as
    a roofline on one host core."""
    host_gbs = m.cpu.model.spec.host_bw_gbs
    q_bytes = RELEASED_Q_BYTES * sh.n_states * sh.n_actions
    cells = sh.n_states * sh.n_actions
    return _Costs(
        load_s=float(pm.cpu_to_dpu_seconds(layout.busiest * RELEASED_TRANSITION_BYTES,
                                           layout.dpus, "parallel", host_gbs=host_gbs)),
        kernel_s=_kernel_s(pm, sh, layout.busiest * sh.passes, tasklets),
        gather_s=float(pm.dpu_to_cpu_seconds(layout.agents_per_dpu * q_bytes, layout.dpus,
                                             "parallel", host_gbs=host_gbs)),
        average_s=float(m.cpu.model.roofline_seconds((sh.agents + 1) * cells,
                                                      q_bytes * (sh.agents + 1))))


def _host(m: Machine, c: _Costs):
    """Load, launch, gather on every DPU at once; the host's average."""
    env, pim, cpu = m.env, m.runner("q_update").device, m.cpu.device
    t = pim.book_all(env.now, c.load_s, "load")
    t = pim.book_all(t, c.kernel_s, "q_update")
    t = pim.book_all(t, c.gather_s, "sync")
    t = cpu.book(t, c.average_s, "aggregate")
    yield env.timeout(t - env.now)
