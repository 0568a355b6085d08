"""IPC between the learner and the actors (docs/architecture.md, "IPC handoffs") and
starting the actor processes: from the processes' CPU time where the trace recorded it
(info.py), else what the receiver saw on the trace's shared clock (wall time,
contention included); costed on the target CPU."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rldse.kernels.mlp import F32
from rldse.models import OpColumns
from rldse.models.cpu.roofline import with_work
from rldse.sim import trace_cache
from rldse.sim.machine import Cycle, Machine
from rldse.trace import Trace
from rldse.workloads.actor_learner.info import ActorLearnerInfo, Receives
from rldse.workloads.actor_learner.program.shape import Shape


def trace_handoffs(trace: Trace, rollout_len: int) -> tuple[np.ndarray, np.ndarray]:
    """Per trace iteration (of ``rollout_len`` vector steps): (broadcast → last actor's
    first act, last actor's rollout send → learner's first learn), in seconds on the
    capture host, from the shared clock."""
    T = rollout_len
    ops = trace.ops
    phase = ops["phase"].astype(str).to_numpy()
    worker = ops["worker"].astype(str).to_numpy()
    start = ops["start_s"].to_numpy()
    it = ops["iter"].to_numpy()
    sync = phase == "sync"
    n = int(sync.sum())
    if n == 0:
        return np.zeros(0), np.zeros(0)
    sync_start = np.full(n, np.nan)
    sync_start[np.minimum(it[sync], n - 1)] = start[sync]
    act = (phase == "act") & (worker != "learner")
    first_act = pd.DataFrame({"w": worker[act], "k": it[act] // T, "t": start[act]}) \
        .groupby(["k", "w"]).t.min().groupby("k").max()
    sends = phase == "rollout_add"
    last_send = pd.Series(start[sends]).groupby(it[sends]).max()
    learn = phase == "learn"
    per = max(1, int(learn.sum()) // n)
    first_learn = pd.Series(start[learn]).groupby(it[learn] // per).min()
    ks = np.arange(n)
    deliver = first_act.reindex(ks).to_numpy() - sync_start
    handoff = first_learn.reindex(ks).to_numpy() - last_send.reindex(ks).to_numpy()
    return (np.clip(deliver[np.isfinite(deliver)], 0.0, None),
            np.clip(handoff[np.isfinite(handoff)], 0.0, None))


def recorded_handoffs(trace: Trace, receives: Receives) -> tuple[np.ndarray, np.ndarray]:
    """``trace_handoffs``'s two spans per iteration from the processes' CPU time (the
    hand-off's work, without waiting for the partner: info.py): the broadcast's sends
    plus an actor's receive (``receives``, the trace's ``receive_cpu``), and the last
    rollout's send (the actors' mean) plus the learner's receiving every rollout."""
    n = len(receives.rollouts_cpu_s)
    ops = trace.ops
    cpu = ops["cpu_s"].fillna(ops["dur_s"]).to_numpy()  # a row without CPU time: its wall
    phase = ops["phase"].astype(str).to_numpy()
    it = ops["iter"].to_numpy()

    def per_iteration(name: str, how: str) -> np.ndarray:
        rows = phase == name
        by = pd.Series(cpu[rows]).groupby(it[rows]).agg(how)
        return by.reindex(np.arange(n), fill_value=0.0).to_numpy()

    deliver = per_iteration("sync", "sum") + np.resize(receives.params_cpu_s, n)
    handoff = per_iteration("rollout_add", "mean") + np.asarray(receives.rollouts_cpu_s)
    return deliver, handoff


@dataclass(frozen=True)
class Handoffs:
    """The IPC the learner's core does, costed on the target CPU: a parameter send to one
    actor (``send``), receiving one rollout (``recv``: unpickling, GAE over T steps,
    batching), and starting the actor processes (``startup_s``: fork, env creation)."""

    send: Cycle
    recv: Cycle
    startup_s: float


def handoff_costs(m: Machine, s: Shape, cores: int) -> Handoffs:
    """Per send and per rollout, the hand-offs of the trace (per actor: its CPU time,
    ``recorded_handoffs``, else the receiver's wait on its clock, ``trace_handoffs``),
    their bytes rescaled to this system's parameters and rollout; start-up on ``cores``
    cores for the actors (``startup_seconds``). Draws a seeded start row for ``send``,
    then for ``recv``."""
    cpu_model = m.cpu.model
    info: ActorLearnerInfo = m.system.info
    deliver, handoff = trace_cache.cached(  # once per trace in a process
        ("handoffs", m.trace.digest),
        lambda: trace_handoffs(m.trace, info.rollout_len) if info.receive_cpu is None
        else recorded_handoffs(m.trace, info.receive_cpu))
    if not len(deliver):
        deliver = np.asarray(m.trace_ops("sync").host_dur_s)
    if not len(handoff):
        handoff = np.asarray(m.trace_ops("rollout_add").host_dur_s) * s.t_actors
    send = OpColumns.of("sync", bytes=F32 * s.t_nets.params,
                        host_dur_s=deliver / s.t_actors, dtype="none")
    send = _rescale(m, send, np.zeros(len(send)), np.full(len(send), F32 * s.params))
    send_c = Cycle(np.asarray(cpu_model.op_seconds(send)), int(m.rng.integers(len(send))))
    # the learner's per-rollout work (unpickle, GAE over T steps) scales with T
    recv = OpColumns.of("rollout_add", bytes=s.t_payload, dtype="none",
                        host_dur_s=handoff / s.t_actors * (s.T / s.t_T))
    recv = _rescale(m, recv, np.zeros(len(recv)), np.full(len(recv), s.payload))
    recv_c = Cycle(np.asarray(cpu_model.op_seconds(recv)), int(m.rng.integers(len(recv))))
    return Handoffs(send_c, recv_c, startup_seconds(m, s, cores))


def startup_seconds(m: Machine, s: Shape, cores: int) -> float:
    """Seconds from the run's start until its N actors are ready, on the target CPU. With
    the processes' CPU time (info.py): the learner's set-up, its side of starting
    each actor, then the actors' own start-ups, side by side on ``cores`` cores as their
    rollouts are (``CpuSpec.core_throughput``). Without it: the capture's wall time before
    its first operation, per actor (the learner starts them one after another)."""
    cpu_model = m.cpu.model
    info: ActorLearnerInfo = m.system.info
    st = info.startup
    if st is None:
        first = float(m.trace.ops["start_s"].min()) if len(m.trace.ops) else 0.0
        spawn = OpColumns.of("sync", host_dur_s=max(first, 0.0) / s.t_actors, dtype="none")
        return float(cpu_model.op_seconds(spawn)[0]) * s.N
    actor_cpu_s = float(np.mean([a.cpu_s for a in st.actors]))
    spans = OpColumns.of("sync", dtype="none", host_dur_s=np.array(
        [st.learner.cpu_s, st.spawn.cpu_s / len(st.actors), actor_cpu_s]))
    learner_s, spawn_s, actor_s = (float(x) for x in cpu_model.op_seconds(spans))
    side_by_side = s.N / cpu_model.spec.core_throughput(s.N, cores) if cores < s.N else 1.0
    return learner_s + s.N * spawn_s + actor_s * side_by_side


def _rescale(m: Machine, ops: OpColumns, flops: np.ndarray, bytes_: np.ndarray) -> OpColumns:
    """Trace rows with their work replaced, by the CPU model's one rescaling rule."""
    return with_work(m.cpu.model.capture_host, ops, flops, bytes_, 1)
