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

from rldse.errors import RldseError


@contextmanager
def single_blas_thread():
    with threadpool_limits(limits=1, user_api="blas"):
        yield


#: torch intra-op threads a capture runs with unless the user says otherwise (the reason
#: above: on a busy 2-core host, an SB3 PPO learn minibatch took 20.6 ms in one capture and
#: 91 ms in another five minutes later, torch left at its default thread count).
CAPTURE_TORCH_THREADS = 1


class TorchThreads:
    """torch's intra-op thread count for one capture: ``start`` pins it to ``count`` (None:
    leaves what the script sets), ``stop`` restores the previous count and says what ran:
    (threads at the end, who chose them: 'rldse' (CAPTURE_TORCH_THREADS, the default),
    'user' (another count the capture was given) or 'script' (left to, or changed by,
    the script))."""

    def __init__(self, count: int | None, where: str) -> None:
        if count is not None and (isinstance(count, bool) or not isinstance(count, int)
                                  or count < 1):
            raise RldseError(f"expected a whole number of threads, 1 or more, or "
                             f"{'0' if where.startswith('--') else 'None'} to leave torch's "
                             f"own setting; got {count!r}", where=where)
        self.count, self.saved = count, None

    def start(self) -> None:
        import torch

        self.saved = torch.get_num_threads()
        if self.count is not None:
            torch.set_num_threads(self.count)

    def stop(self) -> tuple[int, str]:
        import torch

        now = torch.get_num_threads()
        if self.saved is not None:
            torch.set_num_threads(self.saved)
        if self.count is None or now != self.count:
            return now, "script"
        return now, "rldse" if now == CAPTURE_TORCH_THREADS else "user"


def current_torch_threads() -> tuple[int, str] | None:
    """torch's thread count now, as the script left it; None where torch is not loaded."""
    import sys

    torch = sys.modules.get("torch")
    return None if torch is None else (torch.get_num_threads(), "script")
