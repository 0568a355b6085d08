"""TCAM model against Eva-CAM (Liu et al., DATE 2022) and CAMASim (arXiv 2403.03442) numbers."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.models import AmModel, load_part


def model(name: str, **overrides) -> AmModel:
    return AmModel(load_part("am", name, **overrides))


def test_64x64_fefet_search_costs_0_38_ns_and_2_34_pj():
    am = model("fefet-tcam-64")
    assert am.search_seconds(1) == pytest.approx(0.38e-9)
    assert am.search_joules(1) == pytest.approx(2.34e-12)


def test_a_search_covers_every_array_in_parallel():
    am = model("fefet-tcam-64", arrays=256)
    assert am.spec.capacity_rows == 256 * 64
    assert am.search_seconds(1) == pytest.approx(0.38e-9)  # latency of one array
    assert am.search_joules(1) == pytest.approx(256 * 2.34e-12)  # energy of all
    np.testing.assert_allclose(am.search_seconds([0, 32]), [0, 32 * 0.38e-9])


def test_writes_one_row_at_a_time():
    am = model("fefet-tcam-128")
    assert am.write_seconds(10) == pytest.approx(10 * 10.2e-9)
    assert am.write_joules(10) == pytest.approx(10 * 6.3e-12)


def test_camasim_adds_peripherals():
    am = model("camasim-fefet-64")
    assert am.search_seconds(1) == pytest.approx((2.6 + 1.47) * 1e-9)
    assert am.search_joules(1) == pytest.approx((1.28 + 1.6) * 1e-12)


def test_larger_arrays_cost_less_per_bit_but_search_slower():
    specs = [load_part("am", f"fefet-tcam-{n}") for n in (64, 128, 256)]
    per_bit = [s.search_pj / (s.rows * s.bits_per_row) for s in specs]
    assert per_bit == sorted(per_bit, reverse=True)
    assert [s.search_ns for s in specs] == sorted(s.search_ns for s in specs)
    assert per_bit[0] == pytest.approx(0.57e-3, rel=0.01)  # 0.57 fJ/bit


def test_energy_actions_plus_leakage():
    am = model("fefet-tcam-64", arrays=256)
    assert am.idle_w == am.max_w == pytest.approx(256 * 0.42e-3)
    e = am.energy(n_searches=1000, rows_written=100, wall_s=1e-3)
    expected = 1000 * 256 * 2.34e-12 + 100 * 1.68e-12 + 256 * 0.42e-3 * 1e-3
    assert float(e.joules) == pytest.approx(expected)
    assert "per action" in e.method and "Eva-CAM" in e.claimed_accuracy


def test_price_scales_with_arrays():
    assert load_part("am", "fefet-tcam-64", arrays=1000).price_usd == pytest.approx(50.0)
