"""GEMM time on the measured curve, and without one (rldse.models.cpu.gemm_curve)."""

from __future__ import annotations

import pytest

from rldse.models import CpuModel, cpu_from_host
from rldse.models.cpu.gemm_curve import gemm_seconds
from rldse.sim import simulate
from rldse.system import parse_spec


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


@pytest.mark.parametrize(("change", "message"), [
    (lambda c: c.__setitem__(0, (*c[0][:4], 0.0)), "point 0: GFLOP/s must be positive"),
    (lambda c: c.__setitem__(3, (*c[3][:4], -1.0)), "point 3: GFLOP/s must be positive"),
    (lambda c: c.__setitem__(0, (c[0][0], 0, *c[0][2:])), "point 0: batch, inputs and outputs"),
    (lambda c: c.__setitem__(0, ("fwdx", *c[0][1:])), "point 0: product 'fwdx'"),
    (lambda c: c.pop(), "product 'dx': expected a full grid"),
    (lambda c: c.__setitem__(slice(None), [p for p in c if p[1] == c[0][1]]),
     "expected a full grid of at least two values per axis")])
def test_a_curve_the_interpolation_cannot_read_is_refused_where_it_is_given(curved_fp, change,
                                                                             message):
    from pydantic import ValidationError

    from rldse.host import HostFingerprint
    from rldse.models.cpu.spec import CpuSpec

    curve = list(curved_fp.gemm_curve)
    change(curve)
    with pytest.raises(ValidationError, match=message):
        HostFingerprint.model_validate(curved_fp.model_dump() | {"gemm_curve": curve})
    spec = cpu_from_host(curved_fp).model_dump()
    with pytest.raises(ValidationError, match=message):
        CpuSpec.model_validate(spec | {"gemm_curve": tuple(curve)})
