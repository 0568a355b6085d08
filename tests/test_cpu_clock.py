"""CPU/wall fractions from sparse CPU clock samples (synthetic samples: no timing)."""

from __future__ import annotations

import numpy as np

from rldse.cpu_clock import (
    OFF_EDGES_NS,
    SAMPLE_EVERY_NS,
    WARM_AFTER_NS,
    CpuClock,
    cpu_fraction,
    switch_classes,
    switch_ins,
    switch_penalty_ns,
    warm_unit_cost_ns,
)


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


# ---- switch-ins and their penalty (synthetic samples and ops: closed forms) -----------

def test_a_stall_at_a_clock_read_is_a_switch_in_at_the_read_end():
    # ops [0, 1 us], [501, 502 us]; the read between them stalled 500 us with no CPU
    wall = np.array([0, 1000, 501_000, 502_000], np.int64)
    cpu = np.array([0, 1000, 1000, 2000], np.int64)
    at, off, last, since = switch_ins(wall, cpu, np.array([0, 501_000]),
                                      np.array([1000, 502_000]))
    assert at.tolist() == [501_000] and off.tolist() == [500_000]
    assert last.tolist() == [-1, 0] and since.tolist() == [-1, 0]


def test_a_stall_inside_a_window_is_placed_at_the_start_of_the_longest_op():
    # one sample window [0, 1 ms] with 600 us off the CPU (CPU rate 0.4); ops of 100, 700
    # and 100 us: the switch lay inside the long one, which counts as after it
    wall, cpu = np.array([0, 1_000_000], np.int64), np.array([0, 400_000], np.int64)
    start, end = np.array([0, 100_000, 800_000]), np.array([100_000, 800_000, 900_000])
    at, off, last, since = switch_ins(wall, cpu, start, end)
    assert at.tolist() == [100_000] and off.tolist() == [600_000]
    assert last.tolist() == [-1, 0, 0] and since.tolist() == [-1, 0, 280_000]


def test_no_stall_no_switch_in():
    wall, cpu = np.array([0, 1000, 2000], np.int64), np.array([0, 1000, 1990], np.int64)
    at, _, last, since = switch_ins(wall, cpu, np.array([0, 1000]), np.array([1000, 2000]))
    assert len(at) == 0 and last.tolist() == [-1, -1] and since.tolist() == [-1, -1]


def test_since_counts_the_cpu_time_after_the_switch_in():
    wall = np.array([0, 100, 50_100, 60_100], np.int64)  # a 50 us stall at the first read
    cpu = np.array([0, 100, 100, 10_100], np.int64)
    _, _, last, since = switch_ins(wall, cpu, np.array([50_100, 55_100]),
                                   np.array([55_100, 60_100]))
    assert last.tolist() == [0, 0] and since.tolist() == [0, 5000]


def test_penalty_per_switch_in_is_the_early_ops_excess_over_the_warm_mean():
    # a phase whose warm ops cost 10; after each switch-in its first op costs 10 + P,
    # P = 40 for class 0 switch-ins and 100 for class 2 ones
    classes = np.array([0, 2, 0, 2])
    last = np.array([0, 0, 1, 1, 2, 2, 3, 3])
    since = np.array([0, WARM_AFTER_NS] * 4)
    cost = np.array([50, 10, 110, 10, 50, 10, 110, 10], float)
    base, pen = switch_penalty_ns(cost, since, last, classes, np.ones(4, bool), 4)
    assert base == 10.0
    np.testing.assert_allclose(pen, [40, 0, 100, 0])
    # taking out each switch-in's penalty leaves the warm cost, whatever the switch rate
    assert warm_unit_cost_ns(cost.sum(), len(cost), classes, pen) == 10.0
    assert warm_unit_cost_ns(50 + 10 + 10 + 10, 4, classes[:1], pen) == 10.0


def test_switch_ins_left_out_of_the_count_add_no_excess():
    base, pen = switch_penalty_ns(np.array([50.0, 10, 90, 10]), np.array([0, WARM_AFTER_NS] * 2),
                                  np.array([0, 0, 1, 1]), np.array([0, 0]),
                                  np.array([True, False]), 1)
    assert base == 10.0 and pen[0] == 40.0


def test_a_switch_in_is_classed_by_its_off_time_and_the_op_it_lands_in():
    # ops of kinds 0, 1, 0 starting at 0, 10, 20 us; a switch-in at an op's start lands
    # in it, one between ops lands in the next
    start, kind = np.array([0, 10_000, 20_000]), np.array([0, 1, 0])
    off = np.array([500_000, 4_000_000])  # off classes 0 and 2
    classes = switch_classes(np.array([10_000, 15_000]), off, start, kind)
    n_off = len(OFF_EDGES_NS) + 1
    assert classes.tolist() == [0 + n_off * 1, 2 + n_off * 0]
