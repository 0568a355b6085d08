"""Hypothesis over workload_info: any value under any of a family's Info keys (or a key
removed) is taken or refused at the door in one RldseError naming the key; nothing else
escapes, and a value taken is one the family's knobs accept."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rldse.errors import RldseError
from rldse.trace import Trace, load_trace
from rldse.workloads import workload_of

ROOT = Path(__file__).resolve().parents[2]
TRACES = ["dqn_cartpole_uniform.parquet", "ddpg_pendulum.parquet",
          "actor_learner_cartpole_2.parquet", "tabular_taxi.parquet"]
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), st.floats(),
                   st.text(max_size=5), st.lists(st.integers(-5, 2**21), max_size=4),
                   st.dictionaries(st.text(max_size=3), st.integers(), max_size=2))


@pytest.fixture(scope="module", params=TRACES)
def small(request) -> Trace:
    t = load_trace(ROOT / "traces" / request.param)
    return Trace(ops=t.ops.iloc[:: max(1, len(t.ops) // 500)].reset_index(drop=True),
                 meta=t.meta)


@settings(suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_workload_info_value_is_taken_or_refused_in_one_line(small, data):
    workload = workload_of(small)
    key = data.draw(st.sampled_from(sorted(small.meta.workload_info)))
    info = dict(small.meta.workload_info)
    if data.draw(st.booleans()):
        info[key] = data.draw(VALUES)
    else:
        del info[key]
    trace = Trace(ops=small.ops, meta=small.meta.model_copy(update={"workload_info": info}))
    try:
        workload.check(trace)
    except RldseError as exc:
        assert "\n" not in str(exc)
        return
    # taken: the family reads it as typed, in range
    read = workload.read_info(trace)
    for name in workload.info.model_fields:
        value = getattr(read, name)
        assert not (isinstance(value, int) and not isinstance(value, bool) and value < 0)
