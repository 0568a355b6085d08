"""One simulated run's state: what it is (shape, roles, costs, memory), what its
processes have accounted so far (``Tally``) and the parameter handshake between the
learner and the actors (``Handshake``)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import simpy

from rldse.sim.lanes import Lanes
from rldse.sim.machine import Machine
from rldse.workloads.actor_learner.program.costs import Costs, costs_of
from rldse.workloads.actor_learner.program.memory import GpuMemory, gpu_buffers
from rldse.workloads.actor_learner.program.shape import Roles, Shape, roles_of, shape_of


def _zeros(*names: str) -> dict[str, float]:
    return dict.fromkeys(names, 0.0)


@dataclass
class Tally:
    """Time and counts the processes accumulate (seconds; worker-seconds where summed
    over actors): what the result's clock entries and ``breakdown_s`` are made of."""

    busy: dict[str, float] = field(default_factory=lambda: _zeros(
        "env_step", "env_reset", "act"))  # the actors' work
    wait: dict[str, float] = field(default_factory=lambda: _zeros(
        "wait:learner", "wait:cores", "wait:inference"))  # the actors blocked
    learner: dict[str, float] = field(default_factory=lambda: _zeros(
        "sync", "rollout_add", "dispatch", "learn", "allreduce", "wait:actors"))
    parts: dict[str, float] = field(default_factory=lambda: _zeros(
        "startup_s", "rollout_s", "sync_s", "handoff_s", "learn_s", "copy_s", "swap_s",
        "inference_s", "allreduce_s", "network_s"))  # breakdown_s
    #: actors on other nodes than the learner's (node 1 on): their work on their own
    #: nodes' cores, and worker-seconds their parameters and rollouts spent on the network
    remote: dict[str, float] = field(default_factory=lambda: _zeros(
        "env_step", "env_reset", "act", "vsteps", "acts"))
    net: dict[str, float] = field(default_factory=lambda: _zeros("net:params", "net:rollout"))
    act_count: int = 0
    act_dispatch: float = 0.0  # local GPU inference: the actors' dispatch, core-seconds
    batches: int = 0  # central inference batches


@dataclass
class Handshake:
    """Parameters between the learner and the actors: the latest version the actors can
    get (``version``), when each actor has it (``release``), the event that the next
    version is out (``published``), one event per iteration that its rollouts are in
    (``ready``), and per iteration the version its rollouts used (``used``)."""

    release: np.ndarray
    published: simpy.Event
    ready: list[simpy.Event]
    version: int = -1
    used: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class Run:
    """Everything one program(m) run reads and writes."""

    m: Machine
    shape: Shape
    roles: Roles
    memory: GpuMemory
    costs: Costs
    tally: Tally
    ingress: Lanes  # node 0's receive link from the other nodes (package docstring)


def prepare(m: Machine) -> Run:
    """The run's shape, roles, memory and costs on ``m`` (before any process starts)."""
    shape = shape_of(m)
    roles = roles_of(m, shape)
    memory = gpu_buffers(shape, roles, bool(m.knobs.gpu_swap))
    return Run(m, shape, roles, memory, costs_of(m, shape, roles, memory), Tally(),
               Lanes(1, clock=m.env))


def handshake(run: Run) -> Handshake:
    """No parameters yet: every actor waits for the first broadcast."""
    env = run.m.env
    return Handshake(release=np.zeros(run.shape.N), published=env.event(),
                     ready=[env.event() for _ in range(run.shape.iterations)])
