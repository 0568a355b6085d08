"""Protocol pieces: lags, and verl's async rollouter on a toy server (1 ms per decode
iteration whatever the batch, free prefill)."""

import numpy as np
import pytest

from rldse.workloads.llm_rl.protocols import GROUPS_PER_SERVER, async_rollouter, minibatch_lags


class ToyEngine:
    slots = 1024

    def iteration_s(self, batch, kv_tokens):
        return 1e-3

    def prefill_s(self, prompts, prompt_tokens):
        return 0.0


#: one step of 32 one-response groups: one of 100 tokens, 31 of 10
GROUPS = np.array([[100]] + [[10]] * 31)


def run(staleness, partial=True, chunk_train_s=0.0, sync_s=0.0):
    return async_rollouter(ToyEngine(), GROUPS, 10, step_groups=32, staleness=staleness,
                           partial=partial, chunk_groups=32, chunk_train_s=chunk_train_s,
                           chunks_per_step=1, sync_s=sync_s)


def test_threshold_zero_pays_the_tail_every_step():
    # 16 groups at once: the short ones finish in three waves (30 iterations), the step
    # waits for the 100-token one
    assert GROUPS_PER_SERVER == 16
    r = run(0.0)
    assert r.step_s == pytest.approx(0.1) and r.carried_prompts == 0.0


def test_a_threshold_lets_the_server_run_across_syncs():
    # the server stays full: 410 tokens a step over 16 groups ≈ 26 iterations a step;
    # a smaller threshold drains it part-way before each sync
    r = run(1.0)
    assert 0.0256 <= r.step_s < 0.027 and r.carried_prompts > 16
    steps = [run(s).step_s for s in (0.1, 0.3, 0.5)]
    assert 0.1 > steps[0] > steps[1] > steps[2] == pytest.approx(r.step_s)


def test_without_partial_rollout_the_sync_waits_for_running_groups():
    assert run(1.0, partial=False).step_s > 2 * run(1.0).step_s


def test_a_slow_trainer_bounds_the_step():
    assert run(0.5, chunk_train_s=1.0, sync_s=0.1).step_s == pytest.approx(1.1, rel=0.02)


def test_minibatch_lags_count_every_sample_once():
    lags = minibatch_lags(512, 32, 16, shift=16)
    assert sum(lags.values()) == 512 * 16 and min(lags) == 16 and max(lags) == 31
