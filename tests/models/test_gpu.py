"""GPU model: host dispatch vs device kernels, operators priced as ``rldse parts cost``
prices them, shape-less work at the large-GEMM limit, copies, L2-aware sum trees in both
implementations, capacity, occupancy-scaled power."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import GpuModel, OpColumns, load_part, make_model

# preset defaults (presets/gpu.yaml), used in the hand computations below
DISPATCH, OVERHEAD, BW_EFF = 10e-6, 3e-6, 0.78
DRAM, L2 = 500e-9, 200e-9
#: a100-40g's achieved bandwidth: 1,555 GB/s × mem_bw_efficiency
A100_BW = 1555e9 * BW_EFF
#: a100-40g's FP32 rate at the large-GEMM limit, by hand: its 400 W less 50 W idle pays for
#: 350 / (18 pJ × 0.36^0.32) = 2.7e13 flop/s (7 nm, node_power_exponent 0.32), above its
#: 19.5 TFLOP/s peak, so it sustains boost; a 16-lane scheduler (GA100) runs the 128×128
#: tile at full rate (2 × 64 / (64 + 11.1) > 1)
A100_FLOPS = 19.5e12


@pytest.fixture
def a100() -> GpuModel:
    return make_model(load_part("gpu", "a100-40g"))


def test_a100_roofline_numbers(a100):
    assert (a100.spec.fp32_tflops, a100.spec.mem_bw_gbs) == (19.5, 1555)


def test_dispatch_occupies_the_host_kernels_the_device(a100):
    t = a100.kernel_times(kernels=[1, 1], flops=[1e9, 1e6], bytes_=[1e6, 1e9])
    assert t.host_s.tolist() == pytest.approx([DISPATCH, DISPATCH])
    assert A100_FLOPS < 350 / (18e-12 * 0.36 ** 0.32)  # the hand computation's premise
    assert t.device_s[0] == pytest.approx(OVERHEAD + 1e9 / A100_FLOPS)  # compute-bound
    assert t.device_s[1] == pytest.approx(OVERHEAD + 1e9 / A100_BW)  # memory-bound
    assert t.wall_s.tolist() == pytest.approx(np.maximum(t.host_s, t.device_s).tolist())


def _one_gemm_rows(batch: int, inputs: int, outputs: int, phase: str = "env_step"):
    """One trace row doing one forward GEMM (nothing else), as a program hands it over."""
    from rldse.kernels.network_work import gemm
    from rldse.models.cpu.roofline import with_works

    work = gemm("fwd", batch, inputs, outputs)
    ops = OpColumns.of(phase, flops=work.flops, bytes=work.bytes, host_dur_s=1e-4)
    return with_works(load_part("cpu", "epyc-7742"), ops, work, work, batch)


@pytest.mark.parametrize("preset", ["a100-40g", "v100-sxm2", "t4", "p4", "h200-sxm",
                                    "h100-pcie", "rtx-a6000"])
def test_a_traced_gemm_is_priced_as_parts_cost_prices_it(preset):
    """The one pricing path: a row whose Work is one GEMM (a phase of one kernel) costs on
    the device exactly what ``rldse parts cost --op linear`` answers for that shape."""
    from rldse.cli.parts import part_cost

    gpu = make_model(load_part("gpu", preset))
    for batch, inputs, outputs in ((32, 4, 64), (256, 512, 512), (1, 64, 2)):
        t = gpu.op_times(_one_gemm_rows(batch, inputs, outputs))
        import json
        cost = json.loads(part_cost(f"gpu/{preset}", "linear",
                                    f"1,{batch},{inputs},{outputs}", "fp32", as_json=True))
        assert t.device_s[0] == pytest.approx(cost["device_s"], rel=1e-12)
        assert t.host_s[0] == pytest.approx(cost["host_s"], rel=1e-12)


def test_operators_beyond_the_gemms_are_one_kernels_operator(a100):
    """learn on 0 layers is 19 eager kernels (gpu.yaml): one GEMM and 18 others that move
    the row's other bytes; the operator ledger lists both."""
    from rldse.kernels.network_work import elementwise, gemm
    from rldse.models.cpu.roofline import with_works

    work = gemm("fwd", 64, 128, 32) + elementwise(0, 10**6, 5)
    ops = with_works(load_part("cpu", "epyc-7742"),
                     OpColumns.of("learn", flops=work.flops, bytes=work.bytes), work, work, 64)
    t = a100.op_times(ops)
    linear = a100.op_cost("linear", (1, 64, 128, 32))
    assert t.device_s[0] == pytest.approx(linear.device_s + 18 * OVERHEAD + 1e6 / A100_BW)
    rows = {r["op"]: r for r in a100.operator_rows()}
    assert rows["linear"]["shape"] == "1,64,128,32" and rows["kernels"]["shape"] == \
        "18,1000000,0"
    assert rows["kernels"]["calls_per_operation"] == 1.0


