"""Merged async (``learner: async``): when no two processes can share a lane (actors on
their own cores; every device with a lane for each process that may hold it at once),
nothing delays an actor, so its chunks land at fixed times, and update u starts at
max(end of update u-1, the landing that makes it due): a max-plus recurrence solved with
numpy scans, per step as the event loop resolves it (a chunk is learn_every steps, or
one where that would change what an update sees: Context.async_chunk_steps, so
sampling interleaves with learning at the real granularity). Results match the event
loop to 4e-13 relative on the shipped traces (tests/workloads/offpolicy/program/
test_program_async.py)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.sim.timeline import COARSE_STEPS, tile_starts
from rldse.workloads.offpolicy.program.context import Context, State
from rldse.workloads.offpolicy.program.costs import eff, sliced

_BLOCK = 1 << 16  # operations per numpy block
_FIXED_POINT_ROUNDS = 64


def async_merged(cx: Context, st: State) -> float:
    """The async loop when no two processes contend for a lane: the actors' chunks land
    at fixed times; update u starts when the learner is free and the data allows it,
    max(end of update u-1, landing that brings learning_starts + u·learn_every steps), and
    lasts its sample plus the longer of PEARL's two branches (learn, syncs and parameter
    sends; priority update and inserts), solved in blocks of updates (_solve_block).
    Bookings, clock entries, cost-row draws and the policy-lag histogram as the event loop
    makes them. Returns the end of the run."""
    k, shape, lc = cx.m.knobs, cx.shape, cx.lc
    ends, counts = _async_chunks(cx)
    land = _Landings.of(ends, counts)
    n_upd = max(0, k.env_steps - shape.learning_starts) // k.learn_every
    starts = np.empty(n_upd)
    run = _Solved(end_prev=0.0, s_prev=0, waited=0.0, synced=0)
    for u0 in range(0, n_upd, _BLOCK):
        u = np.arange(u0 + 1, min(n_upd, u0 + _BLOCK) + 1, dtype=np.int64)
        start, end, s_at = _solve_block(cx, land, u, run)
        starts[u0:u0 + len(u)] = start
        cx.m.mark_iterations(end)
        run.end_prev, run.s_prev = float(end[-1]), int(s_at[-1])
        tss = shape.target_sync_steps
        run.synced = run.s_prev // tss if tss else run.synced + len(u)
    last = float(land.land[-1])
    cx.m.clock.spend("learner", "wait:actors", "any", run.waited + last - min(
        last, run.end_prev if n_upd else 0.0), 0)
    _policy_lag(cx, st, ends, counts, starts)
    si, pc = k.sync_interval, lc.param_copy
    st.booked = st.steps = k.env_steps
    st.updates = n_upd
    st.published = n_upd if not pc.wall_s else n_upd // si * si
    st.pending_inserts = k.env_steps - run.s_prev
    st.syncs = run.synced if lc.sync is not None else 0
    if n_upd:
        st.first_update_s, st.last_update_end_s = float(starts[0]), run.end_prev
    return max(last, run.end_prev)


@dataclass
class _Solved:
    """Where the recurrence stands after the blocks solved so far: the last update's end,
    the env steps landed at its start, the learner's wait for data, target syncs done."""

    end_prev: float
    s_prev: int
    waited: float
    synced: int


