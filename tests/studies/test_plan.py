"""`study run` prices each study's planned work before it runs any (rldse.studies.plan)."""

from __future__ import annotations

import importlib.machinery
import sys
import types
from pathlib import Path

import pytest
import yaml

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


def _fake_probe(monkeypatch, cpu_s_per_step: float = 1e-3):
    """Every learning run probed at ``cpu_s_per_step`` past a 1,000-step warm-up of 0.5 CPU
    s, its wall time twice its CPU time on a loaded host; returns the probes asked for."""
    import rldse.host
    import rldse.sim.run_cost as run_cost

    monkeypatch.setattr(rldse.host.os, "getloadavg", lambda: (64.0, 64.0, 64.0))
    monkeypatch.setattr(run_cost, "_PROBES", {})
    asked = []

    def probe(run, steps, warm_steps):
        asked.append((steps, warm_steps))
        return run_cost.Probe(warm_steps, 0.5, cpu_s_per_step, warm_steps + 2_000,
                              0.5 + 2.0, 5.0, whole=False)

    monkeypatch.setattr(run_cost, "probe", probe)
    return asked


def test_learning_runs_over_the_limit_are_refused_in_one_line(planned, monkeypatch, capsys):
    """A study whose learning runs are priced over the limit is refused before anything
    runs, the learning runs' share named."""
    from rldse.cli import main
    from rldse.sim.run_cost import learning_run
    from rldse.workloads.common.base import CaptureConfig

    _fake_probe(monkeypatch)
    root, ran = planned
    request = CaptureConfig(workload="dqn", env_id="CartPole-v1", steps=301_000)
    module = sys.modules["rldse.studies.planned"]
    monkeypatch.setattr(module, "plan", lambda study_dir: [
        plan.Planned("real learning runs", 2, learning=lambda: learning_run(request))])
    assert main(["study", "run", "planned", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    # (0.5 + 1e-3 x 300,000) CPU s x 2 wall/CPU = 601 s each
    assert err.count("\n") == 1 and "2 real learning runs: 20 min" in err and not ran


def test_amper_replays_learning_runs_are_priced_per_replay(monkeypatch):
    """amper_replay's plan: one probe per replay (its seeds share it), each of the study's
    steps priced; the engine's replays of the shipped capture priced per design (a
    simulation's own estimate); the sampler measurements stay unpriced."""
    asked = _fake_probe(monkeypatch)
    monkeypatch.setattr(plan, "per_run_s", lambda trace, system: 7.0)  # a simulation
    study = find_study("amper_replay", ROOT / "studies")
    cost = plan.study_cost(study.load().plan(study.path), Limits(allow_long=True))
    lr = yaml.safe_load((study.path / "study.yaml").read_text())["learning"]
    each_s = 2 * (0.5 + 1e-3 * (lr["steps"] - 1_000))
    assert len(asked) == len(lr["replays"]) and asked[0] == (lr["steps"], 1_000)
    learning_s = len(lr["replays"]) * len(lr["seeds"]) * each_s
    assert cost.wall_s == pytest.approx(learning_s + 3 * 7.0)
    assert sum(part.startswith("1 simulation of the shipped AMPER-k capture") for part in
               cost.parts) == 3
    assert len(cost.unpriced) == 1 and "AMPER sampler measurements" in cost.unpriced[0]


def test_swiftrl_learning_runs_are_priced_per_update(monkeypatch, tmp_path):
    """swiftrl_pim's plan: one probe per algorithm and number format on the first env's
    dataset, the learning runs priced at the costliest over transitions x passes and the
    multi-agent runs over their own updates."""
    import shutil

    asked = _fake_probe(monkeypatch)
    folder = tmp_path / "swiftrl_pim"
    shutil.copytree(ROOT / "studies" / "swiftrl_pim", folder,
                    ignore=shutil.ignore_patterns("out"))
    raw = yaml.safe_load((folder / "study.yaml").read_text())
    raw["data"]["transitions"] = 2_000
    (folder / "study.yaml").write_text(yaml.safe_dump(raw))
    study = find_study("swiftrl_pim", tmp_path)
    items = study.load().plan(study.path)
    costs = [item.learning() for item in items if item.learning is not None]
    assert len(asked) == len(raw["algorithms"]) * len(raw["dtypes"]) and asked[0][1] == 0
    ma = raw["multi_agent"]
    for cost, updates in zip(costs, (2_000 * raw["learning"]["passes"],
                                     ma["transitions"] * ma["passes"]), strict=True):
        assert cost.cpu_s == pytest.approx(0.5 + 1e-3 * updates)  # probed from step 0
