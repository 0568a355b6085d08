"""The fast engine against the reference engine on one system: the metrics issue 25 holds
the fast paths to (makespan, throughput, every device's busy time, energy, p95 of the
per-iteration time) and their relative differences.

Used by tests/sim/test_reference.py and benchmarks/reference_agreement.py; a fast path
that misses ``TOLERANCE`` on a contended configuration is either fixed or not taken.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.sim.machine import Machine
from rldse.system import ResolvedSystem, resolve
from rldse.trace import Trace

#: Largest relative difference allowed between the engines on any metric.
TOLERANCE = 0.01


def metrics(trace: Trace, system, seed: int = 0, engine: str = "fast") -> dict[str, float]:
    """Run ``system`` on one engine; the compared metrics by name (``busy_s:DEVICE`` per
    device, ``iter_p95_s`` only where the program marks iterations)."""
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    m = Machine(trace, system, seed=seed, engine=engine)
    r = m.result(system.workload.program(m))
    out = {"makespan_s": r.sim_time_s, "env_steps_per_s": r.env_steps_per_s,
           "energy_j": r.energy_j}
    out.update({f"busy_s:{d.name}": d.busy_s for d in r.devices})
    times = m.iteration_times_s()
    if len(times):
        out["iter_p95_s"] = float(np.percentile(times, 95))
    return out


@dataclass(frozen=True)
class Agreement:
    """Both engines' metrics and the fast one's relative difference on each."""

    fast: dict[str, float]
    reference: dict[str, float]

    @property
    def errors(self) -> dict[str, float]:
        """fast / reference - 1 per metric (0 where both are 0)."""
        out = {}
        for key, ref in self.reference.items():
            got = self.fast[key]
            out[key] = 0.0 if got == ref else (got / ref - 1.0 if ref else float("inf"))
        return out

    @property
    def worst(self) -> tuple[str, float]:
        key = max(self.errors, key=lambda k: abs(self.errors[k]))
        return key, self.errors[key]


def agreement(trace: Trace, system, seed: int = 0) -> Agreement:
    """Run ``system`` on both engines with the same seed (the same cost-row draws)."""
    if not isinstance(system, ResolvedSystem):
        system = resolve(system, trace)
    return Agreement(fast=metrics(trace, system, seed, "fast"),
                     reference=metrics(trace, system, seed, "reference"))
