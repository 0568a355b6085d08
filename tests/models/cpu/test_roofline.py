"""One core's roofline and the rescaling of trace rows by counted work
(rldse.models.cpu.roofline)."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.kernels.mlp import cold, elementwise, gemm, vector
from rldse.models import OpColumns, cpu_from_host, load_part
from rldse.models.cpu.roofline import roofline_seconds, with_works, work_seconds


def test_roofline_of_a_preset_by_hand():
    s = load_part("cpu", "xeon-silver-4215")
    assert s.lanes == 16
    assert s.core_bw_gbs == pytest.approx(115.2 * 0.75 / 8)
    assert s.random_access_ns == pytest.approx(9.0)
    t = roofline_seconds(s, flops=[0, 8e9], bytes_=[1.08e9, 0], touches=[1000, 0])
    np.testing.assert_allclose(t, [1.08e9 / 10.8e9 + 1000 * 9e-9, 8e9 / 40e9])


def test_roofline_adds_compute_and_memory_time():
    """An operation's numpy kernels run one after another, so its compute time and its
    memory time add (docs/architecture.md, "The CPU model"): flops and bytes together take
    the sum."""
    s = load_part("cpu", "xeon-silver-4215")
    both = roofline_seconds(s, flops=[8e9], bytes_=[1.08e9], touches=[0])
    np.testing.assert_allclose(both, [8e9 / 40e9 + 1.08e9 / 10.8e9])
    alone = (roofline_seconds(s, flops=[8e9], bytes_=[0], touches=[0])
             + roofline_seconds(s, flops=[0], bytes_=[1.08e9], touches=[0]))
    assert both == pytest.approx(alone, rel=1e-12)


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
