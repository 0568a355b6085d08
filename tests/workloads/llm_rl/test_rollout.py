"""Rollout engines: continuous batching and per-iteration costs."""

import numpy as np
import pytest

from rldse.models.gpu import GpuModel
from rldse.models.presets import load_part
from rldse.workloads.llm_rl.arch import arch
from rldse.workloads.llm_rl.rollout import Engine, admission, generate


@pytest.fixture(scope="module")
def engine():
    spec = load_part("gpu", "h100-sxm")
    return Engine(arch("qwen2.5-7b"), GpuModel(spec, load_part("link", spec.host_link)),
                  tp=1, slots=4, precision="bf16", tp_cluster=None)


def test_admission_fills_the_slot_that_frees_first():
    assert admission(np.array([5, 3]), 4).tolist() == [0, 0]
    # one slot: each sequence starts when the one before it ends
    assert admission(np.array([5, 3, 2]), 1).tolist() == [0, 5, 8]
    # two slots: the third takes the slot freed at 3
    assert admission(np.array([5, 3, 2]), 2).tolist() == [0, 0, 3]


def test_one_sequence_is_the_sum_of_its_iterations(engine):
    prompt, n = 100, 50
    g = generate(engine, np.array([n]), prompt)
    by_hand = sum(float(engine.iteration_s(np.array([1.0]), np.array([prompt + i]))[0])
                  for i in range(n))
    assert g.total_s == pytest.approx(engine.prefill_s(1, prompt) + by_hand, rel=1e-9)
    assert g.decode_iterations == n


def test_a_decode_iteration_reads_every_weight(engine):
    spec = engine.gpu.spec
    weights_s = 2 * engine.arch.matmul_params / (spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency)
    one = float(engine.iteration_s(np.array([1.0]), np.array([128.0]))[0])
    assert weights_s <= one < 1.5 * weights_s + 1e-3


def test_the_tail_idles_slots(engine):
    # four sequences, one long: the batch runs at one sequence for most of its iterations
    g = generate(engine, np.array([1000, 10, 10, 10]), 100)
    assert g.decode_iterations == 1000
    # 3 of 4 slots idle for 990 of 1000 iterations: idle ≈ 2970 slot-iterations, busy 1030
    assert 2.5 * g.busy_slot_s < g.idle_slot_s < 3 * g.busy_slot_s
    assert g.finish_s[1] < g.finish_s[0] / 50
