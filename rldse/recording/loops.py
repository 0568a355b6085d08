"""Loop kinds a user's recording may declare, and the registered workload that replays each.

A loop is what some registered workloads declare as their ``recording``
(rldse.workloads.Recordable): ``tabular`` (tabular), ``off_policy`` (dqn with one
network, ddpg with an actor and a critic), ``on_policy`` (actor_learner). Each names the
phases its program reads (missing ones fail at the recording's close, not at simulate
time) and which phases the learner runs (the rest are the actor's).
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from rldse.errors import RldseError
from rldse.workloads import Workload, loops, pick, recordable


@dataclass(frozen=True)
class Loop:
    name: str
    workloads: tuple[Workload, ...]  # the registered workloads it can become

    @property
    def required(self) -> tuple[str, ...]:
        """Phases its program needs rows of (its first workload's)."""
        return self.workloads[0].recording.required

    @property
    def learner_phases(self) -> frozenset[str]:
        """Phases run by the learner worker (its first workload's)."""
        return self.workloads[0].recording.learner_phases

    def workload(self, networks: Collection[str]) -> str:
        """The workload the recording's ``networks`` (their roles) pick."""
        return pick(list(self.workloads), networks).name


def loop_kind(name: str) -> Loop:
    workloads = recordable(name)
    if not workloads:
        raise RldseError(f"unknown loop {name!r} (expected one of {', '.join(loops())})",
                         where="recording: loop")
    return Loop(name, tuple(workloads))
