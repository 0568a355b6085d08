"""UPMEM model against numbers computed by hand from PrIM (arXiv 2105.03814) and the SDK docs."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import OpMix, PimModel, load_part

#: PrIM's microbenchmark loop around one operation: the operation plus 5 instructions.
LOOP = 5


@pytest.fixture
def p21() -> PimModel:
    return PimModel(load_part("pim", "upmem-p21"))


def test_system_size(p21):
    assert p21.spec.dpus == 2556 and p21.spec.ranks == 40
    e19 = load_part("pim", "upmem-e19")
    assert e19.dpus == 640 and e19.clock_mhz == 267


def ops_per_second(pim: PimModel, mix: OpMix, dtype: str) -> float:
    """Items per second of one DPU, as compute_seconds charges them (PrIM's MOPS × 1e6)."""
    return 1.0 / float(pim.compute_seconds(1, mix, dtype))


def test_int32_add_58_3_mops_at_350_mhz(p21):
    mops = ops_per_second(p21, OpMix(add=1, native=LOOP), "int32") / 1e6
    assert mops == pytest.approx(58.3, abs=0.05)
    assert ops_per_second(p21, OpMix(add=1, native=LOOP), "int64") / 1e6 == pytest.approx(50.0)


def test_clock_scales_throughput():
    e19 = PimModel(load_part("pim", "upmem-e19"))
    assert ops_per_second(e19, OpMix(add=1, native=LOOP), "int32") == pytest.approx(267e6 / 6)


def test_emulated_types_cost_more(p21):
    mix = OpMix(add=1, mul=1, native=LOOP)
    rates = [ops_per_second(p21, mix, d) for d in ("int32", "int64", "fp32", "fp64")]
    assert rates == sorted(rates, reverse=True)


def test_fewer_than_11_tasklets_slow_compute_proportionally(p21):
    mix = OpMix(add=3, mul=1, native=10)
    full = p21.compute_seconds(1000, mix, "int32", tasklets=11)
    for t in range(1, 11):
        assert p21.compute_seconds(1000, mix, "int32", tasklets=t) == pytest.approx(full * 11 / t)
    assert p21.compute_seconds(1000, mix, "int32", tasklets=24) == pytest.approx(full)


def test_mram_dma_alpha_beta(p21):
    # one 2,048-byte read: 77 + 0.5 × 2048 cycles; ≈651 MB/s sustained (PrIM §3)
    t = p21.mram_seconds(2048, transfer_bytes=2048)
    assert t == pytest.approx((77 + 1024) / 350e6)
    assert 2048 / t / 1e6 == pytest.approx(651, abs=0.5)
    assert p21.mram_seconds(4096, 2048, write=True) == pytest.approx((2 * 61 + 2048) / 350e6)


def test_2556_dpus_give_1_79_tb_s_of_mram_bandwidth(p21):
    s = p21.spec  # 1/β bytes per cycle on each DPU
    assert s.dpus * s.clock_mhz * 1e6 / s.mram_beta_cycles_per_byte / 1e12 == pytest.approx(
        1.79, abs=0.005)


def test_kernel_overlaps_dma_with_compute_unless_one_tasklet(p21):
    mix = OpMix(add=2, native=6)
    compute = p21.compute_seconds(1000, mix, "int32", tasklets=1)
    dma = p21.mram_seconds(1000 * 16, 2048)
    one = p21.kernel_seconds(1000, mix, "int32", mram_read_bytes_per_item=16, tasklets=1)
    assert one == pytest.approx(compute + dma)
    many = p21.kernel_seconds(1000, mix, "int32", mram_read_bytes_per_item=16, tasklets=16)
    assert many == pytest.approx(max(p21.compute_seconds(1000, mix, "int32", 16), dma))


def test_one_rank_takes_data_at_6_68_gbs_in_parallel(p21):
    b = 1e6
    assert 64 * b / p21.cpu_to_dpu_seconds(b, 64) / 1e9 == pytest.approx(6.68)
    assert b / p21.cpu_to_dpu_seconds(b, 1) / 1e9 == pytest.approx(0.33)
    assert b / p21.cpu_to_dpu_seconds(b, 1, mode="serial") / 1e9 == pytest.approx(0.33)


def test_ranks_transfer_in_parallel(p21):
    b = 1e5
    assert p21.cpu_to_dpu_seconds(b) == pytest.approx(p21.cpu_to_dpu_seconds(b, 64))
    assert p21.dpu_to_cpu_seconds(b) == pytest.approx(64 * b / 4.74e9)
    # serial visits every DPU in turn
    assert p21.cpu_to_dpu_seconds(b, mode="serial") == pytest.approx(2556 * b / 0.33e9)


def test_partial_rank_between_the_published_points(p21):
    bws = [p21.rank_bandwidth_gbs(k, 0.33, 6.68) for k in (1, 2, 8, 32, 64)]
    assert bws[0] == pytest.approx(0.33) and bws[-1] == pytest.approx(6.68)
    assert bws == sorted(bws)


def test_broadcast_and_dpu_to_dpu_through_the_cpu(p21):
    b = 1e4
    assert p21.cpu_to_dpu_seconds(b, mode="broadcast") == pytest.approx(64 * b / 16.88e9)
    via_cpu = p21.dpu_to_dpu_seconds(b)
    assert via_cpu == pytest.approx(p21.dpu_to_cpu_seconds(b)
                                    + p21.cpu_to_dpu_seconds(b, mode="broadcast"))
    with pytest.raises(RldseError, match="only from CPU to DPU"):
        p21.dpu_to_cpu_seconds(b, mode="broadcast")


def test_bad_arguments_name_the_field(p21):
    with pytest.raises(RldseError, match=r"pim\.tasklets: 25 is out of range \(allowed: 1 ≤ "
                                         r"tasklets ≤ 24\)"):
        p21.compute_seconds(10, OpMix(add=1), "int32", tasklets=25)
    with pytest.raises(RldseError, match=r"pim\.n_dpus: 3000 .*≤ 2556"):
        p21.cpu_to_dpu_seconds(1e3, 3000)
    with pytest.raises(RldseError, match=r"pim\.transfer_bytes"):
        p21.mram_seconds(100, transfer_bytes=4096)
    with pytest.raises(RldseError, match="dtype 'bf16'"):
        p21.instructions(OpMix(add=1), "bf16")


def test_energy_idle_plus_instructions(p21):
    assert p21.spec.instr_pj == pytest.approx((0.15 - 0.045) / 350e6 * 1e12)
    assert p21.lanes == 2556 and p21.max_w == p21.idle_w == pytest.approx(0.045 * 2556)
    e = p21.energy(instructions=1e9, wall_s=2.0)
    assert float(e.joules) == pytest.approx(0.045 * 2556 * 2 + 1e9 * 300e-12)
    np.testing.assert_allclose(p21.instruction_joules([0, 1e9]), [0, 0.3])


def test_all_ranks_together_are_capped_by_the_host_dram(p21):
    """32 ranks × 6.68 GB/s = 214 GB/s, beyond a 2-socket Silver 4215's sustained DRAM
    bandwidth (2 × 115.2 × 0.75 = 172.8 GB/s): capped. One rank (6.68 GB/s) is not."""
    host_gbs = load_part("cpu", "xeon-silver-4215").host_bw_gbs
    assert host_gbs == pytest.approx(172.8)
    b = 1e6
    n = 32 * 64
    capped = float(p21.cpu_to_dpu_seconds(b, n, host_gbs=host_gbs))
    assert float(p21.cpu_to_dpu_seconds(b, n)) == pytest.approx(64 * b / 6.68e9)
    assert capped == pytest.approx(n * b / 172.8e9)
    assert n * b / capped / 1e9 <= host_gbs * (1 + 1e-12)
    one = float(p21.cpu_to_dpu_seconds(b, 64, host_gbs=host_gbs))
    assert one == pytest.approx(64 * b / 6.68e9) == float(p21.cpu_to_dpu_seconds(b, 64))
    # the gather is capped the same way; a broadcast's one buffer is not
    back = float(p21.dpu_to_cpu_seconds(b, n, host_gbs=host_gbs))
    assert back == pytest.approx(max(n * b / 172.8e9, float(p21.dpu_to_cpu_seconds(b, n))))
    assert float(p21.cpu_to_dpu_seconds(b, n, "broadcast", host_gbs=host_gbs)) == \
        float(p21.cpu_to_dpu_seconds(b, n, "broadcast"))
    with pytest.raises(RldseError, match="host_gbs"):
        p21.cpu_to_dpu_seconds(b, n, host_gbs=0.0)