def test_shapeless_work_runs_at_the_large_gemm_limit(a100):
    rate = [f / float(a100.kernel_times(1, f, 0).device_s - OVERHEAD) for f in (1e5, 1e10)]
    assert rate == pytest.approx([A100_FLOPS, A100_FLOPS])


def test_kernels_per_phase_and_layer(a100):
    ops = OpColumns.of(["learn", "act", "env_step"])
    assert a100.kernels(ops, layers=3).tolist() == [19 + 12 * 3, 2 + 2 * 3, 1]


def test_launch_bound_learn_step_is_dispatch_bound(a100):
    """A CartPole-sized learn step the engine makes up (no capture row, no shapes): 55
    kernels of almost no work. The host spends 550 µs dispatching; the GPU is busy 55 × 3
    µs plus a few hundred ns of work."""
    op = OpColumns.of("learn", flops=1e6, bytes=1e5)
    t = a100.op_times(op, layers=3)
    assert t.host_s[0] == pytest.approx(55 * DISPATCH)
    assert t.device_s[0] == pytest.approx(55 * OVERHEAD + max(1e6 / A100_FLOPS, 1e5 / A100_BW))
    assert t.wall_s[0] == t.host_s[0]


def test_a_cpu_captured_learn_row_pays_its_framework_share_and_the_launches():
    """A learn row timed on a CPU (host_dur_s) moved to the GPU: its time less its work at
    the capture host's roofline (the framework share), capped at TRAIN_OPS_MARGIN × kernels
    × framework_op_host_s, plus kernels × dispatch_s (GpuModel.moved_host_s)."""
    from rldse.models.gpu import TRAIN_OPS_MARGIN

    host = load_part("cpu", "epyc-7742")
    gpu = GpuModel(load_part("gpu", "a100-40g"), load_part("link", "pcie4-x16"),
                   capture_host=host)
    rate = host.core_gflops * 1e9
    kernels = 19 + 12 * 2
    small = OpColumns.of("learn", flops=1e6, host_dur_s=1e-3)
    assert gpu.op_times(small, layers=2).host_s[0] == pytest.approx(
        1e-3 - 1e6 / rate + kernels * DISPATCH)
    big = OpColumns.of("learn", flops=1e9, host_dur_s=0.5)  # a CNN step well below peak
    cap = TRAIN_OPS_MARGIN * kernels * 15.8e-6
    assert gpu.op_times(big, layers=2).host_s[0] == pytest.approx(cap + kernels * DISPATCH)
    made_up = OpColumns.of("learn", flops=1e6)  # no capture row: kernels × dispatch_s
    assert gpu.op_times(made_up, layers=2).host_s[0] == pytest.approx(kernels * DISPATCH)


def test_touches_are_dependent_levels_per_item(a100):
    op = OpColumns.of("replay_sample", items=32, touches=32 * 20)
    assert a100.op_times(op).device_s[0] == pytest.approx(3 * OVERHEAD + 20 * DRAM)


