"""CPU model: scaling measured times from the capture host, rooflines, power."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.kernels.mlp import cold, elementwise, gemm, vector
from rldse.models import CpuModel, OpColumns, cpu_from_host, load_part, make_model
from rldse.models.cpu import gemm_seconds, roofline_seconds, with_works, work_seconds
from rldse.sim import simulate
from rldse.system import load_spec, parse_spec
from rldse.trace import load_trace


@pytest.fixture
def host(host_fp):
    return cpu_from_host(host_fp)


def test_host_preset_mirrors_the_fingerprint(host_fp, host):
    assert host.cores == host_fp.cores and host.sockets == 1
    assert host.clock_mhz == host_fp.clock_mhz
    assert host.core_gflops == pytest.approx(host_fp.matmul_gflops)
    assert host.core_bw_gbs == pytest.approx(host_fp.copy_gbs)
    assert host.random_access_ns == pytest.approx(host_fp.random_access_ns)


def test_replay_on_host_reproduces_measured_times(small_trace, host):
    ops = OpColumns.from_frame(small_trace.ops)
    model = CpuModel(host, host)
    assert model.interp_scale == 1.0
    np.testing.assert_allclose(model.op_seconds(ops), small_trace.ops["dur_s"], rtol=1e-12)


def test_interpreted_time_scales_with_clock_and_ipc(host):
    target = load_part("cpu", "xeon-gold-6326")
    op = OpColumns.of("env_step", host_dur_s=50e-6)
    t = CpuModel(target, host).op_seconds(op)[0]
    assert t == pytest.approx(50e-6 * 2600 / 2900)
    slower = load_part("cpu", "xeon-gold-6326", ipc_factor=0.5)
    assert CpuModel(slower, host).op_seconds(op)[0] == pytest.approx(2 * t)


def test_work_explained_by_the_host_roofline_scales_by_roofline_ratio(host):
    target = load_part("cpu", "xeon-gold-6326")
    flops = 1e9
    dur = flops / (host.core_gflops * 1e9)  # exactly the host's compute roofline
    op = OpColumns.of("learn", flops=flops, host_dur_s=dur)
    # target core: 2.9 GHz × 64 flop/cycle × 0.5 = 92.8 GFLOP/s
    assert target.core_gflops == pytest.approx(92.8)
    assert CpuModel(target, host).op_seconds(op)[0] == pytest.approx(flops / 92.8e9)


def test_mixed_op_splits_overhead_and_work(host):
    target = load_part("cpu", "epyc-7742")
    work_s = 4e5 / (host.core_bw_gbs * 1e9)  # 400 kB at the host's 20 GB/s per core
    op = OpColumns.of("learn", bytes=4e5, host_dur_s=work_s + 30e-6)
    # Zen 2 at 0.84 of the development host's instructions per clock (presets/cpu.yaml)
    expected = 30e-6 * 2600 / (2250 * 0.84) + 4e5 / (target.core_bw_gbs * 1e9)
    assert CpuModel(target, host).op_seconds(op)[0] == pytest.approx(expected)


def test_roofline_of_a_preset_by_hand():
    s = load_part("cpu", "xeon-silver-4215")
    assert s.lanes == 16
    assert s.core_bw_gbs == pytest.approx(115.2 * 0.75 / 8)
    assert s.random_access_ns == pytest.approx(9.0)
    t = roofline_seconds(s, flops=[0, 8e9], bytes_=[1.08e9, 0], touches=[1000, 0])
    np.testing.assert_allclose(t, [1.08e9 / 10.8e9 + 1000 * 9e-9, 8e9 / 40e9])


def test_energy_utilisation_model_over_sockets(host):
    model = CpuModel(load_part("cpu", "xeon-silver-4215"), host)
    assert (model.idle_w, model.max_w) == (85.0, 170.0)
    # 8 of 16 cores busy for the whole second: u = 0.5, P = 2 × (42.5 + 0.5 × 42.5)
    e = model.energy(busy_core_s=8.0, wall_s=1.0)
    assert float(e.joules) == pytest.approx(127.5)
    assert "utilisation" in e.method and e.claimed_accuracy
    assert float(model.dram_energy(1e9).joules) == pytest.approx(8e9 * 17.5e-12)


def test_cpu_model_needs_the_capture_host():
    with pytest.raises(RldseError, match="host=trace.meta.host"):
        make_model(load_part("cpu", "epyc-7402p"))


def test_unknown_host_clock_uses_a_stated_assumption(host_fp):
    fp = host_fp.model_copy(update={"clock_mhz": 0.0})
    spec = cpu_from_host(fp)
    assert spec.clock_mhz == 2500.0
    assert spec.core_gflops == pytest.approx(fp.matmul_gflops)


def test_host_preset_overrides(host_fp):
    assert cpu_from_host(host_fp, sockets=2).lanes == 2 * host_fp.cores


def test_roofline_adds_compute_and_memory_time():
    """An operation's numpy kernels run one after another, so its compute time and its
    memory time add (cpu.py's docstring): flops and bytes together take the sum."""
    s = load_part("cpu", "xeon-silver-4215")
    both = roofline_seconds(s, flops=[8e9], bytes_=[1.08e9], touches=[0])
    np.testing.assert_allclose(both, [8e9 / 40e9 + 1.08e9 / 10.8e9])
    alone = (roofline_seconds(s, flops=[8e9], bytes_=[0], touches=[0])
             + roofline_seconds(s, flops=[0], bytes_=[1.08e9], touches=[0]))
    assert both == pytest.approx(alone, rel=1e-12)


# ---- provisioned cores: power, price, memory, sharing ---------------------------------

ROOT = Path(__file__).resolve().parents[2]

#: Datasheet TDP (W), cores and list price (USD) each preset's split must give back.
FULL_SKU = {"xeon-silver-4110": (85, 8, 501), "xeon-silver-4215": (85, 8, 794),
            "xeon-gold-6326": (185, 16, 1300), "epyc-7402p": (180, 24, 1250),
            "epyc-7742": (225, 64, 6950)}


@pytest.mark.parametrize("name", sorted(FULL_SKU))
def test_full_sku_gives_its_tdp_price_and_half_tdp_idle(name):
    tdp, cores, price = FULL_SKU[name]
    s = load_part("cpu", name)
    assert s.cores == cores and s.threads_per_core == 2
    assert s.max_w == pytest.approx(tdp, rel=1e-9)
    assert s.idle_w == pytest.approx(0.5 * tdp, rel=1e-9)
    assert s.socket_price_usd == pytest.approx(price, rel=1e-9)
    assert s.uncore_w == pytest.approx(0.3 * tdp)


def test_fewer_cores_cost_less_and_draw_less_by_hand(host):
    """Silver 4110: uncore 25.5 W, 7.4375 W per busy core, 2.125 W per idle core; 75.16 USD
    per socket + 53.23 USD per core."""
    s = load_part("cpu", "xeon-silver-4110", cores=4)
    assert s.idle_w == pytest.approx(25.5 + 4 * 2.125)  # 34 W
    assert s.max_w == pytest.approx(25.5 + 4 * 7.4375)  # 55.25 W
    assert s.price_usd == pytest.approx(75.16 + 4 * 53.23)  # 288.08 USD
    model = CpuModel(s, host)
    # 2 of 4 cores busy for a second: P = 34 + 0.5 × (55.25 − 34)
    assert float(model.energy(busy_core_s=2.0, wall_s=1.0).joules) == pytest.approx(44.625)
    full = load_part("cpu", "xeon-silver-4110")
    assert s.idle_w < full.idle_w and s.max_w < full.max_w and s.price_usd < full.price_usd


def test_core_idle_power_cannot_exceed_active():
    with pytest.raises(RldseError, match="core_idle_w must not exceed core_active_w"):
        load_part("cpu", "xeon-silver-4110", core_idle_w=8.0)


def test_core_throughput_by_hand():
    """8 cores, 2 threads each, an extra thread adds 0.2 of a core, time-slicing 1.05."""
    s = load_part("cpu", "xeon-silver-4110", smt_gain=0.2, shared_core_slowdown=1.05)
    assert s.core_throughput(3) == 3.0
    assert s.core_throughput(8) == 8.0
    assert s.core_throughput(12) == pytest.approx(8 + 4 * 0.2)
    assert s.core_throughput(16) == pytest.approx(9.6)
    assert s.core_throughput(40) == pytest.approx(9.6 / 1.05)
    assert s.core_throughput(6, cores=4) == pytest.approx(4.4)
    one = load_part("cpu", "xeon-silver-4110", threads_per_core=1, shared_core_slowdown=1.2)
    assert one.core_throughput(9) == pytest.approx(8 / 1.2)


def test_host_bandwidth_and_memory_capacity_by_hand():
    s = load_part("cpu", "xeon-silver-4215")  # 2 sockets × 115.2 GB/s × 0.75, 96 GiB each
    assert s.host_bw_gbs == pytest.approx(2 * 115.2 * 0.75)
    assert s.mem_capacity_bytes == 2 * 96 * 2**30
    assert load_part("cpu", "epyc-7402p").mem_capacity_bytes == 384 * 2**30


def test_host_preset_takes_measured_slowdown_and_memory(host_fp):
    measured = cpu_from_host(host_fp.model_copy(update={"shared_core_slowdown": 1.12,
                                                        "mem_bytes": 8 * 2**30}))
    assert measured.shared_core_slowdown == pytest.approx(1.12)
    assert measured.mem_bytes == 8 * 2**30 and measured.threads_per_core == 1
    # not measured (older traces): the stated defaults, 1.05 and 4 GiB per logical CPU
    plain = cpu_from_host(host_fp)
    assert host_fp.shared_core_slowdown is None and plain.shared_core_slowdown == 1.05
    assert plain.mem_bytes == 4 * 2**30 * host_fp.cores
    # a ratio below 1 is noise: floored
    assert cpu_from_host(host_fp.model_copy(update={"shared_core_slowdown": 0.97})) \
        .shared_core_slowdown == 1.0
    # 5 W per logical CPU: all busy give the assumed TDP, idle half of it
    assert plain.max_w == pytest.approx(5.0 * host_fp.cores)
    assert plain.idle_w == pytest.approx(2.5 * host_fp.cores)
    assert plain.price_usd == pytest.approx(40.0 * host_fp.cores)


def test_fewer_cores_on_dgx1_cost_less_and_draw_less_cpu_power():
    """The must-show: examples/dgx1_like.yaml with cpu.cores=4 instead of its 20 per socket."""
    trace = load_trace(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
    dgx = ROOT / "examples" / "dgx1_like.yaml"
    short = {"workload.env_steps": 20_000}
    full = simulate(trace, load_spec(dgx, short))
    four = simulate(trace, load_spec(dgx, {**short, "cpu.cores": 4}))
    full_w, four_w = (next(d.avg_power_w for d in r.devices if d.name == "cpu")
                      for r in (full, four))
    assert four.cost_usd < full.cost_usd
    assert full.cost_usd - four.cost_usd == pytest.approx(2 * 16 * 137.1)  # 2 sockets × 16 cores
    assert four_w < full_w


# ---- GEMM curve, element-wise rates, caches (rescaling by the formulas' work) -----------

GRID = ((1, 64, 256), (4, 64, 256), (2, 64, 256))


@pytest.fixture
def curved_fp(host_fp):
    """A fingerprint whose GEMMs run at 10 GFLOP/s at batch 1, 50 above; and the rest."""
    curve = [(p, b, i, o, 10.0 if b == 1 else 50.0) for p in ("fwd", "dw", "dx")
             for b in GRID[0] for i in GRID[1] for o in GRID[2]]
    return host_fp.model_copy(update=dict(
        gemm_curve=curve, elementwise_gbs=10.0, vector_gbs=40.0,
        cache_bytes={"L1d": 32 * 1024, "L2": 1024 * 1024}, gather_ns=[(16384.0, 1.0),
                                                                      (524288.0, 2.0)]))


def test_gemm_curve_interpolates_and_extrapolates_by_flops(curved_fp):
    h = cpu_from_host(curved_fp)
    at = gemm_seconds(h, [("fwd", 64, 64, 64)])
    assert at == pytest.approx(2 * 64**3 / 50e9)  # a grid point
    assert gemm_seconds(h, [("fwd", 1, 64, 64)]) == pytest.approx(2 * 64**2 / 10e9)
    # between batch 1 and 64: log time interpolated in log batch
    mid = gemm_seconds(h, [("dw", 8, 64, 64)])
    assert 2 * 8 * 64**2 / 50e9 < mid < 2 * 8 * 64**2 / 10e9
    # above the grid the rate at its edge holds; below it the time does not shrink
    assert gemm_seconds(h, [("dx", 512, 64, 64)]) == pytest.approx(
        2 * gemm_seconds(h, [("dx", 256, 64, 64)]))
    assert gemm_seconds(h, [("fwd", 64, 64, 1)]) == pytest.approx(
        gemm_seconds(h, [("fwd", 64, 64, 2)]))


def test_without_a_curve_every_gemm_runs_at_the_matmul_rate_and_the_result_says_so(
        host_fp, small_trace):
    h = cpu_from_host(host_fp)
    assert gemm_seconds(h, [("fwd", 64, 64, 64)]) == pytest.approx(2 * 64**3 / 100e9)
    assert "no GEMM curve" in CpuModel(h, h).warnings[0]
    spec = parse_spec({"name": "h", "cpu": {"preset": "host"}})
    assert any("no GEMM curve" in w for w in simulate(small_trace, spec).warnings)


def test_work_seconds_adds_gemms_vectors_cold_state_and_elementwise(curved_fp):
    h = cpu_from_host(curved_fp)
    w = gemm("fwd", 64, 64, 64) + elementwise(0, 1000) + vector(0, 4000) + cold(100, 1)
    want = (2 * 64**3 / 50e9 + 1000 / 10e9 + 4000 / 40e9 + 4 * 100 * 3 / 20e9)
    assert work_seconds(h, w) == pytest.approx(want)


def test_with_works_scales_the_explained_part_and_adds_call_costs(curved_fp):
    h = cpu_from_host(curved_fp)
    old = elementwise(0, 10_000, calls=2)
    new = elementwise(0, 30_000, calls=3)
    r = work_seconds(h, old)
    ops = OpColumns.of("learn", items=32, host_dur_s=[r + 5e-6, r / 2])
    out = with_works(h, ops, new, old, 64)
    call = 400e-9  # the fixture's numpy_call_ns
    np.testing.assert_allclose(out.host_dur_s, [5e-6 + 3 * r + call, 1.5 * r + call])
    assert list(out.items) == [64, 64]
    same = with_works(h, ops, old, old, 32)
    np.testing.assert_allclose(same.host_dur_s, ops.host_dur_s)


def test_rescaled_rows_replay_exactly_on_host_and_scale_gemms_by_peak_on_a_target(curved_fp):
    h = cpu_from_host(curved_fp)
    w = gemm("fwd", 64, 64, 64)
    ops = with_works(h, OpColumns.of("learn", host_dur_s=[1e-3]), w, w, 64)
    np.testing.assert_allclose(CpuModel(h, h).op_seconds(ops), [1e-3])
    target = load_part("cpu", "xeon-gold-6326")
    model = CpuModel(target, h)
    g = 2 * 64**3 / 50e9
    want = model.interp_scale * (1e-3 - g) + g * h.core_gflops / target.core_gflops
    np.testing.assert_allclose(model.op_seconds(ops), [want])


def test_touch_time_follows_the_working_set_through_the_caches(curved_fp, host_fp):
    h = cpu_from_host(curved_fp)
    assert (h.l1_kib, h.l2_kib, h.l1_ns, h.l2_ns) == (32, 1024, 1.0, 2.0)
    t = h.touch_ns([1024, 64 * 1024, 1e12])
    assert t[0] == pytest.approx(1.0)  # within L1
    assert t[1] == pytest.approx(0.5 * 1.0 + 0.5 * 2.0)  # half of it in L1, all in L2
    assert t[2] == pytest.approx(h.random_access_ns, rel=1e-3)  # beyond every cache
    plain = cpu_from_host(host_fp)  # sizes unknown: every access is a DRAM access
    assert float(plain.touch_ns(1024)) == pytest.approx(plain.random_access_ns)
