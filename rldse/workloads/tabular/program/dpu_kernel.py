"""rldse's DPU kernel for offline tabular updates (``pim_kernel: split``): the work of one
update, the WRAM layout, and a launch's time on the busiest DPU."""

from __future__ import annotations

from rldse.errors import RldseError
from rldse.models.pim import OpMix, PimModel
from rldse.models.spec import Param
from rldse.workloads.tabular.program.offline import DpuLayout, Offline
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES, Q_BYTES

#: Native instructions of the DPU kernel per transition besides the arithmetic.
DPU_FIELD_LOADS = 4  # s, a, r, s' from the tasklet's WRAM buffer
DPU_ADDRESS_OPS = 3  # s'·A and s·A + a (A a small constant: shifts and adds)
DPU_LOOP_OPS = 3  # index increment, bound compare, branch
DPU_FIXED_POINT_OPS = 4  # int32: two (x + 2^23) >> 24 rescalings, an add and a shift each
DPU_SARSA_DRAW_OPS = 7  # offline SARSA's a': xorshift32 (3 shifts, 3 xors), the ε compare
DPU_STACK = Param(1024, "B", "assumption: WRAM stack per tasklet (SDK stacks are set at "
                  "build time; 1 KB holds this kernel's few locals)", (256, 2048))
#: MRAM DMA sizes the WRAM layout tries for each tasklet's transition buffer (SDK: 8-2048 B).
DPU_BUFFERS = (2048, 1024, 512, 256, 128, 64, 32, 16, 8)


def dpu_mix(sh: Offline) -> OpMix:
    """Work of one Q-learning or SARSA update in the DPU kernel (per transition).

    Arithmetic in the kernel's data type (INT32 native; FP32 emulated in software):
    ``add`` = the compares of the max over actions (A − 1 for Q-learning; for SARSA only
    when a' is greedy: from the trace's flops) + 3 (+r, −Q[s,a], +Q[s,a]); ``mul`` = 2
    (γ·max, α·δ). An FP32 compare is counted as an emulated add (PrIM gives no compare
    rate; a soft-float compare is cheaper, so this bounds it from above). The fixed-point
    products count as INT32 multiplies, as SwiftRL's INT32 kernel does (the Python twin
    widens to 64 bits, which on a DPU would cost an INT64 multiply). ``native`` INT32
    instructions: 4 loads of the transition's fields, 3 of address arithmetic, 1 load or
    store per Q touch (A + 2 for Q-learning), 1 select per compare, 3 of loop control,
    int32: 4 for the two rounding rescalings; SARSA: 7 to draw a' (xorshift32, ε compare).
    Q-learning with A = 4 in INT32: add 6, mul 2, native 23 (87 instructions at PrIM's
    costs); in FP32: 6 emulated adds, 2 emulated multiplies, native 19 (776).
    """
    native = (DPU_FIELD_LOADS + DPU_ADDRESS_OPS + sh.touches_per + sh.compares_per
              + DPU_LOOP_OPS)
    if sh.dtype == "int32":
        native += DPU_FIXED_POINT_OPS
    if sh.algorithm == "sarsa":
        native += DPU_SARSA_DRAW_OPS
    return OpMix(add=sh.compares_per + 3, mul=2, native=native)


def wram_layout(wram_bytes: int, q_bytes: int, tasklets: int) -> tuple[bool, int]:
    """(Q-table in WRAM?, each tasklet's transition buffer in bytes).

    WRAM holds every tasklet's stack (DPU_STACK) and transition buffer; the Q-table stays
    there when it fits beside them with a buffer of at least 64 B (the largest such buffer
    is chosen: fewer DMA setups). Otherwise the table lives in MRAM and the buffers take
    the WRAM. With 16 tasklets and 1 KB stacks, 2 KB buffers leave 16 KB for Q: FrozenLake
    (256 B), CliffWalking (768 B) and Taxi (12 KB) fit.
    """
    for buf in DPU_BUFFERS[:6]:
        if tasklets * (DPU_STACK.value + buf) + q_bytes <= wram_bytes:
            return True, buf
    for buf in DPU_BUFFERS:
        if tasklets * (DPU_STACK.value + buf) <= wram_bytes:
            return False, buf
    raise RldseError(f"pim.tasklets: {tasklets} tasklets' stacks ({DPU_STACK.value} B each) "
                     f"do not fit in WRAM ({wram_bytes} B)")


def kernel_s(pm: PimModel, sh: Offline, layout: DpuLayout, tasklets: int) -> float:
    """One round's launch on the busiest DPU: its updates × ``dpu_mix`` through
    ``PimModel.kernel_seconds``' rule (compute and DMA overlap with ≥ 2 tasklets), with
    the chunk streamed from MRAM in the tasklets' buffers and the table in WRAM
    (``wram_layout``; else in MRAM, where each update pays a DMA for row s', one for
    Q[s,a] and a write-back), plus loading and storing each agent's table (MRAM↔WRAM,
    not overlapped)."""
    q_in_wram, buf = wram_layout(pm.spec.wram_bytes, sh.q_bytes, tasklets)
    items = layout.busiest * sh.passes_per_round
    compute_s = float(pm.compute_seconds(items, dpu_mix(sh), sh.dtype, tasklets))
    dma_s = float(pm.mram_seconds(items * OFFLINE_TRANSITION_BYTES, buf))
    if not q_in_wram:
        row = -(-Q_BYTES * sh.n_actions // 8) * 8
        dma_s += items * float(pm.mram_seconds(row, row) + pm.mram_seconds(8, 8)
                               + pm.mram_seconds(8, 8, write=True))
    body_s = compute_s + dma_s if tasklets == 1 else max(compute_s, dma_s)
    table = -(-sh.q_bytes // 8) * 8
    swap_s = layout.agents_per_dpu * float(pm.mram_seconds(table, min(table, 2048))
                                           + pm.mram_seconds(table, min(table, 2048),
                                                             write=True))
    return body_s + swap_s
