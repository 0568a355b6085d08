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


# ---- part checks are constraints by default; values where Optuna and its dashboard look ----

def test_every_declared_check_is_a_constraint_by_default():
    from rldse.models import all_checks
    from rldse.search.constraints import with_checks

    cons = with_checks([parse_constraint("avg_power_w <= 1500", "c")], [], "skip_checks")
    assert [c.text for c in cons] == ["avg_power_w <= 1500",
                                      *(f"checks.{n}" for n in all_checks())]
    assert "checks.tcam_capacity" in [c.text for c in cons]
    assert all(c.op is None for c in cons[1:])


def test_a_check_named_in_the_file_is_not_added_twice_and_one_can_be_skipped():
    from rldse.search.constraints import with_checks

    cons = with_checks([parse_constraint("gpu_memory_ok", "c")], ["tcam_capacity"], "s")
    names = [n for c in cons for n in c.names]
    assert names.count("checks.gpu_memory") == 1 and "checks.tcam_capacity" not in names


@pytest.mark.parametrize(("skip", "message"), [
    (["tcam_capacty"], r"^s\[0\]: unknown check 'tcam_capacty'; did you mean 'tcam_capacity'\?"),
    (["gpu_memory", "gpu_memory"], "^s: a check appears twice"),
    (["gpu_memory"], "^s: 'gpu_memory' is skipped and also named in constraints"),
])
def test_bad_skip_checks_fail_naming_the_key(skip, message):
    from rldse.search.constraints import with_checks

    with pytest.raises(RldseError, match=message):
        with_checks([parse_constraint("gpu_memory_ok", "c")], skip, "s")


def test_a_check_the_result_lacks_holds():
    from rldse.search.metrics import metric_value

    assert metric_value({"avg_power_w": 1.0}, "checks.tcam_capacity", "c") == 1.0
    with pytest.raises(RldseError, match="no metric 'cost_usd'"):
        metric_value({"avg_power_w": 1.0}, "cost_usd", "c")


def test_violations_go_where_samplers_best_trials_and_optuna_dashboard_read_them():
    """optuna-dashboard reads a trial's feasibility from the `constraints` system attribute
    as a list (optuna_dashboard/_serializer.py); Trial.set_constraint's per-name keys
    leave it empty, so every trial was drawn feasible."""
    import optuna

    from rldse.search.constraints import CONSTRAINTS_ATTR, feasible, store_violations, violations

    cons = [parse_constraint("avg_power_w <= 1500", "c"), parse_constraint("gpu_memory_ok", "c")]
    study = optuna.create_study(directions=["maximize"])

    def objective(trial):
        x = trial.suggest_int("x", 0, 3)
        store_violations(trial, [0.5 if x == 3 else -0.1, 0.0])
        return x

    study.enqueue_trial({"x": 3})
    study.enqueue_trial({"x": 2})
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study.optimize(objective, n_trials=2)
    bad, good = study.trials
    assert bad.system_attrs[CONSTRAINTS_ATTR] == [0.5, 0.0]
    assert violations(bad, cons) == {"avg_power_w <= 1500": 0.5, "gpu_memory_ok": 0.0}
    assert not feasible(bad) and feasible(good)
    assert [t.number for t in study.best_trials] == [good.number]  # x=3 is higher, infeasible


def test_study_file_applies_checks_unless_skipped_by_a_known_name(write_study):
    from rldse.search import load_study_file

    texts = [c.text for c in load_study_file(write_study()).parsed_constraints]
    assert "checks.gpu_memory" in texts and "checks.host_memory" in texts
    sf = load_study_file(write_study(skip_checks=["host_memory"]))
    assert "checks.host_memory" not in [c.text for c in sf.parsed_constraints]
    assert sf.digest != load_study_file(write_study()).digest  # resuming sees the change
    with pytest.raises(RldseError, match=r"study.yaml: skip_checks\[0\]: unknown check "
                       r"'host_memry'; did you mean 'host_memory'"):
        load_study_file(write_study(skip_checks=["host_memry"]))
