"""Response lengths: a truncated exponential of the requested mean, the same every time."""

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.workloads.llm_rl.lengths import response_lengths, truncated_scale


def test_truncated_scale_solves_the_mean():
    theta = truncated_scale(3000, 28672)
    assert theta * (1 - np.exp(-28672 / theta)) == pytest.approx(3000, rel=1e-9)
    assert truncated_scale(100, 10**6) == pytest.approx(100, rel=1e-6)  # no cut: the mean


def test_lengths_have_the_mean_the_cap_and_the_same_values_each_time():
    a = response_lengths(8192, 2000, 28672)
    assert a.mean() == pytest.approx(2000, rel=0.01)
    assert a.max() <= 28672 and a.min() >= 1
    # the longest of n is the exponential's quantile (n − 0.5)/n: θ ln(2n)
    assert a.max() == pytest.approx(2000 * np.log(2 * 8192), rel=0.01)
    assert np.array_equal(a, response_lengths(8192, 2000, 28672))


def test_a_mean_at_or_above_the_cap_is_refused():
    with pytest.raises(RldseError, match="response_tokens"):
        response_lengths(16, 5000, 4096)
