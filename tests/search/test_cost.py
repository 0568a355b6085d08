"""A whole search's cost, estimated before its first trial (rldse.search.cost)."""

from __future__ import annotations

import pytest

import rldse.search.cost as cost
from rldse.errors import RldseError
from rldse.search import load_study_file, run_study
from rldse.search.space import Dimension, Space
from rldse.sim.budget import Limits
from tests.search.conftest import BASE


def test_points_come_from_the_ranges_never_an_enumerated_grid(monkeypatch):
    def enumerated(self):
        raise AssertionError(f"{self.path} enumerated")

    monkeypatch.setattr(Dimension, "grid_values", enumerated)
    space = Space([Dimension("workload.replay_capacity", "int", 1000, 10**10, log=True),
                   Dimension("placement.replay", "categorical", choices=("cpu", "tcam")),
                   Dimension("tcam.arrays", "int", 64, 4096, step=64,
                             when=(("placement.replay", ("tcam",)),))], {})
    low, high, *drawn = cost.sample_points(space, 8, seed=0)
    assert low == {"workload.replay_capacity": 1000, "placement.replay": "cpu"}
    assert high == {"workload.replay_capacity": 10**10, "placement.replay": "tcam",
                    "tcam.arrays": 4096}
    assert len(drawn) == 8 and drawn == cost.sample_points(space, 8, seed=0)[2:]
    for point in drawn:
        assert 1000 <= point["workload.replay_capacity"] <= 10**10
        assert ("tcam.arrays" in point) == (point["placement.replay"] == "tcam")
        assert point.get("tcam.arrays", 64) % 64 == 0


def test_a_search_over_the_limit_is_refused_before_its_study_exists(write_study, monkeypatch):
    """20 trials of designs estimated at a minute each on one worker: 20 min, refused in
    one line; no study is created (a rerun needs no --resume); --allow-long runs it."""
    priced = []

    def per_run_s(trace, system, enough_s=None):
        priced.append(system.knobs.env_steps)
        return 60.0

    monkeypatch.setattr(cost, "per_run_s", per_run_s)
    path = write_study(base={**BASE, "workload": {
        "env_steps": 300_000}}, trials=20)
    with pytest.raises(RldseError, match="over the 10 min limit") as info:
        run_study(path, progress=False)
    text = str(info.value)
    assert "\n" not in text and "20 trials of about 60 s each" in text
    assert "1 point(s)" in text  # priced no further: one point already puts it over
    assert priced and set(priced) == {300_000}
    assert not (path.parent / "out").exists()
    # 20 trials on 2 workers of a 2-core host: 10 min, within the limit
    sf = load_study_file(path)
    monkeypatch.setattr(cost.os, "cpu_count", lambda: 2)
    # (the fake pricing's own microseconds of CPU are each trial's estimate)
    assert cost.search_cost(sf, 20, 2, Limits()).wall_s == pytest.approx(600.0, rel=1e-3)
    cost.check_search(cost.search_cost(sf, 40, 1, Limits(allow_long=True)),
                      Limits(allow_long=True), "s")


def test_small_designs_are_priced_without_pilots(write_study, monkeypatch):
    def per_run_s(trace, system, enough_s=None):
        raise AssertionError("a small design was piloted")

    monkeypatch.setattr(cost, "per_run_s", per_run_s)
    sf = load_study_file(write_study(trials=10))
    got = cost.search_cost(sf, 10, 1, Limits())
    assert got.wall_s == 10 * cost.UNMETERED_RUN_S and not got.measured

