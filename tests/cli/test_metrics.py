"""`rldse metrics`: every metric a study can name, with a unit and a meaning."""

from __future__ import annotations

import json

import pytest

from rldse.cli import main
from rldse.cli.metrics import unit_of
from rldse.models import all_checks
from rldse.search.metrics import FIXED


def test_every_metric_has_a_unit_and_a_meaning(capsys):
    assert main(["metrics", "--json"]) == 0
    rows = {r["name"]: r for r in json.loads(capsys.readouterr().out)}
    assert set(FIXED) | {f"checks.{c}" for c in all_checks()} <= set(rows)
    for row in rows.values():
        assert row["unit"] and row["meaning"], row


@pytest.mark.parametrize("name,unit", [
    ("sim_time_s", "s"), ("env_steps_per_s", "1/s"), ("energy_to_target_j", "J"),
    ("avg_power_w", "W"), ("steps_per_joule", "1/J"), ("cost_usd", "USD"),
    ("host_memory_peak_bytes", "bytes"), ("env_steps", "count"),
    ("target_return", "return"), ("target_smoothing_episodes", "episodes"),
    ("steps_per_usd", "1/USD (owned)"), ("steps_per_usd_hour", "1/USD (rented)"),
    ("owned_usd_per_hour", "USD/h"), ("machine_cost_usd", "USD"), ("runs_per_machine", "count"),
])
def test_units_from_names(name, unit):
    assert unit_of(name) == unit


def test_table(capsys):
    assert main(["metrics"]) == 0
    out = capsys.readouterr().out
    assert any(line.startswith("steps_per_joule") and "1/J" in line for line in out.splitlines())
