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

Merged events: an actor's chunk of steps is booked as one job per device it uses (its
core for env steps, and the GPU for its batch-1 inferences when `act: gpu`), so events
grow with chunks and updates, not with steps. Per-step GPU/CPU interleaving inside a
chunk is not resolved: a chunk's inferences queue on the GPU as one block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rldse.models import OpColumns
from rldse.models.cpu import roofline_seconds, with_work
from rldse.models.kinds import ReplayJob
from rldse.sim.device import Device
from rldse.sim.lanes import Lanes
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.system import HOST_KIND
from rldse.workloads.common.mlp import F32, Work


@dataclass(frozen=True)
class Shape:
    """What the program needs to know about the real loop (from the trace's workload_info)."""

    batch: int
    learn_every: int
    capacity: int
    transition_bytes: int
    obs_bytes: int  # one observation, host to device when actors infer on a GPU
    act_layers: int  # layers of the network actors run (GPU kernels per layer)
    learn_layers: int  # layers the learner's forward/backward passes go through
    act_params: int  # parameters an actor needs for inference (sent on sync)
    learn_params: int  # parameters the learner trains (plus Adam state on its device)
    target_sync_steps: int | None  # env steps between hard target copies (DQN's schedule,
    # warm-up included); None: a Polyak update after every learner update (DDPG)
    prioritized: bool
    learning_starts: int  # env steps before the first update (random warm-up)
    learn_work: Callable[[int], Work]  # analytic work of one update at a batch size
    am_searches_per_item: float = 1.0  # replay on am: TCAM searches per sampled item
    am_writes_per_update_item: float = 1.0  # replay on am: rows written per updated item


class _Costs:
    """Per-operation costs on the placed devices, for this system's batch size."""

    def __init__(self, m: Machine, shape: Shape, batch: int) -> None:
        self.m, self.shape, self.batch = m, shape, batch
        self.gpu = m.model("gpu") if "gpu" in m.models else None

    # -- trace rows of a phase, with batch-dependent work rescaled to this batch --------
    def _rescaled(self, phase: str, work: Work | None) -> OpColumns:
        ops = self.m.trace_ops(phase)
        if work is None:
            return ops
        return with_work(self.m.model("cpu").host, ops, float(work.flops), float(work.bytes),
                         self.batch)

    def cycle(self, phase: str, kind: str, work: Work | None = None) -> Cycle:
        ops = self._rescaled(phase, work)
        if kind != "gpu":
            costs = self.m.model(kind).op_seconds(ops)
        elif phase == "act":
            # greedy steps run the network on the GPU, with the observation in and the
            # action out; exploring steps (no flops: no network) stay on the actor's core
            on_gpu = self.gpu.op_seconds(ops, layers=self.shape.act_layers) + self.copy_s(
                self.shape.obs_bytes) + self.copy_s(F32)
            costs = np.where(ops.flops > 0, on_gpu, self.m.model("cpu").op_seconds(ops))
        else:
            costs = self.gpu.op_seconds(ops, layers=self.shape.learn_layers)
        return Cycle(np.asarray(costs), start=int(self.m.rng.integers(len(ops))))

    def copy_s(self, nbytes: float) -> float:
        return float(self.gpu.copy_seconds(nbytes)) if self.gpu is not None else 0.0


class _Fixed:
    """A constant per-operation cost with the `take(k)` interface of a Cycle."""

    def __init__(self, value_s: float) -> None:
        self.value_s = value_s

    def take(self, k: int) -> float:
        return k * self.value_s


class _Plus:
    """Another cost plus a constant per operation (e.g. a swap-in before each sample)."""

    def __init__(self, base, extra_s: float) -> None:
        self.base, self.extra_s = base, extra_s

    def take(self, k: int) -> float:
        return self.base.take(k) + k * self.extra_s


