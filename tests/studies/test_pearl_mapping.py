"""The PEARL study reproduces PEARL's published mapping and peak throughput exactly."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd

from rldse.studies import run_study

ROOT = Path(__file__).resolve().parents[2]


def test_pearl_study_reproduces_published_mapping(tmp_path):
    shutil.copytree(ROOT / "studies" / "pearl_mapping", tmp_path / "studies" / "pearl_mapping",
                    ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces")
    report = run_study("pearl_mapping", root=tmp_path / "studies", progress=False)
    text = report.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert any("RM CPU, learner GPU1 | RM CPU, learner GPU1" in r and "reproduced" in r
               for r in rows)
    peak = next(r for r in rows if r.startswith("| theoretical peak"))
    assert "| reproduced |" in peak
    results = pd.read_csv(report.parent / "results.csv")
    assert len(results) == 16
    assert results["samples_per_s"].max() == max(results["samples_per_s"])
    assert abs(results["samples_per_s"].max() - 1000 * 512 / 0.23) < 1e-6
    for name in ("pearl_pairs.png", "spec_based.png", "spec_based.csv"):
        assert (report.parent / name).stat().st_size > 0
