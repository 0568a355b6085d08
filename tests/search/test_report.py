"""What a search leaves behind: headlines a user can act on, atomic outputs, and the
shipped two-objective example recommending only designs that fit their machine."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rldse.search import run_study
from rldse.search.report import StudyReport


def _report(objectives: list[str], best: list[dict]) -> StudyReport:
    return StudyReport(
        name="s", study_file="s.yaml", storage="j", out_dir="o", budget=4, workers=1,
        objectives=objectives, constraints=["avg_power_w <= 400", "checks.gpu_memory"],
        states={"COMPLETE": 4}, simulated=4, cache_hits=0, pruned_by_estimate=0, invalid=0,
        requeued=0, best=best, files={}, notes=[], finished_now=4, elapsed_s=1.0)


def _point(n: int, values: dict) -> dict:
    return {"number": n, "values": values, "params": {"workload.actors": n},
            "metrics": {"env_steps_per_s": 1e4, "steps_per_joule": 50.0}, "file": f"t{n}.yaml"}


def test_single_objective_ties_are_a_tie_not_a_pareto_set():
    text = _report(["steps_per_joule"], [_point(1, {"steps_per_joule": 50.0}),
                                         _point(2, {"steps_per_joule": 50.0})]).summary()
    assert "Pareto" not in text
    assert "best steps_per_joule 50, a tie of 2 designs" in text
    head = _report(["steps_per_joule"], [_point(1, {"steps_per_joule": 50.0})]).headline()
    assert head.startswith("best design, meeting every constraint (avg_power_w <= 400; "
                           "the part checks gpu_memory)")
    assert "10,000 env steps/s" in head and "trial 1: steps_per_joule=50" in head


def test_several_objectives_give_a_pareto_set_and_none_feasible_says_so():
    two = _report(["steps_per_joule", "cost_usd"],
                  [_point(1, {"steps_per_joule": 50.0, "cost_usd": 10.0})])
    assert two.headline().startswith("Pareto set of 1 designs")
    assert _report(["steps_per_joule"], []).headline().startswith("no design meets every")


def test_outputs_replace_old_ones_only_once_written_and_clean_dead_temporaries(write_study):
    path = write_study(trials=6, figures=True)
    run_study(path, progress=False)
    out = path.parent / "out"
    stale = [out / "figures" / "slice_gone.png", out / "best" / "trial-9999.yaml"]
    for p in stale:
        p.write_text("old")
    dead = out / ".trials.csv.rldse-999999999.tmp"  # a writer killed mid-write
    dead.write_text("torn")
    report = run_study(path, trials=8, resume=True, progress=False)
    assert not dead.exists() and not any(p.exists() for p in stale)
    assert sorted(p.name for p in (out / "best").iterdir()) == \
        [Path(b["file"]).name for b in report.best]
    assert all(Path(f).is_file() for k, f in report.files.items() if k.startswith("slice "))
    assert not [p for p in out.rglob(".*.tmp")]
    again = StudyReport.model_validate_json((out / "summary.json").read_text())
    assert again.headline() == report.headline()


@pytest.fixture
def shipped_example(scratch_example) -> Path:
    return scratch_example("pareto_cost")


def test_pareto_cost_recommends_only_designs_that_pass_every_check(shipped_example):
    """Its Pareto designs once broke the TCAM's capacity."""
    report = run_study(shipped_example, progress=False)
    table = pd.read_csv(report.files["trials.csv"])
    checks = [c for c in table.columns if c.startswith("checks.")]
    assert "checks.tcam_capacity" in checks
    assert "constraint: checks.tcam_capacity" in table.columns
    assert (~table["checks.tcam_capacity"].astype(bool)).any()  # some points break it ...
    best = table[table["best"]]
    assert len(best) >= 2 and best[checks].astype(bool).all().all()  # ... none recommended
    assert (table.loc[~table[checks].astype(bool).all(axis=1), "feasible"] == False).all()  # noqa: E712
    assert report.headline().startswith("Pareto set of")
    assert {b["number"] for b in report.best} <= set(best["number"])


def _frame_study(direction: str = "maximize"):
    from types import SimpleNamespace

    return SimpleNamespace(
        objectives=[SimpleNamespace(metric="env_steps_per_s", direction=direction)],
        search_space=SimpleNamespace(dims=[SimpleNamespace(path="gpu.count")]))


def _trials(rows):
    return pd.DataFrame(rows, columns=["number", "gpu.count", "env_steps_per_s", "cost_usd",
                                       "avg_power_w", "feasible", "source"])


def test_near_ties_name_the_cheapest_design_within_one_percent():
    from rldse.search.report import near_ties

    frame = _trials([
        (0, 4, 16_376.0, 46_452.0, 300.0, True, "simulated"),   # the best
        (1, 2, 16_324.0, 26_452.0, 214.0, True, "simulated"),   # -0.3 %, cheaper
        (2, 1, 15_000.0, 16_452.0, 190.0, True, "simulated"),   # -8 %: not a tie
        (3, 8, 16_400.0, 86_452.0, 450.0, False, "simulated"),  # breaks the cap
        (4, 2, 16_324.0, 26_452.0, 214.0, True, "cache"),       # the same design again
    ])
    lines = near_ties(_frame_study(), frame)
    assert lines[0].startswith("near tie: 2 feasible designs within 1% of the best")
    assert lines[1].startswith("  trial 1 [gpu.count=2]: 16,324 env steps/s (-0.32%)")
    assert len(lines) == 3  # the pick among them is the recommendation's (test_advice)
    assert not any("trial 3" in line or "trial 2 " in line for line in lines)
    alone = frame[frame["number"].isin([0, 2])]
    assert near_ties(_frame_study(), alone) == []


def test_near_ties_and_then_the_recommendation_show_in_the_headline():
    report = _report(["env_steps_per_s"], [_point(0, {"env_steps_per_s": 16_376.0})])
    report.near_ties = ["near tie: 2 feasible designs"]
    report.advice = ["recommendation: trial 1 ...", "  rule: ..."]
    assert report.headline().endswith("near tie: 2 feasible designs\n"
                                      "recommendation: trial 1 ...\n  rule: ...")
