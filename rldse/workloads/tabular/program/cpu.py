"""The offline twin on CPU cores: agents in worker processes, as ``train_offline`` runs
them, costed from the trace's rows and the capture's untimed glue."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rldse.errors import RldseError
from rldse.models.cpu.roofline import with_work
from rldse.models.spec import Param
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.sim.sharing import shared_ends
from rldse.workloads.tabular.program.offline import Offline, split
from rldse.workloads.tabular.sizes import OFFLINE_TRANSITION_BYTES, Q_BYTES

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


@dataclass(frozen=True)
class _Glue:
    """Untimed time of the captured offline loop, from its timestamps (host seconds)."""

    load_per_transition_s: float  # before the first update: chunks to Python lists, forks
    agent_switch_s: float  # between two agents of one process: table in, table out
    round_s: float  # per round besides the agents' work and the average (ticks, pipes)


@dataclass(frozen=True)
class _Plan:
    """The CPU twin's run: its workers and what each part of a round costs on the
    target (seconds)."""

    workers: int
    groups: list[tuple[int, int]]  # (agents, transitions per round) of each worker
    per_transition: Cycle  # one update of the trace's rows, in turn from a seeded start
    switch_s: float  # one agent switch
    aggregate_s: float  # the host's average of every agent's table
    round_glue_s: float  # the round's own glue and pipe traffic
    load_s: float  # before round 0


def same_dtype_on_cpu(m: Machine) -> None:
    """The CPU twin replays the trace's measured numpy loop: another number format is not
    something it can predict (int32 runs were measured 1.4x slower than fp32)."""
    want, got = m.knobs.dtype, m.system.info.dtype
    if want and want != got:
        raise RldseError(f"the CPU model cannot predict an {want} numpy loop from an {got} "
                         f"trace; capture with --dtype {want}", where="workload.dtype")


def cpu_program(m: Machine, sh: Offline) -> Outcome:
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
    same_dtype_on_cpu(m)
    plan = _plan(m, sh)
    split_s = {"load_s": plan.load_s, "q_update_s": 0.0, "sync_s": 0.0, "aggregate_s": 0.0}
    m.env.process(_host(m, sh, plan, split_s))
    m.env.run()
    host_b = (sh.transitions * (OFFLINE_TRANSITION_BYTES + PY_TRANSITION_BYTES.value)
              + (sh.agents + plan.workers + 1) * sh.q_bytes)
    return Outcome(env_steps=sh.updates, updates=sh.updates, breakdown_s=split_s,
                   host_memory_bytes=int(host_b))


def _plan(m: Machine, sh: Offline) -> _Plan:
    """Workers, groups and per-round costs (cpu_program's docstring)."""
    info, k, cm = m.system.info, m.knobs, m.cpu.model
    workers = min(k.cores or info.workers, sh.agents)
    g = _offline_glue(m)
    scale = cm.interp_scale
    shared = max(1.0, info.workers / m.trace.meta.host.cores)
    upd_ops = m.trace_ops("q_update")
    per_transition = Cycle(m.phase_cost("q_update") / np.maximum(upd_ops.items, 1.0)
                           / shared, start=int(m.rng.integers(len(upd_ops))))
    agg_s = _aggregate_s(m, sh.agents)
    ipc_s = _ipc_s(workers, sh.q_bytes, sh.agents, m.trace.meta.host.copy_gbs) * scale
    load_s = (g.load_per_transition_s * sh.transitions / workers * scale
              + (workers * FORK.value if workers > 1 else 0.0))
    groups = []
    for w in range(workers):
        lo, hi = split(sh.agents, workers, w), split(sh.agents, workers, w + 1)
        n = split(sh.transitions, sh.agents, hi) - split(sh.transitions, sh.agents, lo)
        groups.append((hi - lo, n * sh.passes_per_round))
    return _Plan(workers=workers, groups=groups, per_transition=per_transition,
                 switch_s=g.agent_switch_s * scale / shared, aggregate_s=agg_s,
                 round_glue_s=g.round_s * scale + ipc_s, load_s=load_s)


def _host(m: Machine, sh: Offline, plan: _Plan, split_s: dict[str, float]):
    """Load, then per round: every worker's agents, the host's glue and average."""
    env, clock, cpu = m.env, m.clock, m.cpu.device
    t = cpu.book(env.now, plan.load_s, "load")
    clock.spend("host", "load", cpu.kind, plan.load_s)
    yield env.timeout(t - env.now)
    glue_s, agg_s = plan.round_glue_s, plan.aggregate_s
    for _ in range(sh.rounds):
        t0 = env.now
        ends = _agents_round(m, plan, t0)
        t_agents = max(ends)
        t = cpu.book(t_agents, glue_s + agg_s, "aggregate")
        clock.spend("host", "aggregate", cpu.kind, agg_s)
        clock.spend("host", "sync", cpu.kind, glue_s)
        clock.spend("host", "wait:agents", "any", t_agents - t0, 0)
        clock.spend("agent", "wait:host", "any", sum(t - e for e in ends), 0)
        split_s["q_update_s"] += t_agents - t0
        split_s["sync_s"] += glue_s
        split_s["aggregate_s"] += agg_s
        yield env.timeout(t - env.now)
        m.mark_iterations(t)


def _agents_round(m: Machine, plan: _Plan, t0: float) -> list[float]:
    """One round of every worker's agents from t0 (one booking per worker); returns when
    each worker is done."""
    clock, cpu = m.clock, m.cpu.device
    work = []
    for n_agents, n in plan.groups:
        s_upd = n * plan.per_transition.take(n_agents) / n_agents
        s_sw = n_agents * plan.switch_s
        work.append(s_upd + s_sw)
        clock.spend("agent", "q_update", cpu.kind, s_upd, n_agents)
        clock.spend("agent", "sync", cpu.kind, s_sw, n_agents)
    if plan.workers <= cpu.lanes:
        return [cpu.book(t0, s, "q_update") for s in work]
    # time-sliced, event by event (rldse.sim.sharing); the closed form
    # max(busiest worker, work / cores) it replaces was 2.8 % short
    ends = [float(e) for e in shared_ends(np.full(plan.workers, t0), np.array(work),
                                          lambda n: float(min(n, cpu.lanes)))]
    cpu.account("q_update", float(sum(work)), plan.workers)
    return ends


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
    info, ops = m.system.info, m.trace.ops
    agents, workers = info.agents, info.workers
    edges = np.array([split(agents, workers, w) for w in range(workers + 1)])
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
    q_bytes = info.q_table_bytes
    ipc = _ipc_s(workers, q_bytes, agents, m.trace.meta.host.copy_gbs)
    round_s = max(float(glue.mean()) - ipc, 0.0)
    forks = workers * FORK.value if workers > 1 else 0.0
    load_s = max(float(first.iloc[0]) - offset - forks, 0.0) * workers  # built in parallel
    return _Glue(load_s / info.dataset_transitions, switch_s, round_s)


def _aggregate_s(m: Machine, agents: int) -> float:
    """The host's average of ``agents`` tables on the target CPU, from the trace's aggregate
    rows with their work rescaled to that many agents (flops agents·S·A + S·A, bytes
    4·S·A·(agents + 1)): the part of a row's measured time its host roofline explains
    scales with the roofline, the rest (numpy call overhead) stays, as offpolicy rescales
    a learner step to another batch size; then the CPU model costs it on the target."""
    ops, cm = m.trace_ops("aggregate"), m.cpu.model
    info = m.system.info
    cells = info.n_states * info.n_actions
    rescaled = with_work(cm.capture_host, ops, (agents + 1) * cells, Q_BYTES * cells * (agents + 1),
                         agents)
    return float(np.mean(cm.op_seconds(rescaled)))
