"""Per-operation costs of the off-policy loop on the placed parts: what the real loop is
(Shape, from the trace), the trace's rows rescaled to this system's batch and shapes
(Costs), what the replay manager and learner pay per step (LearnerCosts), and the knobs a
placement would accept but not use (refuse_ignored_knobs)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from rldse.errors import RldseError
from rldse.kernels.mlp import F32, Work
from rldse.models import OpColumns
from rldse.models.collectives import choose
from rldse.models.cpu.roofline import roofline_seconds, with_work, with_works
from rldse.models.kinds import PartTime, ReplayJob, Runs
from rldse.sim import trace_cache
from rldse.sim.device import Device
from rldse.sim.machine import Machine, Runner, SplitCycle
from rldse.workloads.offpolicy import replay_cost


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
    tcam_searches_per_item: float = 1.0  # replay on the TCAM: TCAM searches per sampled item
    tcam_writes_per_update_item: float = 1.0  # replay on the TCAM: rows written per updated item
    tcam_candidates_per_item: float = 0.0  # replay on the TCAM: candidate-set entries read per item
    # the formulas' work of the trace's rows (at its shapes and batch) and, for the phases
    # whose work does not follow the batch, at this system's shapes: what _rescaled needs
    trace_works: dict[str, Work] = field(default_factory=dict)
    works: dict[str, Work] = field(default_factory=dict)
    trace_batch: int = 0  # the trace's batch and capacity (replay rows were measured there)
    trace_capacity: int = 0


class Costs:
    """Per-operation costs on the placed devices, for this system's batch size."""

    def __init__(self, m: Machine, shape: Shape, batch: int, kernels: Runner | None) -> None:
        """``kernels``: the part that runs issued kernels for a role (host copies go
        through its link), None where no role runs so."""
        self.m, self.shape, self.batch = m, shape, batch
        self.gpu = kernels.model if kernels is not None else None

    # -- trace rows of a phase, with batch-dependent work rescaled to this batch --------
    def _rescaled(self, phase: str, work: Work | None) -> OpColumns:
        """Learn, act and sync rows by the formulas' work (rldse.models.cpu.roofline.with_works);
        replay rows on the CPU by capacity and batch (replay_cost)."""
        ops, sh = self.m.trace_ops(phase), self.shape
        host = self.m.cpu.model.capture_host
        if phase.startswith("replay_") and sh.trace_capacity:
            return replay_cost.rescaled(host, ops, phase, sh.transition_bytes, sh.prioritized,
                                        (sh.trace_capacity, self.m.knobs.replay_capacity),
                                        (sh.trace_batch, self.batch),
                                        (trace_env_steps(self.m), self.m.knobs.env_steps))
        new, old = work or sh.works.get(phase), sh.trace_works.get(phase)
        if new is None:
            return ops
        if old is None:  # a Shape without the trace's works: the rows' counted flops, bytes
            return with_work(host, ops, float(new.flops), float(new.bytes), self.batch)
        did = (ops.flops > 0) | (ops.bytes > 0)  # exploring acts ran no network
        items = self.batch if phase == "learn" else ops.items
        return with_works(host, ops, new, old, items, did)

    def at_batch(self, batch: int) -> Costs:
        """The same costs for another batch size (a data-parallel learner's share)."""
        other = copy.copy(self)
        other.batch = batch
        return other

    def cycle(self, phase: str, runner: Runner, work: Work | None = None) -> SplitCycle:
        """The phase's rows on ``runner``'s part: as issued kernels, the issuing core's
        dispatch and the kernels (rldse.models.gpu); on cores, time on the core itself."""
        ops = self._rescaled(phase, work)
        start = int(self.m.rng.integers(len(ops)))
        if not runner.kernels:
            return SplitCycle.on_device(np.asarray(runner.model.op_seconds(ops)), start)
        part = runner.model
        if phase != "act":
            t = part.op_times(ops, layers=self.shape.learn_layers)
            return SplitCycle(t.host_s, t.device_s, t.wall_s, start)
        # greedy steps run the network on the part, with the observation in and the action
        # read back, both copies blocking (GpuModel.blocking_copy_times); exploring steps
        # (no flops: no network) stay on the actor's core
        t = part.blocking_copy_times(F32, after=part.blocking_copy_times(self.shape.obs_bytes)
                                     + part.op_times(ops, layers=self.shape.act_layers))
        on_core = np.asarray(self.m.cpu.model.op_seconds(ops))
        greedy = ops.flops > 0
        return SplitCycle(np.where(greedy, t.host_s, on_core), np.where(greedy, t.device_s, 0.0),
                          np.where(greedy, t.wall_s, on_core), start)

    def copy(self, nbytes: float) -> PartTime:
        """One host↔device copy (nothing without a GPU)."""
        return self.gpu.copy_times(nbytes).total() if self.gpu is not None else NOTHING