def test_copy_at_the_links_effective_rate(a100):
    t = a100.copy_times(1e6)
    assert float(t.device_s) == pytest.approx(10e-6 + 1e6 / (0.8 * 31.5e9))
    assert float(t.host_s) == pytest.approx(DISPATCH)
    nv = make_model(load_part("gpu", "a100-40g", host_link="nvlink-a100"))
    assert float(nv.copy_times(1e9).device_s) == pytest.approx(10e-6 + 1e9 / (0.8 * 300e9))



def test_a_blocking_copy_waits_for_the_queued_kernels_and_the_copy(a100):
    """A host-bound forward then its result read back: the host issues, then waits the
    copy's latency; a device-bound one: it waits for the kernels still queued first."""
    copy = a100.copy_times(4)
    fast = OpColumns.of("act", flops=1e3, bytes=1e3)  # launch-bound: host ahead of the GPU
    t = a100.blocking_copy_times(4, after=a100.op_times(fast, layers=2))
    ops = a100.op_times(fast, layers=2)
    assert ops.host_s[0] > ops.device_s[0]
    assert t.wall_s[0] == pytest.approx(ops.host_s[0] + float(copy.device_s))
    assert t.host_s[0] == pytest.approx(ops.host_s[0] + DISPATCH)  # waiting is not busy
    slow = OpColumns.of("act", flops=1e12, bytes=1e3)  # the GPU far behind the host
    ops = a100.op_times(slow, layers=2)
    t = a100.blocking_copy_times(4, after=ops)
    assert t.wall_s[0] == pytest.approx(ops.device_s[0] + float(copy.device_s))
    alone = a100.blocking_copy_times(4)  # nothing queued: the copy's own latency
    assert float(alone.wall_s) == pytest.approx(float(copy.device_s))
    assert (a100.copy_times(4) + a100.op_times(fast, layers=2)).wall_s[0] \
        < (a100.blocking_copy_times(4) + a100.op_times(fast, layers=2)).wall_s[0]

def test_sumtree_levels_in_l2_cost_l2_latency():
    """2^20 leaves: 21 levels of float32 nodes = 8 MiB. An A100's 40 MiB L2 holds them all;
    a V100's 6 MiB holds the top 20 levels (4 MiB), not the leaves."""
    a100 = make_model(load_part("gpu", "a100-40g", sumtree="fused"))
    v100 = make_model(load_part("gpu", "v100-sxm2", sumtree="fused"))
    depth = 20
    assert a100.level_latencies_s(depth).tolist() == pytest.approx([L2] * depth)
    assert v100.level_latencies_s(21).tolist() == pytest.approx([L2] * 20 + [DRAM])
    t = a100.sumtree_time(batch=32, capacity=2**20)
    assert (t.host_s, t.device_s) == pytest.approx((DISPATCH, OVERHEAD + depth * L2))
    huge = make_model(load_part("gpu", "a100-40g", sumtree="fused")).sumtree_time(32, 2**30)
    in_l2 = 23  # (2^23 - 1) × 4 B ≤ 40 MiB < (2^24 - 1) × 4 B
    assert huge.device_s == pytest.approx(OVERHEAD + in_l2 * L2 + (30 - in_l2) * DRAM)


def test_sumtree_eager_is_framework_ops_per_level(a100):
    eager = a100.sumtree_time(batch=32, capacity=2**20)
    kernels = 20 * 5
    assert eager.host_s == pytest.approx(kernels * DISPATCH)
    assert eager.device_s == pytest.approx(kernels * OVERHEAD + 20 * L2)
    assert eager.wall_s == eager.host_s
    fused = make_model(load_part("gpu", "a100-40g", sumtree="fused")).sumtree_time(32, 2**20)
    assert fused.wall_s < eager.wall_s / 50


def test_sumtree_bandwidth_bound_for_huge_batches():
    fused = make_model(load_part("gpu", "a100-40g", sumtree="fused"))
    big = 10**7
    assert fused.sumtree_time(big, 2**20).device_s == pytest.approx(
        OVERHEAD + big * 20 * 32 / 1555e9)


