"""CpuSpec by hand: provisioned power, price and memory, sharing cores, the clock under
load, cache-level access times (rldse.models.cpu.spec)."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models import cpu_from_host, load_part

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


def test_busy_clock_runs_from_single_core_turbo_to_base():
    s = load_part("cpu", "i7-8750h")  # 6 cores: 4.1 GHz turbo, 2.2 GHz base (Intel ARK)
    assert s.busy_clock_mhz(1) == 4100
    assert s.busy_clock_mhz(6) == 2200
    assert s.busy_clock_mhz(12) == 2200  # more busy than cores: all cores busy
    assert s.busy_clock_mhz(3) == pytest.approx(4100 - 1900 * 2 / 5)


def test_busy_clock_without_a_turbo_is_the_clock():
    s = load_part("cpu", "epyc-7742", single_core_mhz=None)
    assert s.busy_clock_mhz(1) == s.busy_clock_mhz(64) == 2250


def test_bad_single_core_clock_names_the_field():
    with pytest.raises(RldseError, match="single_core_mhz"):
        load_part("cpu", "i7-8750h", single_core_mhz=-1)


def test_touch_time_follows_the_working_set_through_the_caches(curved_fp, host_fp):
    h = cpu_from_host(curved_fp)
    assert (h.l1_kib, h.l2_kib, h.l1_ns, h.l2_ns) == (32, 1024, 1.0, 2.0)
    t = h.touch_ns([1024, 64 * 1024, 1e12])
    assert t[0] == pytest.approx(1.0)  # within L1
    assert t[1] == pytest.approx(0.5 * 1.0 + 0.5 * 2.0)  # half of it in L1, all in L2
    assert t[2] == pytest.approx(h.random_access_ns, rel=1e-3)  # beyond every cache
    plain = cpu_from_host(host_fp)  # sizes unknown: every access is a DRAM access
    assert float(plain.touch_ns(1024)) == pytest.approx(plain.random_access_ns)
