"""CpuModel: scaling measured times from the capture host, power, vector envs
(rldse.models.cpu.model)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.kernels.mlp import gemm
from rldse.models import CpuModel, OpColumns, cpu_from_host, load_part, make_model
from rldse.models.cpu.roofline import with_works
from rldse.sim import simulate
from rldse.system import load_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[3]


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


def test_energy_utilisation_model_over_sockets(host):
    model = CpuModel(load_part("cpu", "xeon-silver-4215"), host)
    assert (model.idle_w, model.max_w) == (85.0, 170.0)
    # 8 of 16 cores busy for the whole second: u = 0.5, P = 2 × (42.5 + 0.5 × 42.5)
    e = model.energy(busy_core_s=8.0, wall_s=1.0)
    assert float(e.joules) == pytest.approx(127.5)
    assert "utilisation" in e.method and e.claimed_accuracy
    assert float(model.dram_energy(1e9).joules) == pytest.approx(8e9 * 17.5e-12)


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


def test_cpu_model_needs_the_capture_host():
    with pytest.raises(RldseError, match="host=trace.meta.host"):
        make_model(load_part("cpu", "epyc-7402p"))


def test_single_thread_scale_by_hand(host_fp):
    host = cpu_from_host(host_fp, clock_mhz=3000.0)
    m = CpuModel(load_part("cpu", "epyc-7742"), host)
    assert m.single_thread_scale(1) == pytest.approx(3000 / (3400 * 0.84))
    assert m.single_thread_scale(64) == pytest.approx(3000 / (2250 * 0.84))
    assert m.interp_scale == pytest.approx(m.single_thread_scale(64))


def test_subprocess_batch_by_hand(host_fp):
    """8 workers + main on 6 cores / 12 threads: 9 runnable share 6 cores + 3 × 0.2 SMT."""
    host = cpu_from_host(host_fp, clock_mhz=3000.0)
    spec = load_part("cpu", "i7-8750h", smt_gain=0.2)
    m = CpuModel(spec, host)
    scale = 3000 / (2200 * 0.78)  # 8 busy ≥ 6 cores: base clock
    stretch = 9 / (6 + 3 * 0.2)
    want = scale * (1e-3 * stretch + 100e-6 + 7 * 50e-6)
    assert m.subprocess_batch_seconds(1e-3, 8, 100e-6, 50e-6) == pytest.approx(want)
    # one worker on an idle machine: no stretch, turbo
    one = 3000 / (4100 * 0.78) * (1e-3 + 100e-6)
    assert m.subprocess_batch_seconds(1e-3, 1, 100e-6, 50e-6) == pytest.approx(one)


def test_two_busy_cores_run_at_the_clock_the_preset_interpolates(host_fp):
    """i7-8750h (presets/cpu.yaml): 6 cores, base 2200 MHz, max turbo 4100 MHz; with 2 of
    6 busy, 4100 − (4100 − 2200) × 1/5 = 3720 MHz, for the interpreter and per-cycle rates."""
    host = cpu_from_host(host_fp, clock_mhz=3000.0)
    spec = load_part("cpu", "i7-8750h")
    m = CpuModel(spec, host, busy_cores=2)
    assert m.core.clock_mhz == pytest.approx(3720.0)
    assert m.interp_scale == pytest.approx(3000 / (3720 * 0.78))
    assert m.core.core_gflops == pytest.approx(
        3720e-3 * spec.flops_per_cycle * spec.blas_efficiency)
    op = OpColumns.of("env_step", host_dur_s=50e-6)  # interpreter time only
    assert m.op_seconds(op)[0] == pytest.approx(50e-6 * 3000 / (3720 * 0.78))
    # DRAM-bound work does not follow the clock
    bw = OpColumns.of("learn", bytes=4e5, host_dur_s=4e5 / (host.core_bw_gbs * 1e9))
    assert m.op_seconds(bw)[0] == pytest.approx(4e5 / (spec.core_bw_gbs * 1e9))
    # without a busy count: every core busy, the base clock (what `rldse parts cost` gives)
    assert CpuModel(spec, host).interp_scale == pytest.approx(3000 / (2200 * 0.78))


def test_busy_cores_change_the_cost_cache_key(host_fp):
    from rldse.sim.trace_cache import model_key
    host, spec = cpu_from_host(host_fp), load_part("cpu", "i7-8750h")
    assert model_key(CpuModel(spec, host, 1)) != model_key(CpuModel(spec, host, 2))
