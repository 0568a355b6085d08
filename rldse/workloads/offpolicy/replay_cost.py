"""Replay operations on the CPU at another capacity or batch than the trace's.

A trace's ``replay_sample``, ``replay_update`` and ``replay_add`` rows were measured at
its capacity C₀ and batch B₀. Their work per item, counted from replay.py's numpy code:

- every sampled item gathers one row from each of the buffer's ``ROW_ARRAYS`` arrays
  (obs, action, reward, next obs, done): irregular accesses over the buffer's C·T bytes,
  plus the 2·T + 16 bytes replay.py counts;
- prioritized replay walks the sum tree: D = ceil(log2 C) + 1 nodes per item
  (``SumTree.depth``). Level ℓ of the tree is touched at random within the live nodes
  of the levels above it (those over the stored transitions), 8 bytes each, so a touch there costs the CPU's ``touch_ns`` of that working set
  (cache sizes and latencies, rldse.models.cpu). Each level of ``SumTree.find`` runs six
  numpy calls over the batch (2·node, the gather, compare, where, subtract, add): the
  host's measured cost of a level (``sum_tree_level``: per level and per item; for older
  fingerprints six ``numpy_call_ns`` and ``FIND_BYTES_PER_LEVEL`` bytes per item at the
  element-wise rate); ``SumTree.update`` (and a PER insert) builds the ancestors
  and repeats the deltas (``UPDATE_BYTES_PER_LEVEL``) and scatters them with
  ``np.add.at``, D − 1 elements per item at the host's measured ``scatter_add_ns``.

The part of a row's measured time that this work explains (at most all of it) scales
with the work at the new capacity and batch; the rest (calls, Python) stays: the rule of
rldse.models.cpu.roofline.with_work. Assumed: uniform random access within each level (priorities
make the top levels hotter, which only helps the caches).
"""

from __future__ import annotations

import numpy as np

from rldse.kernels.replay import NODE_BYTES
from rldse.models import OpColumns
from rldse.models.cpu import CpuSpec

ROW_ARRAYS = 5  # obs, action, reward, next_obs, done
FIND_CALLS_PER_LEVEL = 6  # SumTree.find's loop body
FIND_BYTES_PER_LEVEL = 130  # 16 + 24 + 17 + 17 + 24 + 17 + 15 (int64 and float64 kernels)
UPDATE_BYTES_PER_LEVEL = 24  # ancestors (16), repeat (8); np.add.at is its own rate


def tree_depth(capacity: int) -> int:
    """Nodes per leaf-to-root path of replay.py's SumTree."""
    return (1 << max(0, (capacity - 1).bit_length())).bit_length()


def row_seconds(cpu: CpuSpec, phase: str, capacity: int, items: int, transition_bytes: int,
                prioritized: bool, filled: int) -> float:
    """The modelled work of one replay row of ``items`` items on ``cpu`` (module
    docstring); ``filled`` transitions are stored: only the tree nodes above them are ever
    touched."""
    ew, call_ns = cpu.elementwise_gbs, cpu.numpy_call_ns or 0.0
    filled = max(1, min(filled, capacity))
    ns = 0.0
    if phase == "replay_sample":
        ns += items * (ROW_ARRAYS * float(cpu.touch_ns(filled * transition_bytes))
                       + (2 * transition_bytes + 16) / ew)
    if prioritized:
        d = tree_depth(capacity)
        levels = np.arange(d)
        live = np.minimum(2.0 ** levels, np.ceil(filled / 2.0 ** (d - 1 - levels)))
        touch = float(cpu.touch_ns(NODE_BYTES * np.cumsum(live)).sum())
        if phase == "replay_sample" and cpu.sum_tree_level:
            per_level, per_item = cpu.sum_tree_level
            ns += (d - 1) * (per_level + items * per_item) + items * touch
        elif phase == "replay_sample":  # a fingerprint from before the descent's measurement
            ns += (d - 1) * FIND_CALLS_PER_LEVEL * call_ns
            ns += items * (touch + d * FIND_BYTES_PER_LEVEL / ew)
        else:  # update and add: one np.add.at over every item's ancestors
            ns += items * (touch + d * UPDATE_BYTES_PER_LEVEL / ew
                           + (d - 1) * (cpu.scatter_add_ns or 0.0))
    return ns * 1e-9


def rescaled(host: CpuSpec, ops: OpColumns, phase: str, transition_bytes: int,
             prioritized: bool, capacity: tuple[int, int], batch: tuple[int, int],
             steps: tuple[int, int]) -> OpColumns:
    """The trace's rows of ``phase`` at (trace, new) ``capacity``, ``batch`` (items per
    row: the batch for sample and update, 1 for add) and env ``steps`` (the buffer holds
    min(capacity, steps) transitions at the end of the run)."""
    if capacity[0] == capacity[1] and batch[0] == batch[1]:
        return ops
    n0, n1 = (1, 1) if phase == "replay_add" else batch
    r_old = row_seconds(host, phase, capacity[0], n0, transition_bytes, prioritized, steps[0])
    r_new = row_seconds(host, phase, capacity[1], n1, transition_bytes, prioritized, steps[1])
    explained = np.minimum(ops.host_dur_s, r_old)
    scale = r_new / r_old if r_old > 0 else 1.0
    depth = tree_depth(capacity[1]) / tree_depth(capacity[0]) if prioritized else 1.0
    return OpColumns(phase=ops.phase, dtype=ops.dtype, items=ops.items * n1 / n0,
                     flops=ops.flops * n1 / n0, bytes=ops.bytes * n1 / n0,
                     touches=ops.touches * n1 / n0 * depth,
                     host_dur_s=ops.host_dur_s - explained + explained * scale)
