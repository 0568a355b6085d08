"""Timeline export in Chrome's trace event format (opens in Perfetto or chrome://tracing).

One process per device, one thread per lane, one complete ("X") event per booking;
times in microseconds as the format requires.
"""

from __future__ import annotations

import json
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
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(chrome_trace(events, devices)))
    return path
