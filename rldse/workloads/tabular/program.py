"""The simulated twin of the tabular loops in train.py: the same loops on a SimPy Machine,
with the Q updates on CPU cores, a GPU or UPMEM DPUs (SwiftRL)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rldse.errors import RldseError
from rldse.models.cpu import with_work
from rldse.models.kinds import Runs
from rldse.models.pim import OpMix
from rldse.models.spec import Param
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.sim.sharing import shared_ends
from rldse.system import HOST_KIND

ALGORITHMS = ("q_learning", "sarsa")
Q_BYTES = 4  # one fp32 or int32 Q-value
OFFLINE_TRANSITION_BYTES = 16  # state, action, reward, next_state: 4 bytes each
ONLINE_TRANSITION_BYTES = 17  # the same plus the done byte
MULTIPLIER_BITS = 24  # fractional bits of the fixed-point α and γ


# ---- the simulated twin (rldse simulate) ----------------------------------------------
#
# ``program(m)`` replays the loop above on a Machine, on the device that
# ``placement.q_update`` names. Online traces replay the online loop (CPU only). Offline,
# every round each agent runs ``passes_per_round`` passes over its chunk and the host
# averages the tables, as ``train_offline`` does; what differs per device is how a round
# is costed (see ``_cpu_program``, ``_gpu_program``, ``_pim_program``). A round of all
# agents is one booking per lane or device and one SimPy timeout, so events grow with
# rounds (online: with chunks of ONLINE_CHUNK steps), never with transitions.

#: Online steps merged into one event (no other process observes the single agent; the
#: sums are exact for any chunk, `Cycle.take`). A million, so 1e10 steps are 1e4 events
#: (under a second) rather than 1e6 (about 30 s on a loaded 2-core host), and events stay
#: proportional to steps, as the up-front estimate's pilots assume (rldse.sim.budget).
ONLINE_CHUNK = 1_000_000
#: Multi-process costs of the CPU twin that no trace row and no fingerprint number holds.
PIPE_ROUND_TRIP = Param(30e-6, "s", "measured: multiprocessing Pipe send + recv of a small "
                        "message took 25 µs on the development host (2-vCPU KVM EPYC)",
                        (10e-6, 100e-6))
FORK = Param(2e-3, "s", "measured: starting one forked worker process took 1.5 ms on the "
             "development host", (0.5e-3, 20e-3))
#: Host memory of Python-held data (CPython 64-bit object sizes, sys.getsizeof): a list
#: entry is an 8 B pointer, an int object 28 B (ints below 257 are shared), a float 24 B.
PY_TRANSITION_BYTES = Param(112, "B", "a transition in the CPU workers' Python lists: 4 "
                            "pointers (32 B), a float reward (24 B) and up to two int states "
                            "(28 B each; shared when below 257)", (56, 112))
PY_LOG_STEP_BYTES = Param(120, "B", "an online step in the transition log's 5 lists: 5 "
                          "pointers (40 B), a float reward (24 B) and up to two int states "
                          "(28 B each); actions and done flags are shared small objects",
                          (64, 120))
#: GPU twin: what one update costs on a thread's dependent chain.
GPU_DEPENDENT_LOADS = Param(2, "count", "global loads in sequence per update: the "
                            "transition, then the Q entries at the states it names (a plain "
                            "kernel; 1 if the next transition is prefetched)", (1, 2))
GPU_DEPENDENT_OP = Param(2.7e-9, "s", "one dependent ALU op: about 4 cycles of issue "
                         "latency (Jia et al., arXiv 1804.06826) at about 1.5 GHz",
                         (1.5e-9, 5e-9))
#: PIM twin: native instructions of the DPU kernel per transition besides the arithmetic.
DPU_FIELD_LOADS = 4  # s, a, r, s' from the tasklet's WRAM buffer
DPU_ADDRESS_OPS = 3  # s'·A and s·A + a (A a small constant: shifts and adds)
DPU_LOOP_OPS = 3  # index increment, bound compare, branch
DPU_FIXED_POINT_OPS = 4  # int32: two (x + 2^23) >> 24 rescalings, an add and a shift each
DPU_SARSA_DRAW_OPS = 7  # offline SARSA's a': xorshift32 (3 shifts, 3 xors), the ε compare
DPU_STACK = Param(1024, "B", "assumption: WRAM stack per tasklet (SDK stacks are set at "
                  "build time; 1 KB holds this kernel's few locals)", (256, 2048))
#: MRAM DMA sizes the WRAM layout tries for each tasklet's transition buffer (SDK: 8-2048 B).
DPU_BUFFERS = (2048, 1024, 512, 256, 128, 64, 32, 16, 8)
#: SwiftRL's released DPU kernel (kailashg26/SwiftRL, Multiagent_version.zip,
#: PIM_code/Qlearning.c and host.py): a uint8 Q-table in WRAM, updated with double
#: literals (0.1, 0.95), so the TD arithmetic is FP64 emulated in software.
RELEASED_Q_BYTES = 1  # uint8_t q_table[16][4]
RELEASED_TRANSITION_BYTES = 4  # four uint8 MRAM vectors: s, a, r, s'
RELEASED_VECTOR_ITEMS = 2 << 16  # VECTOR_SIZE: transitions each DPU's vectors hold
RELEASED_FIELD_DMAS = 4  # each field read straight from an __mram_noinit array: a DMA each
RELEASED_CONVERSIONS = Param(5, "count", "FP64 conversions per update, each costed as an "
                             "emulated FP64 add (assumption: the SDK's soft-float int↔double "
                             "routines are add-sized): r, max Q and Q[s,a] to double twice "
                             "(the subtraction and the +=), the sum back to uint8", (3, 8))


@dataclass(frozen=True)
class _Offline:
    """An offline trace's loop as the twin runs it: the trace's numbers and the knobs."""

    algorithm: str
    n_states: int
    n_actions: int
    dtype: str  # the run's number format (knob, else the trace's)
    transitions: int  # dataset size N
    agents: int
    passes: int
    passes_per_round: int
    flops_per: float  # per transition, from the trace's q_update rows
    touches_per: float
    bytes_per: float

    @property
    def rounds(self) -> int:
        return self.passes // self.passes_per_round

    @property
    def updates(self) -> int:
        return self.transitions * self.passes

    @property
    def q_bytes(self) -> int:
        return Q_BYTES * self.n_states * self.n_actions

    @property
    def compares_per(self) -> float:
        """Compares of the max over actions per update (the flops beyond the 5 of the TD
        arithmetic, see the module docstring)."""
        return max(self.flops_per - 5.0, 0.0)


def program(m: Machine) -> Outcome:
    """The tabular loop on machine ``m``, on the device kind placed for ``q_update``."""
    q = m.runner("q_update")
    for knob in ("tasklets", "pim_kernel"):
        if getattr(m.knobs, knob) is not None and q.runs is not Runs.DPUS:
            raise RldseError(f"{knob} applies to DPUs: q_update runs on '{q.kind}'",
                             where=f"workload.{knob}")
    if m.trace.meta.workload_info.get("mode") == "online":
        if not q.is_host:
            raise RldseError(f"'{q.kind}' runs offline (SwiftRL-style) tabular traces only; "
                             "this trace is online (one agent stepping its env), which runs "
                             f"on '{HOST_KIND}'", where="placement.q_update")
        return _online_program(m)
    offline = OFFLINE_PROGRAMS.get(q.runs)
    if offline is None:
        known = ", ".join(r.value for r in OFFLINE_PROGRAMS)
        raise RldseError(f"'{q.kind}' runs q_update as {q.runs.value}, which tabular "
                         f"programs do not implement (they run: {known})",
                         where="placement.q_update")
    return offline(m)


def _offline(m: Machine, default_agents: int) -> _Offline:
    """The offline loop's shape: the knobs, else the trace's numbers; ``default_agents``
    is the device's (one per DPU on PIM, the trace's elsewhere)."""
    info, k = m.trace.meta.workload_info, m.knobs
    n = k.transitions or int(info["dataset_transitions"])
    ppr = int(info["passes_per_round"])
    passes = k.passes or int(info["passes"])
    if passes % ppr:
        raise RldseError(f"workload.passes: {passes} is not a multiple of the trace's "
                         f"passes_per_round ({ppr})")
    agents = k.agents or min(default_agents, n)
    if agents > n:
        raise RldseError(f"workload.agents: {agents} agents need at least as many "
                         f"transitions (workload.transitions is {n})")
    upd = m.trace.ops[m.trace.ops["phase"] == "q_update"]
    items = float(upd["items"].sum())
    return _Offline(
        algorithm=m.trace.meta.algorithm, n_states=int(info["n_states"]),
        n_actions=int(info["n_actions"]), dtype=k.dtype or str(info["dtype"]),
        transitions=n, agents=agents, passes=passes, passes_per_round=ppr,
        flops_per=float(upd["flops"].sum()) / items,
        touches_per=float(upd["touches"].sum()) / items,
        bytes_per=float(upd["bytes"].sum()) / items)


def _split(n: int, parts: int, i: int) -> int:
    """Start of part i when n items are cut into `parts` contiguous parts (train_offline)."""
    return n * i // parts


# ---- CPU: agents in worker processes ---------------------------------------------------

@dataclass(frozen=True)
class _Glue:
    """Untimed time of the captured offline loop, from its timestamps (host seconds)."""

    load_per_transition_s: float  # before the first update: chunks to Python lists, forks
    agent_switch_s: float  # between two agents of one process: table in, table out
    round_s: float  # per round besides the agents' work and the average (ticks, pipes)


def _ipc_s(workers: int, q_bytes: int, agents: int, host_copy_gbs: float) -> float:
    """Per round with worker processes: a pipe round trip to each, and the tables pickled
    through it (start table out, every agent's table back) at the host's copy rate."""
    if workers <= 1:
        return 0.0
    return workers * PIPE_ROUND_TRIP.value + q_bytes * (workers + agents) / (host_copy_gbs * 1e9)


def _offline_glue(m: Machine) -> _Glue:
    """Split the capture's untimed wall time into per-transition, per-agent and per-round
    parts: gaps between consecutive agents of one process are agent switches; what a round
    took beyond its busiest process's agents and the average is the round's own glue."""
    info, ops = m.trace.meta.workload_info, m.trace.ops
    agents, workers = int(info["agents"]), int(info["workers"])
    edges = np.array([_split(agents, workers, w) for w in range(workers + 1)])
    upd = ops[ops["phase"] == "q_update"]
    agent = upd["worker"].astype(str).str.rpartition("/")[2].astype(int).to_numpy()
    df = pd.DataFrame({"iter": upd["iter"].to_numpy(), "start": upd["start_s"].to_numpy(),
                       "dur": upd["dur_s"].to_numpy(),
                       "proc": np.searchsorted(edges, agent, side="right") - 1})
    df = df.sort_values(["iter", "proc", "start"], kind="stable")
    same = (df["iter"].to_numpy()[1:] == df["iter"].to_numpy()[:-1]) & \
        (df["proc"].to_numpy()[1:] == df["proc"].to_numpy()[:-1])
    ends = (df["start"] + df["dur"]).to_numpy()
    gaps = df["start"].to_numpy()[1:][same] - ends[:-1][same]
    switch_s = float(np.clip(gaps, 0, None).mean()) if len(gaps) else 0.0
    agg = ops[ops["phase"] == "aggregate"].groupby("iter")["dur_s"].sum()
    first = df.groupby("iter")["start"].min()
    per_proc = df.groupby(["iter", "proc"])["dur"].agg(["sum", "count"])
    busy = (per_proc["sum"] + per_proc["count"] * switch_s).groupby(level=0).max()
    # traces whose times start at the recorder's calibration, not the loop: the loop ends
    # right after its last average, so that end is at least the wall time from its start
    last_end = float((ops["start_s"] + ops["dur_s"]).max())
    offset = max(last_end - m.trace.meta.wall_time_s, 0.0)
    span = np.append(np.diff(first.to_numpy()),
                     m.trace.meta.wall_time_s + offset - first.iloc[-1])
    glue = span - busy.to_numpy() - agg.reindex(first.index, fill_value=0.0).to_numpy()
    glue = glue[:-1] if len(glue) > 1 else glue  # the last round also holds the teardown
    q_bytes = int(info["q_table_bytes"])
    ipc = _ipc_s(workers, q_bytes, agents, m.trace.meta.host.copy_gbs)
    round_s = max(float(glue.mean()) - ipc, 0.0)
    forks = workers * FORK.value if workers > 1 else 0.0
    load_s = max(float(first.iloc[0]) - offset - forks, 0.0) * workers  # built in parallel
    return _Glue(load_s / int(info["dataset_transitions"]), switch_s, round_s)


def _aggregate_s(m: Machine, agents: int) -> float:
    """The host's average of ``agents`` tables on the target CPU, from the trace's aggregate
    rows with their work rescaled to that many agents (flops agents·S·A + S·A, bytes
    4·S·A·(agents + 1)): the part of a row's measured time its host roofline explains
    scales with the roofline, the rest (numpy call overhead) stays, as offpolicy rescales
    a learner step to another batch size; then the CPU model costs it on the target."""
    ops, cm = m.trace_ops("aggregate"), m.host.model
    info = m.trace.meta.workload_info
    cells = int(info["n_states"]) * int(info["n_actions"])
    rescaled = with_work(cm.host, ops, (agents + 1) * cells, Q_BYTES * cells * (agents + 1),
                         agents)
    return float(np.mean(cm.op_seconds(rescaled)))


def _cpu_program(m: Machine, sh: _Offline) -> Outcome:
    """Agents in ``workers`` processes on the CPU's cores, as ``train_offline`` runs them.

    Workers = ``workload.cores``, else the trace's worker count (so a replay on the capture
    host reproduces the captured run; more cores predict more workers), at most the agents.
    Worker w runs agents [G·w/W, G·(w+1)/W) one after another. An agent's round costs its
    chunk × passes_per_round × the trace's cost per transition (a q_update row's cost on
    this CPU / its items; rows are taken in turn from a seeded start) plus one agent switch.
    Then the host averages (``_aggregate_s``) and runs its per-round glue, plus the pipe
    traffic when W > 1. Before round 0 the chunks are loaded (the trace's time before its
    first update, per transition, split over the workers, plus a fork per worker). Untimed
    glue is measured host time, scaled like interpreter time. A ``dtype`` other than the
    trace's is refused: the trace measured its own number format.

    More workers than cores share them (the OS time-slices processes): a round's workers
    then finish as processor sharing finishes them (rldse.sim.sharing), not as a FIFO
    queue of whole workers. A trace captured with more workers than its host had CPUs measured its
    updates while sharing, so its costs are divided by workers / CPUs first.
    """
    _same_dtype_on_cpu(m)
    info, k = m.trace.meta.workload_info, m.knobs
    env, clock, cpu, cm = m.env, m.clock, m.host.device, m.host.model
    workers = min(k.cores or int(info["workers"]), sh.agents)
    g = _offline_glue(m)
    scale = cm.interp_scale
    shared = max(1.0, int(info["workers"]) / m.trace.meta.host.cores)
    upd_ops = m.trace_ops("q_update")
    per_transition = Cycle(m.phase_cost("q_update") / np.maximum(upd_ops.items, 1.0)
                           / shared, start=int(m.rng.integers(len(upd_ops))))
    agg_s = _aggregate_s(m, sh.agents)
    ipc_s = _ipc_s(workers, sh.q_bytes, sh.agents, m.trace.meta.host.copy_gbs) * scale
    round_glue_s = g.round_s * scale + ipc_s
    switch_s = g.agent_switch_s * scale / shared
    load_s = (g.load_per_transition_s * sh.transitions / workers * scale
              + (workers * FORK.value if workers > 1 else 0.0))
    groups = []  # (agents, transitions per pass) of each worker
    for w in range(workers):
        lo, hi = _split(sh.agents, workers, w), _split(sh.agents, workers, w + 1)
        n = _split(sh.transitions, sh.agents, hi) - _split(sh.transitions, sh.agents, lo)
        groups.append((hi - lo, n * sh.passes_per_round))
    split = {"load_s": load_s, "q_update_s": 0.0, "sync_s": 0.0, "aggregate_s": 0.0}

    def host():
        t = cpu.book(env.now, load_s, "load")
        clock.spend("host", "load", cpu.kind, load_s)
        yield env.timeout(t - env.now)
        for _ in range(sh.rounds):
            t0, work = env.now, []
            for n_agents, n in groups:
                s_upd = n * per_transition.take(n_agents) / n_agents
                s_sw = n_agents * switch_s
                work.append(s_upd + s_sw)
                clock.spend("agent", "q_update", cpu.kind, s_upd, n_agents)
                clock.spend("agent", "sync", cpu.kind, s_sw, n_agents)
            if workers <= cpu.lanes:
                ends = [cpu.book(t0, s, "q_update") for s in work]
            else:  # time-sliced, event by event (rldse.sim.sharing); the closed form
                # max(busiest worker, work / cores) it replaces was 2.8 % short (issue 25)
                ends = [float(e) for e in shared_ends(np.full(workers, t0), np.array(work),
                                                      lambda n: float(min(n, cpu.lanes)))]
                cpu.account("q_update", float(sum(work)), workers)
            t_agents = max(ends)
            t = cpu.book(t_agents, round_glue_s + agg_s, "aggregate")
            clock.spend("host", "aggregate", cpu.kind, agg_s)
            clock.spend("host", "sync", cpu.kind, round_glue_s)
            clock.spend("host", "wait:agents", "any", t_agents - t0, 0)
            clock.spend("agent", "wait:host", "any", sum(t - e for e in ends), 0)
            split["q_update_s"] += t_agents - t0
            split["sync_s"] += round_glue_s
            split["aggregate_s"] += agg_s
            yield env.timeout(t - env.now)
            m.mark_iterations(t)

    env.process(host())
    env.run()
    host_b = (sh.transitions * (OFFLINE_TRANSITION_BYTES + PY_TRANSITION_BYTES.value)
              + (sh.agents + workers + 1) * sh.q_bytes)
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   host_memory_bytes=int(host_b))


def _same_dtype_on_cpu(m: Machine) -> None:
    """The CPU twin replays the trace's measured numpy loop: another number format is not
    something it can predict (int32 runs were measured 1.4x slower than fp32)."""
    want, got = m.knobs.dtype, str(m.trace.meta.workload_info["dtype"])
    if want and want != got:
        raise RldseError(f"the CPU model cannot predict an {want} numpy loop from an {got} "
                         f"trace; capture with --dtype {want}", where="workload.dtype")


# ---- GPU: one thread per agent ----------------------------------------------------------

def _gpu_program(m: Machine, sh: _Offline) -> Outcome:
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
    env, clock, gm, gpu = m.env, m.clock, q.model, q.device
    dtype = sh.dtype
    chunk = -(-sh.transitions // sh.agents) * sh.passes_per_round
    tables_in_l2 = (sh.agents + 1) * sh.q_bytes <= gm.spec.l2_bytes
    table_ns = gm.spec.l2_latency_ns if tables_in_l2 else gm.spec.mem_latency_ns
    per_update_s = ((gm.spec.mem_latency_ns + (GPU_DEPENDENT_LOADS.value - 1) * table_ns) * 1e-9
                    + sh.flops_per * GPU_DEPENDENT_OP.value)
    n_round = sh.transitions * sh.passes_per_round
    roof_s = float(gm.kernel_times(0, n_round * sh.flops_per,
                                   n_round * sh.bytes_per + sh.agents * sh.q_bytes,
                                   dtype).device_s)
    kernel_s = gm.spec.kernel_overhead_s + max(chunk * per_update_s, roof_s)
    cells = sh.n_states * sh.n_actions
    average_s = float(gm.kernel_times(1, (sh.agents + 1) * cells,
                                      sh.q_bytes * (sh.agents + 1), dtype).device_s)
    h2d_s = float(gm.copy_times(sh.transitions * OFFLINE_TRANSITION_BYTES).wall_s)
    d2h_s = float(gm.copy_times(sh.q_bytes).wall_s)
    need = sh.transitions * OFFLINE_TRANSITION_BYTES + (sh.agents + 1) * sh.q_bytes

    def host():
        t = gpu.book(env.now, h2d_s, "load")
        clock.spend("host", "load", gpu.kind, h2d_s)
        for _ in range(sh.rounds):
            t = gpu.book(t, kernel_s, "q_update")
            t = gpu.book(t, average_s, "aggregate")
            yield env.timeout(t - env.now)
            m.mark_iterations(t)
        clock.spend("host", "q_update", gpu.kind, kernel_s * sh.rounds, sh.agents * sh.rounds)
        clock.spend("host", "aggregate", gpu.kind, average_s * sh.rounds, sh.rounds)
        t = gpu.book(env.now, d2h_s, "sync")
        clock.spend("host", "sync", gpu.kind, d2h_s)
        yield env.timeout(t - env.now)

    env.process(host())
    env.run()
    split = {"h2d_s": h2d_s, "kernel_s": kernel_s * sh.rounds,
             "average_s": average_s * sh.rounds, "d2h_s": d2h_s}
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   gpu_memory_peak_bytes=int(need), checks={"gpu_memory": bool(gm.fits(need))},
                   host_memory_bytes=int(sh.transitions * OFFLINE_TRANSITION_BYTES + sh.q_bytes))


# ---- PIM: SwiftRL on UPMEM ----------------------------------------------------------------

def dpu_mix(sh: _Offline) -> OpMix:
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


def released_mix(sh: _Offline) -> OpMix:
    """Work of one update of SwiftRL's released kernel, per tasklet (``RELEASED_*``):
    FP64 ``add`` = 3 (+r, −Q[s,a], Q[s,a] + α·δ) + the conversions; FP64 ``mul`` = 2
    (γ·max, α·δ); ``native``: A loads and compares of the max over row s' (uint8, native),
    the Q[s,a] load and store, address arithmetic and loop control."""
    native = (2 * sh.n_actions + 2 + DPU_ADDRESS_OPS + DPU_LOOP_OPS)
    return OpMix(add=3 + RELEASED_CONVERSIONS.value, mul=2, native=native)


def _released_kernel_s(pm, sh: _Offline, items: int, tasklets: int) -> float:
    """One launch of the released kernel on a DPU whose chunk holds ``items`` updates (all
    passes: it loops over them itself, with a barrier per pass). Every tasklet runs the
    whole loop on the shared table (no split), so the DPU does ``tasklets`` × the work;
    each update reads its four fields with one 8-byte MRAM DMA each."""
    compute_s = float(pm.compute_seconds(items * tasklets, released_mix(sh), "fp64",
                                         tasklets))
    dma_s = items * tasklets * RELEASED_FIELD_DMAS * float(pm.mram_seconds(8, 8))
    return compute_s + dma_s if tasklets == 1 else max(compute_s, dma_s)


def _released_program(m: Machine, sh: _Offline, dpus: int, busiest: int,
                      agents_per_dpu: int) -> Outcome:
    """SwiftRL's released PIM program (host.py + Qlearning.c): the dataset's uint8 vectors
    copied to each DPU, one launch that runs every pass, then one gather of the uint8
    tables and the host's integer average. No start table is broadcast (the binary's
    zeros) and nothing is averaged between passes."""
    env, clock = m.env, m.clock
    q = m.runner("q_update")
    pm, pim, cpu = q.model, q.device, m.host.device
    if m.knobs.dtype != m.trace.meta.workload_info["dtype"]:  # set away from the trace's
        raise RldseError("the released kernel's number format is fixed (a uint8 table, FP64 "
                         "arithmetic); drop workload.dtype or use pim_kernel: split",
                         where="workload.dtype")
    if sh.algorithm != "q_learning":
        raise RldseError(f"the released kernel is Q-learning; this trace is {sh.algorithm}",
                         where="workload.pim_kernel")
    if busiest > RELEASED_VECTOR_ITEMS:
        raise RldseError(f"{busiest:,} transitions per DPU exceed the released kernel's MRAM "
                         f"vectors ({RELEASED_VECTOR_ITEMS:,}: VECTOR_SIZE = 2 << 16); use "
                         "more DPUs", where="workload.pim_kernel")
    tasklets = m.knobs.tasklets or pm.spec.tasklets
    q_bytes = RELEASED_Q_BYTES * sh.n_states * sh.n_actions
    kernel_s = _released_kernel_s(pm, sh, busiest * sh.passes, tasklets)
    host_gbs = m.host.model.spec.host_bw_gbs
    load_s = float(pm.cpu_to_dpu_seconds(busiest * RELEASED_TRANSITION_BYTES, dpus, "parallel",
                                         host_gbs=host_gbs))
    gather_s = float(pm.dpu_to_cpu_seconds(agents_per_dpu * q_bytes, dpus, "parallel",
                                           host_gbs=host_gbs))
    cells = sh.n_states * sh.n_actions
    average_s = float(m.host.model.roofline_seconds((sh.agents + 1) * cells,
                                                      q_bytes * (sh.agents + 1)))

    def host():
        t = pim.book_all(env.now, load_s, "load")
        t = pim.book_all(t, kernel_s, "q_update")
        t = pim.book_all(t, gather_s, "sync")
        t = cpu.book(t, average_s, "aggregate")
        yield env.timeout(t - env.now)

    env.process(host())
    env.run()
    split = {"cpu_to_dpu_s": load_s, "kernel_s": kernel_s, "inter_dpu_s": average_s,
             "dpu_to_cpu_s": gather_s, "inter_dpu_gather_s": 0.0,
             "inter_dpu_average_s": average_s, "inter_dpu_broadcast_s": 0.0}
    clock.spend("host", "load", pim.kind, load_s)
    clock.spend("host", "sync", pim.kind, gather_s, 1)
    clock.spend("host", "aggregate", cpu.kind, average_s, 1)
    clock.spend("host", "wait:agents", "any", kernel_s, 0)
    clock.spend("agent", "q_update", pim.kind, kernel_s * dpus, sh.agents)
    clock.spend("agent", "wait:host", "any", (gather_s + average_s + load_s) * dpus, 0)
    instructions = sh.updates * tasklets * pm.instructions(released_mix(sh), "fp64")
    pim.add_action_energy("dpu_instructions", float(pm.instruction_joules(instructions)))
    host_b = sh.transitions * RELEASED_TRANSITION_BYTES + (dpus * agents_per_dpu + 1) * q_bytes
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   host_memory_bytes=int(host_b))


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


def _pim_program(m: Machine, sh: _Offline) -> Outcome:
    """SwiftRL on UPMEM: the dataset split over DPUs, one agent per DPU by default.

    Agents go to DPUs in contiguous blocks (D = min(agents, DPUs) DPUs used); a DPU runs
    its agents one after another, each with its chunk streamed from MRAM in its tasklets'
    buffers and its table in WRAM (``wram_layout``; else in MRAM, where each update pays
    a DMA for row s', one for Q[s,a] and a write-back). The tasklets share the agent's
    table and take interleaved slices of its chunk (SwiftRL's kernel, lock-free; one
    tasklet gives the strictly in-order loop at 1/11 of the issue rate). Kernel time =
    the busiest DPU's updates × ``dpu_mix`` through ``PimModel.kernel_seconds``' rule
    (compute and DMA overlap with ≥ 2 tasklets), plus loading and storing each agent's
    table (MRAM↔WRAM, not overlapped).

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
    env, clock, k = m.env, m.clock, m.knobs
    q = m.runner("q_update")
    pm, pim, cpu = q.model, q.device, m.host.device
    ps = pm.spec
    tasklets = k.tasklets or ps.tasklets
    dpus = min(sh.agents, ps.dpus)
    # transitions and agents of each DPU (agents in contiguous blocks, as in train_offline)
    first_agent = np.array([_split(sh.agents, dpus, j) for j in range(dpus + 1)], np.int64)
    starts = sh.transitions * first_agent // sh.agents
    busiest = int(np.diff(starts).max())
    agents_per_dpu = int(np.diff(first_agent).max())
    if k.pim_kernel == "released":
        return _released_program(m, sh, dpus, busiest, agents_per_dpu)
    mram_need = busiest * OFFLINE_TRANSITION_BYTES + agents_per_dpu * sh.q_bytes
    if mram_need > ps.mram_bytes:
        raise RldseError(f"pim: {mram_need:,} bytes of transitions and tables per DPU exceed "
                         f"its MRAM ({ps.mram_bytes:,} B); use more DPUs (workload.agents) or "
                         "fewer transitions")
    q_in_wram, buf = wram_layout(ps.wram_bytes, sh.q_bytes, tasklets)
    mix = dpu_mix(sh)
    items = busiest * sh.passes_per_round
    compute_s = float(pm.compute_seconds(items, mix, sh.dtype, tasklets))
    dma_s = float(pm.mram_seconds(items * OFFLINE_TRANSITION_BYTES, buf))
    if not q_in_wram:
        row = -(-Q_BYTES * sh.n_actions // 8) * 8
        dma_s += items * float(pm.mram_seconds(row, row) + pm.mram_seconds(8, 8)
                               + pm.mram_seconds(8, 8, write=True))
    body_s = compute_s + dma_s if tasklets == 1 else max(compute_s, dma_s)
    table = -(-sh.q_bytes // 8) * 8
    swap_s = agents_per_dpu * float(pm.mram_seconds(table, min(table, 2048))
                                    + pm.mram_seconds(table, min(table, 2048), write=True))
    kernel_s = body_s + swap_s
    host_gbs = m.host.model.spec.host_bw_gbs  # all ranks together (rldse.models.pim)
    load_s = float(pm.cpu_to_dpu_seconds(busiest * OFFLINE_TRANSITION_BYTES, dpus, "parallel",
                                         host_gbs=host_gbs))
    bcast_s = float(pm.cpu_to_dpu_seconds(sh.q_bytes, dpus, "broadcast", host_gbs=host_gbs))
    gather_s = float(pm.dpu_to_cpu_seconds(agents_per_dpu * sh.q_bytes, dpus, "parallel",
                                           host_gbs=host_gbs))
    cells = sh.n_states * sh.n_actions
    average_s = float(m.host.model.roofline_seconds((sh.agents + 1) * cells,
                                                      sh.q_bytes * (sh.agents + 1)))
    rounds = sh.rounds

    def host():
        t = pim.book_all(env.now, load_s + bcast_s, "load")
        for r in range(rounds):
            # a round on the DPUs: the start table (after round 0), the kernel, the tables back
            parts = ([("sync", bcast_s)] if r else []) + [("q_update", kernel_s),
                                                          ("sync", gather_s)]
            for phase, s in parts:
                t = pim.book_all(t, s, phase)
            t = cpu.book(t, average_s, "aggregate")
            yield env.timeout(t - env.now)
            m.mark_iterations(t)

    env.process(host())
    env.run()
    # every round costs the same, so the accounting is in closed form
    between = rounds - 1
    split = {"cpu_to_dpu_s": load_s + bcast_s, "kernel_s": kernel_s * rounds,
             "inter_dpu_s": (gather_s + bcast_s) * between + average_s * rounds,
             "dpu_to_cpu_s": gather_s, "inter_dpu_gather_s": gather_s * between,
             "inter_dpu_average_s": average_s * rounds, "inter_dpu_broadcast_s": bcast_s * between}
    host_s = (gather_s + bcast_s) * between + gather_s
    clock.spend("host", "load", pim.kind, load_s + bcast_s)
    clock.spend("host", "sync", pim.kind, host_s, 2 * rounds - 1)
    clock.spend("host", "aggregate", cpu.kind, average_s * rounds, rounds)
    clock.spend("host", "wait:agents", "any", kernel_s * rounds, 0)
    clock.spend("agent", "q_update", pim.kind, kernel_s * rounds * dpus, sh.agents * rounds)
    clock.spend("agent", "wait:host", "any", (host_s + average_s * rounds + load_s + bcast_s)
                * dpus, 0)
    instructions = sh.updates * pm.instructions(mix, sh.dtype)
    pim.add_action_energy("dpu_instructions", float(pm.instruction_joules(instructions)))
    # host DRAM: the dataset, every DPU's gathered tables and their average
    host_b = sh.transitions * OFFLINE_TRANSITION_BYTES + (dpus * agents_per_dpu + 1) * sh.q_bytes
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split,
                   host_memory_bytes=int(host_b))


# ---- online: one agent stepping its env ---------------------------------------------------

def _online_program(m: Machine) -> Outcome:
    """Replay the online loop on one core: per step an env step, an act (SARSA: one more
    per episode), a Q update, and resets folded in at the trace's rate per step; merged in
    chunks of ONLINE_CHUNK steps. ``loop`` is the loop's untimed glue (appending the
    transition log, episode bookkeeping, the recorder's own calls): the trace's wall time
    not inside any recorded operation, per step, scaled like interpreter time."""
    k, env, clock, cpu = m.knobs, m.env, m.clock, m.host.device
    if k.agents not in (None, 1):
        raise RldseError(f"workload.agents: online tabular traces run one agent, got {k.agents}")
    _same_dtype_on_cpu(m)
    ops = m.trace.ops
    trace_steps = m.trace.env_steps
    steps = k.env_steps or trace_steps
    step_c, act_c, upd_c = (m.cycle(p) for p in ("env_step", "act", "q_update"))
    acts_per_step = int((ops["phase"] == "act").sum()) / trace_steps
    resets = m.phase_cost("env_reset") if (ops["phase"] == "env_reset").any() else None
    reset_per_step = float(resets.sum()) / trace_steps if resets is not None else 0.0
    # the loop's untimed glue computes too: on a contended capture, at the compute rows'
    # CPU share (rldse.trace.host_cost_s)
    untimed = (m.trace.meta.wall_time_s - float(ops["dur_s"].sum())) \
        / (m.trace.compute_wall_per_cpu or 1.0)
    glue_per_step = max(untimed, 0.0) / trace_steps * m.host.model.interp_scale
    done = {"steps": 0, "acts": 0}

    def agent():
        while done["steps"] < steps:
            # the reference engine: one step at a time, each operation its own booking
            n = min(1 if m.reference else ONLINE_CHUNK, steps - done["steps"])
            done["steps"] += n
            n_act = round(done["steps"] * acts_per_step) - done["acts"]
            done["acts"] += n_act
            parts = {"env_step": step_c.take(n), "act": act_c.take(n_act),
                     "q_update": upd_c.take(n), "env_reset": n * reset_per_step,
                     "loop": n * glue_per_step}
            for phase, s in parts.items():
                count = {"act": n_act, "env_reset": 0, "loop": 0}.get(phase, n)
                clock.spend("agent", phase, cpu.kind, s, count)
            if not m.reference:
                t = cpu.book(env.now, sum(parts.values()), "env_step")
                yield env.timeout(t - env.now)
                continue
            for s in parts.values():
                if s:
                    t = cpu.book(env.now, s, "env_step")
                    yield env.timeout(t - env.now)

    env.process(agent())
    env.run()
    q_bytes = Q_BYTES * int(m.info("n_states")) * int(m.info("n_actions"))
    return Outcome(env_steps=steps, updates=steps,
                   host_memory_bytes=int(steps * PY_LOG_STEP_BYTES.value + q_bytes))


#: The offline twin for each way a part runs q_update (rldse.models.kinds.Runs): on the
#: host's cores, as kernels a core issues, or on in-memory processors (one agent per DPU
#: unless the knobs say otherwise).
OFFLINE_PROGRAMS: dict[Runs, Callable[[Machine], Outcome]] = {
    Runs.CORES: lambda m: _cpu_program(m, _offline(m, int(m.info("agents")))),
    Runs.KERNELS: lambda m: _gpu_program(m, _offline(m, int(m.info("agents")))),
    Runs.DPUS: lambda m: _pim_program(m, _offline(m, m.runner("q_update").model.spec.dpus)),
}
