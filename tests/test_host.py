"""Host fingerprint: fast, plausible, and validated."""

from __future__ import annotations

import time

import pytest
from pydantic import ValidationError

from rldse.host import HostFingerprint, measure


def test_measure_is_fast_and_plausible():
    t0 = time.perf_counter()
    fp = measure()
    assert time.perf_counter() - t0 < 3.0  # issue: about 2 s at most (slack for a busy CI)
    assert fp.cores >= 1
    assert 0.1 < fp.matmul_gflops < 1e5
    assert 0.1 < fp.copy_gbs < 2e3
    assert 0.01 < fp.random_access_ns < 1e3
    assert 1 < fp.py_call_ns < 1e4
    assert 10 < fp.numpy_call_ns < 1e5


def test_rejects_unknown_and_bad_fields(host_fp):
    with pytest.raises(ValidationError):
        HostFingerprint(**host_fp.model_dump(), gpu="none")
    with pytest.raises(ValidationError):
        HostFingerprint(**(host_fp.model_dump() | {"copy_gbs": -1.0}))
