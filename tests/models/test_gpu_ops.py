"""The GPU kernel model (rldse.models.gpu_ops) and `rldse parts cost`."""

import json

import pytest

from rldse.cli.parts import part_cost
from rldse.errors import RldseError
from rldse.models import load_part, make_model
from rldse.models.gpu_ops import GEMM_TILES, gemm_device_s, sustained_clock_share


def test_wave_quantization_by_hand():
    """V100 PCIe (80 SMs, not power-limited): a 1×(2048×k)·(k×1280) GEMM at 128×128 tiles is
    16 × 10 = 160 tiles = 2 full waves. At 1408 columns 128×128 tiles would be 176, 3 waves
    (49,152 tile-outputs per SM); 64×64 tiles are 32 × 22 = 704, 9 waves of 4,096
    (36,864), so with every tile equally efficient the smaller tile wins."""
    spec = load_part("gpu", "v100-pcie-32g", gemm_tile_half=0.0, gemm_k_fill=0.0,
                     mem_bw_efficiency=1.0)
    assert sustained_clock_share(spec) == 1.0
    peak = spec.fp32_tflops * 1e12
    sm = peak / spec.sm_count
    work, compute, memory, waves, _ = gemm_device_s(spec, peak, 1, 2048, 1280, 4096)
    assert GEMM_TILES[0] == (128, 128) and waves == 2
    assert compute == pytest.approx(2 * 2 * 128 * 128 * 4096 / sm)
    _, compute3, _, waves3, _ = gemm_device_s(spec, peak, 1, 2048, 1408, 4096)
    assert waves3 == 9 and compute3 == pytest.approx(9 * 2 * 64 * 64 * 4096 / sm)


def test_power_limited_boards_sustain_below_boost():
    assert sustained_clock_share(load_part("gpu", "t4")) < 0.7
    assert sustained_clock_share(load_part("gpu", "v100-pcie-32g")) == 1.0


def test_dispatch_scales_with_the_issuing_core():
    gm = make_model(load_part("gpu", "t4", dispatch_core="xeon-silver-4110"))
    ref = load_part("cpu", "xeon-silver-4110")
    base = gm.dispatch_s
    gm.issue_from(ref.model_copy(update={"clock_mhz": 2 * ref.clock_mhz}))
    assert gm.dispatch_s == pytest.approx(base / 2)


def test_parts_cost_json_and_bounds():
    out = json.loads(part_cost("gpu/v100-pcie-32g", "linear", "256,64,64", "fp32",
                               as_json=True))
    assert out["shape"] == [1, 256, 64, 64] and out["bound"] == "dispatch floor"
    assert out["call_s"] == pytest.approx(out["host_s"] + out["device_s"])
    assert out["energy_j"] > 0
    big = json.loads(part_cost("gpu/t4", "bmm", "8,1024,1024,1024", "fp32", as_json=True))
    assert big["bound"] == "compute"
    assert json.loads(part_cost("gpu/a100-pcie-40g", "add", "4096,4096", "fp32",
                                as_json=True))["bound"] == "memory"


@pytest.mark.parametrize("args,named", [
    (("gpu/nope", "linear", "1", "fp32"), "PART"),
    (("nope", "linear", "1", "fp32"), "PART"),
    (("gpu/t4", "conv", "1", "fp32"), "--op"),
    (("gpu/t4", "add", "3,x", "fp32"), "--shape"),
    (("gpu/t4", "add", "1,2,3", "fp32"), "--shape"),
    (("gpu/v100-pcie-32g", "linear", "2,2", "tf32"), "--dtype"),
    (("gpu/t4", "linear", "2,2", "fp8"), "--dtype"),
])
def test_parts_cost_bad_input_names_the_argument(args, named):
    with pytest.raises(RldseError) as e:
        part_cost(*args)
    assert str(e.value).startswith(named) and "\n" not in str(e.value)
