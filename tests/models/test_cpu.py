"""CPU model: scaling measured times from the capture host, rooflines, power."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.models import CpuModel, OpColumns, cpu_from_host, load_part, make_model
from rldse.models.cpu import roofline_seconds


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
    expected = 30e-6 * 2600 / 2250 + 4e5 / (target.core_bw_gbs * 1e9)
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
