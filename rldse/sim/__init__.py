"""The engine: replay a Trace on a SystemSpec through SimPy models, return a Result."""

from __future__ import annotations

from importlib import import_module
from pathlib import Path

from rldse.errors import RldseError
from rldse.sim.machine import Machine, Outcome
from rldse.sim.result import Result
from rldse.sim.timeline import write_chrome_trace
from rldse.system import SystemSpec
from rldse.trace import Trace

__all__ = ["Machine", "Outcome", "Result", "simulate"]


def simulate(trace: Trace, spec: SystemSpec, seed: int = 0,
             timeline: str | Path | None = None) -> Result:
    """Run the trace's workload program on the machine `spec` describes."""
    name = f"rldse.workloads.{trace.meta.workload}"
    try:
        module = import_module(name)
    except ModuleNotFoundError as exc:
        if exc.name != name:
            raise
        module = None
    if not hasattr(module, "program"):
        raise RldseError(f"trace {trace.digest}: workload '{trace.meta.workload}' has no "
                         "simulated program (known: tabular, dqn, ddpg, actor_learner)")
    machine = Machine(trace, spec, seed=seed, timeline=timeline is not None)
    outcome = module.program(machine)
    result = machine.result(outcome)
    if timeline is not None:
        write_chrome_trace(timeline, machine.timeline or [], list(machine.devices))
    return result
