"""Timeline export in Chrome's trace event format (opens in Perfetto or chrome://tracing).

One process per device, one thread per lane, one complete ("X") event per booking;
times in microseconds as the format requires (a stream writes them to the ns).

`TimelineStream` is what a simulation with a timeline books into: it takes events as a
list would (``append((device, lane, phase, start_s, dur_s))``), keeps at most
``buffer_events`` of them in memory, writes the rest to a temporary file beside the
target, and on ``close()`` finishes the JSON and moves it into place (``os.replace``), so
the file is either complete or absent; ``abort()`` removes the temporary file.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path


def chrome_trace(events: list[tuple], devices: list[str]) -> dict:
    pid = {name: k + 1 for k, name in enumerate(devices)}
    out: list[dict] = [
        {"name": "process_name", "ph": "M", "pid": pid[name], "tid": 0, "args": {"name": name}}
        for name in devices
    ]
    for device, lane, phase, start_s, dur_s in events:
        out.append({"name": phase, "cat": phase, "ph": "X", "pid": pid[device],
                    "tid": max(lane, 0), "ts": start_s * 1e6, "dur": dur_s * 1e6})
    return {"traceEvents": out, "displayTimeUnit": "ns"}


def write_chrome_trace(path: str | Path, events: list[tuple], devices: list[str]) -> Path:
    """Write events held in memory (atomically)."""
    stream = TimelineStream(path, devices)
    try:
        for ev in events:
            stream.append(ev)
    except BaseException:
        stream.abort()
        raise
    return stream.close()


class TimelineStream:
    """Chrome trace events streamed to ``path`` (module docstring)."""

    __slots__ = ("path", "_tmp", "_file", "_buf", "_limit", "_pid", "_names", "_first")

    def __init__(self, path: str | Path, devices: list[str], buffer_events: int = 1 << 16):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.",
                                   suffix=".tmp")
        self._tmp = Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # as a plain open() would (mkstemp makes it 0600)
        self._file = os.fdopen(fd, "w", encoding="utf-8", buffering=1 << 20)
        self._buf: list[tuple] = []
        self._limit = buffer_events
        self._pid = {name: k + 1 for k, name in enumerate(devices)}
        self._names: dict[tuple[str, str], str] = {}  # (device, phase) -> _form
        meta = [json.dumps({"name": "process_name", "ph": "M", "pid": pid, "tid": 0,
                            "args": {"name": name}}) for name, pid in self._pid.items()]
        self._file.write('{"displayTimeUnit": "ns", "traceEvents": [\n' + ",\n".join(meta))
        self._first = not meta

    def append(self, event: tuple) -> None:
        buf = self._buf
        buf.append(event)
        if len(buf) >= self._limit:
            self._flush()

    def _flush(self) -> None:
        if not self._buf:
            return
        forms = self._names
        parts = []
        for device, lane, phase, start_s, dur_s in self._buf:
            form = forms.get((device, phase))
            if form is None:
                form = forms[(device, phase)] = self._form(device, phase)
            parts.append(form % (lane if lane > 0 else 0, start_s * 1e6, dur_s * 1e6))
        self._buf.clear()
        self._file.write(("" if self._first else ",\n") + ",\n".join(parts))
        self._first = False

    def _form(self, device: str, phase: str) -> str:
        """The event's JSON with %-slots for lane, start and duration (µs to the ns: half
        the formatting time of repr)."""
        name = json.dumps(str(phase)).replace("%", "%%")
        return (f'{{"name":{name},"cat":{name},"ph":"X","pid":{self._pid[device]},'
                '"tid":%d,"ts":%.3f,"dur":%.3f}')

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