@dataclass(frozen=True)
class _Landings:
    """The actors' chunks in landing order: when each lands, and env steps landed by then."""

    land: np.ndarray
    cum: np.ndarray

    @classmethod
    def of(cls, ends: list[np.ndarray], counts: list[np.ndarray]) -> _Landings:
        land_all, n_all = np.concatenate(ends), np.concatenate(counts)
        order = np.argsort(land_all, kind="stable")
        return cls(land_all[order], np.cumsum(n_all[order]))

    def landed(self, t: np.ndarray) -> np.ndarray:
        """Env steps landed by ascending times t (landings at t included), searched in the
        slice of landings they span (cache-friendly)."""
        land, cum = self.land, self.cum
        lo = int(np.searchsorted(land, t[0], side="right"))
        hi = int(np.searchsorted(land, t[-1], side="right"))
        i = lo + np.searchsorted(land[lo:hi], t, side="right")
        return np.where(i > 0, cum[np.maximum(i - 1, 0)], 0)

    def available(self, need: np.ndarray) -> np.ndarray:
        """When the landings first bring ``need`` (ascending) env steps."""
        land, cum = self.land, self.cum
        lo = int(np.searchsorted(cum, need[0], side="left"))
        hi = int(np.searchsorted(cum, need[-1], side="left")) + 1
        return land[lo + np.searchsorted(cum[lo:hi], need, side="left")]


@dataclass(frozen=True)
class _Block:
    """A block of updates' fixed costs (those that do not depend on the steps landed by
    an update's start): sample, learn (with its batch copy), parameter copies, priority
    update (with its TD copy), as host, device and wall seconds per update."""

    S: tuple
    L: tuple
    copies: np.ndarray
    U: tuple

    def fixed(self, cx: Context) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Each update's sample, learner branch and RM branch before syncs and inserts."""
        pc = cx.lc.param_copy
        return (eff(*self.S), eff(*self.L) + eff(pc.host_s, pc.device_s, pc.wall_s)
                * self.copies, eff(*self.U))


def _block_costs(cx: Context, u: np.ndarray) -> _Block:
    """Draw the fixed costs of updates u (UpdateCosts.block) and their parameter copies."""
    lc, si = cx.lc, cx.m.knobs.sync_interval
    ones = np.ones(len(u), dtype=np.int64)
    drives = cx.upd.block(ones)
    copies = (u % si == 0).astype(np.int64) if lc.param_copy.wall_s else 0 * ones
    U = drives.update if drives.update is not None else (np.zeros(len(u)),) * 3
    return _Block(drives.sample, drives.learn, copies, U)


def _solve_block(cx: Context, land: _Landings, u: np.ndarray, run: _Solved):
    """Updates u (a block, in order) after ``run``: target syncs and inserts owed at an
    update depend on the steps landed by its start, so the recurrence is iterated to a
    fixed point (update by update where it does not settle), then booked. Returns the
    updates' starts, ends and env steps landed at their starts."""
    lc, shape, k = cx.lc, cx.shape, cx.m.knobs
    ones = np.ones(len(u), dtype=np.int64)
    avail = land.available(shape.learning_starts + u * k.learn_every)
    blk = _block_costs(cx, u)
    fixed = blk.fixed(cx)
    sync_pos = lc.sync.pos if lc.sync is not None else 0
    # what an update owes depends on the steps landed by its start only with hard
    # target copies or inserts on the replay manager
    owed_vary = (lc.sync is not None and shape.target_sync_steps is not None) \
        or not lc.actors_insert
    s_at = land.landed(avail) if owed_vary else ones

    def settle(s_at):
        """One pass of the recurrence for owed syncs and inserts given s_at."""
        return _settle(cx, s_at, ones, run, sync_pos, fixed, avail)

    for _ in range(_FIXED_POINT_ROUNDS):
        owed = settle(s_at)
        if not owed_vary:
            s_at = land.landed(owed.start[-1:])
            break
        s_new = land.landed(owed.start)
        if np.array_equal(s_new, s_at):
            break
        s_at = s_new
    else:  # owed syncs/inserts flip with the landings they wait for (slow updates):
        # solve update by update, as the event loop does, then book it
        s_at = _sequential_landed(cx, land, fixed, avail, run, sync_pos)
        owed = settle(s_at)
    _book_block(cx, blk, owed, run)
    return owed.start, owed.end, s_at