@dataclass
class _LearnerCosts:
    """Where the replay manager (rm) and learner run, and what each of their steps costs."""

    rm: Device
    learner: Device
    sample: _Fixed | Cycle
    update: _Fixed | Cycle | None  # None: uniform replay, no priority update
    learn: _Fixed | Cycle
    sync: Cycle | None  # target-network sync (schedule: Shape.target_sync_steps)
    actors_insert: bool  # replay in host memory: actors pay their own inserts
    insert: Callable[[int], float] = lambda n: 0.0  # RM cost of inserting n new transitions
    batch_copy_s: float = 0.0  # host replay -> GPU learner
    td_copy_s: float = 0.0  # GPU learner -> host replay, for priorities
    param_copy_s: float = 0.0  # learner -> actors on another device


def _learner_costs(m: Machine, shape: Shape, costs: _Costs, batch: int,
                   job: ReplayJob | None) -> _LearnerCosts:
    """``job``: what the replay part's own model serves (None: replay on the CPU or a
    measured table)."""
    place = m.spec.placement
    bytes_batch = batch * shape.transition_bytes
    if place.replay == "table" or place.learn == "table":
        # PEARL's protocol on measured tables: one sample, update, insert and learn per
        # iteration, at the table's latencies; links and target syncs are not in its model
        t = m.spec.table
        insert_s = m.table_seconds(t.replay, "replay_add")  # one primitive per iteration
        return _LearnerCosts(
            rm=m.device(f"table:{t.replay}"), learner=m.device(f"table:{t.learn}"),
            sample=_Fixed(m.table_seconds(t.replay, "replay_sample")),
            update=_Fixed(m.table_seconds(t.replay, "replay_update")),
            learn=_Fixed(m.table_seconds(t.learn, "learn")), sync=None, actors_insert=False,
            insert=lambda n: insert_s)
    learner = m.placed("learn")
    lc = _LearnerCosts(
        rm=m.placed("replay"), learner=learner, sample=_Fixed(0.0), update=None,
        learn=costs.cycle("learn", place.learn, shape.learn_work(batch)),
        sync=costs.cycle("sync", place.learn) if _rows(m, "sync") else None,
        actors_insert=place.replay == HOST_KIND)
    if place.replay == HOST_KIND:  # the trace's own rows, rescaled to the target CPU
        lc.sample = costs.cycle("replay_sample", HOST_KIND)
        if shape.prioritized and _rows(m, "replay_update"):
            lc.update = costs.cycle("replay_update", HOST_KIND)
    else:  # the kind's own replay model (rldse.models.kinds.ReplayJob)
        rmm = m.model(place.replay)
        lc.sample = _Fixed(rmm.replay_seconds(job, "sample", 1))
        if shape.prioritized:
            lc.update = _Fixed(rmm.replay_seconds(job, "update", 1))
        lc.insert = lambda n: rmm.replay_seconds(job, "insert", n)
    if place.learn == "gpu" and place.replay != "gpu":
        lc.batch_copy_s = costs.copy_s(bytes_batch)
        lc.td_copy_s = costs.copy_s(batch * F32) if lc.update is not None else 0.0
    if place.learn != place.act:
        lc.param_copy_s = costs.copy_s(shape.act_params * F32)
    return lc


def replay_job(m: Machine, shape: Shape, batch: int, capacity: int) -> ReplayJob:
    """What the replay manager serves, for a kind's own replay model. The host gathers a
    sampled batch from host memory when the part keeps only priorities (TCAM)."""
    gather_s = float(roofline_seconds(m.model(HOST_KIND).spec, 0, batch * shape.transition_bytes,
                                      batch))
    return ReplayJob(batch=batch, capacity=capacity, transition_bytes=shape.transition_bytes,
                     prioritized=shape.prioritized, host_gather_s=gather_s,
                     searches_per_item=shape.am_searches_per_item,
                     writes_per_update_item=shape.am_writes_per_update_item)


def _reset_s_per_step(m: Machine) -> float:
    """Episode resets folded into steps: mean reset cost × resets per env step in the trace."""
    if not _rows(m, "env_reset"):
        return 0.0
    resets = m.phase_cost("env_reset", "cpu")
    return float(resets.sum()) / max(m.trace.env_steps, 1)


