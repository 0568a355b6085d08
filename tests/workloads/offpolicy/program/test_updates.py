"""The update's cost terms (rldse.workloads.offpolicy.program.updates) reach every path's
schedule, each pinned apart from the code that prices it: a preset number moved (a copy's
fixed cost, the link's efficiency, the time per kernel) moves the busy seconds of the
phase each term belongs to by what the term's count works out to by hand from the
trace's shapes and the presets (updates, copies' bytes, kernels per update), on the
merged sync and merged async paths alike. A dropped or miscounted copy or kernel fails
here, where tests/sim/test_exact.py, holding the fast paths to the reference engine that
shares their costs, cannot see it.
"""

from __future__ import annotations

import pytest

from rldse.models import load_part
from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import load_trace

COPY_S = 1e-3  # added to every copy: far above the copies' own seconds
KERNEL_S = 1e-3  # time per kernel in the second run (the first: none)
TRACE = "traces/dqn_cartpole_per.parquet"
# the trace's loop (workload_info): batch 64 of 41-byte transitions, an update every 2
# env steps after 1,000, a hard target copy every 200 env steps (warm-up included), a
# [4, 64, 64, 2] Q-network; 3,000 env steps
ENV_STEPS, BATCH, TRANSITION_BYTES, LAYERS = 3000, 64, 41, 3
UPDATES = (ENV_STEPS - 1000) // 2
SYNCS = ENV_STEPS // 200
TD_BYTES = 4  # one float32 TD error per sampled transition


def _run(learner: str, **gpu):
    spec = parse_spec({"name": "t", "cpu": {"preset": "xeon-e5-2698-v4", "sockets": 2},
                       "gpu": {"preset": "v100-sxm2", **gpu},
                       "placement": {"act": "cpu", "learn": "gpu", "replay": "cpu"},
                       "workload": {"learner": learner, "env_steps": ENV_STEPS}})
    r = simulate(load_trace(TRACE), spec, seed=0)
    return r, {d.name: d.phase_busy_s for d in r.devices}


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_each_update_pays_its_batch_copy_and_its_td_copy(learner):
    """Learn: the sampled batch copied to the GPU learner (booked on the GPU); priority
    update: the TD errors copied back to the host replay (booked on its core)."""
    base, busy0 = _run(learner, copy_fixed_s=0.0)
    slow, busy1 = _run(learner, copy_fixed_s=COPY_S)
    n = base.updates
    assert n == UPDATES and slow.updates == n
    assert busy1["gpu"]["learn"] - busy0["gpu"]["learn"] == pytest.approx(n * COPY_S,
                                                                            rel=1e-6)
    assert busy1["cpu"]["replay_update"] - busy0["cpu"]["replay_update"] == pytest.approx(
        n * COPY_S, rel=1e-6)


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_each_copy_moves_its_bytes_over_the_link(learner):
    """The copies' bytes at the link's rate (copy_efficiency × the V100 preset's host
    link): the batch (64 × 41 B) on the learn drive, the TD errors (64 × 4 B) on the
    priority update's."""
    line_bps = load_part("link", load_part("gpu", "v100-sxm2").host_link).bandwidth_gbs * 1e9
    _, busy0 = _run(learner, copy_efficiency=0.8)
    _, busy1 = _run(learner, copy_efficiency=0.4)
    per_byte_s = 1 / (0.4 * line_bps) - 1 / (0.8 * line_bps)
    assert busy1["gpu"]["learn"] - busy0["gpu"]["learn"] == pytest.approx(
        UPDATES * BATCH * TRANSITION_BYTES * per_byte_s, rel=1e-6)
    assert busy1["cpu"]["replay_update"] - busy0["cpu"]["replay_update"] == pytest.approx(
        UPDATES * BATCH * TD_BYTES * per_byte_s, rel=1e-6)


@pytest.mark.parametrize("learner", ["sync", "async"])
def test_each_update_and_target_copy_runs_its_eager_kernels(learner):
    """Kernels per learn step: the preset's fixed count (loss, optimizer and the rest
    besides the layers) plus its per-layer count × the network's 3 layers; per target
    copy: a weight and a bias per layer. Each kernel's time (kernel_overhead_s) shows once
    per kernel in the GPU's learn and sync seconds."""
    gpu = load_part("gpu", "v100-sxm2")
    learn_kernels = gpu.kernels_fixed["learn"] + gpu.kernels_per_layer["learn"] * LAYERS
    sync_kernels = gpu.kernels_fixed["sync"] + gpu.kernels_per_layer["sync"] * LAYERS
    _, busy0 = _run(learner, kernel_overhead_s=0.0)
    _, busy1 = _run(learner, kernel_overhead_s=KERNEL_S)
    assert busy1["gpu"]["learn"] - busy0["gpu"]["learn"] == pytest.approx(
        UPDATES * learn_kernels * KERNEL_S, rel=1e-6)
    assert busy1["gpu"]["sync"] - busy0["gpu"]["sync"] == pytest.approx(
        SYNCS * sync_kernels * KERNEL_S, rel=1e-6)
