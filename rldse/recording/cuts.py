"""The recorded loop's time as a log of cuts: one clock read and one integer per boundary
between operations, so that recording costs well under a microsecond per operation.

Timing each operation with its own start and end, a Python object and a row tuple costs a
few microseconds per operation in a real loop (SB3's DQN on CartPole: 6-9 µs per phase,
three times what the same code costs in a tight calibration loop, as the loop's own work
evicts it from the caches between calls); at four operations per step that was 10 % of the
loop. Here a boundary appends to two Python lists (an ``array('q')`` append parses its
argument and costs twice as many instructions: callgrind, about 3,000 against 1,500 per
cut), no object is kept per row, and rows are built once, with numpy, when the trace is
made. Every ``SPILL`` cuts the lists move into numpy blocks (8 bytes per value instead of a
Python int's 32 or more), so a long run's log stays compact.

A cut's code says what the time after it is (until the next cut, or the end):

- ``GAP`` (0): time no row keeps (the loop between recorded operations);
- a kind, ≥ 1 (an index into the recording's kind table: phase name and row defaults):
  a new row, identified by the index of the cut that opened it;
- ``-(r + 1)``: row ``r`` again, back from a phase nested in it.

A row's duration is the sum of its tiles (the spans between its cuts and the next ones),
so a nested phase's time is never its parent's (RL-Scope's exclusive scopes, Gleeson et
al., MLSys 2021).

CPU time: a cut reads the process's CPU clock (``time.process_time_ns``) when
``SAMPLE_EVERY_NS`` of wall time has passed since the last read (rldse.cpu_clock); a
tile's CPU time is its wall time times the CPU/wall rate over it. Process rather than
thread time: a user's loop may run torch or BLAS on several threads, whose work thread
time would miss (the rate is capped at 1, so parallel threads never make an op longer
than its wall time).
"""

from __future__ import annotations

from dataclasses import dataclass
from time import perf_counter_ns, process_time_ns

import numpy as np

from rldse.cpu_clock import CpuClock

GAP = 0


#: Cuts logged in lists before they move into a numpy block.
SPILL = 1 << 16


