"""Host fingerprint: fast, plausible, and validated."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from rldse.host import HostFingerprint, measure


def test_measure_gives_positive_finite_rates():
    """Every rate measured and positive; how fast (measure's ~2 s, the rates' sizes)
    depends on the host and its load, so it is printed by benchmarks/speed/startup_costs.py,
    not asserted here."""
    fp = measure()
    assert fp.cores >= 1
    for value in (fp.matmul_gflops, fp.copy_gbs, fp.random_access_ns, fp.py_call_ns,
                  fp.numpy_call_ns):
        assert 0 < value < float("inf")


def test_rejects_unknown_and_bad_fields(host_fp):
    with pytest.raises(ValidationError):
        HostFingerprint(**host_fp.model_dump(), gpu="none")
    with pytest.raises(ValidationError):
        HostFingerprint(**(host_fp.model_dump() | {"copy_gbs": -1.0}))


def test_shared_core_slowdown_is_measured_or_none(monkeypatch):
    import os

    from rldse import host

    factor = host._shared_core_slowdown()
    # a measurement (about 0.2 s) or None where the spawned processes failed: never a made-up
    # 1; its size is the host's business (a busy host read 0.23), so only its form is checked
    assert factor is None or (math.isfinite(factor) and factor > 0)
    monkeypatch.delattr(os, "sched_setaffinity", raising=False)
    assert host._shared_core_slowdown() is None  # not measured: said, not defaulted


def test_unmeasured_optional_fields_stay_out_of_the_dump(host_fp):
    """Traces captured before shared_core_slowdown and mem_bytes keep their digests."""
    assert host_fp.shared_core_slowdown is None and host_fp.mem_bytes is None
    dumped = host_fp.model_dump(mode="json")
    assert "shared_core_slowdown" not in dumped and "mem_bytes" not in dumped
    assert HostFingerprint(**dumped) == host_fp
    measured = host_fp.model_copy(update={"shared_core_slowdown": 1.1, "mem_bytes": 2**33})
    again = HostFingerprint.model_validate_json(measured.model_dump_json())
    assert again.shared_core_slowdown == 1.1 and again.mem_bytes == 2**33


def test_gemm_curve_elementwise_rates_caches_and_sum_tree_are_measured():
    from rldse.host import GEMM_GRID

    fp = measure()
    n = len(GEMM_GRID[0]) * len(GEMM_GRID[1]) * len(GEMM_GRID[2])
    assert len(fp.gemm_curve) == 3 * n
    assert {c[0] for c in fp.gemm_curve} == {"fwd", "dw", "dx"}
    assert all(0 < c[4] < float("inf") for c in fp.gemm_curve)  # rates: no host-speed bound
    assert 0 < fp.elementwise_gbs < float("inf") and 0 < fp.vector_gbs < float("inf")
    assert 0 < fp.scatter_add_ns < float("inf")
    per_level, per_item = fp.sum_tree_level_ns
    assert per_level >= 0 and per_item >= 0 and per_level + per_item > 0
    assert [ws for ws, _ in fp.gather_ns] == sorted(ws for ws, _ in fp.gather_ns)
    if fp.cache_bytes is not None:  # sysfs: sizes in bytes, data caches only
        assert all(k in ("L1d", "L2", "L3", "L4") and v > 0 for k, v in fp.cache_bytes.items())


def test_fingerprints_from_before_the_curve_still_load(host_fp):
    old = {k: v for k, v in host_fp.model_dump().items()
           if k not in ("gemm_curve", "elementwise_gbs", "vector_gbs", "cache_bytes",
                        "gather_ns", "scatter_add_ns", "sum_tree_level_ns")}
    assert HostFingerprint(**old).gemm_curve is None


def _load(ratio, others=0):
    from rldse.host import CaptureLoad

    return CaptureLoad(loadavg_1m_start=1.0, loadavg_1m_end=2.0, runnable_others_start=0,
                       runnable_others_end=others, compute_wall_per_cpu=ratio)


def test_contended_capture_is_called_out_by_its_wall_per_cpu_or_runnable_others():
    from rldse.host import contention

    assert "1.50x" in contention(_load(1.5), cores=2)
    assert contention(_load(1.02, others=5), cores=2) is None  # the ratio decides when known
    assert "2 other runnable" in contention(_load(None, others=2), cores=2)
    assert contention(_load(None, others=1), cores=2) is None
    assert contention(None, cores=2) is None


def test_trace_info_warns_on_a_contended_capture(small_trace, tmp_path, capsys):
    import argparse

    from rldse.cli.trace import cmd_trace_info

    host = small_trace.meta.host.model_copy(update={"load": _load(1.4)})
    small_trace.meta = small_trace.meta.model_copy(update={"host": host})
    path = small_trace.save(tmp_path / "t.parquet")
    cmd_trace_info(argparse.Namespace(file=str(path), json=False))
    warnings = [line for line in capsys.readouterr().out.splitlines() if "warning:" in line]
    assert len(warnings) == 1 and "contended" in warnings[0]


def test_wall_per_cpu_is_the_timings_ratio_capped_by_the_load_average(monkeypatch):
    """A neighbour that ran only during the timings (ratio 3 on a host whose load average
    says 1.1 per core) is capped, unless this session's own busy processes explain it; a
    steadily loaded host keeps the timings' own ratio; a multi-process run's ratio under 1
    is kept."""
    import rldse.host as host

    monkeypatch.setattr(host.os, "sched_getaffinity", lambda pid: {0, 1})
    monkeypatch.setattr(host.os, "getloadavg", lambda: (1.2, 1.0, 1.0))
    monkeypatch.setattr(host, "session_runnable", lambda: 1)
    ratio, how = host.wall_per_cpu(3.0, 1.0)
    assert ratio == pytest.approx(1.1) and "capped by load 1.20 on 2 cores" in how
    # two more busy processes in this session share its share: the cap is three times
    monkeypatch.setattr(host, "session_runnable", lambda: 3)
    assert host.wall_per_cpu(3.0, 1.0)[0] == pytest.approx(3.0)
    monkeypatch.setattr(host.os, "getloadavg", lambda: (7.0, 7.0, 7.0))
    assert host.wall_per_cpu(3.0, 1.0)[0] == pytest.approx(3.0)
    assert host.wall_per_cpu(0.5, 1.0)[0] == pytest.approx(0.5)
