"""Merged sync rounds: nothing overlaps inside a ``learner: sync`` round, so when every
actor has its own core (and, acting on a GPU, a lane of its own or a FIFO single lane),
runs of full rounds are computed as numpy arrays: the same cost-row draws, bookings' busy
time and clock entries as the event loop, each update lasting the sum of its drives'
walls. Results match the event loop to float rounding."""

from __future__ import annotations

import numpy as np

from rldse.workloads.offpolicy.program.context import Context, State


def merged_rounds(cx: Context, st: State, rounds: int, chunk: int) -> float:
    """``rounds`` full sync rounds as arrays, not events: actors on their own cores, then
    the learner's updates one after another on free devices, so each operation ends its
    wall time after it starts and a round lasts the slowest actor's chunk plus the sum of
    its updates' walls. Returns the rounds' duration."""
    m, R, c = cx.m, rounds, chunk
    if cx.view is not None:
        cx.view.drives[:] = []
    span, chunks = _actor_rounds(cx, R, c)
    s0 = st.steps
    steps = s0 + c * m.knobs.actors * np.arange(1, R + 1, dtype=np.int64)
    U, L, r_upd = _learner_rounds(cx, st, steps)
    ends = np.cumsum(span + L)
    now = m.env.now
    m.mark_iterations(now + ends)  # sync rounds
    if cx.view is not None:  # rounds from now + the previous round's end
        cx.view.rounds(now + np.concatenate(([0.0], ends[:-1])), now + ends, span, c,
                       chunks, U, r_upd)
    m.clock.spend("actor", "wait:learner", "any", float(L.sum()) * m.knobs.actors, 0)
    m.clock.spend("learner", "wait:actors", "any", float(span.sum()), 0)
    if r_upd is not None:
        if st.first_update_s is None:
            st.first_update_s = now + float(ends[r_upd[0]] - L[r_upd[0]])
        st.last_update_end_s = now + float(ends[r_upd[-1]])
    return float(ends[-1])


def _actor_rounds(cx: Context, R: int, c: int) -> tuple[np.ndarray, list[tuple]]:
    """Every actor's chunk of c steps in each of R rounds, booked and accounted as
    actor_chunk does. Returns the actors' span of each round and, with a timeline, each
    actor's chunk parts (TimelineView.rounds)."""
    ac, cpu, gpu, clock, host = cx.actors, cx.cpu, cx.gpu, cx.m.clock, cx.cpu.kind
    counts = np.full(R, c, dtype=np.int64)
    span, gpu_q = np.zeros(R), np.zeros(R)
    s_reset = c * ac.reset_s_per_step
    chunks = []
    for a in range(cx.m.knobs.actors):
        t = ac.chunk_times(a, counts, s_reset)
        h, d, w = t.h, t.d, t.w
        end = np.maximum(t.on_core, t.own)
        if ac.kernels:
            gpu_q = gpu_q + d if gpu.lanes == 1 else d  # one GPU lane: FIFO behind others
            end = np.where(d > 0, np.maximum(end, gpu_q), end)
            gpu.account("act", float(d.sum()), int(np.count_nonzero(d)))
        t.account_core(cpu, ac.kernels, R)
        clock.spend("actor", "env_step", host, float(t.s_env.sum()), c * R)
        if s_reset:
            clock.spend("actor", "env_reset", host, s_reset * R, 0)
        if ac.kernels:
            clock.spend("actor", "dispatch", host, float(h.sum()), 0)
            clock.spend("actor", "act", cx.act_label, float((w - h).sum()), c * R)
        else:
            clock.spend("actor", "act", cx.act_label, float(w.sum()), c * R)
        if ac.insert:
            clock.spend("actor", "replay_add", host, float(np.sum(t.s_add)), c * R)
        clock.spend("actor", "wait:device", "any", float(np.maximum(0.0, end - t.own).sum()),
                    0)
        span = np.maximum(span, end)
        if cx.view is not None:
            chunks.append((a, t.s_env + s_reset, t.s_add, t.on_core - t.base, d,
                           gpu_q - d if ac.kernels and gpu.lanes == 1 else 0.0, end))
    return span, chunks


