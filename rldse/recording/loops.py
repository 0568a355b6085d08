"""Loop kinds a user's recording may declare, and the registered workload that replays each.

This is the one place that maps a recording's ``loop=`` to a simulated program
(rldse.workloads.WORKLOADS): ``tabular`` to ``tabular``, ``off_policy`` to ``dqn`` (one
network) or ``ddpg`` (an actor and a critic), ``on_policy`` to ``actor_learner``. Each
kind also names the phases its program reads (missing ones fail at the recording's close,
not at simulate time), which phases the learner runs (the rest are the actor's), and the
typed workload_info fields the user must supply beyond those the network gives.
"""

from __future__ import annotations

from dataclasses import dataclass

from rldse.errors import RldseError


@dataclass(frozen=True)
class Loop:
    name: str
    workloads: tuple[str, ...]  # registered workloads; the first unless the networks say
    required: tuple[str, ...]  # phases its program needs rows of
    learner_phases: frozenset[str]  # phases run by the learner worker (on_policy)

    def workload(self, actor_critic: bool) -> str:
        """``actor_critic``: the network is an {"actor", "critic"} pair (DDPG-style)."""
        from rldse.workloads import WORKLOADS

        name = self.workloads[-1] if actor_critic else self.workloads[0]
        WORKLOADS.lookup(name, "workload")  # a registry without it is a bug, loudly
        return name


LOOPS: dict[str, Loop] = {
    "tabular": Loop("tabular", ("tabular",), ("env_step", "q_update"), frozenset()),
    "off_policy": Loop("off_policy", ("dqn", "ddpg"),
                       ("env_step", "act", "replay_add", "replay_sample", "learn"),
                       frozenset()),
    "on_policy": Loop("on_policy", ("actor_learner",),
                      ("env_step", "act", "rollout_add", "learn", "sync"),
                      frozenset({"learn", "sync"})),
}


def loop_kind(name: str) -> Loop:
    if name not in LOOPS:
        raise RldseError(f"unknown loop {name!r} (expected one of {', '.join(LOOPS)})",
                         where="recording: loop")
    return LOOPS[name]
