"""Uncertainty bands: seeded, ordered, spread where numbers are uncertain, none where pinned."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rldse.cli import main
from rldse.sim.bands import bands, design, percentiles, uncertain_params
from rldse.system import load_spec
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
DQN = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
DGX = str(ROOT / "examples" / "dgx1_like.yaml")
SHORT = {"workload.env_steps": 2000}


@pytest.fixture(scope="module")
def trace():
    return load_trace(DQN)


def test_same_seed_same_bands_bit_for_bit(trace):
    spec = load_spec(DGX, SHORT)
    a, b = bands(trace, spec, 4, seed=3), bands(trace, spec, 4, seed=3)
    assert a.to_dict() == b.to_dict()
    assert np.array_equal(a.points, b.points)
    assert not np.array_equal(a.points, design(list(a.params), 4, seed=4))


def test_percentiles_are_ordered_and_uncertain_numbers_spread(trace):
    band = bands(trace, load_spec(DGX, SHORT), 5, seed=0)
    for lo, mid, hi in band.metrics.values():
        assert lo <= mid <= hi
    for key in ("sim_time_s", "energy_j", "cost_usd"):
        lo, _, hi = band.metrics[key]
        assert hi > lo, key
    assert band.metrics["env_steps"][0] == band.metrics["env_steps"][2] == 2000
    paths = {p.path for p in band.params}
    assert {"gpu.idle_w", "gpu.dispatch_s"} <= paths
    for p, column in zip(band.params, band.points.T, strict=True):
        assert p.low <= column.min() and column.max() <= p.high
        if p.integer:
            assert np.array_equal(column, np.round(column))


def test_fields_the_spec_sets_are_not_varied(trace):
    spec = load_spec(DGX, {**SHORT, "gpu.idle_w": 40.0})
    assert "gpu.idle_w" not in {p.path for p in uncertain_params(spec, trace)}


def test_everything_pinned_gives_zero_spread(trace):
    spec = load_spec(DGX, SHORT)
    pins = {p.path: (int(p.nominal) if p.integer else p.nominal)
            for p in uncertain_params(spec, trace)}
    pinned = load_spec(DGX, {**SHORT, **pins})
    assert uncertain_params(pinned, trace) == []
    band = bands(trace, pinned, 3, seed=1)
    assert band.params == ()
    for lo, mid, hi in band.metrics.values():
        assert lo == mid == hi


def test_cli_json_and_text(capsys):
    argv = ["simulate", DQN, "--system", DGX, "--set", "workload.env_steps=2000", "--bands", "3",
            "--seed", "2"]
    assert main([*argv, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    lo, mid, hi = out["bands"]["sim_time_s"]
    assert lo <= mid <= hi and out["bands_design"]["n"] == 3
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert "uncertainty bands: 3 simulations, seed 2" in text and "gpu.idle_w" in text


def test_bands_must_be_positive(capsys):
    code = main(["simulate", DQN, "--system", DGX, "--bands", "0"])
    err = capsys.readouterr().err
    assert code == 2 and "--bands 0" in err


def test_runs_pair_up_draw_by_draw_and_give_the_percentiles(trace):
    """Two bands over the same system and seed draw the same parameters in the same order,
    so their runs pair up (what a study's ratio of two sweep points needs)."""
    spec = load_spec(DGX, SHORT)
    a, b = bands(trace, spec, 4, seed=3), bands(trace, spec, 4, seed=3)
    assert np.array_equal(a.points, b.points)
    runs = a.runs["sim_time_s"]
    assert len(runs) == 4 and np.array_equal(runs, b.runs["sim_time_s"])
    assert a.metrics["sim_time_s"] == percentiles(runs)


def test_many_bands_are_refused_before_any_sampled_run(trace, monkeypatch):
    """N draws cost N runs: over the limit they are refused up front, in one line giving
    the estimate; --allow-long lets them run."""
    import rldse.sim.bands as bands_module
    from rldse.errors import RldseError
    from rldse.sim import Limits

    spec = load_spec(DGX, SHORT)
    ran = []
    monkeypatch.setattr(bands_module, "simulate",
                        lambda *a, **k: ran.append(1) or pytest.fail("a sampled run ran"))
    with pytest.raises(RldseError) as err:
        bands(trace, spec, 10**6, seed=0, limits=Limits(wall_s=60.0))
    line = str(err.value)
    assert "\n" not in line and "--bands 1000000" in line and "1,000,000 simulations" in line
    assert "--allow-long" in line and not ran
    monkeypatch.undo()
    band = bands(trace, spec, 2, seed=0, limits=Limits(wall_s=1e-9, allow_long=True))
    assert band.n == 2


def test_cli_bands_over_the_limit_exit_2_without_running(capsys):
    rc = main(["simulate", DQN, "--system", DGX, "--set", "workload.env_steps=2000",
               "--bands", "100000000"])
    err = capsys.readouterr().err.strip().splitlines()
    assert rc == 2 and len(err) == 1 and "--bands 100000000 would take" in err[0]


@pytest.mark.parametrize("nominal, band, lopsided", [
    (10.0, (8.0, 10.0, 12.0), False),
    (10.0, (9.9, 11.0, 13.0), True),   # the nominal at the low end
    (14.0, (8.0, 10.0, 12.0), True),   # outside p5-p95
    (5.0, (5.0, 5.0, 5.0), False),     # nothing moves
])
def test_lopsided_bands(nominal, band, lopsided):
    from rldse.sim.bands import is_lopsided

    assert is_lopsided(nominal, band) is lopsided


def test_cli_bands_print_the_nominal_beside_the_percentiles(capsys):
    assert main(["simulate", DQN, "--system", DGX, "--set", "workload.env_steps=2000",
                 "--bands", "3"]) == 0
    out = capsys.readouterr().out
    header = next(line for line in out.splitlines() if line.strip().startswith("metric"))
    assert header.split() == ["metric", "nominal", "p5", "p50", "p95"]
    nominal = float(out.split("simulated ", 1)[1].split(" s:")[0])
    row = next(line for line in out.splitlines() if line.strip().startswith("sim_time_s"))
    assert float(row.split()[1]) == pytest.approx(nominal, rel=1e-3)
