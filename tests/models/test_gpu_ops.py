"""The GPU kernel model (rldse.models.gpu_ops) and `rldse parts cost`."""

import json

import pytest

from rldse.cli.parts import part_cost
from rldse.errors import RldseError
from rldse.models import load_part, make_model
from rldse.models.gpu_ops import (
    GEMM_TILES,
    PROCESS_POWER,
    call_s,
    dispatch_calls,
    gemm_device_s,
    operands_aligned,
    sustained_clock_share,
    tile_efficiency,
)


def test_wave_quantization_by_hand():
    """V100 PCIe (80 SMs; here with energy per flop low enough not to be power-limited): a 1×(2048×k)·(k×1280) GEMM at 128×128 tiles is
    16 × 10 = 160 tiles = 2 full waves. At 1408 columns 128×128 tiles would be 176, 3 waves
    (49,152 tile-outputs per SM); 64×64 tiles are 32 × 22 = 704, 9 waves of 4,096
    (36,864), so with every tile equally efficient the smaller tile wins."""
    spec = load_part("gpu", "v100-pcie-32g", gemm_tile_half=0.0, gemm_k_fill=0.0,
                     mem_bw_efficiency=1.0, flop_energy_pj=1.0)
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
    assert sustained_clock_share(load_part("gpu", "p100-pcie")) == 1.0


def test_sustained_clock_by_hand_and_base_clock_floor():
    """share = min(1, (max_w − idle_w) / (E × PROCESS_POWER^x × peak)), never below
    base / boost."""
    t4 = load_part("gpu", "t4", flop_energy_pj=20.0, node_power_exponent=0.5)
    power = (t4.max_w - t4.idle_w) / (20e-12 * PROCESS_POWER["12nm"] ** 0.5
                                      * t4.fp32_tflops * 1e12)
    assert power > t4.base_clock_mhz / t4.boost_clock_mhz
    assert sustained_clock_share(t4) == pytest.approx(power)
    starved = load_part("gpu", "t4", flop_energy_pj=500.0)
    assert sustained_clock_share(starved) == pytest.approx(585 / 1590)


def test_operands_aligned_when_rows_start_16_bytes_apart():
    """k (the input's and nn.Linear's weight's row) and n (bmm's second operand's and the
    output's row) in whole 16-byte vectors; m (a row count) does not matter."""
    assert list(operands_aligned([512, 514, 512, 1024], [512, 512, 513, 2048])) == [
        True, False, False, True]
    assert operands_aligned(512, 516) and not operands_aligned(512, 516, element_bytes=2)


def test_unaligned_operands_cost_energy_so_only_power_limited_boards_slow():
    """n = 1023 instead of 1024: the same tiles and flops, but scalar loads cost
    unaligned_energy_share more energy per flop, hence the T4's lower sustained clock; the
    P100 PCIe, below its power limit, runs both at boost.

    By hand from gpu.yaml (18 pJ per flop at 16 nm, × node^0.32): the T4 (12 nm, 70 − 10 W,
    8.1 TFLOPS) sustains 60 / (18e-12 · 0.8^0.32 · 8.1e12) = 0.442 of boost, 0.368 at 1.2×
    the energy, still above its base clock (585 / 1590 = 0.368): 1.2× slower. The P100
    (16 nm, 250 − 30 W, 9.3 TFLOPS) could pay for 220 / (1.2 · 18e-12) = 10.2 TFLOPS."""
    t4_share = 60 / (18e-12 * 0.8**0.32 * 8.1e12)
    assert sustained_clock_share(load_part("gpu", "t4")) == pytest.approx(t4_share)
    assert t4_share / 1.2 > 585 / 1590 and 220 / (1.2 * 18e-12) > 9.3e12
    for preset, slowdown in (("t4", 1.2), ("p100-pcie", 1.0)):
        spec = load_part("gpu", preset, unaligned_energy_share=0.2)
        peak = spec.fp32_tflops * 1e12
        _, aligned, *_ = gemm_device_s(spec, peak, 1, 2048, 1024, 4096)
        _, unaligned, *_ = gemm_device_s(spec, peak, 1, 2048, 1023, 4096)
        assert unaligned / aligned == pytest.approx(slowdown)


def test_tile_efficiency_by_issue_rate():
    """A 32-lane scheduler pays for a tile's other instructions, reuse / (reuse + half);
    a 16-lane one issues them while its FMAs occupy the lanes a second cycle."""
    p100, v100 = (load_part("gpu", p, gemm_tile_half=16.0) for p in ("p100-pcie",
                                                                      "v100-pcie-32g"))
    assert tile_efficiency(p100, 128, 128) == pytest.approx(64 / 80)
    assert tile_efficiency(v100, 128, 128) == 1.0
    assert tile_efficiency(v100, 32, 32) == 1.0  # reuse 16 = half: 2 × 16 / 32
    assert tile_efficiency(load_part("gpu", "v100-pcie-32g", gemm_tile_half=48.0),
                           32, 32) == pytest.approx(2 * 16 / 64)


def test_one_call_overlaps_the_kernel_with_the_host_after_launch():
    """launch + max(rest of the dispatch, device): a short kernel hides under the host's
    remaining work, a long one adds to the launch."""
    assert call_s(30e-6, 20e-6, 5e-6) == pytest.approx(30e-6)
    assert call_s(30e-6, 20e-6, 50e-6) == pytest.approx(70e-6)


def test_dispatch_scales_with_the_issuing_core():
    """One issuing thread runs at the core's single-core turbo: doubling it halves the
    dispatch; with every core busy the base clock (2.1 GHz, against the reference's 3.0 GHz
    turbo) sets it."""
    gm = make_model(load_part("gpu", "t4", dispatch_core="xeon-silver-4110"))
    ref = load_part("cpu", "xeon-silver-4110")
    base = gm.dispatch_s
    gm.issue_from(ref.model_copy(update={"single_core_mhz": 2 * ref.single_core_mhz}))
    assert gm.dispatch_s == pytest.approx(base / 2)
    gm.issue_from(ref, busy_cores=ref.lanes)
    assert gm.dispatch_s == pytest.approx(base * 3000 / 2100)


def test_module_call_adds_its_dispatch():
    spec = load_part("gpu", "t4")
    calls = dispatch_calls(spec, ["relu", "relu", "linear"], [False, True, False])
    module = spec.op_dispatch_calls["module"]
    assert module > 0
    assert calls.tolist() == pytest.approx([1.0, 1.0 + module,
                                            spec.op_dispatch_calls["linear"]])


def test_parts_cost_json_and_bounds():
    out = json.loads(part_cost("gpu/v100-pcie-32g", "linear", "256,64,64", "fp32",
                               as_json=True))
    assert out["shape"] == [1, 256, 64, 64] and out["bound"] == "dispatch floor"
    assert out["call_s"] == pytest.approx(out["launch_s"] + max(
        out["host_s"] - out["launch_s"], out["device_s"]))
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
