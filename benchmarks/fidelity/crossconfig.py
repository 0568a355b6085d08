"""Shared scaffolding of the cross-configuration fidelity benchmarks: capture
configuration A, predict configuration B from A's trace on the ``host`` CPU preset (only
the knobs that differ are set; nothing of B is used), capture B for real, compare.

Captures pin BLAS to one thread (rldse.threads). Each configuration is captured
``repeats`` times round-robin (so every configuration sees the same spread of host load)
and the capture with the fastest training loop is kept, the fingerprint's rule: the least
disturbed run is the most repeatable.

The measured side's basis, one rule for every ``fidelity_*.py`` benchmark. A prediction
is for dedicated hardware: the simulator costs each captured op from what it cost the
capture host (rldse.trace.host_cost_s: CPU time where the op computes, wall time where it
waits), so time the OS gave to other processes is no part of it. The real run it is
checked against is read on the same basis, by the same function: a quantity summed over
ops is summed over their ``host_cost_s`` (``measured_cost_s``), and a run's wall time is
divided by the wall/CPU ratio its compute rows saw (``dedicated_wall_s``: 1 on a quiet
host, about 3 for a process sharing its core with two busy loops; a preemption at a CPU
clock read is in the row's wall time, rldse.cpu_clock), so waits that follow a slowed
process shrink with it. The raw wall-time reading is printed beside it (``*_wall``)
and carries no verdict. What CPU time cannot remove is a slower core: another vCPU of the
same physical core (SMT) or the shared caches busy, which slow the op in CPU time too.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads import capture
from rldse.workloads.common.base import CaptureConfig


@dataclass(frozen=True)
class Config:
    """One real run: a workload's capture options."""

    label: str
    workload: str
    env_id: str
    steps: int
    replay: str | None = None
    options: dict[str, Any] = field(default_factory=dict)

    def capture_config(self, seed: int = 0) -> CaptureConfig:
        extra = {"replay": self.replay} if self.replay else {}
        return CaptureConfig(workload=self.workload, env_id=self.env_id, steps=self.steps,
                             seed=seed, options=self.options, **extra)


@dataclass(frozen=True)
class Case:
    """Predict ``target`` from ``source``'s trace with ``knobs``; compare ``quantity``."""

    name: str
    source: Config
    target: Config
    knobs: dict[str, Any]
    quantity: str  # what measured(trace) and predicted(result) return


def load_line() -> str:
    load = os.getloadavg()
    return f"host: {os.cpu_count()} CPUs, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"


def best_captures(configs: list[Config], repeats: int) -> dict[str, Trace]:
    best: dict[str, Trace] = {}
    for _ in range(repeats):
        for c in configs:
            t = capture(c.capture_config())
            if c.label not in best or t.meta.wall_time_s < best[c.label].meta.wall_time_s:
                best[c.label] = t
    return best


def predict(trace: Trace, knobs: dict[str, Any]):
    """The twin's Result for ``trace`` on its own host with ``knobs`` set."""
    spec = parse_spec({"name": "capture-host", "cpu": {"preset": "host"},
                       "workload": knobs}, where="fidelity")
    return simulate(trace, spec, seed=0)


def measured_cost_s(trace: Trace, phases: tuple[str, ...]) -> float:
    """Seconds ``phases`` cost in a real trace, on the simulator's basis (the rule above)."""
    rows = trace.ops["phase"].isin(phases).to_numpy()
    return float(trace.host_cost_s()[rows].sum())


def measured_wall_s(trace: Trace, phases: tuple[str, ...]) -> float:
    """Seconds ``phases`` took in a real trace, wall time (contention included)."""
    ops = trace.ops
    return float(ops.loc[ops["phase"].isin(phases), "dur_s"].sum())


def dedicated_wall_s(trace: Trace, wall_s: float | None = None) -> float:
    """A real run's wall time (``wall_s``, default the training loop's) as on dedicated
    cores: divided by the wall/CPU ratio of its compute rows (the rule above)."""
    wall = trace.meta.wall_time_s if wall_s is None else wall_s
    return wall / max(trace.compute_wall_per_cpu or 1.0, 1.0)


def updates(trace: Trace) -> int:
    return max(int((trace.ops["phase"] == "learn").sum()), 1)


def measured_per_update(trace: Trace, phases: tuple[str, ...]) -> float:
    """Mean seconds ``phases`` cost per learner update in a real trace (``measured_cost_s``)."""
    return measured_cost_s(trace, phases) / updates(trace)


def measured_wall_per_update(trace: Trace, phases: tuple[str, ...]) -> float:
    """Mean wall seconds of ``phases`` per learner update (contention included)."""
    return measured_wall_s(trace, phases) / updates(trace)


def error_line(case: str, quantity: str, predicted: float, measured: float,
               measured_wall: float, threshold: float, width: int = 34) -> float:
    """Print one row (case, quantity, predicted, measured wall, measured on the CPU
    basis, error against each; the verdict on the CPU basis) and return that error."""
    err, err_wall = predicted / measured - 1, predicted / measured_wall - 1
    verdict = "PASS" if abs(err) <= threshold else "FAIL"
    print(f"{case:{width}s} {quantity:28s} {predicted:11.6g} {measured_wall:11.6g} "
          f"{err_wall:+8.1%} {measured:11.6g} {err:+8.1%} {verdict}")
    return err


def error_header(width: int = 34) -> None:
    print(f"{'case':{width}s} {'quantity':28s} {'predicted':>11s} {'meas. wall':>11s} "
          f"{'error':>8s} {'meas. CPU':>11s} {'error':>8s}")


def predicted_per_update(result, phases: tuple[str, ...]) -> float:
    """Mean seconds of ``phases`` per learner update in a Result."""
    frame = result.phases_frame()
    return float(frame.loc[frame["phase"].isin(phases), "time_s"].sum()) / max(result.updates, 1)


def run(cases: list[Case], quantities: dict[str, tuple[tuple[str, ...], str]],
        repeats: int, header: str, threshold: float) -> list[float]:
    """Capture every configuration, print one row per case (seconds) and return the
    errors on the CPU basis. ``quantities``: name → (phases summed per update, description)."""
    print(load_line())
    print(header)
    configs = {c.label: c for case in cases for c in (case.source, case.target)}
    traces = best_captures(list(configs.values()), repeats)
    error_header()
    errors = []
    for case in cases:
        phases, text = quantities[case.quantity]
        real = traces[case.target.label]
        pred = predicted_per_update(predict(traces[case.source.label], case.knobs), phases)
        errors.append(error_line(case.name, text, pred, measured_per_update(real, phases),
                                 measured_wall_per_update(real, phases), threshold))
    print(load_line())
    return errors
