"""Steady traces for claims that hold only when every iteration costs the same.

``steady(trace)`` keeps a capture's rows (workers, phases, iterations, work) and gives
each row the median wall and CPU time of its kind (phase, items, flops), and an
actor-learner trace's per-iteration receive times their medians. A re-capture moves
those medians, not the claim, so a test on the steady trace holds its numbers exactly
instead of within a capture's run-to-run spread.
"""

from __future__ import annotations

import dataclasses
from statistics import median

from rldse.trace import Trace

KIND = ["phase", "items", "flops"]


def steady(trace: Trace, *, instant_broadcast: bool = False) -> Trace:
    """``trace`` made steady; with ``instant_broadcast`` the learner's parameter sends and
    the actors' receives take no time, so every actor is released at the same instant."""
    ops = trace.ops.copy()
    for column in ("dur_s", "cpu_s"):
        ops[column] = ops.groupby(KIND, observed=True)[column].transform("median")
    info = dict(trace.meta.workload_info)
    receives = info.get("receive_cpu")
    if receives:
        info["receive_cpu"] = {k: [median(v)] * len(v) for k, v in receives.items()}
    if instant_broadcast:
        ops.loc[ops["phase"] == "sync", ["dur_s", "cpu_s"]] = 0.0
        info["receive_cpu"]["params_cpu_s"] = [0.0] * len(receives["params_cpu_s"])
    meta = trace.meta.model_copy(update={"workload_info": info})
    return dataclasses.replace(trace, ops=ops, meta=meta, _digest=None)
