"""The streamed timeline (bounded buffer, atomic, valid JSON) and the per-trace cache."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rldse.sim import trace_cache
from rldse.sim.timeline import TimelineStream


def test_stream_keeps_a_bounded_buffer_and_writes_valid_json_atomically(tmp_path):
    path = tmp_path / "t.json"
    stream = TimelineStream(path, ["cpu", "gpu"], buffer_events=4)
    for k in range(10):
        stream.append(("gpu" if k % 2 else "cpu", k % 3 - 1, "learn", k * 1e-6, 1e-6))
        assert len(stream._buf) < 4
        assert not path.exists()  # only a temporary file until close()
    stream.close()
    doc = json.loads(path.read_text())
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    assert len(complete) == 10 and all(e["tid"] >= 0 for e in complete)
    assert {e["args"]["name"] for e in doc["traceEvents"] if e["ph"] == "M"} == {"cpu", "gpu"}
    assert [p.name for p in tmp_path.iterdir()] == ["t.json"]


def test_aborted_stream_leaves_nothing(tmp_path):
    stream = TimelineStream(tmp_path / "t.json", ["cpu"], buffer_events=2)
    for k in range(5):
        stream.append(("cpu", 0, "act", k, 1.0))
    stream.abort()
    assert list(tmp_path.iterdir()) == []


def test_cache_makes_once_and_freezes_arrays():
    trace_cache.clear()
    calls = []

    def make():
        calls.append(1)
        return np.arange(3.0)

    a = trace_cache.cached(("test", 1), make)
    b = trace_cache.cached(("test", 1), make)
    assert a is b and len(calls) == 1
    with pytest.raises(ValueError):
        a[0] = 5.0
    trace_cache.clear()
