"""CPU/wall fractions from sparse CPU clock samples (synthetic samples: no timing)."""

from __future__ import annotations

import numpy as np

from rldse.cpu_clock import cpu_fraction


def test_fraction_follows_each_window_and_spans_windows():
    wall = np.array([0, 1000, 2000], np.int64)
    cpu = np.array([0, 1000, 1500], np.int64)  # full speed, then half
    frac = cpu_fraction(wall, cpu, np.array([100, 1200, 500]), np.array([900, 1800, 1500]))
    np.testing.assert_allclose(frac, [1.0, 0.5, 0.75])


def test_outside_the_samples_the_nearest_window_rate_applies():
    wall, cpu = np.array([0, 1000], np.int64), np.array([0, 250], np.int64)
    np.testing.assert_allclose(cpu_fraction(wall, cpu, np.array([-500, 2000]),
                                            np.array([-100, 3000])), [0.25, 0.25])


def test_rate_is_capped_at_one_and_unknown_without_two_samples():
    wall, cpu = np.array([0, 1000], np.int64), np.array([0, 3000], np.int64)  # 3 threads
    assert cpu_fraction(wall, cpu, np.array([0]), np.array([1000]))[0] == 1.0
    one = cpu_fraction(np.array([5], np.int64), np.array([5], np.int64), np.array([0]),
                       np.array([1]))
    assert np.isnan(one).all()