def test_replay_role_returns_host_and_device_time(a100):
    from rldse.models.kinds import ReplayJob
    job = ReplayJob(batch=32, capacity=2**20, transition_bytes=40, prioritized=True)
    one = a100.replay_seconds(job, "sample", 1)
    assert a100.replay_seconds(job, "sample", 3).host_s == pytest.approx(3 * one.host_s)
    ins = a100.replay_seconds(job, "insert", 100)
    assert ins.host_s == pytest.approx(2 * DISPATCH)
    assert ins.device_s == pytest.approx(10e-6 + 4000 / (0.8 * 31.5e9) + OVERHEAD
                                         + 4000 / A100_BW)
    assert a100.replay_seconds(job, "insert", 0).wall_s == 0.0


def test_memory_capacity_for_oom_checks():
    a6000 = make_model(load_part("gpu", "rtx-a6000"))
    assert a6000.spec.mem_bytes == 48 * 2**30
    # TimeRL's fp32 rollouts: 256 envs × 1000 steps × 3×64×64 fits, × 3×256×256 does not
    small, large = 256 * 1000 * 3 * 64 * 64 * 4, 256 * 1000 * 3 * 256 * 256 * 4
    assert a6000.fits([small, large]).tolist() == [True, False]


def test_tf32_switch_uses_tensor_rate():
    tf32 = make_model(load_part("gpu", "a100-40g", use_tf32=True))
    # at the large-GEMM limit: boost sustained, the 128×128 tile at full rate (above)
    assert float(tf32.kernel_times(0, 156e12, 0).device_s) == pytest.approx(1.0)


def test_energy_and_power_view(a100):
    assert (a100.lanes, a100.idle_w, a100.max_w) == (1, 50.0, 400.0)
    e = a100.energy(busy_s=2.0, wall_s=10.0)
    assert float(e.joules) == pytest.approx(50 * 10 + 350 * 2)
    assert e.claimed_accuracy == a100.claimed_accuracy
    # its label names the model its energy comes from: SM occupancy, not utilisation
    assert e.method.startswith("occupancy model") and a100.method == e.method


def test_presets_by_hand():
    h100 = load_part("gpu", "h100-sxm")
    assert (h100.fp32_tflops, h100.mem_bw_gbs) == (66.9, 3350)
    assert h100.l2_bytes == 50 * 2**20
    assert make_model(h100).link.bandwidth_gbs == 63.0
    assert math.isclose(load_part("gpu", "v100-sxm2").mem_bw_gbs, 900)


def test_unknown_host_link_is_rejected():
    with pytest.raises(RldseError, match=r"gpu\.host_link: unknown link preset 'pcie9'"):
        load_part("gpu", "a100-40g", host_link="pcie9")


def test_unknown_sumtree_implementation_is_rejected():
    with pytest.raises(RldseError, match=r"gpu\.sumtree"):
        load_part("gpu", "a100-40g", sumtree="magic")


# ---- power: occupancy-scaled dynamic power (AccelWattch/GPUWattch structure) ------------

def test_full_occupancy_kernel_draws_max_w(a100):
    """A GEMM whose tiles cover every SM draws exactly the board's max_w, as before."""
    s = a100.spec
    nbytes = 4.0 * s.gemm_tile_elements * s.sm_count * 3  # 3× more tiles than SMs
    t = a100.kernel_times(1, 1e12, nbytes)
    assert float(a100.occupancy(1e12, nbytes, 1)) == 1.0
    assert float(t.active_s) == pytest.approx(float(t.device_s))
    assert float(a100.power_w(1.0)) == pytest.approx(s.max_w)


def test_one_tile_kernel_draws_idle_plus_static_share(a100):
    """One tile occupies one SM of 108: idle + (max − idle) × (c + (1 − c) / 108)."""
    s = a100.spec
    occ = float(a100.occupancy(1e6, 4.0 * s.gemm_tile_elements, 1))
    assert occ == pytest.approx(1 / 108)
    share = s.static_share + (1 - s.static_share) / 108
    assert float(a100.power_w(occ)) == pytest.approx(s.idle_w + (s.max_w - s.idle_w) * share)
    t = a100.kernel_times(1, 1e6, 4.0 * s.gemm_tile_elements)
    assert float(t.active_s) == pytest.approx(float(t.device_s) * share)


