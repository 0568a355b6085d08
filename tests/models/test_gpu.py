"""GPU model: roofline plus launches, copies over the link, sum trees, capacity."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import GpuModel, OpColumns, load_part, make_model


@pytest.fixture
def a100() -> GpuModel:
    return make_model(load_part("gpu", "a100-40g"))


def test_a100_roofline_knee(a100):
    assert a100.spec.knee_flop_per_byte == pytest.approx(19.5e12 / 1.555e12)
    assert a100.spec.knee_flop_per_byte == pytest.approx(12.5, abs=0.05)


def test_kernel_roofline_compute_and_memory_bound(a100):
    # 1 GFLOP over 1 MB is compute-bound; 1 MFLOP over 1 GB is memory-bound
    t = a100.kernel_seconds(kernels=[1, 1], flops=[1e9, 1e6], bytes_=[1e6, 1e9])
    np.testing.assert_allclose(t, [10e-6 + 1e9 / 19.5e12, 10e-6 + 1e9 / 1555e9])
    assert a100.kernel_seconds(0, 1e9, 0, dtype="fp64") == pytest.approx(1e9 / 9.7e12)


def test_kernels_per_phase_and_layer(a100):
    ops = OpColumns.of(["act", "learn", "sync", "env_step"])
    np.testing.assert_array_equal(a100.kernels(ops, layers=3), [2 + 6, 12 + 24, 0 + 6, 1])


def test_op_seconds_learn_step(a100):
    op = OpColumns.of("learn", items=64, flops=2e7, bytes=4e6)
    expected = 36 * 10e-6 + max(2e7 / 19.5e12, 4e6 / 1555e9)
    assert a100.op_seconds(op, layers=3)[0] == pytest.approx(expected)


def test_touches_are_dependent_levels_per_item(a100):
    # a batch of 32 sum-tree descents over 2^20 leaves: 20 levels in sequence
    op = OpColumns.of("replay_sample", items=32, touches=32 * 20, dtype="none")
    assert a100.op_seconds(op)[0] == pytest.approx(3 * 10e-6 + 20 * 500e-9)


def test_copy_over_the_host_link(a100):
    assert a100.link.name == "pcie4-x16"
    assert a100.copy_seconds(1e6) == pytest.approx(10e-6 + 1e6 / 31.5e9)
    nv = make_model(load_part("gpu", "a100-40g", host_link="nvlink-a100"))
    assert nv.copy_seconds(1e9) == pytest.approx(10e-6 + 1e9 / 300e9)


def test_sumtree_levels_serialize_items_run_in_parallel(a100):
    t = a100.sumtree_seconds(batch=[32, 1024], capacity=2**20)
    np.testing.assert_allclose(t, 10e-6 + 20 * 500e-9)
    deeper = a100.sumtree_seconds(batch=32, capacity=2**20 + 1)
    assert deeper == pytest.approx(10e-6 + 21 * 500e-9)
    # a huge batch becomes bandwidth-bound
    big = 1e7
    assert a100.sumtree_seconds(big, 2**20) == pytest.approx(10e-6 + big * 20 * 32 / 1555e9)


def test_memory_capacity_for_oom_checks():
    a6000 = make_model(load_part("gpu", "rtx-a6000"))
    assert a6000.spec.mem_bytes == 48 * 2**30
    # TimeRL's fp32 rollouts: 256 envs × 1000 steps × 3×64×64 fits, × 3×256×256 does not
    small, large = 256 * 1000 * 3 * 64 * 64 * 4, 256 * 1000 * 3 * 256 * 256 * 4
    assert a6000.fits([small, large]).tolist() == [True, False]


def test_tf32_switch_uses_tensor_rate():
    tf32 = make_model(load_part("gpu", "a100-40g", use_tf32=True))
    assert tf32.kernel_seconds(0, 156e12, 0) == pytest.approx(1.0)


def test_energy_and_power_view(a100):
    assert (a100.lanes, a100.idle_w, a100.max_w) == (1, 50.0, 400.0)
    e = a100.energy(busy_s=2.0, wall_s=10.0)
    assert float(e.joules) == pytest.approx(50 * 10 + 350 * 2)
    assert e.claimed_accuracy == a100.claimed_accuracy


def test_presets_by_hand():
    h100 = load_part("gpu", "h100-sxm")
    assert h100.knee_flop_per_byte == pytest.approx(66.9e12 / 3.35e12)
    assert make_model(h100).link.bandwidth_gbs == 63.0
    assert math.isclose(load_part("gpu", "v100-sxm2").mem_bw_gbs, 900)


def test_unknown_host_link_is_rejected():
    with pytest.raises(RldseError, match=r"gpu\.host_link: unknown link preset 'pcie9'"):
        load_part("gpu", "a100-40g", host_link="pcie9")
