"""Fixtures of the CPU model's tests: the capture host's spec, and a fingerprint with a GEMM
curve, element-wise rates and caches."""

from __future__ import annotations

import pytest

from rldse.models import cpu_from_host

#: The fixture curve's grid: batch × inputs × outputs.
GRID = ((1, 64, 256), (4, 64, 256), (2, 64, 256))


@pytest.fixture
def host(host_fp):
    return cpu_from_host(host_fp)


@pytest.fixture
def curved_fp(host_fp):
    """A fingerprint whose GEMMs run at 10 GFLOP/s at batch 1, 50 above; and the rest."""
    curve = [(p, b, i, o, 10.0 if b == 1 else 50.0) for p in ("fwd", "dw", "dx")
             for b in GRID[0] for i in GRID[1] for o in GRID[2]]
    return host_fp.model_copy(update=dict(
        gemm_curve=curve, elementwise_gbs=10.0, vector_gbs=40.0,
        cache_bytes={"L1d": 32 * 1024, "L2": 1024 * 1024}, gather_ns=[(16384.0, 1.0),
                                                                      (524288.0, 2.0)]))
