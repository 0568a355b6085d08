"""The simulated twin of the off-policy loop that dqn.py and ddpg.py run for real.

Actors step environments, choose actions and insert transitions; a learner samples a
batch, learns, and updates priorities; parameters go back to the actors. Placement
(SystemSpec.placement) puts `act`, `replay` and `learn` on CPU, GPU or TCAM (replay).

`learner: sync` is the real loop: every actor runs a chunk of steps, then the learner
does, one after another, the updates that keep the trace's update-to-data ratio
(sample, learn, priority update, inserts), while actors wait.

`learner: async` lets actors run freely on `workload.cores` cores, and a replay manager
(RM) and learner (L) follow PEARL's protocol (Meng et al., arXiv 2311.09445): sample on
RM, then the priority update and the inserts gathered since the last update on RM
*overlap* the gradient step on L, so an iteration costs
T_sample + max(T_update + T_insert, T_learn) when nothing else contends. The learner
never gets ahead of the data: it counts only transitions whose steps have finished.

With replay on the CPU the inserts are the actors' own work (on their cores, as in the
real loop); on a GPU or TCAM the RM inserts each batch of new transitions at once.

GPU work has two sides (rldse.models.gpu): the framework's dispatch, booked on the
issuing core (an actor's own core for `act: gpu`; the learner's or the replay manager's
core for `learn`/`replay: gpu`), and the kernels, booked on the GPU; an operation ends
after the later of the two (``Machine.drive``). A launch-bound learner is therefore
paced by its core ("dispatch" in the bottleneck) while the GPU idles between kernels.

Merged events: an actor's chunk of steps is booked as one job per device it uses (its
core for env steps and dispatch, and the GPU for its batch-1 inferences' kernels when
`act: gpu`), so events grow with chunks and updates, not with steps. Per-step GPU/CPU
interleaving inside a chunk is not resolved: a chunk's kernels queue on the GPU as one
block, and the chunk lasts at least its steps' env + insert + act wall time.

Merged rounds (`learner: sync`): nothing overlaps inside a sync round, so when every
actor has its own core (and, acting on a GPU, a lane of its own or a FIFO single lane),
runs of up to 65,536 full rounds are computed as numpy arrays (`merged_rounds`): the same
cost-row draws, bookings' busy time and clock entries as the event loop, each update
lasting the sum of its drives' walls. Results match the event loop to float rounding.

Merged async (`learner: async`): when no two processes can share a lane (actors on
their own cores; every device with a lane for each process that may hold it at once),
nothing delays an actor, so its chunks land at fixed times,
and update u starts at max(end of update u-1, the landing that makes it due): a max-plus
recurrence solved with numpy scans (`async_merged`), per step as the event loop
resolves it (a chunk is learn_every steps, so sampling interleaves with learning at the
real granularity). Results match the event loop to 4e-13 relative on the shipped traces
(tests/workloads/offpolicy/test_program_async.py). Otherwise, events.

With ``--timeline`` the merged paths stay on (a run's result is the same with or without
one) and write at the granularity they compute, as arrays (TimelineStream.extend).
Without ``--timeline-window``: per actor, one "rollout" event per tile of about
COARSE_STEPS of its env steps on its own core (sync: tiles end after a round with
updates, so a rollout spans its chunks and its waits for the learner between them;
async: its chunks run back to back), args ``steps`` and its busy seconds by phase
(``env_step_us``, ``replay_add_us`` when actors insert, ``act_us`` or ``dispatch_us``
and the kernels' ``act_us``); per learner and replay manager, one "updates" event per
tile of updates on lane 0 of its device, args ``updates`` and its drives' seconds by
phase (``learn_us``, ``replay_sample_us``, …, the host part as ``dispatch_us``). With a
window, only the chunks and updates overlapping it are written, one by one as the
event loop books them: each chunk's parts (env steps, inserts, the act or its dispatch)
on its actor's core and its kernels on the GPU, and each drive of an update (a sync
round's updates merged into one event per drive, args ``items``: its updates) on lane 0
of its device, its host part on the CPU as dispatch. The event loop (unmerged cases)
books every chunk and update whatever the window.
"""

from __future__ import annotations

import numpy as np

from rldse.models.kinds import Runs
from rldse.sim.device import Device
from rldse.sim.lanes import Lanes
from rldse.sim.machine import Machine, Outcome
from rldse.sim.timeline import COARSE_STEPS, tile_starts
from rldse.workloads.offpolicy.program.costs import (
    Costs,
    Plus,
    Shape,
    eff,
    learner_costs,
    per_actor,
    replay_job,
    reset_seconds_per_step,
    sliced,
)
from rldse.workloads.offpolicy.program.memory import gpu_memory, host_memory_bytes

_BLOCK = 1 << 16  # operations per numpy block in the merged async loop
#: Whether ``learner: async`` takes the merged path where it applies; its test turns it
#: off to prove the merged path against the per-event loop on the same code and models.
MERGE_ASYNC = True
_FIXED_POINT_ROUNDS = 64


