"""IPC between the learner and the actors (package docstring, "IPC handoffs"): what the
receiver saw, read from a trace's shared clock, and its cost on the target CPU."""

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
from rldse.workloads.actor_learner.program.shape import Shape


def trace_handoffs(trace: Trace) -> tuple[np.ndarray, np.ndarray]:
    """Per trace iteration: (broadcast → last actor's first act, last actor's rollout send →
    learner's first learn), in seconds on the capture host, from the shared clock."""
    info = trace.meta.workload_info
    T = int(info["rollout_len"])
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


@dataclass(frozen=True)
class Handoffs:
    """The IPC the learner's core does, costed on the target CPU: a parameter send to one
    actor (``send``), receiving one rollout (``recv``: unpickling, GAE over T steps,
    batching), and starting the actor processes (``startup_s``: fork, env creation)."""

    send: Cycle
    recv: Cycle
    startup_s: float


def handoff_costs(m: Machine, s: Shape) -> Handoffs:
    """Per send and per rollout, the receiver-side handoffs of the trace's clock (per
    actor), their bytes rescaled to this system's parameters and rollout; start-up is the
    capture's time before its first operation, per actor (the learner starts them one
    after another). Draws a seeded start row for ``send``, then for ``recv``."""
    cpu_model = m.host.model
    deliver, handoff = trace_cache.cached(  # once per trace in a process
        ("trace_handoffs", m.trace.digest), lambda: trace_handoffs(m.trace))
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
    first = float(m.trace.ops["start_s"].min()) if len(m.trace.ops) else 0.0
    spawn = OpColumns.of("sync", host_dur_s=max(first, 0.0) / s.t_actors, dtype="none")
    return Handoffs(send_c, recv_c, float(cpu_model.op_seconds(spawn)[0]) * s.N)


def _rescale(m: Machine, ops: OpColumns, flops: np.ndarray, bytes_: np.ndarray) -> OpColumns:
    """Trace rows with their work replaced, by the CPU model's one rescaling rule."""
    return with_work(m.host.model.host, ops, flops, bytes_, 1)
