"""CPU/wall fractions from sparse CPU clock samples (synthetic samples: no timing)."""

from __future__ import annotations

import numpy as np

from rldse.cpu_clock import SAMPLE_EVERY_NS, CpuClock, cpu_fraction


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


def test_a_preemption_at_the_clock_read_dilutes_no_window():
    # a sample is stamped before and after its read (CpuClock.sample): the OS switched
    # the thread out on the way back from the read (wall 1000 -> 9000, no CPU), so the ops
    # on either side keep their full rate
    wall = np.array([0, 1000, 9000, 10000], np.int64)
    cpu = np.array([0, 1000, 1000, 2000], np.int64)
    frac = cpu_fraction(wall, cpu, np.array([100, 9100]), np.array([900, 9900]))
    np.testing.assert_allclose(frac, [1.0, 1.0])


def test_each_sample_stamps_the_wall_clock_on_both_sides_of_its_read():
    clock = CpuClock(lambda: 5)
    clock.sample(100)
    assert clock.cpu_ns == [5, 5] and clock.wall_ns[0] == 100
    assert clock.next_ns == clock.wall_ns[1] + SAMPLE_EVERY_NS
