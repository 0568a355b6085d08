"""`study run` prices each study's planned work before it runs any (rldse.studies.plan)."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from pathlib import Path

import pytest

import rldse.studies.plan as plan
from rldse.errors import RldseError
from rldse.sim.budget import Limits
from rldse.studies.discovery import find_studies, find_study
from rldse.studies.report import Report
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]
TRACE = ROOT / "traces" / "dqn_cartpole_uniform.parquet"


@pytest.fixture
def planned(tmp_path, monkeypatch):
    """A studies root with the study 'planned': 30 simulations of one design, 2 learning
    runs; each simulation priced at 30 s (no run); its run only records that it ran."""
    ran = []
    module = types.ModuleType("rldse.studies.planned")
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)
    module.plan = lambda study_dir: [
        plan.Planned("sweep runs", 30, load_trace(TRACE), ROOT / "examples" / "dgx1_like.yaml"),
        plan.Planned("real learning runs", 2)]

    def run(study_dir, out, progress=True):
        ran.append(study_dir)
        return Report(name="planned", title="planned", source="this test")

    module.run = run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    monkeypatch.setattr(plan, "per_run_s", lambda trace, system: 30.0)
    monkeypatch.setattr(plan, "resolve", lambda spec, trace: spec)
    (tmp_path / "planned").mkdir()
    (tmp_path / "planned" / "study.yaml").write_text("module: rldse.studies.planned\n")
    return tmp_path, ran


def test_a_study_over_the_limit_is_refused_in_one_line_before_it_runs(planned, capsys):
    from rldse.cli import main

    root, ran = planned
    assert main(["study", "run", "planned", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "15 min" in err and "30 sweep runs: 15 min" in err
    assert "2 real learning runs (not estimated)" in err and not ran
    assert main(["study", "run", "planned", "--root", str(root), "--allow-long"]) == 0
    assert "estimate: about 15 min" in capsys.readouterr().out and ran


def test_the_sum_over_studies_is_what_is_refused(planned):
    root, _ = planned
    study = find_study("planned", root)
    ((_, cost),) = plan.estimate_studies([study], Limits(wall_s=901))
    assert cost.wall_s == 900.0 and cost.unpriced == ["2 real learning runs"]
    with pytest.raises(RldseError, match="over the 10 min limit"):
        plan.estimate_studies([study, study], Limits(wall_s=600))


def test_every_shipped_study_plans_its_work():
    """Each shipped study's plan lists simulations with a trace and a spec, searches with
    a file, or unpriced work with neither; cpu_gpu_ratio's search is planned whole."""
    for study in find_studies(ROOT / "studies"):
        items = study.load().plan(study.path)
        for item in items:
            assert item.count >= 1 and ((item.trace is None) == (item.spec is None))
        if study.name == "cpu_gpu_ratio":
            assert any(item.search is not None for item in items)
