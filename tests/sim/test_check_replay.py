"""rldse check-replay: replay consistency, and a GPU capture's act/learn on a GPU preset."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.cli import main
from rldse.sim import simulate
from rldse.sim.check_replay import check_replay, host_spec_for
from rldse.system import parse_spec
from rldse.trace import load_trace

GPU_TRACE = "traces/h200/dqn_gpu_b32_run3.parquet"
CPU_TRACE = "traces/dqn_cartpole_uniform.parquet"


def _learner_dispatch_s(result) -> float:
    frame = result.phases_frame()
    rows = frame[(frame["worker"] == "learner") & (frame["phase"] == "dispatch")]
    return float(rows["time_s"].sum())


def test_a_gpu_capture_keeps_its_own_dispatch_on_its_host():
    """Captured with the networks on a GPU: on the capture host the learner's host time is
    the learn rows' own (anchor_dispatch), whatever the preset's dispatch_s says."""
    trace = load_trace(GPU_TRACE)
    _, fast = check_replay(trace, gpu="h200-measured")
    learn = trace.ops[trace.ops["phase"] == "learn"]["dur_s"].to_numpy()
    updates = int(fast.updates)
    per_update = _learner_dispatch_s(fast) / updates
    assert per_update == pytest.approx(float(np.mean(learn)), rel=0.05)


def test_a_cpu_capture_pays_its_framework_share_plus_kernels_times_dispatch():
    """A CPU capture has no GPU dispatch of its own: a GPU learner's host time is the learn
    rows' framework share on the capture host plus kernels x dispatch_s, so raising
    dispatch_s adds exactly the learn kernels' launches, and the share is most of the
    rows' CPU time (the CPU time less its roofline)."""
    trace = load_trace(CPU_TRACE)
    base = host_spec_for(trace, "h200-measured").model_dump(mode="json", exclude_none=True)

    def learner_s(**gpu):
        raw = {**base, "gpu": {**base["gpu"], **gpu}}
        return _learner_dispatch_s(simulate(trace, parse_spec(raw, where="t")))

    dispatch_s = base["gpu"].get("dispatch_s", 6.855e-6)
    at_zero = learner_s(dispatch_s=0.0)
    learn = trace.ops[trace.ops["phase"] == "learn"]
    learn_cpu_s = float(learn["cpu_s"].sum())
    assert 0.5 * learn_cpu_s < at_zero <= 1.01 * learn_cpu_s
    assert learner_s(dispatch_s=2 * dispatch_s) > learner_s(dispatch_s=dispatch_s) > at_zero


@pytest.mark.parametrize("args, needle", [
    (["check-replay", GPU_TRACE, "--gpu", "no-such-gpu"], "no-such-gpu"),
    (["validate", CPU_TRACE], f"validate {CPU_TRACE}: 'rldse validate external' checks"),
    (["validate", "external", "--dataset", "nope"], "--dataset nope: unknown"),
])
def test_bad_validate_arguments_are_one_line(args, needle, capsys):
    assert main(args) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1
