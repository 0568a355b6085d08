"""One time step's costs: Tempo's network shapes, Tempo-JAX's counted calls on the host,
XLA's counted bytes and flops on the GPU roofline, and the placement the program needs."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models.gpu_ops import PROCESS_POWER
from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.workloads.timerl.program import (
    F32,
    TEMPO_STEP_CALLS,
    TEMPO_STEP_XLA,
    TempoShape,
    step_calls,
    step_costs,
    step_times,
    stream,
    tempo_step,
)


def test_shapes_match_tempo_network():
    s = TempoShape(256, 1000, 256)
    f = 3 * 256 * 256
    assert s.weights == f * 64 + 64 + 2 * (64 * 64 + 64) + 64 + 1
    assert s.rollout_bytes == 256 * 1000 * f * 4


def test_td_step_host_time_is_counted_jit_calls_times_jax_dispatch(gpu):
    """Host: Tempo's counted jitted calls × JAX's per-call dispatch; GPU: the env step, the
    forward and the backward; the step is the later of the two."""
    s = TempoShape(256, 1000, 256)
    env, act, learn = step_times(gpu, s)
    for d in (28.9e-6, 60.7e-6, 1e-3):
        step = tempo_step(gpu, s, 1, d)
        assert float(step.host_s) == pytest.approx(TEMPO_STEP_CALLS["td"].jit * d)
        assert float(step.device_s) == pytest.approx(
            float(env.device_s + act.device_s + learn.device_s))
        assert float(step.wall_s) == max(float(step.host_s), float(step.device_s))
    assert float(tempo_step(gpu, s, None, 1e-3).host_s) == \
        pytest.approx(TEMPO_STEP_CALLS["mc"].jit * 1e-3)


def test_step_calls_are_tempos_counts_by_objective():
    assert step_calls(None) == TEMPO_STEP_CALLS["mc"]
    assert step_calls(1) == TEMPO_STEP_CALLS["td"] and step_calls(1).jit == 15
    assert step_calls(8) == step_calls(64) == TEMPO_STEP_CALLS["td_n"]
def test_backward_is_the_roofline_of_xlas_counted_bytes_and_flops(gpu):
    """One step's backward: XLA's counted TD step less its acting step (per-sample gradient
    products fused into their reductions), on the GPU roofline with the preset's kernels."""
    g, s = gpu.spec, TempoShape(256, 1000, 256)
    td, act = TEMPO_STEP_XLA["td"], TEMPO_STEP_XLA["act"]
    x = 256 * s.features
    nbytes = (td.bytes.const - td.reduction_bytes.const - act.bytes.const
              + (td.bytes.per_element - td.reduction_bytes.per_element
                 - act.bytes.per_element) * x)
    flops = td.flops.const - act.flops.const + (td.flops.per_element
                                                - act.flops.per_element) * x
    assert step_costs(s)["learn"] == (pytest.approx(flops), pytest.approx(nbytes))
    kernels = g.kernels_fixed["learn"] + g.kernels_per_layer["learn"] * s.layers
    # XLA's counts have no shapes: flops at the GPU model's large-GEMM limit, by hand (the
    # clock the board's power above idle pays for, at least base; the 128×128 tile's share)
    peak = g.fp32_tflops * 1e12
    paid = (g.max_w - g.idle_w) / (g.flop_energy_pj * 1e-12
                                   * PROCESS_POWER[g.process_node] ** g.node_power_exponent)
    share = min(1.0, max(paid, peak * g.base_clock_mhz / g.boost_clock_mhz) / peak)
    tile = min(1.0, 32 / g.fp32_lanes_per_scheduler * 64 / (64 + g.gemm_tile_half))
    compute_s = flops / (peak * share * tile)
    memory_s = nbytes / (g.mem_bw_gbs * 1e9 * g.mem_bw_efficiency)
    expect = kernels * g.kernel_overhead_s + max(compute_s, memory_s)
    assert float(step_times(gpu, s)[2].device_s) == pytest.approx(expect)
    # dispatch per kernel as the issuing core runs it (GpuModel.issue_from)
    assert float(step_times(gpu, s)[2].host_s) == pytest.approx(kernels * gpu.dispatch_s)


def test_xla_count_agrees_with_the_hand_count_once_reductions_are_fused():
    """At 3×256×256 XLA's TD step, per-sample products fused, is within 5 % of the former hand
    count (observations written, read by the forward and the backward; six weight-sized
    passes); as XLA:CPU compiles it, the products add 2 × 64 × 4 B per env × feature."""
    s = TempoShape(256, 1000, 256)
    hand = 3 * s.step_bytes + 6 * F32 * s.weights + 3 * F32 * 256 * s.width
    xla = sum(b for _, b in step_costs(s, 1).values())
    assert abs(xla / hand - 1) < 0.05
    unfused = sum(b for _, b in step_costs(s, 1, fuse_reductions=False).values())
    assert unfused - xla == pytest.approx(TEMPO_STEP_XLA["td"].reduction_bytes.at(s))
    assert TEMPO_STEP_XLA["td"].reduction_bytes.per_element == pytest.approx(
        2 * 64 * F32 + 2 * 64 * F32 / 32, rel=0.01)  # written, read; and the 32-wide partials


def test_a_placement_not_running_learn_as_kernels_is_refused(trace):
    spec = parse_spec({"name": "cpu", "cpu": {"preset": "epyc-7402p"}}, where="test")
    with pytest.raises(RldseError):
        stream(Machine(trace, spec))
