"""Shared scaffolding of the cross-configuration fidelity benchmarks: capture
configuration A, predict configuration B from A's trace on the ``host`` CPU preset (only
the knobs that differ are set; nothing of B is used), capture B for real, compare.

Captures pin BLAS to one thread (rldse.threads). Each configuration is captured
``repeats`` times round-robin (so every configuration sees the same spread of host load)
and the capture with the fastest training loop is kept, the fingerprint's rule: the least
disturbed run is the most repeatable.
"""

from __future__ import annotations

import os
from collections.abc import Callable
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


def measured_per_update(trace: Trace, phases: tuple[str, ...]) -> float:
    """Mean seconds of ``phases`` per learner update in a real trace."""
    ops = trace.ops
    updates = int((ops["phase"] == "learn").sum())
    return float(ops.loc[ops["phase"].isin(phases), "dur_s"].sum()) / max(updates, 1)


def predicted_per_update(result, phases: tuple[str, ...]) -> float:
    """Mean seconds of ``phases`` per learner update in a Result."""
    frame = result.phases_frame()
    return float(frame.loc[frame["phase"].isin(phases), "time_s"].sum()) / max(result.updates, 1)


def run(cases: list[Case], quantities: dict[str, tuple[tuple[str, ...], str]],
        repeats: int, header: str, threshold: float,
        measure: Callable[[Trace, tuple[str, ...]], float] = measured_per_update) -> list[float]:
    """Capture every configuration, print one row per case and return the errors.
    ``quantities``: name → (phases summed per update, description)."""
    print(load_line())
    print(header)
    configs = {c.label: c for case in cases for c in (case.source, case.target)}
    traces = best_captures(list(configs.values()), repeats)
    print(f"{'case':34s} {'quantity':28s} {'measured_s':>11s} {'predicted_s':>11s} "
          f"{'error':>8s}")
    errors = []
    for case in cases:
        phases, text = quantities[case.quantity]
        real = measure(traces[case.target.label], phases)
        pred = predicted_per_update(predict(traces[case.source.label], case.knobs), phases)
        err = (pred - real) / real
        errors.append(err)
        verdict = "PASS" if abs(err) <= threshold else "FAIL"
        print(f"{case.name:34s} {text:28s} {real:11.6f} {pred:11.6f} {err:+8.1%} {verdict}")
    print(load_line())
    return errors
