"""Timeline export in Chrome's trace event format (opens in Perfetto or chrome://tracing).

One process per device with one thread per lane, and one "workers" process with one
thread per worker (actor i, learner, replay manager, inference server g): a booking made
for a worker is one complete ("X") event on its device lane and the same event on its
worker's track, with what the booking knows (phase, items, batch) as args. Tracks are
named by ``process_name``/``thread_name`` metadata events the first time they appear (a
device's lanes are its threads by number: tid = lane). Times in microseconds as the
format requires, written to the ns (rounded from seconds once, as integer ns).

`TimelineStream` is what a simulation with a timeline books into, three ways:
``append((device, lane, phase, start_s, dur_s[, worker, args]))`` for one booking (a
5-tuple gets the stream's current ``tag``, the (worker, args) that `Machine.book` sets
around a Device booking); ``extend(...)`` for many bookings of one device and phase given
as arrays (what the merged numpy paths compute); and `Columns`, plain lists a per-step
hot loop appends to, written in bulk. Events are formatted in bulk with numpy: each
event kind is a fixed row of bytes with its numbers right-aligned in fixed-width fields
(the padding is JSON whitespace), so a block of events is one (rows, width) byte array
written as is, about 20x faster than formatting each event in Python. At most
``buffer_events`` events are held in memory; the rest go to a temporary file beside the
target, and ``close()`` finishes the JSON and moves it into place (``os.replace``), so
the file is either complete or absent; ``abort()`` removes the temporary file. With a
``window_s`` (start, end) only events overlapping it are written.

Granularity: an event is a booking the program makes, except where a merged numpy path
(rldse.workloads.offpolicy.program) computes thousands of operations per step of its
own: there, without a window, each worker gets one event per tile of about
`COARSE_STEPS` env steps (`tile_starts`), whose args give the steps or updates it covers
and its busy seconds by phase (``env_step_us`` …), since formatting an event per env
step costs more than simulating the step; with a window (``window_s``), the operations
overlapping it are written one by one, each booking's parts as the event loop shows them.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from rldse.errors import RldseError
from rldse.files import open_temporary

NO_TAG: tuple = (None, None)
#: env steps (of an actor, or behind a learner's updates) one coarse event covers at
#: least: ~1,000 events per worker per 1e6 steps, a few ms of writing (module docstring)
COARSE_STEPS = 1024

# 4-byte cells of ASCII, as uint32 in native order: "0042", "  42", "    " and ".042"
_FULL = np.frombuffer(b"".join(b"%04d" % k for k in range(10000)), dtype=np.uint32)
_LEAD = np.frombuffer(b"".join(b"%4d" % k for k in range(10000)), dtype=np.uint32)
_BLANK = _LEAD.copy()  # a cell above the number's leading digits: 0 is blank
_BLANK[0] = np.frombuffer(b"    ", dtype=np.uint32)[0]
_FRAC = np.frombuffer(b"".join(b".%03d" % k for k in range(1000)), dtype=np.uint32)


def parse_window(text: str, flag: str = "--timeline-window") -> tuple[float, float]:
    """``START:END`` in simulated seconds -> (start_s, end_s), 0 <= START < END."""
    parts = text.split(":")
    try:
        if len(parts) != 2:
            raise ValueError
        lo, hi = float(parts[0]), float(parts[1])
    except ValueError:
        raise RldseError(f"{flag} {text}: expected START:END, two numbers of simulated "
                         "seconds (e.g. 0.5:1.5)") from None
    return check_window((lo, hi), flag)


def check_window(window_s: tuple[float, float], what: str = "timeline_window") -> tuple:
    lo, hi = (float(x) for x in window_s)
    if not (math.isfinite(lo) and math.isfinite(hi)) or lo < 0:
        raise RldseError(f"{what} {lo:g}:{hi:g}: START and END must be finite seconds >= 0")
    if hi <= lo:
        raise RldseError(f"{what} {lo:g}:{hi:g}: END must be greater than START")
    return lo, hi


def tile_starts(weights: np.ndarray, per_tile: int, breaks: np.ndarray | None = None
                ) -> np.ndarray:
    """Where consecutive tiles of items start (0 first): each new tile starts at the first
    allowed index (``breaks``, sorted; default any) where the items before it weigh at
    least the next multiple of ``per_tile``, so there are at most total/per_tile + 1
    tiles, and a tile ends only where a break allows."""
    n = len(weights)
    if not n:
        return np.zeros(0, dtype=np.int64)
    cum = np.cumsum(weights)
    targets = per_tile * np.arange(1, int(cum[-1]) // per_tile + 1)
    starts = np.searchsorted(cum, targets, side="left") + 1  # the earliest for each
    if breaks is not None:  # the first break at or after it
        breaks = np.asarray(breaks, dtype=np.int64)
        at = np.searchsorted(breaks, starts, side="left")
        starts = breaks[at[at < len(breaks)]]
    return np.concatenate(([0], np.unique(starts[starts < n])))


def _ns(seconds: np.ndarray) -> np.ndarray:
    return np.rint(seconds * 1e9).astype(np.int64)


def _meta(kind: str, pid: int, tid: int, name: str) -> str:
    return json.dumps({"name": kind, "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}})


def _cells(v: np.ndarray) -> list[np.ndarray]:
    """Non-negative int64s as 4-byte ASCII cells (most significant first), right-aligned
    in as many cells as the largest needs, leading blanks as spaces."""
    if int(v.min()) < 0:
        raise ValueError("timeline numbers must be >= 0")
    n = max(1, -(-len(str(int(v.max()))) // 4))
    out, x = [], v
    for j in range(n):
        x, g = np.divmod(x, 10000)
        out.append(np.where(x > 0, _FULL[g], (_BLANK if j else _LEAD)[g]))
    return out[::-1]


def _rows(parts: list) -> np.ndarray:
    """Event rows of bytes from literal parts and number parts, ``(ints, "int")`` or
    ``(ns, "us")`` (microseconds to three decimals): every number starts on a 4-byte
    boundary (spaces after the literal before it, JSON whitespace), so it is written as
    uint32 columns, and the rows are padded with spaces to a multiple of 4 bytes."""
    template, slots, memo = bytearray(), [], {}
    for p in parts:
        if isinstance(p, bytes):
            template += p
            continue
        v, kind = p
        cells = memo.get(id(v))
        if cells is None:
            cells = memo[id(v)] = (_cells(v // 1000) + [_FRAC[v % 1000]] if kind == "us"
                                   else _cells(v))
        template += b" " * (-len(template) % 4)
        slots.append((len(template) // 4, cells))
        template += b" " * (4 * len(cells))
    template += b" " * (-len(template) % 4)
    n = len(slots[0][1][0])
    rows = np.empty((n, len(template)), dtype=np.uint8)
    rows[:] = np.frombuffer(bytes(template), dtype=np.uint8)
    words = rows.view(np.uint32)
    for col, cells in slots:
        for k, c in enumerate(cells):
            words[:, col + k] = c
    return rows


class Columns:
    """Events of one device and phase that a per-step hot loop records by appending to
    typed arrays (``lane``, ``start_s``, ``dur_s``, ``who``: an index into ``workers``,
    left empty where ``workers`` is one name, ``value``: the ``arg``): no Python object
    kept per value,
    and numpy reads them without a copy; the stream writes them in bulk
    (`TimelineStream.spill`, and all of them on close)."""

    __slots__ = ("device", "phase", "workers", "arg", "lane", "start_s", "dur_s", "who",
                 "value")

    def __init__(self, device: str, phase: str, workers: str | Sequence[str],
                 arg: str | None = None) -> None:
        self.device, self.phase, self.arg = device, phase, arg
        self.workers = workers if isinstance(workers, str) else list(workers)
        self.lane, self.who, self.value = array("q"), array("q"), array("q")
        self.start_s, self.dur_s = array("d"), array("d")


class TimelineStream:
    """Chrome trace events streamed to ``path`` (module docstring)."""

    __slots__ = ("path", "tag", "_tmp", "_file", "_buf", "_limit", "_pid", "_workers",
                 "_first", "_lo", "_hi", "_columns")

    def __init__(self, path: str | Path, devices: list[str], buffer_events: int = 1 << 16,
                 window_s: tuple[float, float] | None = None):
        self._lo, self._hi = check_window(window_s) if window_s is not None else \
            (-math.inf, math.inf)
        self.path = Path(path)
        self._tmp = open_temporary(self.path)  # rldse.files' name: a killed run's is cleaned
        self._file = open(self._tmp, "wb", buffering=1 << 20)  # noqa: SIM115 (closed in close)
        self.tag = NO_TAG  # (worker, args) of the Device booking being made
        self._buf: list[tuple] = []
        self._limit = buffer_events
        self._pid = {name: k + 1 for k, name in enumerate(devices)}
        self._workers: dict[str, int] = {}  # worker -> tid on the workers process
        self._columns: dict[tuple, Columns] = {}
        meta = [_meta("process_name", pid, 0, name) for name, pid in self._pid.items()]
        self._file.write(('{"displayTimeUnit": "ns", "traceEvents": [\n'
                          + ",\n".join(meta)).encode())
        self._first = not meta  # nothing written after "[" yet

    @property
    def window_s(self) -> tuple[float, float] | None:
        """The (start_s, end_s) events must overlap to be written; None: all are."""
        return None if self._lo == -math.inf else (self._lo, self._hi)

    # ---- one booking at a time ----------------------------------------------------
    def append(self, event: tuple) -> None:
        if len(event) == 5:
            event += self.tag
        buf = self._buf
        if len(buf) >= self._limit - 1:  # before: the last event stays (split_last)
            self._flush()
        buf.append(event)

    def _flush(self) -> None:
        """Write the appended events, grouped by kind (device, phase, worker, arg names)."""
        groups: dict[tuple, list[tuple]] = {}
        for ev in self._buf:
            args = ev[6]
            key = ev[0], ev[2], ev[5], tuple(args) if args else ()
            rows = groups.get(key)
            if rows is None:
                rows = groups[key] = []
            rows.append(ev)
        self._buf.clear()
        for (device, phase, worker, names), rows in groups.items():
            _, lanes, _, starts, durs, _, args = zip(*rows, strict=True)
            values = {k: np.array([a[k] for a in args]) for k in names}
            self._block(device, phase, worker, np.array(lanes, dtype=np.int64),
                        np.array(starts, dtype=np.float64), np.array(durs, dtype=np.float64),
                        values)

    # ---- many bookings at once ----------------------------------------------------
    def extend(self, device: str, phase: str, lanes, starts_s, durs_s,
               worker: str | Sequence[str] | None = None, who=None,
               args: dict[str, np.ndarray] | None = None) -> None:
        """Bookings of ``phase`` on ``device`` as arrays (``lanes`` may be one int), for
        ``worker`` (one name) or, with ``who`` (an int array), for ``worker[who[i]]``;
        ``args``: arrays shown on the worker track, ints as they are and floats as seconds
        written in microseconds to the ns, like ``ts`` and ``dur`` (name them ``*_us``).
        Written now, in blocks of at most ``buffer_events``."""
        starts = np.asarray(starts_s, dtype=np.float64)
        n = len(starts)
        lanes = np.broadcast_to(np.asarray(lanes, dtype=np.int64), (n,))
        durs = np.asarray(durs_s, dtype=np.float64)
        values = {k: np.broadcast_to(np.asarray(v), (n,)) for k, v in (args or {}).items()}
        if who is None:
            self._block(device, phase, worker, lanes, starts, durs, values)
            return
        who = np.asarray(who, dtype=np.int64)
        order = np.argsort(who, kind="stable")
        codes = who[order]
        cuts = np.flatnonzero(np.diff(codes)) + 1
        for lo, hi in zip(np.concatenate(([0], cuts)), np.concatenate((cuts, [n])),
                          strict=True):
            at = order[lo:hi]
            self._block(device, phase, worker[int(codes[lo])], lanes[at], starts[at],
                        durs[at], {k: v[at] for k, v in values.items()})

    def columns(self, device: str, phase: str, workers: str | Sequence[str],
                arg: str | None = None) -> Columns:
        """The `Columns` record of this kind (made on the first call) that the stream
        writes on `spill` and on close."""
        key = device, phase, workers if isinstance(workers, str) else tuple(workers), arg
        c = self._columns.get(key)
        if c is None:
            c = self._columns[key] = Columns(device, phase, workers, arg)
        return c

    def spill(self, c: Columns, at_least: int | None = None) -> None:
        """Write ``c``'s rows if it holds at least ``at_least`` (default: the buffer's
        size; 0: whatever it holds) and empty its lists."""
        if len(c.start_s) < (self._limit if at_least is None else max(at_least, 1)):
            return
        cols = c.lane, c.start_s, c.dur_s, c.who, c.value
        lane, start, dur, who, value = (np.frombuffer(x, dtype=x.typecode) if len(x)
                                        else None for x in cols)
        self.extend(c.device, c.phase, lane, start, dur, c.workers,
                    None if isinstance(c.workers, str) else who,
                    {c.arg: value} if c.arg else None)
        del lane, start, dur, who, value  # (an array viewed by numpy cannot shrink)
        for x in cols:
            del x[:]

    def _block(self, device: str, phase: str, worker: str | None, lanes: np.ndarray,
               starts: np.ndarray, durs: np.ndarray, values: dict[str, np.ndarray]) -> None:
        """Write events of one kind: those overlapping the window, as byte rows."""
        if worker is not None:  # its track by first booking, so a window keeps the tids
            self._worker_tid(worker)
        keep = (starts < self._hi) & (starts + durs >= self._lo)
        if not keep.all():
            lanes, starts, durs = lanes[keep], starts[keep], durs[keep]
            values = {k: v[keep] for k, v in values.items()}
        kinds = {}
        for k, v in values.items():
            if v.dtype.kind not in "iuf":
                raise TypeError(f"timeline arg {k!r} must be numbers, got {v.dtype}")
            kinds[k] = "us" if v.dtype.kind == "f" else "int"
        step = max(self._limit, 1)
        for lo in range(0, len(starts), step):
            sl = slice(lo, lo + step)
            self._write_rows(device, phase, worker, np.maximum(lanes[sl], 0),
                             _ns(starts[sl]), _ns(durs[sl]),
                             {k: (_ns(v[sl]) if kinds[k] == "us" else v[sl].astype(np.int64),
                                  kinds[k]) for k, v in values.items()})

    def _write_rows(self, device: str, phase: str, worker: str | None, lanes: np.ndarray,
                    ts_ns: np.ndarray, dur_ns: np.ndarray,
                    values: dict[str, tuple[np.ndarray, str]]) -> None:
        name = json.dumps(str(phase))
        head = f',\n{{"name":{name},"ph":"X","pid":{self._pid[device]},"tid":'.encode()
        lane, ts, dur = (lanes, "int"), (ts_ns, "us"), (dur_ns, "us")
        if worker is None:
            parts = [head, lane, b',"ts":', ts, b',"dur":', dur, b"}"]
        else:
            wpid, tid = len(self._pid) + 1, self._worker_tid(worker)
            parts = [head, lane, b',"ts":', ts, b',"dur":', dur,
                     f',"args":{{"worker":{json.dumps(worker)}}}}},\n{{"name":{name},'
                     f'"ph":"X","pid":{wpid},"tid":{tid},"ts":'.encode(), ts, b',"dur":', dur,
                     f',"args":{{"device":{json.dumps(device)},"lane":'.encode(), lane,
                     f',"phase":{name}'.encode()]
            for k, v in values.items():
                parts += [f",{json.dumps(k)}:".encode(), v]
            parts.append(b"}}")
        self._write(_rows(parts))

    def _worker_tid(self, worker: str) -> int:
        """The worker's track, named (metadata written) the first time it appears."""
        tid = self._workers.get(worker)
        if tid is None:
            wpid = len(self._pid) + 1
            meta = [] if self._workers else [_meta("process_name", wpid, 0, "workers")]
            tid = self._workers[worker] = len(self._workers)
            meta.append(_meta("thread_name", wpid, tid, worker))
            self._file.write("".join(",\n" + m for m in meta)[2 * self._first:].encode())
            self._first = False
        return tid

    def _write(self, rows: np.ndarray) -> None:
        """Rows that each start with ",\\n" (dropped before the first entry)."""
        if not len(rows):
            return
        self._file.write(memoryview(rows).cast("B")[2:] if self._first else rows)
        self._first = False

    def close(self) -> Path:
        """Finish the file and move it into place; returns its path."""
        try:
            self._flush()
            for c in self._columns.values():
                self.spill(c, 0)
            self._file.write(b"\n]}\n")
            self._file.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Drop what was written (the target path is left as it was)."""
        self._buf.clear()
        self._columns.clear()
        if not self._file.closed:
            with contextlib.suppress(OSError):  # a full disk fails the last flush too
                self._file.close()
        self._tmp.unlink(missing_ok=True)