@dataclass(frozen=True)
class _Owed:
    """A block's target syncs and inserts owed (counts, and host, device and wall seconds)
    and the updates' times, for the steps landed at their starts."""

    n_sync: np.ndarray
    n_ins: np.ndarray
    Y: tuple
    I: tuple  # noqa: E741 (inserts, as S, L, U)
    end: np.ndarray
    start: np.ndarray


def _settle(cx: Context, s_at: np.ndarray, ones: np.ndarray, run: _Solved, sync_pos: int,
            fixed: tuple, avail: np.ndarray) -> _Owed:
    """The recurrence's pass for s_at: each update lasts its sample plus the longer of
    PEARL's branches, and starts at max(end of the one before, its data's landing)."""
    lc = cx.lc
    n_sync, n_ins = _owed_at(cx, s_at, ones, run.synced, run.s_prev)
    Y = (np.zeros(len(ones)),) * 3
    if lc.sync is not None:
        lc.sync.pos = sync_pos
        Y = lc.sync.takes(n_sync)
    I = _inserts(cx, n_ins)  # noqa: E741
    dur = fixed[0] + np.maximum(fixed[1] + eff(*Y), fixed[2] + eff(*I))
    D = np.cumsum(dur)
    end = D + np.maximum(run.end_prev, np.maximum.accumulate(avail - (D - dur)))
    return _Owed(n_sync, n_ins, Y, I, end, end - dur)


def _book_block(cx: Context, blk: _Block, owed: _Owed, run: _Solved) -> None:
    """A solved block's bookings and clock entries as the event loop makes them (and,
    with a timeline, its updates: _show_block)."""
    lc, n = cx.lc, len(owed.start)
    pc, copies = lc.param_copy, blk.copies
    if cx.view is not None:
        cx.view.drives[:] = []
    cx.booked(lc.rm, *blk.S, "replay_sample", cx.rm_worker, n, n)
    cx.booked(lc.learner, *blk.L, "learn", "learner", n, n)
    if lc.sync is not None and owed.n_sync.any():
        cx.booked(lc.learner, *owed.Y, "sync", "learner", int(owed.n_sync.sum()),
                  int(np.count_nonzero(owed.n_sync)))
    if copies.any():
        c = int(copies.sum())
        cx.booked(lc.learner, pc.host_s * copies, pc.device_s * copies,
                  pc.wall_s * copies, "sync", "learner", c, c)
    if lc.update is not None:
        cx.booked(lc.rm, *blk.U, "replay_update", cx.rm_worker, n, n)
    wI = owed.I[2]
    if wI.any():
        at = wI > 0
        cx.booked(lc.rm, *owed.I, "replay_add", cx.rm_worker, int(owed.n_ins[at].sum()),
                  int(at.sum()))
    start, end = owed.start, owed.end
    own = blk.L[2] + owed.Y[2] + pc.wall_s * copies
    cx.m.clock.spend("learner", "wait:device", "any",
                     float(np.maximum(0.0, end - start - own).sum()), 0)
    run.waited += float(np.maximum(0.0, start - np.concatenate(([run.end_prev], end[:-1])))
                        .sum())
    if cx.view is not None:
        _show_block(cx, blk.S, start, end)


def _show_block(cx: Context, S: tuple, start: np.ndarray, end: np.ndarray) -> None:
    """A block's updates on the timeline: with a window, those in it, each its sample
    then PEARL's two branches from its end; without, tiles of updates."""
    view, n = cx.view, len(start)
    ones = np.ones(n, dtype=np.int64)
    if view.window_s is not None:
        sl = view.in_window(start, end)
        t_s = (start + eff(*S))[sl]
        at = {"learner": t_s, "replay_manager": t_s}
        for dev, phase, worker, h, d, w in view.drives[1:]:
            branch = "replay_manager" if phase.startswith("replay") else "learner"
            h, d, w = (sliced(x, sl) for x in (h, d, w))
            view.drive(dev, phase, worker, h, d, at[branch], ones[sl])
            at[branch] = at[branch] + eff(h, d, w)
        view.drive(cx.lc.rm, "replay_sample", cx.rm_worker, S[0][sl], S[1][sl], start[sl],
                   ones[sl])
        return
    cuts = tile_starts(np.full(n, cx.m.knobs.learn_every), COARSE_STEPS)
    view.updates(start[cuts], end[np.append(cuts[1:], n) - 1],
                 np.add.reduceat(ones, cuts), view.tile_sums(cuts, n))


