"""Per-trace derived data, computed once per process and reused by every simulate call
and every trial of a search: the filtered op columns of a phase, a phase's costs on a
part, a program's handoffs from the trace's clock.

Keys name everything a value depends on, so an entry is never stale: the trace's digest
(its ops, meta and capture host), and for costs the part model's inputs (`model_key`:
its class and the JSON of every spec it was built from). The cache is bounded (least
recently used entries go first) and its values are read-only arrays, so a caller that
wrote into one would fail loudly instead of changing another run's numbers.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")

#: entries kept (a trace has about a dozen phases; a search uses a few part specs per kind)
MAX_ENTRIES = 512

_entries: OrderedDict[Hashable, Any] = OrderedDict()
_stats = {"hits": 0, "misses": 0}


def cached(key: Hashable, make: Callable[[], T]) -> T:
    """The value under ``key``, made (and frozen: numpy arrays read-only) on a miss."""
    try:
        value = _entries[key]
    except KeyError:
        _stats["misses"] += 1
        value = _freeze(make())
        _entries[key] = value
        if len(_entries) > MAX_ENTRIES:
            _entries.popitem(last=False)
        return value
    _stats["hits"] += 1
    _entries.move_to_end(key)
    return value


def model_key(model: Any) -> str:
    """What a part model's costs depend on besides the trace: its class and every pydantic
    spec it holds (the part's own, and e.g. a GPU's link or a CPU's host)."""
    from pydantic import BaseModel

    h = hashlib.sha256(f"{type(model).__module__}.{type(model).__qualname__}".encode())
    for name, value in sorted(vars(model).items()):
        if isinstance(value, BaseModel):
            h.update(b"\0" + name.encode() + b"\0" + value.model_dump_json().encode())
    return h.hexdigest()[:16]


def clear() -> None:
    _entries.clear()
    _stats.update(hits=0, misses=0)


def stats() -> dict[str, int]:
    """Hits, misses and entries, for tests and benchmarks."""
    return {**_stats, "entries": len(_entries)}


def _freeze(value: T) -> T:
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, tuple):
        for v in value:
            _freeze(v)
    elif dataclasses.is_dataclass(value) and not isinstance(value, type):
        for f in dataclasses.fields(value):
            _freeze(getattr(value, f.name))
    return value
