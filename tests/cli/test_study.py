"""`rldse study run` ends with each study's headline: verdicts, bands, best designs."""

from __future__ import annotations

import pandas as pd

from rldse.cli.study import headline
from rldse.search.report import StudyReport


def test_headline_gives_verdicts_bands_and_each_search_best(tmp_path):
    pd.DataFrame([
        {"study": "s", "claim": "steps/J peaks at the knee", "kind": "reproduction",
         "published": "yes", "p5": 0.52, "p50": 0.55, "p95": 0.67, "verdict": "not reproduced",
         "reason": ""},
        {"study": "s", "claim": "actors limit throughput", "kind": "reproduction",
         "published": "yes", "p5": None, "p50": None, "p95": None, "verdict": "reproduced",
         "reason": ""},
    ]).to_csv(tmp_path / "claims.csv", index=False)
    search = StudyReport(
        name="search", study_file="search.yaml", storage="j", out_dir="o", budget=40,
        workers=1, objectives=["env_steps_per_s"], constraints=["avg_power_w <= 400"],
        states={"COMPLETE": 40}, simulated=40, cache_hits=0, pruned_by_estimate=0, invalid=0,
        requeued=0, files={}, notes=[], finished_now=40, elapsed_s=1.0,
        best=[{"number": 28, "values": {"env_steps_per_s": 24658.8},
               "params": {"workload.actors": 5, "workload.cores": 6},
               "metrics": {"steps_per_joule": 88.6, "avg_power_w": 278.0}, "file": "b.yaml"}])
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "summary.json").write_text(search.model_dump_json())
    lines = headline(tmp_path).splitlines()
    assert lines[0] == "headline: 2 claims: 1 not reproduced, 1 reproduced"
    assert lines[1] == "  not reproduced: steps/J peaks at the knee: 0.55 (p5-p95 0.52-0.67)"
    assert lines[2] == "  reproduced: actors limit throughput"
    assert lines[3].startswith("search 'search' (40 trials): best design, meeting every "
                               "constraint (avg_power_w <= 400)")
    assert "env_steps_per_s=24,658.8" in lines[4] and "88.6 steps/J; 278 W" in lines[4]


def test_misspelt_study_name_gets_a_suggestion(capsys):
    from rldse.cli import main

    assert main(["study", "run", "swiftrl"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean 'swiftrl_pim'" in err
