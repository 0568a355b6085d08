"""The simulated twin of the off-policy loop that dqn.py and ddpg.py run for real.

Actors step environments, choose actions and insert transitions; a learner samples a
batch, learns, and updates priorities; parameters go back to the actors. Placement
(SystemSpec.placement) puts `act`, `replay` and `learn` on CPU, GPU or TCAM (replay).

Per learner update the replay manager (RM) and learner (L) follow PEARL's protocol
(Meng et al., arXiv 2311.09445): sample on RM, then the priority update and the inserts
of the transitions gathered since the last update on RM *overlap* the gradient step on
L, so an iteration costs T_sample + max(T_update + T_insert, T_learn) when nothing else
contends. With replay on the CPU the inserts are the actors' own work (they run on the
actors' cores, as in the real loop); on a GPU or TCAM they go to that device.

`learner: sync` alternates: every actor runs a chunk of steps, then the learner does the
updates that keep the trace's update-to-data ratio, while actors wait (the real loop).
`learner: async` lets actors run freely; the learner updates whenever enough new data
has arrived (it never gets ahead of the data: updates ≤ steps / learn_every).

Merged events: an actor's chunk of steps is booked as one job per device it uses (its
core for env steps, and the GPU for its batch-1 inferences when `act: gpu`), so events
grow with chunks and updates, not with steps. Per-step GPU/CPU interleaving inside a
chunk is not resolved: a chunk's inferences queue on the GPU as one block.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from rldse.errors import RldseError
from rldse.models import OpColumns
from rldse.models.cpu import roofline_seconds
from rldse.sim.device import Device
from rldse.sim.machine import Cycle, Machine, Outcome
from rldse.workloads.mlp import F32, Work

F32_BYTES = F32


@dataclass(frozen=True)
class Shape:
    """What the program needs to know about the real loop (from the trace's workload_info)."""

    batch: int
    learn_every: int
    capacity: int
    transition_bytes: int
    act_params: int  # parameters an actor needs for inference (sent on sync)
    learn_params: int  # parameters the learner trains (plus Adam state on its device)
    target_sync: int  # updates between target-network syncs (1: Polyak every update)
    prioritized: bool
    learning_starts: int  # env steps before the first update (random warm-up)
    learn_work: Callable[[int], Work]  # analytic work of one update at a batch size
    am_searches_per_item: float = 1.0  # replay on am: TCAM searches per sampled item
    am_writes_per_update_item: float = 1.0  # replay on am: rows written per updated item


def trace_env_steps(m: Machine) -> int:
    ops = m.trace.ops
    return int(ops.loc[ops["phase"] == "env_step", "items"].sum())


class _Costs:
    """Per-operation costs on the placed devices, for this system's batch size."""

    def __init__(self, m: Machine, shape: Shape, batch: int) -> None:
        self.m, self.shape, self.batch = m, shape, batch
        place = m.spec.placement
        self.act_kind, self.replay_kind, self.learn_kind = place.act, place.replay, place.learn
        self.gpu = m.model("gpu") if "gpu" in m.models else None

    # -- trace rows of a phase, with batch-dependent work rescaled to this batch --------
    def _rescaled(self, phase: str, work: Work | None) -> OpColumns:
        ops = self.m.trace_ops(phase)
        if work is None:
            return ops
        cpu = self.m.model("cpu")
        old = roofline_seconds(cpu.host, ops.flops, ops.bytes, ops.touches)
        flops = np.full(len(ops), float(work.flops))
        bytes_ = np.full(len(ops), float(work.bytes))
        new = roofline_seconds(cpu.host, flops, bytes_, ops.touches)
        explained = np.minimum(ops.host_dur_s, old)
        scale = np.divide(new, old, out=np.ones_like(old), where=old > 0)
        host_dur = ops.host_dur_s - explained + explained * scale
        items = np.full(len(ops), float(self.batch))
        return OpColumns(phase=ops.phase, dtype=ops.dtype, items=items, flops=flops,
                         bytes=bytes_, touches=ops.touches, host_dur_s=host_dur)

    def cycle(self, phase: str, kind: str, work: Work | None = None) -> Cycle:
        ops = self._rescaled(phase, work)
        if kind == "gpu":
            costs = self.gpu.op_seconds(ops, layers=self.m.layers)
        else:
            costs = self.m.model(kind).op_seconds(ops)
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
    sync: Cycle | None  # target-network sync, every shape.target_sync updates
    actors_insert: bool  # replay in host memory: actors pay their own inserts
    insert_per_transition_s: float = 0.0  # device-resident replay: RM cost per insert
    insert_per_update_s: float = 0.0  # PEARL tables: one insert primitive per iteration
    batch_copy_s: float = 0.0  # host replay -> GPU learner
    td_copy_s: float = 0.0  # GPU learner -> host replay, for priorities
    param_copy_s: float = 0.0  # learner -> actors on another device


def _learner_costs(m: Machine, shape: Shape, costs: _Costs, batch: int,
                   capacity: int) -> _LearnerCosts:
    place, gm = m.spec.placement, costs.gpu
    bytes_batch = batch * shape.transition_bytes
    if place.replay == "table" or place.learn == "table":
        # PEARL's protocol on measured tables: one sample, update, insert and learn per
        # iteration, at the table's latencies; links and target syncs are not in its model
        t = m.spec.table
        return _LearnerCosts(
            rm=m.device(f"table:{t.replay}"), learner=m.device(f"table:{t.learn}"),
            sample=_Fixed(m.table_seconds(t.replay, "replay_sample")),
            update=_Fixed(m.table_seconds(t.replay, "replay_update")),
            learn=_Fixed(m.table_seconds(t.learn, "learn")), sync=None, actors_insert=False,
            insert_per_update_s=m.table_seconds(t.replay, "replay_add"))
    learner = m.device("cpu") if place.learn == "cpu" else m.gpus[0]
    lc = _LearnerCosts(
        rm=m.device("cpu"), learner=learner, sample=_Fixed(0.0), update=None,
        learn=costs.cycle("learn", place.learn, shape.learn_work(batch)),
        sync=costs.cycle("sync", place.learn) if _rows(m, "sync") else None,
        actors_insert=place.replay == "cpu")
    if place.replay == "cpu":
        lc.sample = costs.cycle("replay_sample", "cpu")
        if shape.prioritized and _rows(m, "replay_update"):
            lc.update = costs.cycle("replay_update", "cpu")
    elif place.replay == "gpu":
        lc.rm = m.gpus[0]
        lc.sample = _Fixed(float(gm.sumtree_seconds(batch, capacity)) if shape.prioritized
                           else float(gm.kernel_seconds(2, 0, bytes_batch)))
        lc.update = _Fixed(float(gm.sumtree_seconds(batch, capacity))) if shape.prioritized \
            else None
        lc.insert_per_transition_s = costs.copy_s(shape.transition_bytes) + float(
            gm.kernel_seconds(1, 0, shape.transition_bytes))
    else:  # am: one nearest-priority search per sampled item; rows rewritten on update
        amm = m.model("am")
        lc.rm = m.device("am")
        gather_s = float(roofline_seconds(m.model("cpu").spec, 0, bytes_batch, batch))
        lc.sample = _Fixed(float(amm.search_seconds(batch * shape.am_searches_per_item))
                           + gather_s)
        lc.update = _Fixed(float(amm.write_seconds(batch * shape.am_writes_per_update_item)))
        lc.insert_per_transition_s = float(amm.write_seconds(1))
    if place.learn == "gpu" and place.replay != "gpu":
        lc.batch_copy_s = costs.copy_s(bytes_batch)
        lc.td_copy_s = costs.copy_s(batch * F32_BYTES) if lc.update is not None else 0.0
    if place.learn != place.act:
        lc.param_copy_s = costs.copy_s(shape.act_params * F32_BYTES)
    return lc


def _reset_s_per_step(m: Machine) -> float:
    """Episode resets folded into steps: mean reset cost × resets per env step in the trace."""
    if not _rows(m, "env_reset"):
        return 0.0
    resets = m.phase_cost("env_reset", "cpu")
    return float(resets.sum()) / max(trace_env_steps(m), 1)


def _rows(m: Machine, phase: str) -> bool:
    return bool((m.trace.ops["phase"] == phase).any())


def program(m: Machine, shape: Shape) -> Outcome:
    """Run the off-policy loop on machine `m`; see the module docstring."""
    k = m.knobs
    if k.inference == "central":
        raise RldseError("workload.inference: 'central' batched inference is modelled for "
                         "actor_learner traces; off-policy actors run their own policy "
                         "('local')")
    batch = k.batch_size or shape.batch
    learn_every = k.learn_every or shape.learn_every
    capacity = k.replay_capacity or shape.capacity
    total_steps = k.env_steps or trace_env_steps(m)
    actors = k.actors
    costs = _Costs(m, shape, batch)
    place = m.spec.placement
    cpu = m.device("cpu")
    gpu = m.gpus[0] if m.gpus else None

    # ---- per-operation costs -------------------------------------------------------
    step_c = [m.cycle("env_step", "cpu") for _ in range(actors)]
    reset_s_per_step = _reset_s_per_step(m)
    act_c = [costs.cycle("act", place.act) for _ in range(actors)]
    act_copy_s = costs.copy_s(shape.transition_bytes / 2) * 2 if place.act == "gpu" else 0.0
    add_cpu = [m.cycle("replay_add", "cpu") for _ in range(actors)]
    lc = _learner_costs(m, shape, costs, batch, capacity)
    rm, learner_dev = lc.rm, lc.learner

    # ---- GPU memory ----------------------------------------------------------------
    need = 0
    if place.learn == "gpu":
        need += 4 * shape.learn_params * F32_BYTES  # params, grads, Adam m and v
        need += 4 * batch * shape.transition_bytes  # batch and activations (first order)
    if place.replay == "gpu":
        need += capacity * shape.transition_bytes
    gpu_ok = bool(costs.gpu.fits(need)) if costs.gpu is not None and need else True
    swapped = 0
    if not gpu_ok and k.gpu_swap and place.replay == "gpu":
        swapped = capacity * shape.transition_bytes
        lc.sample = _Plus(lc.sample, costs.copy_s(batch * shape.transition_bytes))

    # ---- processes -----------------------------------------------------------------
    env, clock = m.env, m.clock
    clock.instances.update(actor=actors, learner=1)
    state = {"steps": 0, "updates": 0, "pending_inserts": 0, "first_update_s": None,
             "last_update_end_s": 0.0}
    data_ready = [env.event()]

    def due_updates() -> int:
        """Updates the data allows now: one per learn_every steps after the warm-up."""
        return max(0, state["steps"] - shape.learning_starts) // learn_every - state["updates"]

    def actor_chunk(a: int, n: int) -> float:
        """Book actor a's next n steps from now; return when they end."""
        t0 = env.now
        state["steps"] += n
        state["pending_inserts"] += n
        s_reset = n * reset_s_per_step
        s_env, s_act = step_c[a].take(n) + s_reset, act_c[a].take(n)
        s_add = add_cpu[a].take(n) if lc.actors_insert else 0.0
        if place.act == "cpu":
            end = cpu.book(t0, s_env + s_act + s_add, "env_step")
            busy = s_env + s_act + s_add
        else:
            t1 = cpu.book(t0, s_env + s_add, "env_step")
            end = gpu.book(t1, s_act + n * act_copy_s, "act")
            busy = s_env + s_add + s_act + n * act_copy_s
        clock.spend("actor", "env_step", "cpu", s_env - s_reset, n)
        if s_reset:
            clock.spend("actor", "env_reset", "cpu", s_reset, 0)
        clock.spend("actor", "act", place.act, busy - s_env - s_add, n)
        if s_add:
            clock.spend("actor", "replay_add", "cpu", s_add, n)
        clock.spend("actor", "wait:device", "any", max(0.0, end - t0 - busy), 0)
        return end

    def update(t: float) -> float:
        """One learner update from time t (PEARL protocol); returns its end time."""
        if state["first_update_s"] is None:
            state["first_update_s"] = t
        s_sample = lc.sample.take(1)
        t_s = rm.book(t, s_sample, "replay_sample")
        clock.spend("learner", "replay_sample", place.replay, s_sample)
        # learner branch: batch copy, gradient step, target sync, parameters to actors
        s_learn = lc.batch_copy_s + lc.learn.take(1)
        t_l = learner_dev.book(t_s, s_learn, "learn")
        clock.spend("learner", "learn", place.learn, s_learn)
        state["updates"] += 1
        if lc.sync is not None and state["updates"] % shape.target_sync == 0:
            s_sync = lc.sync.take(1)
            t_l = learner_dev.book(t_l, s_sync, "sync")
            clock.spend("learner", "sync", place.learn, s_sync)
        if lc.param_copy_s and state["updates"] % k.sync_interval == 0:
            t_l = learner_dev.book(t_l, lc.param_copy_s, "sync")
            clock.spend("learner", "sync", place.learn, lc.param_copy_s)
        # RM branch, overlapping the learner: priority update, then pending inserts
        t_r = t_s
        if lc.update is not None:
            s_upd = lc.td_copy_s + lc.update.take(1)
            t_r = rm.book(t_s, s_upd, "replay_update")
            clock.spend("learner", "replay_update", place.replay, s_upd)
        n_ins, state["pending_inserts"] = state["pending_inserts"], 0
        s_ins = n_ins * lc.insert_per_transition_s + lc.insert_per_update_s
        if s_ins:
            t_r = rm.book(t_r, s_ins, "replay_add")
            clock.spend("learner", "replay_add", place.replay, s_ins, n_ins)
        state["last_update_end_s"] = end = max(t_l, t_r)
        return end

    def sync_loop():
        """Rounds: every actor runs a chunk, then the learner catches up; nobody overlaps."""
        chunk = max(1, round(learn_every / actors))
        while state["steps"] < total_steps:
            t0 = env.now
            ends = [actor_chunk(a, min(chunk, total_steps - state["steps"]))
                    for a in range(actors) if state["steps"] < total_steps]
            t_round = max(ends)
            t = t_round
            for _ in range(due_updates()):
                t = update(t)
            yield env.timeout(t - env.now)
            clock.spend("actor", "wait:learner", "any", (t - t_round) * len(ends), 0)
            clock.spend("learner", "wait:actors", "any", t_round - t0, 0)

    def async_actor(a: int):
        while state["steps"] < total_steps:
            end = actor_chunk(a, min(learn_every, total_steps - state["steps"]))
            yield env.timeout(end - env.now)
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
    if place.replay == "am":  # per-action energy (leakage is the part's idle power)
        amm, am_dev = m.model("am"), m.device("am")
        searches = state["updates"] * batch * shape.am_searches_per_item
        am_dev.add_action_energy("search", float(amm.search_joules(searches)))
        writes = state["updates"] * batch * shape.am_writes_per_update_item + state["steps"]
        am_dev.add_action_energy("write", float(amm.write_joules(writes)))
    breakdown = {}
    if state["updates"]:
        breakdown["iteration_s"] = ((state["last_update_end_s"] - state["first_update_s"])
                                    / state["updates"])
    return Outcome(env_steps=state["steps"], updates=state["updates"], breakdown_s=breakdown,
                   gpu_memory_peak_bytes=int(need), gpu_memory_ok=gpu_ok or bool(swapped),
                   swapped_bytes=int(swapped))
