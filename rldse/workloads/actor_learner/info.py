"""The actor-learner family's typed ``workload_info`` (``ActorLearnerInfo``: read once where
the trace enters the family, ``Workload.read_info``, and what its program reads), and what
starting and feeding the actor processes cost their CPUs, as ppo.py records it there
each span's wall time and the process's own CPU time over it.

A capture on a busy host stretches these spans' wall time by the time the OS gave other
processes, and a wait for another process by that process's slowed work too, so the
program costs them from CPU time (rldse.trace.host_cost_s's rule, written once there):

- ``startup``: the learner's set-up before it starts actors (a probe env, the policy),
  its side of starting each actor process (fork or spawn), and each actor from its start
  until it is ready (interpreter and imports under spawn, its envs, its policy copy).
- ``receive_cpu``: per iteration, an actor's receiving the parameters (unpickling,
  loading them; the mean over actors) and the learner's receiving every rollout
  (unpickling, GAE, batching) until its first minibatch step. Waiting takes no CPU time,
  so these are the work of a hand-off without the wait for the partner, whose own work
  (collecting, learning) is costed where it is recorded. The sender's side is the
  ``sync`` and ``rollout_add`` rows' CPU time.

Traces from before these fields, and traces of a user's own loop (rldse.recording: one
process), have neither: the program then reads start-up and hand-offs from the shared
clock's wall time, contention included (``wall_rule_note`` says so where a trace is read).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import AliasChoices, ConfigDict, Field

from rldse.strict import UserModel
from rldse.workloads import Count, Info, Layers, OptionalLayers

Seconds = Annotated[float, Field(ge=0, allow_inf_nan=False)]


class Span(UserModel):
    """One process's span: wall time, and the CPU time its thread spent in it."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    wall_s: Seconds
    cpu_s: Seconds


class StartUp(UserModel):
    """Starting the run's processes (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    learner: Span = Field(description="the learner's set-up before it starts actors")
    spawn: Span = Field(description="the learner starting every actor process")
    actors: list[Span] = Field(min_length=1, description="each actor, from its start "
                               "until ready to receive its first parameters")


class Receives(UserModel):
    """Per iteration, CPU seconds of the receiving side of each hand-off (module docstring)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    params_cpu_s: list[Seconds] = Field(min_length=1, description="an actor receiving the "
                                      "parameters (mean over actors)")
    rollouts_cpu_s: list[Seconds] = Field(min_length=1, description="the learner receiving "
                                        "every actor's rollout, until its first minibatch")


#: The workload_info keys ppo.py records (the fields of ActorLearnerInfo they fill).
CPU_FIELDS = ("startup", "receive_cpu")


class ActorLearnerInfo(Info):
    actors: Count
    envs_per_actor: Count
    rollout_len: Count
    obs_dim: Count
    policy_sizes: Layers
    value_sizes: OptionalLayers  # empty: one network (REINFORCE, a shared body)
    n_params: Count
    batch_size: Count = Field(validation_alias=AliasChoices("batch_size", "minibatch_size"))
    epochs: Count
    transition_bytes: Count
    network: dict[str, Any] | None = None  # a non-MLP network's layers (network_work.py)
    # CPU time of starting the processes and of each receive (module docstring); None in
    # traces from before them and in one-process recordings: wall time then
    startup: StartUp | None = None
    receive_cpu: Receives | None = None

    def notes(self) -> list[str]:
        return notes(self.startup, self.receive_cpu)


def notes(startup: StartUp | None, receive_cpu: Receives | None) -> list[str]:
    """One line on each: its CPU time, or, where the trace lacks it, what it gets instead."""
    out = []
    if startup is not None:
        actors = startup.actors
        own = Span(wall_s=_mean([a.wall_s for a in actors]), cpu_s=_mean([a.cpu_s for a in actors]))
        out.append(f"start-up CPU (wall) ms: learner {_ms(startup.learner)}, starting each "
                   f"actor {_ms(startup.spawn, len(actors))}, an actor's own {_ms(own)}")
    if receive_cpu is not None:
        out.append(f"receives, mean CPU ms per iteration: an actor's parameters "
                   f"{1e3 * _mean(receive_cpu.params_cpu_s):.3g}, the learner's rollouts "
                   f"{1e3 * _mean(receive_cpu.rollouts_cpu_s):.3g}")
    missing = [name for name, v in (("start-up", startup), ("hand-offs", receive_cpu))
               if v is None]
    if missing:
        out.append(f"{' and '.join(missing)}: no CPU time recorded (a trace from before it, "
                   "or a one-process recording); costed from the shared clock's wall time, "
                   "contention included")
    return out


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs)


def _ms(span: Span, per: int = 1) -> str:
    return f"{1e3 * span.cpu_s / per:.3g} ({1e3 * span.wall_s / per:.3g})"