class Cuts:
    """The log. ``cut`` opens a row, ``back`` returns to one (or to none), ``gap`` leaves
    every row; ``open`` is the row the time now belongs to (None in a gap). Rows are
    numbered by the cut that opened them, over the whole log; every block holds exactly
    ``spill_at`` cuts (``SPILL`` when the log was made), so a row's block is its number //
    ``spill_at`` and the lists' first cut is row ``base``.

    Hot paths may make a cut inline, as ``cut`` does it less the call: ``if len(codes) >=
    spill_at: spill()``, ``open = base + len(codes)`` (where something reads ``open``),
    ``times.append(perf_counter_ns())``, ``codes.append(code)``. In SB3's DQN loop the call
    is about half of what a cut costs in situ (``benchmarks/speed/sb3_recorder_overhead.py``)."""

    __slots__ = ("times", "codes", "open", "iters", "base", "spill_at", "cpu", "_blocks")

    def __init__(self) -> None:
        self.times: list[int] = []  # the cuts since the last spill
        self.codes: list[int] = []
        self.open: int | None = None
        self.iters: dict[int, int] = {}  # row -> iter given explicitly
        self.base = 0  # the row number of the lists' first cut
        self.spill_at = SPILL
        self.cpu = CpuClock(process_time_ns)
        self._blocks: list[tuple[np.ndarray, np.ndarray]] = []  # (times, codes), spill_at each

    def cut(self, code: int) -> int:
        """End the open tile here and open a row of kind ``code``; returns the row."""
        if len(self.codes) >= self.spill_at:
            self.spill()
        row = self.open = self.base + len(self.codes)
        t = perf_counter_ns()
        self.times.append(t)
        self.codes.append(code)
        if t >= self.cpu.next_ns:
            self.cpu.sample(t)
        return row

    def back(self, row: int | None) -> None:
        """End the open tile here and return to row ``row`` (the one open when a nested
        row was cut), or to no row (None)."""
        self.open = row
        if len(self.codes) >= self.spill_at:
            self.spill()
        t = perf_counter_ns()
        self.times.append(t)
        self.codes.append(GAP if row is None else -row - 1)
        if t >= self.cpu.next_ns:
            self.cpu.sample(t)

    def gap(self) -> None:
        self.back(None)

    def code(self, row: int) -> int:
        """The kind of row ``row``."""
        at = row - self.base
        return self.codes[at] if at >= 0 else int(self._blocks[row // self.spill_at][1][
            row % self.spill_at])

    def open_code(self) -> int:
        """The kind of the open row (``GAP`` in a gap)."""
        return GAP if self.open is None else self.code(self.open)

    def relabel(self, row: int, code: int) -> None:
        """Give row ``row`` another kind (``GAP``: drop it and every tile of it)."""
        at = row - self.base
        if at >= 0:
            self.codes[at] = code
        else:
            self._blocks[row // self.spill_at][1][row % self.spill_at] = code

    def arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(times in ns, codes) of the whole log, as int64 arrays."""
        blocks = [*self._blocks, _block(self.times, self.codes)]
        return (np.concatenate([t for t, _ in blocks]), np.concatenate([c for _, c in blocks]))

    def clear(self) -> None:
        self.times.clear()
        self.codes.clear()
        self._blocks.clear()
        self.open = None
        self.base = 0
        self.iters.clear()
        self.cpu.clear()

    def __len__(self) -> int:
        return self.base + len(self.codes)

    def spill(self) -> None:
        """Move the lists' first ``spill_at`` cuts into a numpy block (in place: inline
        cutters hold the lists)."""
        n = self.spill_at
        self._blocks.append(_block(self.times[:n], self.codes[:n]))
        del self.times[:n], self.codes[:n]
        self.base += n


def _block(times: list[int], codes: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return (np.fromiter(times, dtype=np.int64, count=len(times)),
            np.fromiter(codes, dtype=np.int64, count=len(codes)))


@dataclass(frozen=True)
class Rows:
    """The rows a log holds, in the order they opened (arrays of equal length)."""

    cut: np.ndarray  # index of the cut that opened the row
    kind: np.ndarray  # its kind
    start_ns: np.ndarray  # its first tile's start, the recorder's own time before it removed
    dur_ns: np.ndarray  # the sum of its tiles, each less its bias (>= 0)
    cpu_ns: np.ndarray  # the CPU time of those tiles (NaN: no CPU clock samples)
    close: np.ndarray  # index of the cut that ended its last tile (len(cuts) if the end)


def rows(t: np.ndarray, c: np.ndarray, end_ns: int, before_ns: np.ndarray,
         after_ns: np.ndarray, counted_ns: np.ndarray, cpu: CpuClock | None = None) -> Rows:
    """The rows of the log whose times and codes are ``t`` and ``c`` (``Cuts.arrays``).
    Cut i costs the recorder ``before_ns[i]`` before its clock read and ``after_ns[i]``
    after it: a tile's bias is its first cut's after and its last cut's before. A row's
    start has the recorder's own time before it removed: every earlier cut's whole cost,
    this cut's before, and ``counted_ns[i]`` (time spent counting work before cut i).
    ``cpu``: the log's CPU clock, for each tile's CPU/wall rate."""
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
    frac = cpu.fraction(t, ends) if cpu is not None else np.full(n, np.nan)
    tile_cpu = np.maximum(tile_ns, 0.0) * frac
    cpu_ns = np.bincount(owner[kept], weights=tile_cpu[kept], minlength=n)[opened]
    last = np.full(n, -1)
    np.maximum.at(last, owner[kept], index[kept])
    return Rows(cut=opened, kind=c[opened], start_ns=t[opened] - shift[opened],
                dur_ns=np.maximum(dur, 0.0), cpu_ns=np.minimum(cpu_ns, np.maximum(dur, 0.0)),
                close=last[opened] + 1)


def closed_before(rows: Rows, mask: np.ndarray) -> np.ndarray:
    """For every row, how many rows of ``mask`` had closed when it opened (a row still
    open around a nested one does not count)."""
    return np.searchsorted(np.sort(rows.close[mask]), rows.cut, side="right")