def test_elementwise_occupancy_counts_threads_per_sm():
    """No flops: work units are threads, threads_per_sm per SM (GA102: 1536 of 84 SMs)."""
    a6000 = make_model(load_part("gpu", "rtx-a6000"))
    assert a6000.spec.threads_per_sm == 1536 and a6000.spec.sm_count == 84
    occ = a6000.occupancy([0, 0, 0, 0], [4 * 1, 4 * 1536 * 10, 4 * 1536 * 10.5, 4 * 1536 * 500], 1)
    assert occ.tolist() == pytest.approx([1 / 84, 10 / 84, 11 / 84, 1.0])
    # an operation's K kernels share its bytes
    assert float(a6000.occupancy(0, 4 * 1536 * 20, 2)) == pytest.approx(10 / 84)


def test_copies_draw_only_the_static_share(a100):
    t = a100.copy_times([1e3, 1e8])
    assert t.active_s.tolist() == pytest.approx((t.device_s * a100.spec.static_share).tolist())


def test_static_share_one_is_the_utilisation_model():
    g = make_model(load_part("gpu", "v100-sxm2", static_share=1.0))
    t = g.op_times(OpColumns.of(["learn", "act"], flops=[1e6, 1e3], bytes=[1e5, 1e3]), layers=2)
    assert t.active_s.tolist() == t.device_s.tolist()


def test_run_energy_is_the_sum_over_kernels():
    """A simulated run's GPU energy: idle × wall + (max − idle) × Σ booked seconds × the
    share of the kernels costed for each phase, here one kernel shape per phase."""
    from rldse.sim.device import Device

    g = make_model(load_part("gpu", "v100-sxm2"))
    s = g.spec
    small = g.op_times(OpColumns.of("act", flops=1e4, bytes=4e3))  # one tile: 1 SM
    big = g.op_times(OpColumns.of("learn", flops=1e12, bytes=4e9))  # every SM
    copy = g.copy_times(1e6)
    dev = Device(name="gpu", kind="gpu", preset="v100-sxm2", lanes=1, idle_w=s.idle_w,
                 max_w=s.max_w, dynamic_share=g.dynamic_share)
    bookings = [("act", float(small.device_s[0]), float(small.active_s[0]))] * 5 + \
        [("learn", float(big.device_s[0]), float(big.active_s[0]))] * 2
    t = 0.0
    for phase, dur, _ in bookings:
        t = dev.book(t, dur, phase)
    dev.book(t, float(copy.device_s), "sync")  # a phase costed only by copies
    wall = 2 * t
    kernels_j = sum((s.max_w - s.idle_w) * active for _, _, active in bookings)
    copy_j = (s.max_w - s.idle_w) * float(copy.active_s)
    assert dev.energy_j(wall) == pytest.approx(s.idle_w * wall + kernels_j + copy_j)
    share_small = s.static_share + (1 - s.static_share) / s.sm_count
    assert g.dynamic_share("act") == pytest.approx(share_small)
    assert g.dynamic_share("learn") == pytest.approx(1.0)
    assert g.dynamic_share("sync") == pytest.approx(s.static_share)  # copies: no SM


def test_phase_share_is_device_time_weighted_over_costed_operations(a100):
    t = a100.op_times(OpColumns.of(["act", "act"], flops=[1e4, 1e12], bytes=[4e3, 4e9]))
    assert a100.dynamic_share("act") == pytest.approx(float(t.active_s.sum() / t.device_s.sum()))
    assert a100.dynamic_share("learn") == 1.0  # nothing costed: the utilisation model


def test_times_assembled_without_occupancy_draw_full_dynamic_power():
    from rldse.models.gpu import GpuTimes

    t = GpuTimes(np.array([1.0]), np.array([2.0]))
    assert t.active_s.tolist() == [2.0]