def _rows(m: Machine, phase: str) -> bool:
    return bool((m.trace.ops["phase"] == phase).any())


def program(m: Machine, shape: Shape) -> Outcome:
    """Run the off-policy loop on machine `m`; see the module docstring."""
    k = m.knobs
    batch, learn_every, capacity = k.batch_size, k.learn_every, k.replay_capacity
    total_steps, actors = k.env_steps, k.actors
    costs = _Costs(m, shape, batch)
    place = m.spec.placement
    cpu = m.device("cpu")
    gpu = m.gpus[0] if m.gpus else None
    cores = Lanes(min(k.cores or cpu.lanes, cpu.lanes))  # the actors' cores
    rm_overlaps = k.learner == "async"

    # ---- per-operation costs -------------------------------------------------------
    step_c = [m.cycle("env_step", "cpu") for _ in range(actors)]
    reset_s_per_step = _reset_s_per_step(m)
    act_c = [costs.cycle("act", place.act) for _ in range(actors)]
    add_cpu = [m.cycle("replay_add", "cpu") for _ in range(actors)]
    own_model = place.replay not in (HOST_KIND, "table")  # a kind's own replay model
    job = replay_job(m, shape, batch, capacity) if own_model else None
    lc = _learner_costs(m, shape, costs, batch, job)
    rm, learner_dev = lc.rm, lc.learner

    # ---- capacities ----------------------------------------------------------------
    need = 0
    if place.learn == "gpu":
        need += 4 * shape.learn_params * F32  # params, grads, Adam m and v
        need += 4 * batch * shape.transition_bytes  # batch and activations (first order)
    if place.replay == "gpu":
        need += capacity * shape.transition_bytes
    gpu_ok = bool(costs.gpu.fits(need)) if costs.gpu is not None and need else True
    swapped = 0
    if not gpu_ok and k.gpu_swap and place.replay == "gpu":
        swapped = capacity * shape.transition_bytes
        lc.sample = _Plus(lc.sample, costs.copy_s(batch * shape.transition_bytes))
    checks = {"gpu_memory": gpu_ok or bool(swapped)} if costs.gpu is not None else {}
    if job is not None:
        checks.update(m.model(place.replay).replay_checks(job))

    # ---- processes -----------------------------------------------------------------
    env, clock = m.env, m.clock
    rm_worker = "replay_manager" if rm_overlaps else "learner"
    clock.instances.update(actor=actors, learner=1, replay_manager=1)
    state = {"booked": 0, "steps": 0, "updates": 0, "pending_inserts": 0, "syncs": 0,
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

    def actor_chunk(a: int, n: int) -> float:
        """Book actor a's next n steps on a core (and the GPU if it infers there) from now;
        return when they end."""
        t0 = env.now
        s_reset = n * reset_s_per_step
        s_env, s_act = step_c[a].take(n) + s_reset, act_c[a].take(n)
        s_add = add_cpu[a].take(n) if lc.actors_insert else 0.0
        on_core = s_env + s_add + (s_act if place.act == "cpu" else 0.0)
        end = cpu.book_on(cores, t0, on_core, "env_step")
        if place.act == "gpu":
            end = gpu.book(end, s_act, "act")
        clock.spend("actor", "env_step", "cpu", s_env - s_reset, n)
        if s_reset:
            clock.spend("actor", "env_reset", "cpu", s_reset, 0)
        clock.spend("actor", "act", place.act, s_act, n)
        if s_add:
            clock.spend("actor", "replay_add", "cpu", s_add, n)
        clock.spend("actor", "wait:device", "any", max(0.0, end - t0 - on_core -
                                                       (s_act if place.act == "gpu" else 0)), 0)
        return end

    def update(t: float) -> float:
        """One learner update from time t; returns its end time. Sync: every step one after
        another, as the real loop does. Async: PEARL's overlap of RM and learner."""
        if state["first_update_s"] is None:
            state["first_update_s"] = t
        s_sample = lc.sample.take(1)
        t_s = rm.book(t, s_sample, "replay_sample")
        clock.spend(rm_worker, "replay_sample", place.replay, s_sample)
        # learner branch: batch copy, gradient step, target sync, parameters to actors
        s_learn = lc.batch_copy_s + lc.learn.take(1)
        t_l = learner_dev.book(t_s, s_learn, "learn")
        own_s = s_learn
        state["updates"] += 1
        syncs = due_syncs()
        if syncs:
            s_sync = lc.sync.take(syncs)
            state["syncs"] += syncs
            t_l = learner_dev.book(t_l, s_sync, "sync")
            clock.spend("learner", "sync", place.learn, s_sync, syncs)
            own_s += s_sync
        if lc.param_copy_s and state["updates"] % k.sync_interval == 0:
            t_l = learner_dev.book(t_l, lc.param_copy_s, "sync")
            clock.spend("learner", "sync", place.learn, lc.param_copy_s)
            own_s += lc.param_copy_s
        clock.spend("learner", "learn", place.learn, s_learn)
        # RM branch: priority update, then the inserts gathered since the last update
        t_r = t_s if rm_overlaps else t_l
        if lc.update is not None:
            s_upd = lc.td_copy_s + lc.update.take(1)
            t_r = rm.book(t_r, s_upd, "replay_update")
            clock.spend(rm_worker, "replay_update", place.replay, s_upd)
        n_ins, state["pending_inserts"] = state["pending_inserts"], 0
        s_ins = lc.insert(n_ins)
        if s_ins:
            t_r = rm.book(t_r, s_ins, "replay_add")
            clock.spend(rm_worker, "replay_add", place.replay, s_ins, n_ins)
        end = max(t_l, t_r)
        if rm_overlaps:  # the learner's own time beyond its work is waiting on others
            clock.spend("learner", "wait:device", "any", max(0.0, end - t - own_s), 0)
        state["last_update_end_s"] = end
        return end

    def sync_loop():
        """Rounds: every actor runs a chunk, then the learner catches up; nobody overlaps."""
        chunk = max(1, round(learn_every / actors))
        while state["steps"] < total_steps:
            t0 = env.now
            ends = []
            for a in range(actors):
                n = min(chunk, total_steps - state["steps"])
                if n <= 0:
                    break
                ends.append(actor_chunk(a, n))
                state["steps"] += n
                state["pending_inserts"] += n
            t_round = max(ends)
            t = t_round
            for _ in range(due_updates()):
                t = update(t)
            yield env.timeout(t - env.now)
            clock.spend("actor", "wait:learner", "any", (t - t_round) * len(ends), 0)
            clock.spend("learner", "wait:actors", "any", t_round - t0, 0)

    def async_actor(a: int):
        while state["booked"] < total_steps:
            n = min(learn_every, total_steps - state["booked"])
            state["booked"] += n
            end = actor_chunk(a, n)
            yield env.timeout(end - env.now)
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
            end = update(env.now)
            yield env.timeout(end - env.now)

    if k.learner == "sync":
        env.process(sync_loop())
    else:
        for a in range(actors):
            env.process(async_actor(a))
        env.process(async_learner())
    env.run()
    if job is not None:  # per-action energy of the replay part's own model
        rmm = m.model(place.replay)
        inserted = state["steps"] - state["pending_inserts"]
        for op, n in (("sample", state["updates"]),
                      ("update", state["updates"] if shape.prioritized else 0),
                      ("insert", inserted)):
            for label, joules in rmm.replay_joules(job, op, n).items():
                rm.add_action_energy(label, joules)
    breakdown = {}
    if state["updates"]:
        breakdown["iteration_s"] = ((state["last_update_end_s"] - state["first_update_s"])
                                    / state["updates"])
    return Outcome(env_steps=state["steps"], updates=state["updates"], breakdown_s=breakdown,
                   gpu_memory_peak_bytes=int(need - swapped),
                   swapped_bytes=int(swapped), checks=checks)
