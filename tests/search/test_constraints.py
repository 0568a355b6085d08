"""Constraints: parsing, Optuna's relative violation, intervals from bounds, spec terms."""

from __future__ import annotations

import math

import pytest

from rldse.errors import RldseError
from rldse.search.constraints import parse_constraint, spec_value
from rldse.system import parse_spec, resolve
from tests.search import stand_in


def test_upper_bound_violation_is_relative_to_the_bound():
    c = parse_constraint("avg_power_w <= 1500", "c")
    assert (c.names, c.op, c.bound) == (("avg_power_w",), "<=", 1500.0)
    assert c.violation(1200.0) == pytest.approx(-0.2)
    assert c.violation(1800.0) == pytest.approx(0.2)


def test_lower_bound_and_strict_operators():
    c = parse_constraint("env_steps_per_s > 1e5", "c")
    assert c.op == ">=" and c.violation(2e5) == pytest.approx(-1.0)
    assert c.violation(5e4) == pytest.approx(0.5)


def test_linear_expression_moves_constants_to_the_bound():
    c = parse_constraint("2 * spec.pim.dimms - spec.cpu.sockets / 2 + 4 <= 24", "c")
    assert c.terms == ((2.0, "spec.pim.dimms"), (-0.5, "spec.cpu.sockets"))
    assert c.bound == 20.0
    values = {"spec.pim.dimms": 10.0, "spec.cpu.sockets": 2.0}
    assert c.lhs(values.__getitem__) == 19.0


def test_lone_metric_must_be_true():
    c = parse_constraint("gpu_memory_ok", "c")
    assert c.op is None
    assert c.violation(True) == 0.0 and c.violation(False) == 1.0


def test_interval_gives_the_best_possible_violation():
    c = parse_constraint("avg_power_w + cost_usd / 100 <= 1500", "c")
    bounds = {"avg_power_w": (900.0, math.inf), "cost_usd": (70_000.0, 70_000.0)}
    lo, hi = c.lhs_interval(bounds.__getitem__)
    assert lo == pytest.approx(1600.0) and hi == math.inf
    assert c.best_violation((lo, hi)) > 0  # surely infeasible
    assert parse_constraint("steps_per_joule >= 100", "c").best_violation((0.0, 150.0)) < 0


@pytest.mark.parametrize(("text", "message"), [
    ("1500 >= avg_power_w", "the right-hand side must be a number"),
    ("avg_power_w <= cost_usd", "the right-hand side must be a number"),
    ("avg_power_w * cost_usd <= 1", "only sums of metrics"),
    ("0 < avg_power_w < 5", "use one of <=, <, >=, > once"),
    ("avg_power_w <=", "is not an expression"),
    ("powr <= 1", "unknown metric 'powr'"),
])
def test_bad_constraints_fail_naming_where(text, message):
    with pytest.raises(RldseError, match=f"^c: .*{message}"):
        parse_constraint(text, "c")


def test_spec_values_read_overrides_and_preset_fields(host_fp):
    spec = parse_spec({"cpu": {"preset": "epyc-7742", "sockets": 2},
                       "gpu": {"preset": "a100-40g", "count": 3}, "workload": {"actors": 16}})
    system = resolve(spec, stand_in.make_trace(host_fp))
    assert spec_value(system, "spec.gpu.count", "c") == 3
    assert spec_value(system, "spec.workload.actors", "c") == 16
    assert spec_value(system, "spec.workload.envs_per_actor", "c") == 1  # as in the trace
    assert spec_value(system, "spec.cpu.sockets", "c") == 2
    assert spec_value(system, "spec.cpu.cores", "c") == 64  # from the preset
    with pytest.raises(RldseError, match="'spec.workload.cores' is None, not a number"):
        spec_value(system, "spec.workload.cores", "c")
