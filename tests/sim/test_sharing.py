"""Processor sharing (rldse.sim.sharing) against schedules worked by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rldse.sim.sharing import shared_ends


def cores(c: int):
    return lambda n: float(min(n, c))


def test_unequal_jobs_finish_later_than_the_closed_form_bound():
    # 2 cores, works 3, 1, 1 from 0: each runs at 2/3 until the short ones finish at 1.5
    # (1 done each), then the long one alone at rate 1 for its last 2: ends at 3.5, where
    # max(busiest, total / cores) = 3
    ends = shared_ends(np.zeros(3), np.array([3.0, 1.0, 1.0]), cores(2))
    assert ends == pytest.approx([3.5, 1.5, 1.5])


def test_fewer_jobs_than_cores_run_alone():
    ends = shared_ends(np.array([0.0, 1.0]), np.array([2.0, 0.5]), cores(4))
    assert ends == pytest.approx([2.0, 1.5])


def test_a_release_mid_run_slows_the_running_jobs():
    # one core: job 0 alone for 1 s (1 of its 2 done), then both at 1/2: job 1 (0.5)
    # ends at 2 while job 0 does 0.5 more; its last 0.5 alone ends at 2.5
    ends = shared_ends(np.array([0.0, 1.0]), np.array([2.0, 0.5]), cores(1))
    assert ends == pytest.approx([2.5, 2.0])


def test_capacity_below_the_runnable_count_divides_among_them():
    # 4 equal jobs, capacity 2.5 whatever the count beyond 2: all end at 4 / 2.5 = 1.6
    ends = shared_ends(np.zeros(4), np.ones(4), lambda n: min(n, 2.5))
    assert ends == pytest.approx([1.6] * 4)


def test_zero_work_ends_at_its_release():
    assert shared_ends(np.array([0.5]), np.array([0.0]), cores(1)) == pytest.approx([0.5])
