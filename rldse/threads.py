"""One BLAS thread for everything rldse measures.

RL networks are small (batches of 32-256, layers of 64-256): multi-threaded BLAS splits
such products across threads, which on a busy 2-core host made a 128x64x64 product 100x
slower (3 ms vs 31 µs) and changed results for the same seed (threads reorder float
sums). Captures model one actor or learner per core, and the CPU model assumes the
fingerprint's matmul ran on one core, so every capture and fingerprint runs inside
`single_blas_thread()`; worker processes forked inside it inherit the limit.
"""

from __future__ import annotations

from contextlib import contextmanager

from threadpoolctl import threadpool_limits


@contextmanager
def single_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield
