"""TimeRL's program on TimeRL's machine (epyc-7402p host, rtx-a6000), built from a trace
that only resolves the system."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.trace import load_trace
from rldse.workloads.timerl.program import stream

ROOT = Path(__file__).resolve().parents[4]


@pytest.fixture(scope="module")
def trace():
    return load_trace(ROOT / "traces" / "actor_learner_cartpole_2.parquet")


@pytest.fixture(scope="module")
def machine(trace):
    """A fresh Machine (its own energy ledger): ``machine(gpu_bytes=None, timeline=None)``,
    ``gpu_bytes`` overriding the A6000's memory."""

    def make(gpu_bytes: int | None = None, timeline: Path | None = None) -> Machine:
        gpu = {"preset": "rtx-a6000"} | ({"mem_bytes": gpu_bytes} if gpu_bytes else {})
        spec = parse_spec({"name": "t", "cpu": {"preset": "epyc-7402p"}, "gpu": gpu,
                           "placement": {"act": "gpu", "learn": "gpu"}}, where="test")
        return Machine(trace, spec, timeline=timeline)

    return make


@pytest.fixture(scope="module")
def gpu(machine):
    return stream(machine())
