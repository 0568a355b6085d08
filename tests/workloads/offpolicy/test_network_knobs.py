"""The network-shape knob ``hidden`` of the neural families: work follows the layer
formulas and the GEMM curve, parameters follow the widths."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.kernels.mlp import n_params
from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads import capture
from rldse.workloads.common.base import CaptureConfig


@pytest.fixture(scope="module")
def dqn() -> Trace:
    return capture(CaptureConfig(workload="dqn", env_id="CartPole-v1", steps=600, seed=0,
                                 options={"learning_starts": 100, "hidden": [32, 32]}))


def _phase_s(trace: Trace, workload: dict, **raw) -> dict[str, float]:
    result = simulate(trace, parse_spec({"cpu": {"preset": "host"}, "workload": workload,
                                         **raw}), seed=0)
    frame = result.phases_frame()
    return frame.groupby("phase")["time_s"].sum().to_dict()


def test_dqn_as_in_the_trace_by_default_and_wider_is_slower(dqn):
    same = _phase_s(dqn, {})
    assert _phase_s(dqn, {"hidden": [32, 32]}) == same
    wide = _phase_s(dqn, {"hidden": [256, 256]})
    assert wide["learn"] > 2 * same["learn"]
    assert wide["sync"] > same["sync"]
    assert wide["env_step"] == pytest.approx(same["env_step"])


def test_dqn_gpu_memory_follows_the_widths(dqn):
    def peak(hidden):
        r = simulate(dqn, parse_spec({"gpu": {"preset": "a100-40g"},
                                      "placement": {"learn": "gpu"},
                                      "workload": {"hidden": hidden}}), seed=0)
        return r.gpu_memory_peak_bytes
    grow = peak([256, 256]) - peak([32, 32])
    assert grow == 4 * 4 * (n_params([4, 256, 256, 2]) - n_params([4, 32, 32, 2]))


def test_bad_widths_are_refused(dqn):
    with pytest.raises(RldseError, match="hidden"):
        _phase_s(dqn, {"hidden": [0]})


@pytest.mark.parametrize(("raw", "needle"), [
    ({"workload": {"gpu_swap": True}}, "workload.gpu_swap: gpu_swap swaps a GPU replay"),
])
def test_knobs_a_placement_would_ignore_are_refused(dqn, raw, needle):
    with pytest.raises(RldseError, match=needle) as err:
        simulate(dqn, parse_spec({"cpu": {"preset": "host"}, **raw}), seed=0)
    assert "\n" not in str(err.value)
