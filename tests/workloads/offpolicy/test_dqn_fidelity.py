"""Cross-configuration fidelity, fast version (benchmarks/fidelity/fidelity_dqn.py is the full one):
a DQN trace captured at batch 32 predicts the learner update time at batch 128 on the
same host.

What was observed (shared 2-core host, load average 2-3, captures of 4,000 steps, best of
3; see the benchmark): replaying a trace at its own batch size gives its measured learn
time exactly and its loop wall time 2-4 % short (the recorder's gaps between operations
are not replayed). Across batch sizes the program under-predicts growth: 32 -> 128 came
out -14 % to -23 % on the isolated learn step and -14 % to +5 % between captures, because
the CPU model then scaled only the roofline-explained share max(flops / F, bytes / B) of
the op, and numpy's batch-proportional work (skinny GEMMs, elementwise kernels run one
after another) takes about twice that. The roofline is now flops / F + bytes / B
(rldse/models/cpu.py), which brought the isolated-step error to about -5 % to -20 %. Between captures, host load moved the same batch's mean
learn op by up to 1.7x (one preempted stretch is enough to move a mean over 500 ops), and
single predicted/measured pairs of these short captures ranged 0.59-1.42. So the bound
asserted here is loose on purpose: prediction within a factor 2 of the measurement, each
batch size's capture the least disturbed (lowest mean learn op) of three taken in
alternation.
"""

from __future__ import annotations

import pytest

from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads import capture
from rldse.workloads.common.base import CaptureConfig

STEPS, STARTS = 1500, 500


def _capture(batch: int) -> Trace:
    return capture(CaptureConfig(workload="dqn", env_id="CartPole-v1", steps=STEPS, seed=0,
                                 options={"batch_size": batch, "learning_starts": STARTS}))


def _mean_learn_s(trace: Trace) -> float:
    """Mean host cost of a learn (rldse.trace.host_cost_s: CPU time where it computes)."""
    return float(trace.host_cost_s()[(trace.ops["phase"] == "learn").to_numpy()].mean())


def _predict(trace: Trace, batch: int) -> tuple[float, float]:
    spec = parse_spec({"name": "capture-host", "cpu": {"preset": "host"},
                       "workload": {"batch_size": batch}})
    result = simulate(trace, spec)
    phases = result.phases_frame()
    learn = float(phases.loc[phases["phase"] == "learn", "time_s"].sum())
    return learn / result.updates, result.sim_time_s


@pytest.fixture(scope="module")
def traces() -> dict[int, Trace]:
    best: dict[int, Trace] = {}
    for _ in range(3):
        for batch in (32, 128):
            t = _capture(batch)
            if batch not in best or _mean_learn_s(t) < _mean_learn_s(best[batch]):
                best[batch] = t
    return best


def test_same_batch_replay_gives_the_measured_times(traces):
    t = traces[32]
    learn, wall = _predict(t, 32)
    assert learn == pytest.approx(_mean_learn_s(t), rel=1e-9)
    # replayed ops only, one after another: the sum of their host cost (CPU time), not
    # the loop's wall, whose untimed glue and preemptions the replay does not contain
    assert wall == pytest.approx(float(t.host_cost_s().sum()), rel=0.15)
    assert wall <= t.meta.wall_time_s


def test_batch_32_predicts_batch_128_learn_time_loosely(traces):
    src, real = traces[32], traces[128]
    learn, _ = _predict(src, 128)
    measured_src = _mean_learn_s(src)
    # structure: more work costs more, but the overhead share does not grow 4x
    assert measured_src < learn < 4 * measured_src
    assert 0.5 <= learn / _mean_learn_s(real) <= 2.0
