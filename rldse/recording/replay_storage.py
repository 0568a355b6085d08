"""What replay storage looks like to `rldse capture script` (rldse.recording.script):
library buffers by class, a script's own buffer by its method names, a user's ``--replay``
naming, and how a buffer's capacity and a sample's batch are read. The hooking itself is
script.py's."""

from __future__ import annotations

from collections import deque
from typing import Any

import numpy as np

from rldse.errors import RldseError

#: Method names that add to a replay buffer (a class with one of them and ``sample``).
ADD_METHODS = ("add", "push", "store", "append", "insert", "put", "extend",
               "add_transition", "store_transition")
#: Library replay buffers, by defining module and class name: their add-like methods.
REPLAY_CLASSES = {
    ("stable_baselines3.common.buffers", "ReplayBuffer"): ("add",),
    ("torchrl.data.replay_buffers.replay_buffers", "ReplayBuffer"): ("add", "extend"),
}
#: Instance attributes that hold a replay buffer's capacity, in the order tried.
CAPACITY_ATTRS = ("capacity", "buffer_size", "max_size", "maxlen", "memory_size")


def capacity(buf: Any) -> int | None:
    """A replay buffer's capacity (transitions): a capacity-like int attribute (times
    ``n_envs`` where it has one, SB3's per-env size), else the longest preallocated array
    or deque it holds; None where none says."""
    for name in CAPACITY_ATTRS:
        value = getattr(buf, name, None)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and value > 0:
            return int(value) * int(getattr(buf, "n_envs", 1) or 1)
    lengths = [v.maxlen if isinstance(v, deque) else v.shape[0]
               for v in vars(buf).values() if (isinstance(v, deque) and v.maxlen)
               or (hasattr(v, "shape") and len(getattr(v, "shape", ())) >= 1)] \
        if hasattr(buf, "__dict__") else []
    return int(max(lengths)) if lengths else None


def batch_of(out: Any) -> int:
    """The batch a sample returned: the length of its first array (1 if none)."""
    if isinstance(out, dict):
        out = next(iter(out.values()), None)
    elif isinstance(out, (tuple, list)) and out and not hasattr(out, "shape"):
        out = out[0] if hasattr(out[0], "shape") else out
    shape = getattr(out, "shape", None)
    if shape is not None and len(shape) >= 1:
        return int(shape[0])
    return len(out) if isinstance(out, (list, tuple)) else 1


def parse_replay(values: tuple[str, ...]) -> dict[str, tuple[tuple[str, ...], str] | None]:
    """--replay values: ``CLASS`` (its add-like and sample methods found by name) or
    ``CLASS:ADD[,ADD2],SAMPLE``."""
    named: dict[str, tuple[tuple[str, ...], str] | None] = {}
    for value in values:
        cls, colon, methods = value.partition(":")
        names = [m.strip() for m in methods.split(",")] if colon else []
        if not cls.strip() or (colon and (len(names) < 2 or not all(
                m.isidentifier() for m in names))):
            raise RldseError(f"--replay {value}: expected CLASS or CLASS:ADD,SAMPLE (method "
                             "names)")
        named[cls.strip()] = (tuple(names[:-1]), names[-1]) if names else None
    return named
