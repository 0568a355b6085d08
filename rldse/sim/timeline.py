"""Timeline export in Chrome's trace event format (opens in Perfetto or chrome://tracing).

One process per device with one thread per lane, and one "workers" process with one
thread per worker (actor i, learner, replay manager, inference server g): a booking made
for a worker is one complete ("X") event on its device lane and the same event on its
worker's track, with what the booking knows (phase, items, batch) as args. Tracks are
named by ``process_name``/``thread_name`` metadata events the first time they appear (a
device's lanes are its threads by number: tid = lane).
Times in microseconds as the format requires (written to the ns).

`TimelineStream` is what a simulation with a timeline books into: it takes events as a
list would (``append((device, lane, phase, start_s, dur_s[, worker, args]))``; a 5-tuple
gets the stream's current ``tag``, the (worker, args) that `Machine.book` sets around a
Device booking), keeps at most ``buffer_events`` of them in memory, writes the rest to a
temporary file beside the target, and on ``close()`` finishes the JSON and moves it into
place (``os.replace``), so the file is either complete or absent; ``abort()`` removes the
temporary file. With a ``window_s`` (start, end) only events overlapping it are written.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path

from rldse.errors import RldseError

NO_TAG: tuple = (None, None)


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


def _meta(kind: str, pid: int, tid: int, name: str) -> str:
    return json.dumps({"name": kind, "ph": "M", "pid": pid, "tid": tid,
                       "args": {"name": name}})


class TimelineStream:
    """Chrome trace events streamed to ``path`` (module docstring)."""

    __slots__ = ("path", "tag", "_tmp", "_file", "_buf", "_limit", "_pid", "_forms",
                 "_workers", "_first", "_lo", "_hi")

    def __init__(self, path: str | Path, devices: list[str], buffer_events: int = 1 << 16,
                 window_s: tuple[float, float] | None = None):
        self._lo, self._hi = check_window(window_s) if window_s is not None else \
            (-math.inf, math.inf)
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.",
                                   suffix=".tmp")
        self._tmp = Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would (mkstemp makes it 0600)
        self._file = os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 20)
        self.tag = NO_TAG  # (worker, args) of the Device booking being made
        self._buf: list[tuple] = []
        self._limit = buffer_events
        self._pid = {name: k + 1 for k, name in enumerate(devices)}
        self._forms: dict[tuple, str] = {}  # (device, phase, worker, arg names) -> format
        self._workers: dict[str, int] = {}  # worker -> tid on the workers process
        meta = [_meta("process_name", pid, 0, name) for name, pid in self._pid.items()]
        self._file.write('{"displayTimeUnit": "ns", "traceEvents": [\n' + ",\n".join(meta))
        self._first = False

    def append(self, event: tuple) -> None:
        if len(event) == 5:
            event += self.tag
        buf = self._buf
        if len(buf) >= self._limit - 1:  # before: the last event stays (split_last)
            self._flush()
        buf.append(event)

    def split_last(self, phases_s: tuple[tuple[str, float], ...]) -> None:
        """Show the last event as consecutive parts ``(phase, seconds)`` on the same lane
        and worker (one booking that a program made for several phases, e.g. an actor's
        env steps, inserts and CPU acts on its core); zero-second parts are left out."""
        device, lane, _, start_s, _, worker, args = self._buf.pop()
        for phase, dur_s in phases_s:
            if dur_s > 0:
                self._buf.append((device, lane, phase, start_s, dur_s, worker, args))
                start_s += dur_s

    def _flush(self) -> None:
        if not self._buf:
            return
        forms, lo, hi = self._forms, self._lo, self._hi
        parts: list[str] = []
        add, us = parts.append, "%.3f".__mod__
        durs: dict[float, str] = {}  # durations repeat (a trace's rows): formatted once
        for device, lane, phase, start_s, dur_s, worker, args in self._buf:
            if start_s >= hi or start_s + dur_s < lo:
                continue
            lane = lane if lane > 0 else 0
            key = (device, phase, worker, tuple(args)) if args else (device, phase, worker)
            form = forms.get(key)
            if form is None:  # (a new track's metadata goes to parts first)
                form = forms[key] = self._form(device, phase, worker,
                                               tuple(args) if args else (), parts)
            if worker is None:
                add(form % (lane, us(start_s * 1e6), us(dur_s * 1e6)))
                continue
            ts = us(start_s * 1e6)  # once for both copies
            dur = durs.get(dur_s)
            if dur is None:
                dur = durs[dur_s] = us(dur_s * 1e6)
            if args:
                add(form % ((lane, ts, dur, ts, dur, lane) + tuple(args.values())))
            else:
                add(form % (lane, ts, dur, ts, dur, lane))
        self._buf.clear()
        if parts:
            self._file.write(("" if self._first else ",\n") + ",\n".join(parts))
            self._first = False

    def _form(self, device: str, phase: str, worker: str | None, arg_names: tuple,
              parts: list[str]) -> str:
        """The event's JSON (and its worker track's copy, which carries the args) with
        %-slots for lane, start, duration and arg values (times formatted once per
        booking, to the ns); a new worker's process/thread_name goes to ``parts`` first."""
        name = json.dumps(str(phase)).replace("%", "%%")
        pid = self._pid[device]
        if worker is None:
            return (f'{{"name":{name},"ph":"X","pid":{pid},'
                    '"tid":%d,"ts":%s,"dur":%s}')
        tid = self._workers.get(worker)
        if tid is None:
            if not self._workers:
                parts.append(_meta("process_name", len(self._pid) + 1, 0, "workers"))
            tid = self._workers[worker] = len(self._workers)
            parts.append(_meta("thread_name", len(self._pid) + 1, tid, worker))
        wname = json.dumps(worker).replace("%", "%%")
        extra = "".join(f',{json.dumps(k)}:%s' for k in arg_names)
        on_device = (f'{{"name":{name},"ph":"X","pid":{pid},"tid":%d,'
                     f'"ts":%s,"dur":%s,"args":{{"worker":{wname}}}}}')
        on_worker = (f'{{"name":{name},"ph":"X","pid":{len(self._pid) + 1},'
                     f'"tid":{tid},"ts":%s,"dur":%s,"args":{{"device":'
                     f'{json.dumps(device).replace("%", "%%")},"lane":%d,"phase":{name}{extra}}}}}')
        return on_device + ",\n" + on_worker

    def close(self) -> Path:
        """Finish the file and move it into place; returns its path."""
        try:
            self._flush()
            self._file.write("\n]}\n")
            self._file.close()
            os.replace(self._tmp, self.path)
        except BaseException:
            self.abort()
            raise
        return self.path

    def abort(self) -> None:
        """Drop what was written (the target path is left as it was)."""
        self._buf.clear()
        if not self._file.closed:
            self._file.close()
        self._tmp.unlink(missing_ok=True)
