"""BF16/FP8 GEMMs on tensor cores through gpu_ops.price (tensor_gemm_work)."""

import pytest

from rldse.errors import RldseError
from rldse.models.gpu import GpuModel
from rldse.models.presets import load_part


def _model(name):
    spec = load_part("gpu", name)
    return GpuModel(spec, load_part("link", spec.host_link))


def test_a_large_bf16_gemm_runs_at_the_achieved_share_of_the_dense_peak():
    m = _model("h100-sxm")
    n = 8192
    cost = m.op_cost("linear", (1, n, n, n), "bf16")
    rate = 2 * n ** 3 / cost.device_s
    peak = m.spec.bf16_tflops * 1e12 * m.spec.tensor_gemm_efficiency
    # k-fill and whole waves cost a little: within 3 % of the achieved peak, never above
    assert 0.97 * peak < rate <= peak and cost.bound == "compute"


def test_fp8_is_twice_bf16_and_a_gemv_is_bound_by_its_weights():
    m = _model("h100-sxm")
    bf16 = m.op_cost("linear", (1, 8192, 8192, 8192), "bf16").device_s
    fp8 = m.op_cost("linear", (1, 8192, 8192, 8192), "fp8").device_s
    assert fp8 == pytest.approx(bf16 / 2, rel=0.05)
    gemv = m.op_cost("linear", (1, 1, 8192, 8192), "bf16")
    weights_s = 2 * 8192 * 8192 / (m.spec.mem_bw_gbs * 1e9 * m.spec.mem_bw_efficiency)
    assert gemv.bound == "memory"
    assert gemv.device_s == pytest.approx(weights_s + m.spec.kernel_overhead_s, rel=0.01)


def test_a_gpu_without_bf16_tensor_cores_refuses_the_dtype():
    with pytest.raises(RldseError, match="no BF16"):
        _model("v100-sxm2").op_cost("linear", (1, 64, 64, 64), "bf16")
