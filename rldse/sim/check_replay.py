"""`rldse check-replay`: a replay-consistency check, not a test of model accuracy
(that is `rldse validate external`).

It replays a trace on its own capture host and compares with what was measured. The
system is the `host` CPU preset built from the trace's fingerprint, every phase on the
CPU, and the trace's own knobs (actors, batch, schedule), so every part model runs at
scale factor 1 and per-phase times come back by construction: what is checked is the
event bookkeeping (what the program overlaps, merges or omits). How well rldse predicts
*another* machine or configuration is measured elsewhere (docs/validation.md).

With ``gpu=PRESET`` the phases the workload can place on a GPU (act, learn) run on that
preset instead: the GPU model prices their device time from the work the trace counted.
Their host side is the preset's kernels × dispatch_s for a CPU capture, and the
capture's own rows for one whose networks ran on a GPU (``GpuModel.anchor_dispatch``),
so on a GPU capture the check is of the device side and the bookkeeping, not dispatch.
"""

from __future__ import annotations

import pandas as pd

from rldse.sim import simulate
from rldse.sim.result import Result
from rldse.system import parse_spec
from rldse.trace import Trace
from rldse.workloads import workload_of


def host_spec_for(trace: Trace, gpu: str | None = None):
    """The capture host's system for ``trace`` (its CPU from the fingerprint, the knobs its
    family replays from workload_info: ``Workload.host_knobs``);
    with ``gpu``, one GPU of that preset running every role the workload can place on one."""
    workload = workload_of(trace)
    info = trace.meta.workload_info
    knobs = {k: info[k] for k in workload.host_knobs if k in info and info[k] is not None}
    raw = {"name": "capture-host", "cpu": {"preset": "host"}, "workload": knobs}
    if gpu is not None:
        raw["gpu"] = {"preset": gpu, "count": 1}
        raw["placement"] = {role: "gpu" for role in workload.placements
                            if workload.places(role, "gpu")}
    return parse_spec(raw, where="check-replay")


def wall_costed(trace: Trace) -> Trace:
    """``trace`` with every op and span costed at its wall time (CPU time unknown: its
    family's ``Workload.without_cpu_time``): replay consistency compares like with like,
    the ops as the wall clock saw them against the run's wall time, so contention cancels
    instead of being estimated. Clean unit costs from a busy host are checked by
    benchmarks/probes/contended_capture.py, not here."""
    return workload_of(trace).without_cpu_time(trace)


def check_replay(trace: Trace, seed: int = 0,
             gpu: str | None = None) -> tuple[pd.DataFrame, Result]:
    """Per phase and in total: measured seconds, simulated seconds, relative difference
    (NaN for phases the trace did not time, such as the loop glue a program accounts
    separately). A replay-consistency table: small differences mean the bookkeeping is
    sound, not that predictions for other systems are accurate."""
    trace = wall_costed(trace)
    result = simulate(trace, host_spec_for(trace, gpu), seed=seed)
    measured = trace.ops.groupby("phase", observed=True)["dur_s"].sum()
    sim = result.phases_frame()
    sim = sim[~sim["phase"].str.startswith("wait:")].groupby("phase")["time_s"].sum()
    table = pd.DataFrame({"measured_s": measured, "simulated_s": sim}).fillna(0.0)
    table.loc["TOTAL (wall)"] = [trace.meta.wall_time_s, result.sim_time_s]
    # phases the program adds (untimed loop glue, loads) have nothing measured to compare
    measured = table["measured_s"].where(table["measured_s"] > 0)
    table["error"] = (table["simulated_s"] - measured) / measured
    return table, result
