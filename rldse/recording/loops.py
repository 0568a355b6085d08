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
from rldse.workloads import WORKLOADS, Workload


@dataclass(frozen=True)
class Loop:
    name: str
    workloads: tuple[Workload, ...]  # the registered workloads it can become

    @property
    def required(self) -> tuple[str, ...]:
        """Phases its programs need rows of (every workload of a loop registers the same)."""
        return self.workloads[0].recording.required

    @property
    def learner_phases(self) -> frozenset[str]:
        """Phases run by the learner worker (the same for every workload of the loop)."""
        return self.workloads[0].recording.learner_phases

    def workload(self, networks: Collection[str]) -> str:
        """The workload the recording's ``networks`` (their roles) name: the last whose
        roles share one with them, else the first (dqn for ``{"q"}``, ddpg for
        ``{"actor", "critic"}``)."""
        named = [w for w in self.workloads if set(networks) & set(w.recording.networks)]
        return (named[-1] if named else self.workloads[0]).name


def loops() -> list[str]:
    """Every loop some registered workload can be recorded from, in registration order."""
    return list(dict.fromkeys(w.recording.loop for w in WORKLOADS.values()
                              if w.recording is not None))


def loop_kind(name: str) -> Loop:
    workloads = [w for w in WORKLOADS.values()
                 if w.recording is not None and w.recording.loop == name]
    if not workloads:
        raise RldseError(f"unknown loop {name!r} (expected one of {', '.join(loops())})",
                         where="recording: loop")
    shared = {(w.recording.required, w.recording.learner_phases) for w in workloads}
    if len(shared) > 1:  # a registration bug: the phases are the loop's, not a workload's
        raise ValueError(f"workloads of the {name} loop disagree on its phases: "
                         f"{', '.join(w.name for w in workloads)}")
    return Loop(name, tuple(workloads))
