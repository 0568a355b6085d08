"""The off-policy loop as SimPy processes, for the cases the merged paths do not cover
(and, per operation, for the reference engine). Actors book chunks of steps (actor_chunk:
one job per device) or, where two actors share a lane or the reference engine runs, each
step's operations (actor_steps). The learner's updates follow PEARL's protocol (update;
update_steps books each drive when it starts)."""

from __future__ import annotations

from dataclasses import dataclass

from rldse.workloads.offpolicy.program.context import Context, State
from rldse.workloads.offpolicy.program.merged import merged_rounds


@dataclass(frozen=True)
class Paths:
    """How this run is computed. ``merge``: sync rounds as arrays (merged.py);
    ``merge_async``: the async loop as a max-plus recurrence (maxplus.py); ``per_step``:
    actors book each operation (actor_steps) rather than chunks; ``at_arrival``: the
    learner books each drive when it starts (update_steps) rather than ahead (update)."""

    merge: bool
    merge_async: bool
    per_step: bool
    at_arrival: bool


def actor_chunk(cx: Context, a: int, n: int) -> float:
    """Book actor a's next n steps from now: env steps, inserts and the act's host part
    (the whole act on a CPU, the dispatch and copies of a GPU act) on its core, as one
    booking accounted by phase, the act's kernels on the GPU; each step waits for its action, so the chunk lasts at least env +
    insert + act wall time. Returns when it ends."""
    m, ac, cpu, clock, host = cx.m, cx.actors, cx.cpu, cx.m.clock, cx.cpu.kind
    t0 = m.env.now
    s_reset = n * ac.reset_s_per_step
    s_env, act = ac.step[a].take(n) + s_reset, ac.act[a].take(n)
    s_add = ac.add[a].take(n) if ac.insert else 0.0
    on_core = (("env_step", s_env), ("replay_add", s_add),
               ("dispatch", act.host_s) if ac.kernels else ("act", act.wall_s))
    own = s_env + s_add + act.wall_s
    end = max(m.book_parts(cpu, t0, on_core, cx.actor_names[a], cx.cores, items=n),
              t0 + own)
    if ac.kernels and act.device_s > 0:
        end = max(end, m.book(cx.gpu, t0, act.device_s, "act", cx.actor_names[a], items=n))
    clock.spend("actor", "env_step", host, s_env - s_reset, n)
    if s_reset:
        clock.spend("actor", "env_reset", host, s_reset, 0)
    if ac.kernels:
        clock.spend("actor", "dispatch", host, act.host_s, 0)
        clock.spend("actor", "act", cx.act_label, act.wall_s - act.host_s, n)
    else:
        clock.spend("actor", "act", cx.act_label, act.wall_s, n)
    if s_add:
        clock.spend("actor", "replay_add", host, s_add, n)
    clock.spend("actor", "wait:device", "any", max(0.0, end - t0 - own), 0)
    return end


def update(cx: Context, st: State, t: float) -> float:
    """One learner update from time t; returns its end time. Sync: every step one after
    another, as the real loop does. Async: PEARL's overlap of RM and learner."""
    m, lc, k, cpu = cx.m, cx.lc, cx.m.knobs, cx.cpu
    rm, learner = lc.rm, lc.learner
    if st.first_update_s is None:
        st.first_update_s = t
    sample, learn, prio = cx.upd.one()
    t_s = m.drive(rm, t, sample, "replay_sample", cx.rm_worker, cpu, cx.rm_core)
    # learner branch: batch copy, gradient step, target sync, parameters to actors
    t_l = m.drive(learner, t_s, learn, "learn", "learner", cpu, cx.learner_core)
    own_s = learn.wall_s
    st.updates += 1
    if not lc.param_copy.wall_s or st.updates % k.sync_interval == 0:
        st.published = st.updates  # what the actors act with from now
    syncs = st.due_syncs(cx.shape, lc)
    if syncs:
        sync = lc.sync.take(syncs)
        st.syncs += syncs
        t_l = m.drive(learner, t_l, sync, "sync", "learner", cpu, cx.learner_core, syncs)
        own_s += sync.wall_s
    if lc.param_copy.wall_s and st.updates % k.sync_interval == 0:
        t_l = m.drive(learner, t_l, lc.param_copy, "sync", "learner", cpu, cx.learner_core)
        own_s += lc.param_copy.wall_s
    # RM branch: priority update, then the inserts gathered since the last update
    t_r = t_s if cx.rm_overlaps else t_l
    if prio is not None:
        t_r = m.drive(rm, t_r, prio, "replay_update", cx.rm_worker, cpu, cx.rm_core)
    n_ins, st.pending_inserts = st.pending_inserts, 0
    ins = cx.upd.insert(n_ins)
    if ins.wall_s:
        t_r = m.drive(rm, t_r, ins, "replay_add", cx.rm_worker, cpu, cx.rm_core, n_ins)
    end = max(t_l, t_r)
    if cx.rm_overlaps:  # the learner's own time beyond its work is waiting on others
        m.clock.spend("learner", "wait:device", "any", max(0.0, end - t - own_s), 0)
    st.last_update_end_s = end
    if k.learner == "async":
        m.mark_iterations(end)
    return end