NOTHING = PartTime(0.0, 0.0, 0.0)

def sliced(x, sl: slice):
    """x[sl] for an array, x for a number (a cost that is the same for every operation)."""
    return x[sl] if np.ndim(x) else x


def eff(host_s, device_s, wall_s):
    """When an operation on free devices ends after it starts (Machine.drive)."""
    return np.maximum(wall_s, np.maximum(host_s, device_s))


class Fixed:
    """A constant per-operation cost with the `take(k)` interface of a SplitCycle."""

    def __init__(self, value: PartTime) -> None:
        self.value = value

    def take(self, k: int) -> PartTime:
        return self.value * k

    def takes(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        v = self.value
        return v.host_s * counts, v.device_s * counts, v.wall_s * counts


class Plus:
    """Another cost plus a constant per operation (e.g. a swap-in before each sample)."""

    def __init__(self, base, extra: PartTime) -> None:
        self.base, self.extra = base, extra

    def take(self, k: int) -> PartTime:
        return self.base.take(k) + self.extra * k

    def takes(self, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        h, d, w = self.base.takes(counts)
        e = self.extra
        return h + e.host_s * counts, d + e.device_s * counts, w + e.wall_s * counts


@dataclass
class LearnerCosts:
    """Where the replay manager (rm) and learner run, and what each of their steps costs."""

    rm: Device
    learner: Device
    sample: Fixed | SplitCycle
    update: Fixed | SplitCycle | None  # None: uniform replay, no priority update
    learn: Fixed | SplitCycle
    sync: SplitCycle | None  # target-network sync (schedule: Shape.target_sync_steps)
    actors_insert: bool  # replay in host memory: actors pay their own inserts
    insert: Callable[[int], PartTime] = lambda n: NOTHING  # RM inserting n new transitions
    batch_copy: PartTime = NOTHING  # host replay -> GPU learner
    td_copy: PartTime = NOTHING  # GPU learner -> host replay, for priorities
    param_copy: PartTime = NOTHING  # learner -> actors on another device


def learner_costs(m: Machine, shape: Shape, costs: Costs, batch: int,
                   job: ReplayJob | None) -> LearnerCosts:
    """``job``: what the replay part's own model serves (None: replay on the CPU or a
    measured table)."""
    act_r, learn_r, replay_r = m.runner("act"), m.runner("learn"), m.runner("replay")
    bytes_batch = batch * shape.transition_bytes
    if Runs.LOOKUP in (replay_r.runs, learn_r.runs):
        # PEARL's protocol on measured tables: one sample, update, insert and learn per
        # iteration, at the table's latencies; links and target syncs are not in its model
        t = m.spec.table
        def measured(row: str, phase: str) -> PartTime:
            return PartTime.serial(0.0, m.table_seconds(row, phase))

        insert = measured(t.replay, "replay_add")  # one primitive per iteration
        return LearnerCosts(
            rm=m.device(f"table:{t.replay}"), learner=m.device(f"table:{t.learn}"),
            sample=Fixed(measured(t.replay, "replay_sample")),
            update=Fixed(measured(t.replay, "replay_update")),
            learn=Fixed(measured(t.learn, "learn")), sync=None, actors_insert=False,
            insert=lambda n: insert)
    learner = learn_r.device
    lc = LearnerCosts(
        rm=replay_r.device, learner=learner, sample=Fixed(NOTHING), update=None,
        learn=_learn_cycle(m, shape, costs, batch, learn_r),
        sync=costs.cycle("sync", learn_r) if has_rows(m, "sync") else None,
        actors_insert=replay_r.is_host)
    if replay_r.is_host:  # the trace's own rows, rescaled to the target CPU
        lc.sample = costs.cycle("replay_sample", m.cpu)
        if shape.prioritized and has_rows(m, "replay_update"):
            lc.update = costs.cycle("replay_update", m.cpu)
    else:  # the kind's own replay model (rldse.models.kinds.ReplayJob)
        rmm = replay_r.model
        lc.sample = Fixed(rmm.replay_seconds(job, "sample", 1))
        if shape.prioritized:
            lc.update = Fixed(rmm.replay_seconds(job, "update", 1))
        lc.insert = lambda n: rmm.replay_seconds(job, "insert", n)
    if learn_r.kernels and replay_r.kind != learn_r.kind:
        lc.batch_copy = costs.copy(bytes_batch)
        lc.td_copy = costs.copy(batch * F32) if lc.update is not None else NOTHING
    if learn_r.kind != act_r.kind:
        lc.param_copy = costs.copy(shape.act_params * F32)
    return lc


def allreduce_seconds(m: Machine, shape: Shape) -> float:
    """The gradient all-reduce of one update over ``learner_gpus`` data-parallel
    learners (rldse.models.collectives: NCCL's choice for the learner's parameters on
    the node's fabric); 0 with one learner."""
    learners = m.knobs.learner_gpus or 1
    if learners == 1:
        return 0.0
    return float(choose(m.system.nodes.cluster(learners), "all_reduce",
                        F32 * shape.learn_params).seconds)


def _learn_cycle(m: Machine, shape: Shape, costs: Costs, batch: int, learn_r: Runner):
    """One update's gradient step: with ``learner_gpus`` L > 1 each learner's share of
    the batch (⌈batch / L⌉, the trace's rows rescaled as for any batch), then the
    all-reduce on the learner's GPU before the optimizer step, inside the learn drive."""
    learners = m.knobs.learner_gpus or 1
    if learners == 1:
        return costs.cycle("learn", learn_r, shape.learn_work(batch))
    share = -(-batch // learners)
    cycle = costs.at_batch(share).cycle("learn", learn_r, shape.learn_work(share))
    ar = allreduce_seconds(m, shape)
    return Plus(cycle, PartTime(0.0, ar, ar))


def refuse_ignored_knobs(m: Machine, hidden: list[int]) -> None:
    """One-line errors for knobs this placement would accept but not use: ``gpu_swap``
    without replay on a GPU; on measured tables (fixed latencies) any knob that changes
    the work from the trace's (its batch size, replay capacity and ``hidden`` widths)."""
    k, replay_r, learn_r = m.knobs, m.runner("replay"), m.runner("learn")
    trace_knobs = {"batch_size": m.system.info.batch_size,
                   "replay_capacity": m.system.info.replay_capacity, "hidden": list(hidden)}
    if k.gpu_swap and not replay_r.on_kernel_part:
        raise RldseError(f"gpu_swap swaps a GPU replay buffer, but replay runs on "
                         f"'{replay_r.kind}'", where="workload.gpu_swap")
    if m.system.nodes.count > 1:
        raise RldseError("off-policy actors and replay run on one node (data-parallel "
                         "learners within it: workload.learner_gpus)", where="system.nodes")
    if (k.learner_gpus or 1) > 1 and Runs.LOOKUP in (replay_r.runs, learn_r.runs):
        raise RldseError("data-parallel learners need learn on GPUs, not a measured table",
                         where="workload.learner_gpus")
    if Runs.LOOKUP in (replay_r.runs, learn_r.runs):
        for name, value in trace_knobs.items():
            if getattr(k, name) != value:
                raise RldseError(f"a measured table's latencies were taken at the trace's "
                                 f"{name} ({value}); it cannot predict {getattr(k, name)}",
                                 where=f"workload.{name}")


def replay_job(m: Machine, shape: Shape, batch: int, capacity: int) -> ReplayJob:
    """What the replay manager serves, for a kind's own replay model. The host gathers a
    sampled batch from host memory when the part keeps only priorities (TCAM)."""
    gather_s = float(roofline_seconds(m.cpu.model.spec, 0, batch * shape.transition_bytes,
                                      batch))
    return ReplayJob(batch=batch, capacity=capacity, transition_bytes=shape.transition_bytes,
                     prioritized=shape.prioritized, host_gather_s=gather_s,
                     searches_per_item=shape.tcam_searches_per_item,
                     writes_per_update_item=shape.tcam_writes_per_update_item,
                     candidates_per_item=shape.tcam_candidates_per_item)


def reset_seconds_per_step(m: Machine) -> float:
    """Episode resets folded into steps: mean reset cost × resets per env step in the trace."""
    if not has_rows(m, "env_reset"):
        return 0.0
    resets = m.phase_cost("env_reset")
    return float(resets.sum()) / max(trace_env_steps(m), 1)


def per_actor(m: Machine, first, actors: int) -> list:
    """One cycle per actor over the same rows, each from a seeded random row (the first
    is ``first``); they share its prefix sums."""
    return [first] + [first.at(int(m.rng.integers(first.rows))) for _ in range(actors - 1)]


def has_rows(m: Machine, phase: str) -> bool:
    """Whether the trace has rows of ``phase`` (once per trace digest: rldse.sim.trace_cache)."""
    trace = m.trace
    return trace_cache.cached(("has_rows", trace.digest, phase),
                              lambda: bool((trace.ops["phase"] == phase).any()))


def trace_env_steps(m: Machine) -> int:
    """The trace's env steps (Trace.env_steps, once per trace digest)."""
    return trace_cache.cached(("env_steps", m.trace.digest), lambda: m.trace.env_steps)
