"""The program's closed form against hand-written closed forms of its schedule: what
stays resident, what is swapped, and an n-step TD iteration as its steps and its tail."""

from __future__ import annotations

import pytest

from rldse.workloads.timerl.program import (
    JAX_JIT_DISPATCH_S,
    TEMPO_ITERATION_JIT_CALLS,
    TEMPO_STEP_CALLS,
    TempoShape,
    ppo,
    ppo_baseline_need,
    reinforce,
    step_calls,
    step_times,
)


def test_td_keeps_n_plus_one_steps_and_monte_carlo_swaps_the_rollout(gpu):
    s, cap = TempoShape(256, 1000, 256), int(gpu.spec.mem_bytes)
    fixed = 16 * s.weights
    for n in (1, 8, 64):
        it = reinforce(gpu, s, n, True, cap)
        assert it.gpu_need_bytes == (n + 1) * (s.step_bytes + 4 * 256 * s.width) + fixed
        assert it.swapped_bytes == 0 and it.copies_s == 0
    mc = reinforce(gpu, s, None, True, cap)
    copy_s = gpu.spec.copy_fixed_s + s.step_bytes / gpu.copy_bps
    assert mc.copies_s == pytest.approx(2 * 1000 * copy_s)
    assert mc.iter_s >= mc.copies_s  # the copies bound both phases here
    assert mc.swapped_bytes == s.rollout_bytes and mc.resident_bytes <= cap
    assert mc.resident_bytes == fixed + 1000 * 4 * 256 * s.width + 2 * s.step_bytes
    assert not reinforce(gpu, s, None, False, cap).resident_bytes <= cap


def test_ppo_baselines_hold_a_second_copy_of_the_rollout(gpu):
    s = TempoShape(256, 1000, 64, value_head=True)
    need = ppo_baseline_need(s)
    assert need > 2 * s.rollout_bytes
    it = ppo(gpu, s, False, int(gpu.spec.mem_bytes))
    assert it.resident_bytes == need - s.rollout_bytes and it.swapped_bytes == 0


def test_td_iteration_is_its_steps_and_the_iteration_tail_whatever_n(gpu):
    s, cap = TempoShape(256, 1000, 256), int(gpu.spec.mem_bytes)
    env, act, learn = step_times(gpu, s)
    adam_s = float(gpu.kernel_times(2, 0, 7 * 4 * s.weights).device_s)
    tail_s = max(TEMPO_ITERATION_JIT_CALLS * JAX_JIT_DISPATCH_S, adam_s)
    for n in (1, 8, 64):
        host_s = step_calls(n).jit * JAX_JIT_DISPATCH_S
        step_s = max(host_s, float(env.device_s + act.device_s + learn.device_s))
        assert reinforce(gpu, s, n, True, cap).iter_s == pytest.approx(1000 * step_s + tail_s)
    # a dispatch long enough to exceed the GPU work makes the step host-bound
    slow = reinforce(gpu, s, 1, True, cap, 1e-3)
    assert slow.act_s == pytest.approx(1000 * TEMPO_STEP_CALLS["td"].jit * 1e-3)


def test_monte_carlo_swapping_is_a_two_stage_pipeline(gpu):
    """At 3×256×256 the copies (8 ms a step) outlast a step and a backward: acting ends
    one env step after T copies, learning one backward after T copies, then the tail."""
    s, cap = TempoShape(256, 1000, 256), int(gpu.spec.mem_bytes)
    env, _, learn = step_times(gpu, s, None)
    copy_s = float(gpu.copy_times(s.step_bytes).device_s)
    it = reinforce(gpu, s, None, True, cap)
    assert it.act_s == pytest.approx(float(env.device_s) + 1000 * copy_s, rel=1e-12)
    adam_s = float(gpu.kernel_times(2, 0, 7 * 4 * s.weights).device_s)
    tail_s = max(TEMPO_ITERATION_JIT_CALLS * JAX_JIT_DISPATCH_S, adam_s)
    assert it.learn_s == pytest.approx(float(learn.device_s) + 1000 * copy_s + tail_s,
                                       rel=1e-12)