def actor_steps(cx: Context, a: int, n: int):
    """The reference engine's actor_chunk: actor a's next n steps, each as its operations
    (the act: on its core, or its dispatch on the core and kernels on the GPU; the env
    step; the insert when actors insert), every one booked when it arrives, after the one
    before it ends."""
    m, ac, cpu, clock, env = cx.m, cx.actors, cx.cpu, cx.m.clock, cx.m.env
    name, host = cx.actor_names[a], cpu.kind
    for _ in range(n):
        act = ac.act[a].take(1)
        if ac.kernels:
            end = m.drive(cx.gpu, env.now, act, "act", "actor", cpu, cx.cores, track=name)
        else:
            end = m.book(cpu, env.now, act.wall_s, "act", name, cx.cores, items=1)
            clock.spend("actor", "act", cx.act_label, act.wall_s, 1)
        yield env.timeout(end - env.now)
        s_env = ac.step[a].take(1)
        end = m.book(cpu, env.now, s_env + ac.reset_s_per_step, "env_step", name, cx.cores,
                     items=1)
        clock.spend("actor", "env_step", host, s_env, 1)
        if ac.reset_s_per_step:
            clock.spend("actor", "env_reset", host, ac.reset_s_per_step, 0)
        yield env.timeout(end - env.now)
        if ac.insert:
            s_add = ac.add[a].take(1)
            end = m.book(cpu, env.now, s_add, "replay_add", name, cx.cores, items=1)
            clock.spend("actor", "replay_add", host, s_add, 1)
            yield env.timeout(end - env.now)
    return env.now


def update_steps(cx: Context, st: State):
    """The reference engine's update(env.now): the same drives and cost draws, each booked
    when it starts (the RM branch as its own process beside the learner's when they
    overlap); what it owes (target syncs, inserts) is counted at its start, as update
    counts it."""
    m, lc, k, env = cx.m, cx.lc, cx.m.knobs, cx.m.env
    t = env.now
    if st.first_update_s is None:
        st.first_update_s = t
    sample, learn, prio = cx.upd.one()
    t_s = m.drive(lc.rm, t, sample, "replay_sample", cx.rm_worker, cx.cpu, cx.rm_core)
    st.updates += 1
    if not lc.param_copy.wall_s or st.updates % k.sync_interval == 0:
        st.published = st.updates
    syncs = st.due_syncs(cx.shape, lc)
    st.syncs += syncs
    copy_now = bool(lc.param_copy.wall_s) and st.updates % k.sync_interval == 0
    n_ins, st.pending_inserts = st.pending_inserts, 0
    yield env.timeout(t_s - env.now)
    if cx.rm_overlaps:
        rm_proc = env.process(_rm_branch(cx, prio, n_ins))
        own_s = yield from _learner_branch(cx, learn, syncs, copy_now)
        yield rm_proc
        m.clock.spend("learner", "wait:device", "any", max(0.0, env.now - t - own_s), 0)
    else:
        yield from _learner_branch(cx, learn, syncs, copy_now)
        yield from _rm_branch(cx, prio, n_ins)
    st.last_update_end_s = env.now
    if k.learner == "async":
        m.mark_iterations(env.now)


def _learner_branch(cx: Context, learn, syncs: int, copy_now: bool):
    """update_steps' learner branch: the gradient step, the target syncs owed and the
    parameters sent to the actors. Returns the learner's own seconds."""
    m, lc, env = cx.m, cx.lc, cx.m.env
    own = learn.wall_s
    end = m.drive(lc.learner, env.now, learn, "learn", "learner", cx.cpu, cx.learner_core)
    yield env.timeout(end - env.now)
    if syncs:
        sync = lc.sync.take(syncs)
        end = m.drive(lc.learner, env.now, sync, "sync", "learner", cx.cpu, cx.learner_core,
                      syncs)
        own += sync.wall_s
        yield env.timeout(end - env.now)
    if copy_now:
        end = m.drive(lc.learner, env.now, lc.param_copy, "sync", "learner", cx.cpu,
                      cx.learner_core)
        own += lc.param_copy.wall_s
        yield env.timeout(end - env.now)
    return own