def program(m: Machine, shape: Shape) -> Outcome:
    """Run the off-policy loop on machine `m`; see the module docstring."""
    k = m.knobs
    batch, learn_every, capacity = k.batch_size, k.learn_every, k.replay_capacity
    total_steps, actors = k.env_steps, k.actors
    act_r, learn_r, replay_r = m.runner("act"), m.runner("learn"), m.runner("replay")
    act_kernels = act_r.kernels
    # the part issued kernels run on, if any role runs so (its copies, memory and lanes)
    kernels = next((r for r in (learn_r, act_r, replay_r) if r.on_kernel_part), None)
    costs = Costs(m, shape, batch, kernels)
    cpu = m.host.device
    gpu = kernels.device if kernels is not None else None
    host = cpu.kind
    cores = Lanes(min(k.cores or cpu.lanes, cpu.lanes), clock=m.env)  # the actors' cores
    # the cores the learner and the replay manager issue from (sync: one process, whose
    # core the actors' rounds leave free while it learns)
    learner_core = Lanes(1, clock=m.env)
    rm_core = Lanes(1, clock=m.env) if k.learner == "async" else learner_core
    rm_overlaps = k.learner == "async"

    # ---- per-operation costs -------------------------------------------------------
    step_c = per_actor(m, m.cycle("env_step"), actors)
    reset_s_per_step = reset_seconds_per_step(m)
    act_c = per_actor(m, costs.cycle("act", act_r), actors)
    add_cpu = per_actor(m, m.cycle("replay_add"), actors)
    own_model = replay_r.runs is Runs.SERVER  # a kind's own replay model
    job = replay_job(m, shape, batch, capacity) if own_model else None
    lc = learner_costs(m, shape, costs, batch, job)
    rm, learner_dev = lc.rm, lc.learner

    # ---- capacities ----------------------------------------------------------------
    mem = gpu_memory(m, shape, costs, kernels)
    need, swapped, checks = mem.need_bytes, mem.swapped_bytes, mem.checks
    if swapped:
        lc.sample = Plus(lc.sample, costs.copy(batch * shape.transition_bytes))
    if job is not None:
        checks.update(replay_r.model.replay_checks(job))

    # ---- processes -----------------------------------------------------------------
    env, clock = m.env, m.clock
    rm_worker = "replay_manager" if rm_overlaps else "learner"
    clock.instances.update(actor=actors, learner=1, replay_manager=1)
    # policy lag: learner updates between the parameters a chunk of steps acted with and the
    # learner's when the chunk's transitions land in replay -> env steps
    staleness: dict[int, int] = {}
    state = {"booked": 0, "steps": 0, "updates": 0, "pending_inserts": 0, "syncs": 0,
             "published": 0,
             "first_update_s": None, "last_update_end_s": 0.0}
    data_ready = [env.event()]

    def due_updates() -> int:
        """Updates the data allows now: one per learn_every steps after the warm-up."""
        return max(0, state["steps"] - shape.learning_starts) // learn_every - state["updates"]

    def due_syncs() -> int:
        """Target syncs owed at this update: one per update (Polyak), or one per
        target_sync_steps env steps so far (those due in the warm-up are done at the first
        update, as their total cost is what matters)."""
        if lc.sync is None:
            return 0
        if shape.target_sync_steps is None:
            return 1
        return state["steps"] // shape.target_sync_steps - state["syncs"]

    actor_names = [f"actor {a}" for a in range(actors)]  # their timeline tracks
    tl = m.timeline
    drives: list[tuple] = []  # a merged block's learner drives, in order, for the timeline

    def show_chunks(a: int, t0: np.ndarray, items, env_s: np.ndarray, add_s, core_s,
                    kernels_s, gpu_t0) -> None:
        """Actor a's merged chunks on the timeline as actor_chunk books them: its core's
        booking in parts (env steps, inserts, the act or its dispatch) on core lane a
        (its own core), and its kernels on the GPU from ``gpu_t0``."""
        t, items = t0, np.broadcast_to(items, t0.shape)
        for phase, dur in (("env_step", env_s), ("replay_add", add_s),
                           ("dispatch" if act_kernels else "act", core_s)):
            dur = np.broadcast_to(dur, t0.shape)
            keep = dur > 0
            tl.extend(cpu.name, phase, a, t[keep], dur[keep], actor_names[a],
                      args={"items": items[keep]})
            t = t + dur
        if act_kernels:
            keep = kernels_s > 0
            tl.extend(gpu.name, "act", a % gpu.lanes, gpu_t0[keep], kernels_s[keep],
                      actor_names[a], args={"items": items[keep]})

    def show_drive(dev: Device, phase: str, worker: str, h: np.ndarray, d: np.ndarray,
                   t: np.ndarray, updates: np.ndarray) -> None:
        """Merged drives (Machine.drive) from times t: the device part on lane 0 of dev,
        the host part on the worker's core as 'dispatch'; args: items, the updates
        each event stands for."""
        for on, part, ph in ((dev, d, phase), (cpu, h, "dispatch")):
            keep = part > 0
            if keep.any():
                tl.extend(on.name, ph, 0, t[keep], part[keep], worker,
                          args={"items": updates[keep]})

    def show_rollouts(a: int, cuts: np.ndarray, t0: np.ndarray, t1: np.ndarray, steps,
                      env_s: np.ndarray, add_s, core_s: np.ndarray,
                      kernels_s: np.ndarray) -> None:
        """Actor a's operations in tiles starting at ``cuts``, one "rollout" event per tile
        on its core lane, from t0 to t1 (its own waits included); args: the env steps it
        covers and its busy seconds by phase, summed."""
        n = len(env_s)
        parts = [("env_step_us", env_s), ("replay_add_us", add_s) if lc.actors_insert
                 else None, ("dispatch_us" if act_kernels else "act_us", core_s),
                 ("act_us", kernels_s) if act_kernels else None]
        args = {"steps": np.asarray(steps)}
        for name, x in filter(None, parts):
            args[name] = np.add.reduceat(np.broadcast_to(x, (n,)), cuts)
        tl.extend(cpu.name, "rollout", a, t0, t1 - t0, actor_names[a], args=args)

    def show_updates(t0: np.ndarray, t1: np.ndarray, updates: np.ndarray,
                     sums: list[tuple]) -> None:
        """Tiles of learner updates, from t0 (the first's start) to t1 (the last's end):
        per worker one "updates" event per tile on lane 0 of its device; args: the
        updates and its drives' device seconds by phase, their host part as dispatch
        (``sums``: per drive its phase, worker and per-tile host and device seconds)."""
        by_worker: dict[str, dict] = {}
        for phase, worker, h, d in sums:
            args = by_worker.setdefault(worker, {"updates": updates})
            for name, x in ((f"{phase}_us", d), ("dispatch_us", h)):
                if x.any():
                    args[name] = args.get(name, 0.0) + x
        for worker, args in by_worker.items():
            dev = learner_dev if worker == "learner" else rm
            tl.extend(dev.name, "updates", 0, t0, t1 - t0, worker, args=args)

    def tile_sums(cuts: np.ndarray, n: int) -> list[tuple]:
        """The drives' host and device seconds summed over tiles of operations starting
        at ``cuts`` (a drive's arrays: one entry per operation of n, or a number each)."""
        return [(phase, worker, *(np.add.reduceat(np.broadcast_to(x, (n,)), cuts)
                                  for x in (h, d))) for _, phase, worker, h, d, _ in drives]

    def in_window(t0: np.ndarray, t1: np.ndarray) -> slice:
        """The operations (from t0 to t1, both nondecreasing) that overlap the window."""
        lo, hi = tl.window_s
        return slice(int(np.searchsorted(t1, lo, side="left")),
                     int(np.searchsorted(t0, hi, side="left")))

    def show_rounds(t0: np.ndarray, t1: np.ndarray, span: np.ndarray, L: np.ndarray,
                    c: int, chunks: list[tuple], U: np.ndarray, r_upd) -> None:
        """Merged sync rounds (from t0 to t1; r_upd: those with updates, or None). With a
        window, the rounds overlapping it as the event loop books them: each actor's chunk
        parts, then the round's drives one after another. Without, tiles of rounds ending
        after a round with updates where one does: per actor a rollout, and the learner's
        updates (show_updates)."""
        R = len(t0)
        if tl.window_s is not None:
            sl = in_window(t0, t1)
            for a, env_s, add_s, core_s, kernels_s, gpu_off, _ in chunks:
                show_chunks(a, t0[sl], c, env_s[sl], sliced(add_s, sl), core_s[sl],
                            kernels_s[sl], t0[sl] + sliced(gpu_off, sl))
            if r_upd is None:
                return
            keep = (r_upd >= sl.start) & (r_upd < sl.stop)
            at = r_upd[keep]
            t = (t0 + span)[at]
            for dev, phase, worker, h, d, w in drives:
                h, d, w = ((x[at] if len(x) == R else x[keep]) for x in (h, d, w))
                show_drive(dev, phase, worker, h, d, t, U[at])
                t = t + w
            return
        cuts = tile_starts(np.full(R, c), COARSE_STEPS, None if r_upd is None else r_upd + 1)
        last = np.append(cuts[1:], R) - 1
        for a, env_s, add_s, core_s, kernels_s, _, end in chunks:
            show_rollouts(a, cuts, t0[cuts], t0[last] + end[last], c * (last - cuts + 1),
                          env_s, add_s, core_s, kernels_s)
        if r_upd is None:
            return
        # the learner's tiles: those with updates, from the first round with updates to
        # the last; drives' arrays are per round (0 in rounds without) or per r_upd
        n_tile = np.add.reduceat(U, cuts)
        has = n_tile > 0
        first = np.searchsorted(r_upd, cuts[has])  # as indices into r_upd
        r0 = r_upd[first]
        r1 = r_upd[np.searchsorted(r_upd, last[has], side="right") - 1]
        sums = [(phase, worker, *(np.add.reduceat(x, cuts)[has] if len(x) == R
                                  else np.add.reduceat(x, first) for x in (h, d)))
                for _, phase, worker, h, d, _ in drives]
        show_updates(t0[r0] + span[r0], t1[r1], n_tile[has], sums)

    def actor_chunk(a: int, n: int) -> float:
        """Book actor a's next n steps from now: env steps, inserts and the act's host part
        (the whole act on a CPU, the dispatch and copies of a GPU act) on its core, the
        act's kernels on the GPU; each step waits for its action, so the chunk lasts at
        least env + insert + act wall time. Returns when it ends."""
        t0 = env.now
        s_reset = n * reset_s_per_step
        s_env, act = step_c[a].take(n) + s_reset, act_c[a].take(n)
        s_add = add_cpu[a].take(n) if lc.actors_insert else 0.0
        on_core = s_env + s_add + (act.host_s if act_kernels else act.wall_s)
        own = s_env + s_add + act.wall_s
        end = max(m.book(cpu, t0, on_core, "env_step", actor_names[a], cores, items=n),
                  t0 + own)
        if tl is not None:  # the one core booking's parts
            tl.split_last((("env_step", s_env), ("replay_add", s_add),
                                   ("dispatch" if act_kernels else "act",
                                    on_core - s_env - s_add)))
        if act_kernels and act.device_s > 0:
            end = max(end, m.book(gpu, t0, act.device_s, "act", actor_names[a], items=n))
        clock.spend("actor", "env_step", host, s_env - s_reset, n)
        if s_reset:
            clock.spend("actor", "env_reset", host, s_reset, 0)
        if act_kernels:
            clock.spend("actor", "dispatch", host, act.host_s, 0)
            clock.spend("actor", "act", act_r.label, act.wall_s - act.host_s, n)
        else:
            clock.spend("actor", "act", act_r.label, act.wall_s, n)
        if s_add:
            clock.spend("actor", "replay_add", host, s_add, n)
        clock.spend("actor", "wait:device", "any", max(0.0, end - t0 - own), 0)
        return end

    def update(t: float) -> float:
        """One learner update from time t; returns its end time. Sync: every step one after
        another, as the real loop does. Async: PEARL's overlap of RM and learner."""
        if state["first_update_s"] is None:
            state["first_update_s"] = t
        t_s = m.drive(rm, t, lc.sample.take(1), "replay_sample", rm_worker, cpu, rm_core)
        # learner branch: batch copy, gradient step, target sync, parameters to actors
        learn = lc.batch_copy + lc.learn.take(1)
        t_l = m.drive(learner_dev, t_s, learn, "learn", "learner", cpu, learner_core)
        own_s = learn.wall_s
        state["updates"] += 1
        if not lc.param_copy.wall_s or state["updates"] % k.sync_interval == 0:
            state["published"] = state["updates"]  # what the actors act with from now
        syncs = due_syncs()
        if syncs:
            sync = lc.sync.take(syncs)
            state["syncs"] += syncs
            t_l = m.drive(learner_dev, t_l, sync, "sync", "learner", cpu, learner_core, syncs)
            own_s += sync.wall_s
        if lc.param_copy.wall_s and state["updates"] % k.sync_interval == 0:
            t_l = m.drive(learner_dev, t_l, lc.param_copy, "sync", "learner", cpu, learner_core)
            own_s += lc.param_copy.wall_s
        # RM branch: priority update, then the inserts gathered since the last update
        t_r = t_s if rm_overlaps else t_l
        if lc.update is not None:
            t_r = m.drive(rm, t_r, lc.td_copy + lc.update.take(1), "replay_update", rm_worker,
                          cpu, rm_core)
        n_ins, state["pending_inserts"] = state["pending_inserts"], 0
        ins = lc.insert(n_ins)
        if ins.wall_s:
            t_r = m.drive(rm, t_r, ins, "replay_add", rm_worker, cpu, rm_core, n_ins)
        end = max(t_l, t_r)
        if rm_overlaps:  # the learner's own time beyond its work is waiting on others
            clock.spend("learner", "wait:device", "any", max(0.0, end - t - own_s), 0)
        state["last_update_end_s"] = end
        if k.learner == "async":
            m.mark_iterations(end)
        return end

    def actor_steps(a: int, n: int):
        """The reference engine's actor_chunk: actor a's next n steps, each as its
        operations (the act: on its core, or its dispatch on the core and kernels on the
        GPU; the env step; the insert when actors insert), every one booked when it
        arrives, after the one before it ends."""
        name = actor_names[a]
        for _ in range(n):
            act = act_c[a].take(1)
            if act_kernels:
                end = m.drive(gpu, env.now, act, "act", name, cpu, cores)
            else:
                end = m.book(cpu, env.now, act.wall_s, "act", name, cores, items=1)
                clock.spend("actor", "act", act_r.label, act.wall_s, 1)
            yield env.timeout(end - env.now)
            s_env = step_c[a].take(1)
            end = m.book(cpu, env.now, s_env + reset_s_per_step, "env_step", name, cores,
                         items=1)
            clock.spend("actor", "env_step", host, s_env, 1)
            if reset_s_per_step:
                clock.spend("actor", "env_reset", host, reset_s_per_step, 0)
            yield env.timeout(end - env.now)
            if lc.actors_insert:
                s_add = add_cpu[a].take(1)
                end = m.book(cpu, env.now, s_add, "replay_add", name, cores, items=1)
                clock.spend("actor", "replay_add", host, s_add, 1)
                yield env.timeout(end - env.now)
        return env.now

    def update_steps():
        """The reference engine's update(env.now): the same drives and cost draws, each
        booked when it starts (the RM branch as its own process beside the learner's
        when they overlap)."""
        t = env.now
        if state["first_update_s"] is None:
            state["first_update_s"] = t
        t_s = m.drive(rm, t, lc.sample.take(1), "replay_sample", rm_worker, cpu, rm_core)
        yield env.timeout(t_s - env.now)
        learn = lc.batch_copy + lc.learn.take(1)
        state["updates"] += 1
        if not lc.param_copy.wall_s or state["updates"] % k.sync_interval == 0:
            state["published"] = state["updates"]
        syncs = due_syncs()
        state["syncs"] += syncs
        copy_now = bool(lc.param_copy.wall_s) and state["updates"] % k.sync_interval == 0
        n_ins, state["pending_inserts"] = state["pending_inserts"], 0

        def learner_branch():
            own = learn.wall_s
            end = m.drive(learner_dev, env.now, learn, "learn", "learner", cpu, learner_core)
            yield env.timeout(end - env.now)
            if syncs:
                sync = lc.sync.take(syncs)
                end = m.drive(learner_dev, env.now, sync, "sync", "learner", cpu,
                              learner_core, syncs)
                own += sync.wall_s
                yield env.timeout(end - env.now)
            if copy_now:
                end = m.drive(learner_dev, env.now, lc.param_copy, "sync", "learner", cpu,
                              learner_core)
                own += lc.param_copy.wall_s
                yield env.timeout(end - env.now)
            return own

        def rm_branch():
            if lc.update is not None:
                end = m.drive(rm, env.now, lc.td_copy + lc.update.take(1), "replay_update",
                              rm_worker, cpu, rm_core)
                yield env.timeout(end - env.now)
            ins = lc.insert(n_ins)
            if ins.wall_s:
                end = m.drive(rm, env.now, ins, "replay_add", rm_worker, cpu, rm_core, n_ins)
                yield env.timeout(end - env.now)

        if rm_overlaps:
            rm_proc = env.process(rm_branch())
            own_s = yield from learner_branch()
            yield rm_proc
        else:
            own_s = yield from learner_branch()
            yield from rm_branch()
        if rm_overlaps:
            clock.spend("learner", "wait:device", "any", max(0.0, env.now - t - own_s), 0)
        state["last_update_end_s"] = env.now
        if k.learner == "async":
            m.mark_iterations(env.now)

    def booked(dev: Device, h: np.ndarray, d: np.ndarray, w: np.ndarray, phase: str,
               worker: str, count: int, bookings: int) -> None:
        """What ``Machine.drive`` accounts for ``bookings`` operations run one after another
        on free devices (their seconds summed in h, d, w): device and core busy time, and
        the worker's clock."""
        if tl is not None:
            drives.append((dev, phase, worker, h, d, w))
        hs, ds, ws = float(np.sum(h)), float(np.sum(d)), float(np.sum(w))
        if ds > 0:
            dev.account(phase, ds, bookings)
        if hs > 0:
            cpu.account("dispatch", hs, bookings)
            clock.spend(worker, "dispatch", cpu.kind, hs, 0)
        clock.spend(worker, phase, dev.kind, ws - hs, count)

    def merged_rounds(rounds: int, chunk: int) -> float:
        """``rounds`` full sync rounds as arrays, not events: nothing overlaps in a round
        (actors on their own cores, then the learner's updates one after another on free
        devices), so each operation ends its wall time after it starts and a round lasts
        the slowest actor's chunk plus the sum of its updates' walls. The same bookings,
        clock entries and cost-row draws as the event loop, summed. Returns the rounds'
        duration."""
        R, A, c = rounds, actors, chunk
        counts = np.full(R, c, dtype=np.int64)
        span, gpu_q = np.zeros(R), np.zeros(R)
        s_reset = c * reset_s_per_step
        chunks, drives[:] = [], []  # for the timeline
        for a in range(A):
            s_env = step_c[a].takes(counts)
            h, d, w = act_c[a].takes(counts)
            s_add = add_cpu[a].takes(counts) if lc.actors_insert else 0.0
            base = s_env + s_reset + s_add
            on_core = base + (h if act_kernels else w)
            own = base + w
            end = np.maximum(on_core, own)
            if act_kernels:
                gpu_q = gpu_q + d if gpu.lanes == 1 else d  # one GPU lane: FIFO behind others
                end = np.where(d > 0, np.maximum(end, gpu_q), end)
                gpu.account("act", float(d.sum()), int(np.count_nonzero(d)))
            cpu.account("env_step", float(on_core.sum()), R)
            clock.spend("actor", "env_step", host, float(s_env.sum()), c * R)
            if s_reset:
                clock.spend("actor", "env_reset", host, s_reset * R, 0)
            if act_kernels:
                clock.spend("actor", "dispatch", host, float(h.sum()), 0)
                clock.spend("actor", "act", act_r.label, float((w - h).sum()), c * R)
            else:
                clock.spend("actor", "act", act_r.label, float(w.sum()), c * R)
            if lc.actors_insert:
                clock.spend("actor", "replay_add", host, float(np.sum(s_add)), c * R)
            clock.spend("actor", "wait:device", "any", float(np.maximum(0.0, end - own).sum()), 0)
            span = np.maximum(span, end)
            if tl is not None:
                chunks.append((a, s_env + s_reset, s_add, on_core - base, d,
                               gpu_q - d if act_kernels and gpu.lanes == 1 else 0.0,
                               end))
        # the learner: U[r] updates after round r, each the sum of its drives' walls
        s0, u0 = state["steps"], state["updates"]
        steps = s0 + c * A * np.arange(1, R + 1, dtype=np.int64)
        due = np.maximum(np.maximum(0, steps - shape.learning_starts) // learn_every, u0)
        U = np.diff(due, prepend=u0)
        n_upd = int(U.sum())
        L = np.zeros(R)
        state["steps"] = int(steps[-1])
        if not n_upd:
            state["pending_inserts"] += int(steps[-1] - s0)
        else:
            r_upd = np.flatnonzero(U)
            h, d, w = lc.sample.takes(U)
            booked(rm, h, d, w, "replay_sample", rm_worker, n_upd, n_upd)
            L += w
            h, d, w = lc.learn.takes(U)
            bc = lc.batch_copy
            h, d, w = h + bc.host_s * U, d + bc.device_s * U, w + bc.wall_s * U
            booked(learner_dev, h, d, w, "learn", "learner", n_upd, n_upd)
            L += w
            if lc.sync is not None:
                if shape.target_sync_steps is None:  # Polyak: one after every update
                    n_sync = U
                else:  # hard copies owed at a round's first update
                    owed = steps[r_upd] // shape.target_sync_steps
                    n_sync = np.zeros(R, dtype=np.int64)
                    n_sync[r_upd] = np.maximum(np.diff(owed, prepend=state["syncs"]), 0)
                    state["syncs"] = max(state["syncs"], int(owed[-1]))
                h, d, w = lc.sync.takes(n_sync)
                n = int(n_sync.sum())
                if shape.target_sync_steps is None:
                    state["syncs"] += n
                booked(learner_dev, h, d, w, "sync", "learner", n,
                       n if shape.target_sync_steps is None else int(np.count_nonzero(n_sync)))
                L += w
            pc = lc.param_copy
            if pc.wall_s:
                done = u0 + np.cumsum(U)
                copies = done // k.sync_interval - np.concatenate(([u0], done[:-1])) \
                    // k.sync_interval
                n = int(copies.sum())
                if n:
                    booked(learner_dev, pc.host_s * copies, pc.device_s * copies,
                           pc.wall_s * copies, "sync", "learner", n, n)
                    L += pc.wall_s * copies
            if lc.update is not None:
                h, d, w = lc.update.takes(U)
                td = lc.td_copy
                h, d, w = h + td.host_s * U, d + td.device_s * U, w + td.wall_s * U
                booked(rm, h, d, w, "replay_update", rm_worker, n_upd, n_upd)
                L += w
            # inserts gathered since the last round with updates, at its first update
            prev = np.concatenate(([s0 - state["pending_inserts"]], steps[r_upd][:-1]))
            n_ins = steps[r_upd] - prev
            state["pending_inserts"] = int(steps[-1] - steps[r_upd[-1]])
            ih, idv, iw = (np.zeros(len(r_upd)) for _ in range(3))
            cnt = 0
            for n in np.unique(n_ins):
                p = lc.insert(int(n))
                if p.wall_s:
                    at = n_ins == n
                    ih[at], idv[at], iw[at] = p.host_s, p.device_s, p.wall_s
                    cnt += int(n) * int(at.sum())
            books = int(np.count_nonzero(iw))
            p0 = lc.insert(0)
            if p0.wall_s:  # the round's later updates insert nothing, at insert(0)'s cost
                more = U[r_upd] - 1
                ih, idv, iw = ih + p0.host_s * more, idv + p0.device_s * more, \
                    iw + p0.wall_s * more
                books += int(more.sum())
            if books:
                booked(rm, ih, idv, iw, "replay_add", rm_worker, cnt, books)
                L[r_upd] += iw
            state["updates"] += n_upd
        ends = np.cumsum(span + L)
        now = env.now
        m.mark_iterations(now + ends)  # sync rounds
        if tl is not None:  # rounds from now + the previous round's end
            show_rounds(now + np.concatenate(([0.0], ends[:-1])), now + ends, span, L, c,
                        chunks, U, r_upd if n_upd else None)
        clock.spend("actor", "wait:learner", "any", float(L.sum()) * A, 0)
        clock.spend("learner", "wait:actors", "any", float(span.sum()), 0)
        if n_upd:
            if state["first_update_s"] is None:
                state["first_update_s"] = now + float(ends[r_upd[0]] - L[r_upd[0]])
            state["last_update_end_s"] = now + float(ends[r_upd[-1]])
        return float(ends[-1])

    def actor_ends(a: int, counts: np.ndarray, account: bool) -> np.ndarray:
        """Landing times of actor a's chunks of ``counts`` steps booked back to back from
        0 on its own core (nothing else delays them: ``merge_async``), advancing its
        cycles; with ``account``, the bookings and clock entries actor_chunk makes."""
        ends, t = [], 0.0
        for lo in range(0, len(counts), _BLOCK):
            n = counts[lo:lo + _BLOCK]
            s_env, s_reset = step_c[a].takes(n), n * reset_s_per_step
            h, d, w = act_c[a].takes(n)
            s_add = add_cpu[a].takes(n) if lc.actors_insert else 0.0
            base = s_env + s_reset + s_add
            on_core = base + (h if act_kernels else w)
            own = base + w
            dur = np.maximum(np.maximum(on_core, own), d)
            end = t + np.cumsum(dur)
            t = float(end[-1])
            ends.append(end)
            if not account:
                continue
            if tl is not None and tl.window_s is not None:  # the chunks in it
                sl = in_window(end - dur, end)
                show_chunks(a, (end - dur)[sl], n[sl], (s_env + s_reset)[sl],
                            sliced(s_add, sl), (on_core - base)[sl], d[sl], (end - dur)[sl])
            elif tl is not None:  # back to back, so one rollout per tile of steps
                cuts = tile_starts(n, COARSE_STEPS)
                show_rollouts(a, cuts, (end - dur)[cuts],
                              end[np.append(cuts[1:], len(n)) - 1], np.add.reduceat(n, cuts),
                              s_env + s_reset, s_add, on_core - base, d)
            steps = int(n.sum())
            cpu.account("env_step", float(on_core.sum()), len(n))
            clock.spend("actor", "env_step", host, float(s_env.sum()), steps)
            if reset_s_per_step:
                clock.spend("actor", "env_reset", host, float(s_reset.sum()), 0)
            if act_kernels:
                gpu.account("act", float(d.sum()), int(np.count_nonzero(d)))
                clock.spend("actor", "dispatch", host, float(h.sum()), 0)
                clock.spend("actor", "act", act_r.label, float((w - h).sum()), steps)
            else:
                clock.spend("actor", "act", act_r.label, float(w.sum()), steps)
            if lc.actors_insert:
                clock.spend("actor", "replay_add", host, float(np.sum(s_add)), steps)
            clock.spend("actor", "wait:device", "any", float((dur - own).sum()), 0)
        return np.concatenate(ends) if ends else np.empty(0)  # no chunk: fewer steps
        # than actors

    def async_chunks() -> tuple[list[np.ndarray], list[np.ndarray]]:
        """Every actor's chunks as the event loop books them: learn_every steps each, in
        order of booking time (ties: actor order), the last booking taking what is left.
        Returns per actor the landing times and step counts, bookings accounted."""
        n_chunks = -(-total_steps // learn_every)
        rem = total_steps - (n_chunks - 1) * learn_every
        cycles = [c for a in range(actors) for c in (step_c[a], act_c[a], add_cpu[a])]
        pos = [c.pos for c in cycles]
        k = n_chunks // actors + 2
        while True:  # probe: enough chunks per actor to cover the first n_chunks bookings
            books = [np.concatenate(([0.0], actor_ends(
                a, np.full(k, learn_every, dtype=np.int64), False)[:-1]))
                for a in range(actors)]
            for c, p in zip(cycles, pos, strict=True):
                c.pos = p
            cut = np.partition(np.concatenate(books), n_chunks - 1)[n_chunks - 1]
            taken = [int(np.searchsorted(b, cut, side="left")) for b in books]
            last = 0
            for a, b in enumerate(books):  # bookings at the cut, in actor order
                if taken[a] < k and b[taken[a]] == cut and sum(taken) < n_chunks:
                    taken[a] += 1
                    last = a
            if max(taken) < k:
                break
            k *= 2
        counts = [np.full(n, learn_every, dtype=np.int64) for n in taken]
        counts[last][-1] = rem
        return [actor_ends(a, counts[a], True) for a in range(actors)], counts

    def async_merged() -> float:
        """The async loop when no two processes contend for a lane (``merge_async``): the
        actors' chunks land at fixed times; update u starts when the learner is free and
        the data allows it, max(end of update u-1, landing that brings learning_starts +
        u·learn_every steps), and lasts its sample plus the longer of PEARL's two branches
        (learn, syncs and parameter sends; priority update and inserts), a max-plus
        recurrence solved as numpy scans in blocks of updates. Target syncs and inserts
        owed at an update depend on the steps landed by its start: iterated to a fixed
        point per block. Bookings, clock entries, cost-row draws and the policy-lag
        histogram as the event loop makes them. Returns the end of the run."""
        ends, counts = async_chunks()
        land_all, n_all = np.concatenate(ends), np.concatenate(counts)
        order = np.argsort(land_all, kind="stable")
        land, cum = land_all[order], np.cumsum(n_all[order])
        del order

        def landed(t: np.ndarray) -> np.ndarray:
            """Env steps landed by ascending times t (landings at t included), searched
            in the slice of landings they span (cache-friendly)."""
            lo = int(np.searchsorted(land, t[0], side="right"))
            hi = int(np.searchsorted(land, t[-1], side="right"))
            i = lo + np.searchsorted(land[lo:hi], t, side="right")
            return np.where(i > 0, cum[np.maximum(i - 1, 0)], 0)

        ls, si = shape.learning_starts, k.sync_interval
        n_upd = max(0, total_steps - ls) // learn_every
        tss = shape.target_sync_steps
        pc = lc.param_copy
        starts = np.empty(n_upd)
        # what an update owes depends on the steps landed by its start only with hard
        # target copies or inserts on the replay manager
        owed_vary = (lc.sync is not None and tss is not None) or not lc.actors_insert
        end_prev, s_prev, waited, synced = 0.0, 0, 0.0, 0
        for u0 in range(0, n_upd, _BLOCK):
            u = np.arange(u0 + 1, min(n_upd, u0 + _BLOCK) + 1, dtype=np.int64)
            ones = np.ones(len(u), dtype=np.int64)
            need = ls + u * learn_every
            lo = int(np.searchsorted(cum, need[0], side="left"))
            hi = int(np.searchsorted(cum, need[-1], side="left")) + 1
            avail = land[lo + np.searchsorted(cum[lo:hi], need, side="left")]
            hS, dS, wS = lc.sample.takes(ones)
            hL, dL, wL = lc.learn.takes(ones)
            bc = lc.batch_copy
            hL, dL, wL = hL + bc.host_s, dL + bc.device_s, wL + bc.wall_s
            copies = (u % si == 0).astype(np.int64) if pc.wall_s else 0 * ones
            hU = dU = wU = np.zeros(len(u))
            if lc.update is not None:
                td = lc.td_copy
                hU, dU, wU = lc.update.takes(ones)
                hU, dU, wU = hU + td.host_s, dU + td.device_s, wU + td.wall_s
            fixed = (eff(hS, dS, wS), eff(hL, dL, wL) + eff(pc.host_s, pc.device_s,
                                                               pc.wall_s) * copies,
                     eff(hU, dU, wU))
            sync_pos = lc.sync.pos if lc.sync is not None else 0
            s_at = landed(avail) if owed_vary else ones
            def settle(s_at, ones=ones, synced=synced, s_prev=s_prev, sync_pos=sync_pos,
                       fixed=fixed, avail=avail, end_prev=end_prev):
                """One pass of the recurrence for owed syncs and inserts given s_at."""
                n_sync, n_ins = owed_at(s_at, ones, synced, s_prev)
                hY = dY = wY = np.zeros(len(ones))
                if lc.sync is not None:
                    lc.sync.pos = sync_pos
                    hY, dY, wY = lc.sync.takes(n_sync)
                hI, dI, wI = inserts(n_ins)
                dur = fixed[0] + np.maximum(fixed[1] + eff(hY, dY, wY),
                                            fixed[2] + eff(hI, dI, wI))
                D = np.cumsum(dur)
                end = D + np.maximum(end_prev, np.maximum.accumulate(avail - (D - dur)))
                return n_sync, n_ins, (hY, dY, wY), (hI, dI, wI), dur, end, end - dur

            for _ in range(_FIXED_POINT_ROUNDS):
                n_sync, n_ins, (hY, dY, wY), (hI, dI, wI), dur, end, start = settle(s_at)
                if not owed_vary:
                    s_at = landed(start[-1:])
                    break
                s_new = landed(start)
                if np.array_equal(s_new, s_at):
                    break
                s_at = s_new
            else:  # owed syncs/inserts flip with the landings they wait for (slow
                # updates): solve update by update, as the event loop does, then book it
                s_at = sequential_landed(landed, fixed, avail, end_prev, synced, s_prev,
                                         sync_pos)
                n_sync, n_ins, (hY, dY, wY), (hI, dI, wI), dur, end, start = settle(s_at)
            n = len(u)
            drives[:] = []  # for the timeline
            booked(rm, hS, dS, wS, "replay_sample", rm_worker, n, n)
            booked(learner_dev, hL, dL, wL, "learn", "learner", n, n)
            if lc.sync is not None and n_sync.any():
                booked(learner_dev, hY, dY, wY, "sync", "learner", int(n_sync.sum()),
                       int(np.count_nonzero(n_sync)))
            if copies.any():
                c = int(copies.sum())
                booked(learner_dev, pc.host_s * copies, pc.device_s * copies,
                       pc.wall_s * copies, "sync", "learner", c, c)
            if lc.update is not None:
                booked(rm, hU, dU, wU, "replay_update", rm_worker, n, n)
            if wI.any():
                at = wI > 0
                booked(rm, hI, dI, wI, "replay_add", rm_worker, int(n_ins[at].sum()),
                       int(at.sum()))
            own = wL + wY + pc.wall_s * copies
            clock.spend("learner", "wait:device", "any",
                        float(np.maximum(0.0, end - start - own).sum()), 0)
            waited += float(np.maximum(0.0, start - np.concatenate(([end_prev], end[:-1])))
                            .sum())
            starts[u0:u0 + n] = start
            if tl is not None and tl.window_s is not None:  # sample, then PEARL's two
                sl = in_window(start, end)  # branches from its end, for updates in it
                t_s = (start + eff(hS, dS, wS))[sl]
                at = {"learner": t_s, "replay_manager": t_s}
                for dev, phase, worker, h, d, w in drives[1:]:
                    branch = "replay_manager" if phase.startswith("replay") else "learner"
                    h, d, w = (sliced(x, sl) for x in (h, d, w))
                    show_drive(dev, phase, worker, h, d, at[branch], ones[sl])
                    at[branch] = at[branch] + eff(h, d, w)
                show_drive(rm, "replay_sample", rm_worker, hS[sl], dS[sl], start[sl],
                           ones[sl])
            elif tl is not None:
                cuts = tile_starts(np.full(n, learn_every), COARSE_STEPS)
                show_updates(start[cuts], end[np.append(cuts[1:], n) - 1],
                             np.add.reduceat(ones, cuts), tile_sums(cuts, n))
            m.mark_iterations(end)
            end_prev, s_prev = float(end[-1]), int(s_at[-1])
            synced = s_prev // tss if tss else synced + n
        t_end = max(float(land[-1]), end_prev)
        clock.spend("learner", "wait:actors", "any", waited + float(land[-1]) - min(
            float(land[-1]), end_prev if n_upd else 0.0), 0)
        # policy lag: updates started before a chunk lands, less those its actor's
        # parameters had when it was booked (the actor's previous landing)
        for e, c in zip(ends, counts, strict=True):
            done = np.searchsorted(starts, e, side="left")
            had = np.concatenate(([0], done[:-1]))
            if pc.wall_s:
                had = had // si * si
            hist = np.bincount(done - had, weights=c)
            for lag in np.flatnonzero(hist):
                staleness[int(lag)] = staleness.get(int(lag), 0) + int(hist[lag])
        state.update(booked=total_steps, steps=total_steps, updates=n_upd,
                     published=n_upd if not pc.wall_s else n_upd // si * si,
                     pending_inserts=total_steps - s_prev,
                     syncs=synced if lc.sync is not None else 0)
        if n_upd:
            state["first_update_s"], state["last_update_end_s"] = float(starts[0]), end_prev
        return t_end

    def owed_at(s_at: np.ndarray, ones: np.ndarray, synced: int,
                s_prev: int) -> tuple[np.ndarray, np.ndarray]:
        """Target syncs (due_syncs) and inserts (pending_inserts) owed at updates whose
        starts see s_at env steps landed."""
        n_ins = np.diff(s_at, prepend=s_prev)
        if lc.sync is None or shape.target_sync_steps is None:
            return ones, n_ins
        return np.maximum(np.diff(s_at // shape.target_sync_steps, prepend=synced), 0), n_ins

    def sequential_landed(landed, fixed, avail, end_prev: float, synced: int, s_prev: int,
                          sync_pos: int) -> np.ndarray:
        """Env steps landed at each update's start, one update at a time: start_i =
        max(end_{i-1}, avail_i), and what it owes (so how long it lasts) follows from the
        steps landed by then. Exact where the block-wise fixed point does not settle."""
        one = np.ones(1, dtype=np.int64)
        s_at = np.empty(len(avail), dtype=np.int64)
        end = end_prev
        if lc.sync is not None:
            lc.sync.pos = sync_pos
        for i in range(len(avail)):
            start = max(end, float(avail[i]))
            s_at[i] = landed(np.array([start]))[0]
            n_sync, n_ins = owed_at(s_at[i:i + 1], one, synced, s_prev)
            y = float(eff(*lc.sync.takes(n_sync))[0]) if lc.sync is not None else 0.0
            ins = float(eff(*inserts(n_ins))[0])
            end = start + float(fixed[0][i] + np.maximum(fixed[1][i] + y,
                                                         fixed[2][i] + ins))
            s_prev = int(s_at[i])
            if shape.target_sync_steps:
                synced = max(synced, s_prev // shape.target_sync_steps)
        return s_at

    def inserts(n_ins: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The RM's inserts of n_ins[i] transitions (lc.insert), as arrays."""
        h, d, w = (np.zeros(len(n_ins)) for _ in range(3))
        if lc.actors_insert:
            return h, d, w
        for n in np.unique(n_ins):
            p = lc.insert(int(n))
            if p.wall_s:
                at = n_ins == n
                h[at], d[at], w[at] = p.host_s, p.device_s, p.wall_s
        return h, d, w

    # merged rounds also need the actors' parameters fresh at every round (no policy lag)
    no_lag = not lc.param_copy.wall_s or k.sync_interval == 1
    merge = (not m.reference and actors <= cores.n and no_lag
             and (not act_kernels or gpu.lanes == 1 or gpu.lanes >= actors))

    # async: merged when no lane is shared (actors on their own cores; each device has a
    # lane for every process that may hold it at once: actors acting on it, RM, learner)
    holders: dict[int, list] = {}
    for dev, n in ((gpu, actors if act_kernels else 0), (rm, 1), (learner_dev, 1)):
        if dev is not None:
            holders.setdefault(id(dev), [dev, 0])[1] += n
    merge_async = (MERGE_ASYNC and not m.reference and actors <= cores.n
                   and all(dev.lanes >= n for dev, n in holders.values()))

    # actors step one operation at a time (actor_steps) in the reference engine, and in
    # the fast one wherever two actors share a lane (more actors than cores, or acting on
    # a GPU with fewer lanes than actors): a chunk booked as one job would hold the lane
    # for all its steps and queue its kernels as one block, 0.8-4.6 % off the per-step
    # schedule (benchmarks/reference_agreement.py)
    per_step = m.reference or actors > cores.n or (act_kernels and gpu.lanes < actors)
    # the async learner books an update's drives ahead of the clock (update), unless
    # actors act on a device it uses: then each drive is booked when it starts, so acts
    # that arrive first go first (booked ahead, the learner ran 1.8 % fast)
    at_arrival = m.reference or (act_kernels and (rm is gpu or learner_dev is gpu))

    def async_run():
        yield env.timeout(async_merged())

    def sync_loop():
        """Rounds: every actor runs a chunk, then the learner catches up; nobody overlaps."""
        chunk = max(1, round(learn_every / actors))
        while merge and (full := (total_steps - state["steps"]) // (chunk * actors)):
            yield env.timeout(merged_rounds(min(full, 1 << 16), chunk))
        while state["steps"] < total_steps:
            t0 = env.now
            ends = []
            for a in range(actors):
                n = min(chunk, total_steps - state["steps"])
                if n <= 0:
                    break
                ends.append(env.process(actor_steps(a, n)) if per_step
                            else actor_chunk(a, n))
                lag = state["updates"] - state["published"]  # the learner waits: no updates
                staleness[lag] = staleness.get(lag, 0) + n  # during the chunk
                state["steps"] += n
                state["pending_inserts"] += n
            if per_step:
                yield env.all_of(ends)
                t_round = t = env.now
                for _ in range(due_updates()):
                    if m.reference:
                        yield from update_steps()
                    else:
                        t = update(t)
                t = max(t, env.now)
            else:
                t_round = max(ends)
                t = t_round
                for _ in range(due_updates()):
                    t = update(t)
            yield env.timeout(t - env.now)
            m.mark_iterations(t)  # a sync round
            clock.spend("actor", "wait:learner", "any", (t - t_round) * len(ends), 0)
            clock.spend("learner", "wait:actors", "any", t_round - t0, 0)

    def async_actor(a: int):
        while state["booked"] < total_steps:
            n = min(1 if per_step else learn_every, total_steps - state["booked"])
            state["booked"] += n
            version = state["published"]  # the parameters this chunk acts with
            if per_step:
                yield from actor_steps(a, n)
            else:
                end = actor_chunk(a, n)
                yield env.timeout(end - env.now)
            lag = state["updates"] - version  # behind the learner when its data lands
            staleness[lag] = staleness.get(lag, 0) + n
            state["steps"] += n  # the learner sees these transitions only now
            state["pending_inserts"] += n
            ev, data_ready[0] = data_ready[0], env.event()
            ev.succeed()

    def async_learner():
        """Updates as fast as the devices allow, never ahead of the data."""
        while True:
            if due_updates() <= 0:
                if state["steps"] >= total_steps:
                    return
                t0 = env.now
                yield data_ready[0]
                clock.spend("learner", "wait:actors", "any", env.now - t0, 0)
                continue
            if at_arrival:
                yield from update_steps()
            else:
                end = update(env.now)
                yield env.timeout(end - env.now)

    if k.learner == "sync":
        env.process(sync_loop())
    elif merge_async:
        env.process(async_run())
    else:
        for a in range(actors):
            env.process(async_actor(a))
        env.process(async_learner())
    env.run()
    if job is not None:  # per-action energy of the replay part's own model
        rmm = replay_r.model
        inserted = state["steps"] - state["pending_inserts"]
        for op, n in (("sample", state["updates"]),
                      ("update", state["updates"] if shape.prioritized else 0),
                      ("insert", inserted)):
            for label, joules in rmm.replay_joules(job, op, n).items():
                rm.add_action_energy(label, joules)
    # warm-up: until the first update, or the whole run when it never came
    breakdown = {"warmup_s": (env.now if state["first_update_s"] is None
                              else state["first_update_s"])}
    if state["updates"]:
        breakdown["iteration_s"] = ((state["last_update_end_s"] - state["first_update_s"])
                                    / state["updates"])
    merged = state["steps"] - sum(staleness.values())  # merged rounds: no lag by construction
    if merged:
        staleness[0] = staleness.get(0, 0) + merged
    return Outcome(env_steps=state["steps"], updates=state["updates"], breakdown_s=breakdown,
                   staleness_updates=staleness,
                   gpu_memory_peak_bytes=int(need - swapped),
                   swapped_bytes=int(swapped), checks=checks,
                   host_memory_bytes=host_memory_bytes(m, shape, capacity, batch, swapped))

