"""The 'host' preset from a trace's host fingerprint (rldse.models.cpu.host_preset)."""

from __future__ import annotations

import pytest

from rldse.models import cpu_from_host


def test_host_preset_mirrors_the_fingerprint(host_fp, host):
    assert host.cores == host_fp.cores and host.sockets == 1
    assert host.clock_mhz == host_fp.clock_mhz
    assert host.core_gflops == pytest.approx(host_fp.matmul_gflops)
    assert host.core_bw_gbs == pytest.approx(host_fp.copy_gbs)
    assert host.random_access_ns == pytest.approx(host_fp.random_access_ns)


def test_unknown_host_clock_uses_a_stated_assumption(host_fp):
    fp = host_fp.model_copy(update={"clock_mhz": 0.0})
    spec = cpu_from_host(fp)
    assert spec.clock_mhz == 2500.0
    assert spec.core_gflops == pytest.approx(fp.matmul_gflops)


def test_host_preset_overrides(host_fp):
    assert cpu_from_host(host_fp, sockets=2).lanes == 2 * host_fp.cores


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
