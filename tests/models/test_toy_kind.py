"""A part kind added in this test alone (registration, model and preset data, no file of
rldse touched) runs act and learn of shipped traces: programs ask the Machine what serves
a role (rldse.sim.machine.Runner) and pick their implementation by how the part runs it
(rldse.models.kinds.Runs), never by its kind name."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rldse.models.gpu import GpuTimes
from rldse.models.kinds import (
    PART_KINDS,
    Check,
    Instance,
    KernelModel,
    PartKind,
    Runs,
    register,
)
from rldse.models.spec import PartSpec, quantity
from rldse.sim import simulate
from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.trace import load_trace

TRACES = Path(__file__).resolve().parents[2] / "traces"

#: The toy's preset data (a roofline part behind a host link; round numbers, no device).
PRESETS = {"toy-1": {"peak_flops": 1e13, "mem_bw_gbs": 500.0, "mem_bytes": 8e9,
                     "link_gbs": 10.0, "dispatch_s": 5e-6, "launch_s": 2e-6,
                     "idle_w": 20.0, "max_w": 100.0, "price_usd": 1000.0}}


class ToySpec(PartSpec):
    peak_flops: float = quantity("FLOP/s", "peak", gt=0)
    mem_bw_gbs: float = quantity("GB/s", "memory bandwidth", gt=0)
    mem_bytes: float = quantity("B", "memory", gt=0)
    link_gbs: float = quantity("GB/s", "host link", gt=0)
    dispatch_s: float = quantity("s", "host core time to issue one operation", ge=0)
    launch_s: float = quantity("s", "fixed device time per operation", ge=0)
    idle_w: float = quantity("W", "idle power", ge=0)
    max_w: float = quantity("W", "busy power", ge=0)
    price_usd: float = quantity("USD", "price", ge=0)


class ToyModel:
    """Issued kernels: dispatch on the host core, launch + roofline on the part."""

    method = "toy roofline"
    claimed_accuracy = "none: a test part"
    warnings = ()

    def __init__(self, spec: ToySpec) -> None:
        self.spec, self.lanes = spec, 1
        self.idle_w, self.max_w = spec.idle_w, spec.max_w

    def issue_from(self, core, busy_cores=None) -> None:
        pass

    def anchor_dispatch(self, phases) -> None:
        pass

    def dynamic_share(self, phase: str) -> float:
        return 1.0

    def op_times(self, ops, layers=0) -> GpuTimes:
        s = self.spec
        device = s.launch_s + np.maximum(ops.flops / s.peak_flops, ops.bytes / (s.mem_bw_gbs * 1e9))
        return GpuTimes(host_s=np.full(device.shape, s.dispatch_s), device_s=device)

    def copy_times(self, bytes_) -> GpuTimes:
        b = np.asarray(bytes_, dtype=np.float64)
        return GpuTimes(host_s=np.full(b.shape, self.spec.dispatch_s),
                        device_s=b / (self.spec.link_gbs * 1e9))

    def blocking_copy_times(self, bytes_, after=None) -> GpuTimes:
        copy = self.copy_times(bytes_)  # the toy runs one thing at a time: nothing to drain
        return copy if after is None else after + copy

    def fits(self, bytes_):
        return np.asarray(bytes_) <= self.spec.mem_bytes


def _instances(kind, ref, load, where):
    spec = ToySpec(name=ref.preset, **{**PRESETS[ref.preset], **ref.overrides()})
    return [Instance(kind.name, spec, ref.preset)]


@pytest.fixture
def toy():
    """The toy kind registered for one test: the system spec has its section from the
    registration alone (rldse.system.system_spec follows the kind registry)."""
    kind = register(PartKind(
        name="toy", spec=ToySpec, model=lambda spec, ctx: ToyModel(spec),
        description="a toy accelerator", serves={"act": Runs.KERNELS, "learn": Runs.KERNELS},
        presets=False, instances=_instances,
        checks=(Check("toy_memory", "what the program keeps on the toy fits", memory=True),)))
    yield kind
    del PART_KINDS["toy"]


@pytest.mark.parametrize("trace_file,knobs", [
    ("actor_learner_cartpole_2.parquet", {"env_steps": 4096}),
    ("dqn_cartpole_per.parquet", {"env_steps": 2000}),
])
def test_toy_part_runs_act_and_learn(toy, trace_file, knobs):
    trace = load_trace(TRACES / trace_file)
    raw = {"name": "toy", "toy": {"preset": "toy-1"}, "workload": knobs,
           "placement": {"act": "toy", "learn": "toy"}}
    machine = Machine(trace, parse_spec(raw))
    act, learn = machine.runner("act"), machine.runner("learn")
    assert (act.kind, act.runs, learn.kind) == ("toy", Runs.KERNELS, "toy")
    assert isinstance(act.model, KernelModel)
    r = simulate(trace, parse_spec(raw))
    toy_dev = next(d for d in r.devices if d.name == "toy")
    # kernels of both roles ran on the toy, their dispatch on the host's cores
    assert toy_dev.phase_busy_s["act"] > 0 and toy_dev.phase_busy_s["learn"] > 0
    cpu_dev = next(d for d in r.devices if d.name == "cpu")
    assert cpu_dev.phase_busy_s["dispatch"] > 0
    on_toy = {(p.worker, p.phase) for p in r.phases if p.device == "toy"}
    assert {("actor", "act"), ("learner", "learn")} <= on_toy
    assert r.checks["toy_memory"]
    # the toy's numbers drive the result: a part 100x slower at everything is slower
    slow = dict(raw, toy={"preset": "toy-1", "peak_flops": 1e11, "mem_bw_gbs": 5.0,
                          "launch_s": 2e-4})
    assert simulate(trace, parse_spec(slow)).sim_time_s > r.sim_time_s
    # and its memory check is the program's verdict
    tiny = dict(raw, toy={"preset": "toy-1", "mem_bytes": 1.0})
    assert not simulate(trace, parse_spec(tiny)).checks["toy_memory"]
