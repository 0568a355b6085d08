"""An offline tabular trace's workload_info and rows: what its loop cannot run without is
refused in one line (rldse.workloads.tabular.TabularInfo, program.offline)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.system import parse_spec
from rldse.trace import Trace, load_trace

OFFLINE = Path(__file__).resolve().parents[3] / "traces" / "tabular_taxi_offline_7.parquet"
SPEC = parse_spec({"name": "cores", "cpu": {"preset": "xeon-silver-4215"}})


@pytest.mark.parametrize("key", ["passes", "passes_per_round", "dataset_transitions"])
def test_an_offline_run_without_its_passes_or_dataset_is_refused(key):
    shipped = load_trace(OFFLINE)
    info = dict(shipped.meta.workload_info) | {key: None}
    trace = Trace(ops=shipped.ops, meta=shipped.meta.model_copy(update={"workload_info": info}),
                  transitions=shipped.transitions)
    with pytest.raises(RldseError, match=f"workload_info: {key} is missing or null"):
        simulate(trace, SPEC)


def test_an_offline_trace_without_q_update_rows_is_refused():
    shipped = load_trace(OFFLINE)
    ops = shipped.ops[shipped.ops["phase"] != "q_update"].reset_index(drop=True)
    trace = Trace(ops=ops, meta=shipped.meta, transitions=shipped.transitions)
    with pytest.raises(RldseError, match="needs q_update rows"):
        simulate(trace, SPEC)
