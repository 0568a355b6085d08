"""What every path of one off-policy run shares: where each worker runs and what its
steps cost (Context, fixed for the run), the loop's progress (State, which each path
advances as the real loop would), and the bookkeeping of drives merged into arrays."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from rldse.sim.device import Device
from rldse.sim.lanes import Lanes
from rldse.sim.machine import Machine
from rldse.workloads.offpolicy.program.costs import LearnerCosts, Shape
from rldse.workloads.offpolicy.program.timeline import TimelineView
from rldse.workloads.offpolicy.program.updates import UpdateCosts


@dataclass(frozen=True)
class ChunkTimes:
    """Seconds of chunks of an actor's steps, one entry per chunk: env steps, resets folded
    into them, the act's host, device and wall parts, inserts; ``on_core`` is what its core
    is booked for, ``own`` the least the chunk lasts (each step waits for its action)."""

    s_env: np.ndarray
    s_reset: np.ndarray | float
    h: np.ndarray
    d: np.ndarray
    w: np.ndarray
    s_add: np.ndarray | float
    base: np.ndarray
    on_core: np.ndarray
    own: np.ndarray

    def account_core(self, cpu: Device, kernels: bool, bookings: int) -> None:
        """The chunks' core seconds on ``cpu`` by phase, as the per-step bookings account
        them: env steps (resets folded in), inserts, the act (its dispatch where the act
        issues kernels)."""
        for phase, s in (("env_step", self.s_env + self.s_reset), ("replay_add", self.s_add),
                         ("dispatch", self.h) if kernels else ("act", self.w)):
            total = float(np.sum(s))
            if total > 0:
                cpu.account(phase, total, bookings)


@dataclass
class ActorCosts:
    """Each actor's cost cycles (env step, act, insert), over the same rows from its own
    seeded row, and the episode resets folded into its steps."""

    step: list
    act: list
    add: list
    reset_s_per_step: float
    kernels: bool  # the act issues kernels (its dispatch on the core, kernels on the GPU)
    insert: bool  # actors pay their own inserts (replay in host memory)

    def chunk_times(self, a: int, counts: np.ndarray, s_reset) -> ChunkTimes:
        """Actor a's next chunks of ``counts`` steps, advancing its cycles (env step, act,
        insert, in that order); ``s_reset``: their resets' seconds."""
        s_env = self.step[a].takes(counts)
        h, d, w = self.act[a].takes(counts)
        s_add = self.add[a].takes(counts) if self.insert else 0.0
        base = s_env + s_reset + s_add
        on_core = base + (h if self.kernels else w)
        return ChunkTimes(s_env, s_reset, h, d, w, s_add, base, on_core, base + w)


@dataclass
class Context:
    """One run's machine, loop shape, workers' places and costs, fixed for the run. The
    learner and replay manager (RM) issue from cores of their own; sync: one process, whose
    core the actors' rounds leave free while it learns."""

    m: Machine
    shape: Shape
    lc: LearnerCosts
    upd: UpdateCosts  # the update's drives, composed from lc once for every path
    actors: ActorCosts
    cpu: Device
    gpu: Device | None  # the part issued kernels run on, if any role runs so
    cores: Lanes  # the actors' cores
    learner_core: Lanes
    rm_core: Lanes
    act_label: str  # the act's part, as the clock names it
    actor_names: list[str]  # their timeline tracks
    view: TimelineView | None

    @property
    def rm_overlaps(self) -> bool:
        """PEARL's protocol: the RM's branch overlaps the learner's (``learner: async``)."""
        return self.m.knobs.learner == "async"

    @property
    def async_chunk_steps(self) -> int:
        """Env steps per actor chunk in the async loop: learn_every where a chunk landing at
        once gives the learner what its steps landing one by one would (one actor; updates
        due and hard target syncs owed at multiples of learn_every steps; the actor
        inserting its own transitions, so no RM insert counts the steps landed), else 1, as
        the reference engine books them: with chunks of learn_every, runs of several
        actors or of RM inserts were 1e-5 to 6e-3 off it (an update's start saw the steps
        landed at chunk granularity)."""
        k, shape, lc = self.m.knobs, self.shape, self.lc
        le, tss = k.learn_every, shape.target_sync_steps
        aligned = shape.learning_starts % le == 0 and (lc.sync is None or tss is None
                                                       or tss % le == 0)
        return le if k.actors == 1 and lc.actors_insert and aligned else 1

    @property
    def rm_worker(self) -> str:
        return "replay_manager" if self.rm_overlaps else "learner"

    def booked(self, dev: Device, h: np.ndarray, d: np.ndarray, w: np.ndarray, phase: str,
               worker: str, count: int, bookings: int) -> None:
        """What ``Machine.drive`` accounts for ``bookings`` operations run one after
        another on free devices (their seconds summed in h, d, w): device and core busy
        time, and the worker's clock."""
        if self.view is not None:
            self.view.drives.append((dev, phase, worker, h, d, w))
        hs, ds, ws = float(np.sum(h)), float(np.sum(d)), float(np.sum(w))
        if ds > 0:
            dev.account(phase, ds, bookings)
        if hs > 0:
            self.cpu.account("dispatch", hs, bookings)
            self.m.clock.spend(worker, "dispatch", self.cpu.kind, hs, 0)
        self.m.clock.spend(worker, phase, dev.kind, ws - hs, count)


@dataclass
class State:
    """The loop's progress: env steps booked and landed, learner updates, inserts owed to
    the RM, target syncs and parameter versions published to the actors, when updates ran,
    and policy lag (learner updates behind -> env steps)."""

    booked: int = 0
    steps: int = 0
    updates: int = 0
    pending_inserts: int = 0
    syncs: int = 0
    published: int = 0
    first_update_s: float | None = None
    last_update_end_s: float = 0.0
    staleness: dict[int, int] = field(default_factory=dict)

    def lag(self, updates: int, steps: int) -> None:
        """``steps`` env steps acted on parameters ``updates`` learner updates old."""
        self.staleness[updates] = self.staleness.get(updates, 0) + steps

    def due_updates(self, shape: Shape, learn_every: int) -> int:
        """Updates the data allows now: one per learn_every steps after the warm-up."""
        return max(0, self.steps - shape.learning_starts) // learn_every - self.updates

    def due_syncs(self, shape: Shape, lc: LearnerCosts) -> int:
        """Target syncs owed at this update: one per update (Polyak), or one per
        target_sync_steps env steps so far (those due in the warm-up are done at the first
        update, as their total cost is what matters)."""
        if lc.sync is None:
            return 0
        if shape.target_sync_steps is None:
            return 1
        return self.steps // shape.target_sync_steps - self.syncs
