"""Trainer passes and memory."""

import numpy as np
import pytest

from rldse.models.gpu import GpuModel
from rldse.models.presets import load_part
from rldse.workloads.llm_rl.arch import arch
from rldse.workloads.llm_rl.train import (
    STATE_BYTES_PER_PARAM,
    Parallel,
    micro_batches,
    pass_cost,
    train_memory_bytes,
)

A = arch("qwen2.5-7b")


@pytest.fixture(scope="module")
def gpu():
    spec = load_part("gpu", "h100-sxm")
    return GpuModel(spec, load_part("link", spec.host_link))


def _pass(gpu, gpus, train, seqs=None):
    seqs = np.full(512, 2048.0) if seqs is None else seqs
    return pass_cost(A, gpu, Parallel(gpus), seqs, mini_batches=4, max_tokens_per_gpu=16384,
                     precision="bf16", train=train, gpus_per_node=8,
                     fabric=load_part("fabric", "dgx-h100"),
                     network=load_part("network", "ib-ndr"), nics=None)


def test_a_training_pass_is_about_four_forwards(gpu):
    # forward, its recomputation and a backward of two GEMMs per forward GEMM: 4× the flops
    ratio = _pass(gpu, 8, True).compute_s / _pass(gpu, 8, False).compute_s
    assert 3.7 < ratio < 4.5


def test_compute_bound_training_time_is_the_flops_at_the_tensor_rate(gpu):
    seqs = np.full(512, 2048.0)
    flops = 4 * 2 * A.matmul_params * seqs.sum()  # GEMMs only
    spec = gpu.spec
    ideal = flops / (8 * spec.bf16_tflops * 1e12 * spec.tensor_gemm_efficiency)
    got = _pass(gpu, 8, True, seqs).compute_s / 8 * 8  # per GPU, all GPUs in parallel
    assert ideal < got < 1.3 * ideal  # attention and element-wise kernels add the rest


def test_micro_batches_respect_the_token_budget():
    micro, m = micro_batches(np.full(512, 2048.0), Parallel(8, cp=2), 4, 16384)
    per_gpu = 512 * 2048 / 4 / 4 / 2  # tokens / mini-batches / dp / cp
    assert micro == int(np.ceil(per_gpu / 16384)) and m == pytest.approx(per_gpu / micro)


def test_sharded_state_is_sixteen_bytes_per_parameter_over_the_gpus():
    parts = train_memory_bytes(A, Parallel(64), 4096)
    assert parts["state"] == pytest.approx(STATE_BYTES_PER_PARAM * A.params / 64)
    assert train_memory_bytes(A, Parallel(64), 8192)["checkpoints"] == pytest.approx(
        2 * parts["checkpoints"])
