"""Protocol pieces: the chunk pipeline, lags and the look-ahead's share of the tail."""

import numpy as np

from rldse.workloads.llm_rl.protocols import chunk_pipeline, minibatch_lags, tail_hidden_share


def test_chunk_pipeline_waits_for_ready_chunks_and_for_itself():
    assert chunk_pipeline(np.array([0.0, 0.0]), 2.0) == 4.0
    assert chunk_pipeline(np.array([1.0, 10.0]), 2.0) == 12.0


def test_minibatch_lags_count_every_sample_once():
    lags = minibatch_lags(512, 32, 16, shift=16)
    assert sum(lags.values()) == 512 * 16 and min(lags) == 16 and max(lags) == 31


def test_tail_hidden_share_grows_with_staleness_to_one():
    shares = [tail_hidden_share(s, 512, 16, 1000.0, 4e6) for s in (0.0, 0.1, 0.3, 1.0)]
    assert shares[0] == 0.0 and shares == sorted(shares) and shares[-1] == 1.0
    assert shares[1] == 0.1 * 512 * 16 * 1000 / 4e6