def _learner_rounds(cx: Context, st: State, steps: np.ndarray):
    """The learner's updates after each round whose landed ``steps`` make them due, each the
    sum of its drives' walls, booked as update does. Returns U (updates after each round),
    L (their seconds) and the rounds with updates (None: none)."""
    lc, shape, k = cx.lc, cx.shape, cx.m.knobs
    R, s0, u0 = len(steps), st.steps, st.updates
    due = np.maximum(np.maximum(0, steps - shape.learning_starts) // k.learn_every, u0)
    U = np.diff(due, prepend=u0)
    n_upd = int(U.sum())
    L = np.zeros(R)
    st.steps = int(steps[-1])
    if not n_upd:
        st.pending_inserts += int(steps[-1] - s0)
        return U, L, None
    r_upd = np.flatnonzero(U)
    drives = cx.upd.block(U)
    cx.booked(lc.rm, *drives.sample, "replay_sample", cx.rm_worker, n_upd, n_upd)
    L += drives.sample[2]
    cx.booked(lc.learner, *drives.learn, "learn", "learner", n_upd, n_upd)
    L += drives.learn[2]
    if lc.sync is not None:
        L += _round_syncs(cx, st, U, steps, r_upd)
    pc = lc.param_copy
    if pc.wall_s:
        done = u0 + np.cumsum(U)
        copies = done // k.sync_interval - np.concatenate(([u0], done[:-1])) \
            // k.sync_interval
        n = int(copies.sum())
        if n:
            cx.booked(lc.learner, pc.host_s * copies, pc.device_s * copies,
                      pc.wall_s * copies, "sync", "learner", n, n)
            L += pc.wall_s * copies
    if drives.update is not None:
        cx.booked(lc.rm, *drives.update, "replay_update", cx.rm_worker, n_upd, n_upd)
        L += drives.update[2]
    _round_inserts(cx, st, U, steps, r_upd, s0, L)
    st.updates += n_upd
    return U, L, r_upd


def _round_syncs(cx: Context, st: State, U: np.ndarray, steps: np.ndarray,
                 r_upd: np.ndarray) -> np.ndarray:
    """The target syncs of each round's updates, booked: one after every update (Polyak),
    or the hard copies owed at a round's first update. Returns their seconds per round."""
    lc, tss = cx.lc, cx.shape.target_sync_steps
    if tss is None:  # Polyak: one after every update
        n_sync = U
    else:  # hard copies owed at a round's first update
        owed = steps[r_upd] // tss
        n_sync = np.zeros(len(steps), dtype=np.int64)
        n_sync[r_upd] = np.maximum(np.diff(owed, prepend=st.syncs), 0)
        st.syncs = max(st.syncs, int(owed[-1]))
    h, d, w = lc.sync.takes(n_sync)
    n = int(n_sync.sum())
    if tss is None:
        st.syncs += n
    cx.booked(lc.learner, h, d, w, "sync", "learner", n,
              n if tss is None else int(np.count_nonzero(n_sync)))
    return w


def _round_inserts(cx: Context, st: State, U: np.ndarray, steps: np.ndarray,
                   r_upd: np.ndarray, s0: int, L: np.ndarray) -> None:
    """The RM's inserts gathered since the last round with updates, at its first update
    (the round's later updates insert nothing, at insert(0)'s cost), booked and added to
    the rounds' seconds L."""
    lc = cx.lc
    prev = np.concatenate(([s0 - st.pending_inserts], steps[r_upd][:-1]))
    n_ins = steps[r_upd] - prev
    st.pending_inserts = int(steps[-1] - steps[r_upd[-1]])
    ih, idv, iw = cx.upd.inserts(n_ins)
    cnt = int(n_ins[iw > 0].sum())
    books = int(np.count_nonzero(iw))
    p0 = cx.upd.insert(0)
    if p0.wall_s:
        more = U[r_upd] - 1
        ih, idv, iw = ih + p0.host_s * more, idv + p0.device_s * more, \
            iw + p0.wall_s * more
        books += int(more.sum())
    if books:
        cx.booked(lc.rm, ih, idv, iw, "replay_add", cx.rm_worker, cnt, books)
        L[r_upd] += iw
