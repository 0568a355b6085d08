"""The engine: replay a Trace on a resolved system through SimPy models, return a Result."""

from __future__ import annotations

from pathlib import Path

from rldse.errors import RldseError
from rldse.files import write_error
from rldse.sim.budget import Limits, Meter, check_size, check_timeline, estimate, is_small
from rldse.sim.machine import ENGINES, Machine, Outcome
from rldse.sim.result import Result
from rldse.sim.timeline import TimelineStream
from rldse.system import ResolvedSystem, resolve
from rldse.trace import Trace

__all__ = ["Limits", "Machine", "Outcome", "Result", "simulate"]


def simulate(trace: Trace, system, seed: int = 0,
             timeline: str | Path | None = None, limits: Limits | None = None,
             timeline_window: tuple[float, float] | None = None,
             engine: str = "fast") -> Result:
    """Run the trace's workload program on ``system``: a ResolvedSystem, or a SystemSpec
    that is resolved against the trace first. ``timeline_window`` (start_s, end_s): write
    only the timeline events overlapping it. ``engine``: ``fast`` or ``reference``
    (rldse.sim.machine.ENGINES). With ``limits`` its cost is estimated first
    (rldse.sim.budget): refused over them, shown as a progress bar when long."""
    if timeline_window is not None and timeline is None:
        raise RldseError("timeline_window selects events of a timeline: give a timeline "
                         "file too")
    if engine not in ENGINES:  # before resolving or estimating anything
        raise RldseError(f"engine {engine!r}: expected one of {', '.join(ENGINES)}")
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    budget = None
    if limits is not None:
        check_size(system, limits)
        if not is_small(trace, system):
            budget = estimate(trace, system, limits)
        if timeline is not None and budget is not None:
            check_timeline(budget.events, timeline, limits)
    machine = Machine(trace, system, seed=seed, timeline=timeline,
                      timeline_window=timeline_window, engine=engine)
    meter = Meter(machine, budget, limits) if budget is not None else None
    stream = machine.timeline if isinstance(machine.timeline, TimelineStream) else None
    try:
        result = machine.result(system.workload.program(machine))
        if stream is not None:
            stream.close()  # streamed while it ran; moved into place now
    except BaseException as exc:
        if stream is not None:
            stream.abort()  # no half-written timeline
            if isinstance(exc, OSError):  # the timeline's folder filled up or went away
                raise write_error(stream.path, exc) from None
        raise
    finally:
        if meter is not None:
            meter.close()
    return result
