"""The engine: replay a Trace on a resolved system through SimPy models, return a Result."""

from __future__ import annotations

from pathlib import Path

from rldse.sim.machine import Machine, Outcome
from rldse.sim.result import Result
from rldse.sim.timeline import TimelineStream
from rldse.system import ResolvedSystem, resolve
from rldse.trace import Trace

__all__ = ["Machine", "Outcome", "Result", "simulate"]


def simulate(trace: Trace, system, seed: int = 0,
             timeline: str | Path | None = None) -> Result:
    """Run the trace's workload program on ``system``: a ResolvedSystem, or a SystemSpec
    that is resolved against the trace first."""
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    machine = Machine(trace, system, seed=seed, timeline=timeline)
    stream = machine.timeline if isinstance(machine.timeline, TimelineStream) else None
    try:
        result = machine.result(system.workload.program(machine))
    except BaseException:
        if stream is not None:
            stream.abort()  # no half-written timeline
        raise
    if stream is not None:
        stream.close()  # streamed while it ran; moved into place now
    return result