def _owed_at(cx: Context, s_at: np.ndarray, ones: np.ndarray, synced: int,
             s_prev: int) -> tuple[np.ndarray, np.ndarray]:
    """Target syncs (State.due_syncs) and inserts (pending_inserts) owed at updates whose
    starts see s_at env steps landed."""
    n_ins = np.diff(s_at, prepend=s_prev)
    tss = cx.shape.target_sync_steps
    if cx.lc.sync is None or tss is None:
        return ones, n_ins
    return np.maximum(np.diff(s_at // tss, prepend=synced), 0), n_ins


def _sequential_landed(cx: Context, land: _Landings, fixed: tuple, avail: np.ndarray,
                       run: _Solved, sync_pos: int) -> np.ndarray:
    """Env steps landed at each update's start, one update at a time: start_i =
    max(end_{i-1}, avail_i), and what it owes (so how long it lasts) follows from the
    steps landed by then. Exact where the block-wise fixed point does not settle."""
    lc, tss = cx.lc, cx.shape.target_sync_steps
    one = np.ones(1, dtype=np.int64)
    s_at = np.empty(len(avail), dtype=np.int64)
    end, synced, s_prev = run.end_prev, run.synced, run.s_prev
    if lc.sync is not None:
        lc.sync.pos = sync_pos
    for i in range(len(avail)):
        start = max(end, float(avail[i]))
        s_at[i] = land.landed(np.array([start]))[0]
        n_sync, n_ins = _owed_at(cx, s_at[i:i + 1], one, synced, s_prev)
        y = float(eff(*lc.sync.takes(n_sync))[0]) if lc.sync is not None else 0.0
        ins = float(eff(*_inserts(cx, n_ins))[0])
        end = start + float(fixed[0][i] + np.maximum(fixed[1][i] + y, fixed[2][i] + ins))
        s_prev = int(s_at[i])
        if tss:
            synced = max(synced, s_prev // tss)
    return s_at


def _inserts(cx: Context, n_ins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The RM's inserts of n_ins[i] transitions (LearnerCosts.insert), as arrays."""
    if cx.lc.actors_insert:
        return tuple(np.zeros(len(n_ins)) for _ in range(3))
    return cx.upd.inserts(n_ins)


def _actor_ends(cx: Context, a: int, counts: np.ndarray, account: bool) -> np.ndarray:
    """Landing times of actor a's chunks of ``counts`` steps booked back to back from 0 on
    its own core (nothing else delays them), advancing its cycles; with ``account``, the
    bookings and clock entries actor_chunk makes."""
    ends, t = [], 0.0
    for lo in range(0, len(counts), _BLOCK):
        n = counts[lo:lo + _BLOCK]
        c = cx.actors.chunk_times(a, n, n * cx.actors.reset_s_per_step)
        dur = np.maximum(np.maximum(c.on_core, c.own), c.d)
        end = t + np.cumsum(dur)
        t = float(end[-1])
        ends.append(end)
        if account:
            _account_chunks(cx, a, n, c, dur, end)
    return np.concatenate(ends) if ends else np.empty(0)  # no chunk: fewer steps than actors


def _account_chunks(cx: Context, a: int, n: np.ndarray, c, dur: np.ndarray,
                    end: np.ndarray) -> None:
    """Actor a's chunks (steps n, times c, landing at end) booked, on the clock and, with
    a timeline, shown: with a window the chunks in it, else one rollout per tile."""
    ac, cpu, clock, host, view = cx.actors, cx.cpu, cx.m.clock, cx.cpu.kind, cx.view
    if view is not None and view.window_s is not None:  # the chunks in it
        sl = view.in_window(end - dur, end)
        view.chunks(a, (end - dur)[sl], n[sl], (c.s_env + c.s_reset)[sl],
                    sliced(c.s_add, sl), (c.on_core - c.base)[sl], c.d[sl], (end - dur)[sl])
    elif view is not None:  # back to back, so one rollout per tile of steps
        cuts = tile_starts(n, COARSE_STEPS)
        view.rollouts(a, cuts, (end - dur)[cuts], end[np.append(cuts[1:], len(n)) - 1],
                      np.add.reduceat(n, cuts), c.s_env + c.s_reset, c.s_add,
                      c.on_core - c.base, c.d)
    steps = int(n.sum())
    c.account_core(cpu, ac.kernels, len(n))
    clock.spend("actor", "env_step", host, float(c.s_env.sum()), steps)
    if ac.reset_s_per_step:
        clock.spend("actor", "env_reset", host, float(c.s_reset.sum()), 0)
    if ac.kernels:
        cx.gpu.account("act", float(c.d.sum()), int(np.count_nonzero(c.d)))
        clock.spend("actor", "dispatch", host, float(c.h.sum()), 0)
        clock.spend("actor", "act", cx.act_label, float((c.w - c.h).sum()), steps)
    else:
        clock.spend("actor", "act", cx.act_label, float(c.w.sum()), steps)
    if ac.insert:
        clock.spend("actor", "replay_add", host, float(np.sum(c.s_add)), steps)
    clock.spend("actor", "wait:device", "any", float((dur - c.own).sum()), 0)


def _async_chunks(cx: Context) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Every actor's chunks as the event loop books them: ``async_chunk_steps`` each, in
    order of booking time (ties: actor order), the last booking taking what is left.
    Returns per actor the landing times and step counts, bookings accounted."""
    k, ac = cx.m.knobs, cx.actors
    actors, chunk = k.actors, cx.async_chunk_steps
    n_chunks = -(-k.env_steps // chunk)
    rem = k.env_steps - (n_chunks - 1) * chunk
    cycles = [c for a in range(actors) for c in (ac.step[a], ac.act[a], ac.add[a])]
    pos = [c.pos for c in cycles]
    per = n_chunks // actors + 2
    while True:  # probe: enough chunks per actor to cover the first n_chunks bookings
        books = [np.concatenate(([0.0], _actor_ends(
            cx, a, np.full(per, chunk, dtype=np.int64), False)[:-1]))
            for a in range(actors)]
        for c, p in zip(cycles, pos, strict=True):
            c.pos = p
        cut = np.partition(np.concatenate(books), n_chunks - 1)[n_chunks - 1]
        taken = [int(np.searchsorted(b, cut, side="left")) for b in books]
        last = 0
        for a, b in enumerate(books):  # bookings at the cut, in actor order
            if taken[a] < per and b[taken[a]] == cut and sum(taken) < n_chunks:
                taken[a] += 1
                last = a
        if max(taken) < per:
            break
        per *= 2
    counts = [np.full(n, chunk, dtype=np.int64) for n in taken]
    counts[last][-1] = rem
    return [_actor_ends(cx, a, counts[a], True) for a in range(actors)], counts


def _policy_lag(cx: Context, st: State, ends: list, counts: list,
                starts: np.ndarray) -> None:
    """Policy lag: updates started before a chunk lands, less those its actor's
    parameters had when it was booked (the actor's previous landing)."""
    si = cx.m.knobs.sync_interval
    for e, c in zip(ends, counts, strict=True):
        done = np.searchsorted(starts, e, side="left")
        had = np.concatenate(([0], done[:-1]))
        if cx.lc.param_copy.wall_s:
            had = had // si * si
        hist = np.bincount(done - had, weights=c)
        for lag in np.flatnonzero(hist):
            st.lag(int(lag), int(hist[lag]))