def _rm_branch(cx: Context, prio, n_ins: int):
    """update_steps' RM branch: the priority update ``prio`` (None: none), then the n_ins
    inserts owed."""
    m, lc, env = cx.m, cx.lc, cx.m.env
    if prio is not None:
        end = m.drive(lc.rm, env.now, prio, "replay_update", cx.rm_worker, cx.cpu,
                      cx.rm_core)
        yield env.timeout(end - env.now)
    ins = cx.upd.insert(n_ins)
    if ins.wall_s:
        end = m.drive(lc.rm, env.now, ins, "replay_add", cx.rm_worker, cx.cpu, cx.rm_core,
                      n_ins)
        yield env.timeout(end - env.now)


def sync_loop(cx: Context, st: State, paths: Paths):
    """Rounds: every actor runs a chunk, then the learner catches up; nobody overlaps."""
    m, k, env = cx.m, cx.m.knobs, cx.m.env
    total_steps, actors = k.env_steps, k.actors
    chunk = max(1, round(k.learn_every / actors))
    while paths.merge and (full := (total_steps - st.steps) // (chunk * actors)):
        yield env.timeout(merged_rounds(cx, st, min(full, 1 << 16), chunk))
    while st.steps < total_steps:
        t0 = env.now
        ends = []
        for a in range(actors):
            n = min(chunk, total_steps - st.steps)
            if n <= 0:
                break
            ends.append(env.process(actor_steps(cx, a, n)) if paths.per_step
                        else actor_chunk(cx, a, n))
            st.lag(st.updates - st.published, n)  # the learner waits: no updates meanwhile
            st.steps += n
            st.pending_inserts += n
        if paths.per_step:
            yield env.all_of(ends)
            t_round = t = env.now
            for _ in range(st.due_updates(cx.shape, k.learn_every)):
                if m.reference:
                    yield from update_steps(cx, st)
                else:
                    t = update(cx, st, t)
            t = max(t, env.now)
        else:
            t_round = max(ends)
            t = t_round
            for _ in range(st.due_updates(cx.shape, k.learn_every)):
                t = update(cx, st, t)
        yield env.timeout(t - env.now)
        m.mark_iterations(t)  # a sync round
        m.clock.spend("actor", "wait:learner", "any", (t - t_round) * len(ends), 0)
        m.clock.spend("learner", "wait:actors", "any", t_round - t0, 0)


def start_async(cx: Context, st: State, paths: Paths) -> None:
    """The async loop's processes: actors running freely, and a learner that updates as
    fast as the devices allow, never ahead of the data (woken as each chunk lands)."""
    env = cx.m.env
    data_ready = [env.event()]
    for a in range(cx.m.knobs.actors):
        env.process(_async_actor(cx, st, paths, a, data_ready))
    env.process(_async_learner(cx, st, paths, data_ready))


def _async_actor(cx: Context, st: State, paths: Paths, a: int, data_ready: list):
    env, total_steps = cx.m.env, cx.m.knobs.env_steps
    while st.booked < total_steps:
        n = min(1 if paths.per_step else cx.async_chunk_steps, total_steps - st.booked)
        st.booked += n
        version = st.published  # the parameters this chunk acts with
        if paths.per_step:
            yield from actor_steps(cx, a, n)
        else:
            end = actor_chunk(cx, a, n)
            yield env.timeout(end - env.now)
        st.lag(st.updates - version, n)  # behind the learner when its data lands
        st.steps += n  # the learner sees these transitions only now
        st.pending_inserts += n
        ev, data_ready[0] = data_ready[0], env.event()
        ev.succeed()


def _async_learner(cx: Context, st: State, paths: Paths, data_ready: list):
    env = cx.m.env
    while True:
        if st.due_updates(cx.shape, cx.m.knobs.learn_every) <= 0:
            if st.steps >= cx.m.knobs.env_steps:
                return
            t0 = env.now
            yield data_ready[0]
            cx.m.clock.spend("learner", "wait:actors", "any", env.now - t0, 0)
            continue
        if paths.at_arrival:
            yield from update_steps(cx, st)
        else:
            end = update(cx, st, env.now)
            yield env.timeout(end - env.now)
