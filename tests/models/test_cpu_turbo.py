"""Clock under load and the subprocess vector env (rldse.models.cpu), by hand."""

import pytest

from rldse.errors import RldseError
from rldse.models.cpu import CpuModel
from rldse.models.presets import cpu_from_host, load_part


def test_busy_clock_runs_from_single_core_turbo_to_base():
    s = load_part("cpu", "i7-8750h")  # 6 cores: 4.1 GHz turbo, 2.2 GHz base (Intel ARK)
    assert s.busy_clock_mhz(1) == 4100
    assert s.busy_clock_mhz(6) == 2200
    assert s.busy_clock_mhz(12) == 2200  # more busy than cores: all cores busy
    assert s.busy_clock_mhz(3) == pytest.approx(4100 - 1900 * 2 / 5)


def test_busy_clock_without_a_turbo_is_the_clock():
    s = load_part("cpu", "epyc-7742", single_core_mhz=None)
    assert s.busy_clock_mhz(1) == s.busy_clock_mhz(64) == 2250


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


def test_bad_single_core_clock_names_the_field():
    with pytest.raises(RldseError, match="single_core_mhz"):
        load_part("cpu", "i7-8750h", single_core_mhz=-1)
