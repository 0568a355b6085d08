"""The recorded loop's time as a log of cuts: one clock read and one integer per boundary
between operations, so that recording costs well under a microsecond per operation.

Timing each operation with its own start and end, a Python object and a row tuple costs a
few microseconds per operation in a real loop (SB3's DQN on CartPole: 6-9 µs per phase,
three times what the same code costs in a tight calibration loop, as the loop's own work
evicts it from the caches between calls); at four operations per step that was 10 % of the
loop. Here a boundary appends to two ``array('q')`` (no object kept per row) and rows are
built once, with numpy, when the trace is made.

A cut's code says what the time after it is (until the next cut, or the end):

- ``GAP`` (0): time no row keeps (the loop between recorded operations);
- a kind, ≥ 1 (an index into the recording's kind table: phase name and row defaults):
  a new row, identified by the index of the cut that opened it;
- ``-(r + 1)``: row ``r`` again, back from a phase nested in it.

A row's duration is the sum of its tiles (the spans between its cuts and the next ones),
so a nested phase's time is never its parent's (RL-Scope's exclusive scopes, Gleeson et
al., MLSys 2021).
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from time import perf_counter_ns

import numpy as np

GAP = 0


class Cuts:
    """The log. ``cut`` opens a row, ``back`` returns to one (or to none), ``gap`` leaves
    every row; ``open`` is the row the time now belongs to (None in a gap)."""

    __slots__ = ("times", "codes", "open", "iters")

    def __init__(self) -> None:
        self.times = array("q")
        self.codes = array("q")
        self.open: int | None = None
        self.iters: dict[int, int] = {}  # row -> iter given explicitly

    def cut(self, code: int) -> int:
        """End the open tile here and open a row of kind ``code``; returns the row."""
        row = self.open = len(self.codes)
        self.times.append(perf_counter_ns())
        self.codes.append(code)
        return row

    def back(self, row: int | None) -> None:
        """End the open tile here and return to row ``row`` (the one open when a nested
        row was cut), or to no row (None)."""
        self.open = row
        self.times.append(perf_counter_ns())
        self.codes.append(GAP if row is None else -row - 1)

    def gap(self) -> None:
        self.back(None)

    def relabel(self, row: int, code: int) -> None:
        """Give row ``row`` another kind (``GAP``: drop it and every tile of it)."""
        self.codes[row] = code

    def clear(self) -> None:
        del self.times[:], self.codes[:]
        self.open = None
        self.iters.clear()

    def __len__(self) -> int:
        return len(self.codes)


@dataclass(frozen=True)
class Rows:
    """The rows a log holds, in the order they opened (arrays of equal length)."""

    cut: np.ndarray  # index of the cut that opened the row
    kind: np.ndarray  # its kind
    start_ns: np.ndarray  # its first tile's start, the recorder's own time before it removed
    dur_ns: np.ndarray  # the sum of its tiles, each less its bias (>= 0)
    close: np.ndarray  # index of the cut that ended its last tile (len(cuts) if the end)


def rows(cuts: Cuts, end_ns: int, before_ns: np.ndarray, after_ns: np.ndarray,
         counted_ns: np.ndarray) -> Rows:
    """The log's rows. Cut i costs the recorder ``before_ns[i]`` before its clock read and
    ``after_ns[i]`` after it: a tile's bias is its first cut's after and its last cut's
    before. A row's start has the recorder's own time before it removed: every earlier
    cut's whole cost, this cut's before, and ``counted_ns[i]`` (time spent counting work
    before cut i)."""
    t = np.frombuffer(cuts.times, dtype=np.int64)
    c = np.frombuffer(cuts.codes, dtype=np.int64)
    n = len(t)
    index = np.arange(n)
    ends = np.append(t[1:], end_ns)
    tile_ns = ends - t - after_ns - np.append(before_ns[1:], 0.0)
    cost = before_ns + after_ns
    shift = np.cumsum(cost) - cost + before_ns + counted_ns
    owner = np.where(c >= 0, index, -c - 1)
    kept = c[owner] > 0  # tiles of rows (a gap, or a row relabelled GAP, keeps none)
    opened = np.flatnonzero(c > 0)
    dur = np.bincount(owner[kept], weights=tile_ns[kept], minlength=n)[opened]
    last = np.full(n, -1)
    np.maximum.at(last, owner[kept], index[kept])
    return Rows(cut=opened, kind=c[opened], start_ns=t[opened] - shift[opened],
                dur_ns=np.maximum(dur, 0.0), close=last[opened] + 1)


def closed_before(rows: Rows, mask: np.ndarray) -> np.ndarray:
    """For every row, how many rows of ``mask`` had closed when it opened (a row still
    open around a nested one does not count)."""
    return np.searchsorted(np.sort(rows.close[mask]), rows.cut, side="right")
