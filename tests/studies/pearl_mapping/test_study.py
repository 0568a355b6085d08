"""The PEARL study evaluates PEARL's formula on PEARL's tables exactly (a consistency check,
labelled so) and sets PEARL's CPU+FPGA platform against a CPU-GPU library mapping, banded."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import yaml

from rldse.studies import run_study

ROOT = Path(__file__).resolve().parents[3]


def test_pearl_study_reproduces_published_mapping(tmp_path):
    shutil.copytree(ROOT / "studies" / "pearl_mapping", tmp_path / "studies" / "pearl_mapping",
                    ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces")
    study = tmp_path / "studies" / "pearl_mapping" / "study.yaml"
    params = yaml.safe_load(study.read_text())
    params["fpga_platform"].update(env_steps=5000, bands=2)
    study.write_text(yaml.safe_dump(params))
    report = run_study("pearl_mapping", root=tmp_path / "studies", progress=False)
    text = report.read_text()
    rows = [line for line in text.splitlines() if line.startswith("| ")]
    assert any("| consistency | RM CPU, learner GPU1 |" in r and "| RM CPU, learner GPU1 | same |" in r
               and "reproduced" in r for r in rows)
    peak = next(r for r in rows if r.startswith("| theoretical peak"))
    assert "| reproduced |" in peak
    results = pd.read_csv(report.parent / "results.csv")
    assert len(results) == 16
    assert results["samples_per_s"].max() == max(results["samples_per_s"])
    assert abs(results["samples_per_s"].max() - 1000 * 512 / 0.23) < 1e-6
    claims = pd.read_csv(report.parent / "claims.csv")
    consistency = claims[claims.kind == "consistency"]
    assert len(consistency) == 3 and consistency.claim.str.contains("PEARL").any()
    fpga = claims[claims.claim.str.contains("CPU+FPGA", regex=False)]
    # throughput and performance per watt, each judged per workload (DQN, DDPG) against a
    # gain of 1x-2.1x / 1x-3.4x: the row's band is the worst workload's
    assert len(fpga) == 2 and (fpga.kind == "reproduction").all()
    assert set(fpga.published) == {"up to 2.1x (each workload a gain of 1x-2.1x)",
                                   "up to 3.4x (each workload a gain of 1x-3.4x)"}
    assert (fpga.p5 <= fpga.p50).all() and (fpga.p50 <= fpga.p95).all() and (fpga.p5 > 0).all()
    assert "## Per configuration: throughput, PEARL's mapping" in text
    per_workload = [r for r in rows if r.startswith(("| dqn (replay", "| ddpg (replay"))]
    assert len(per_workload) == 4
    runs = pd.read_csv(report.parent / "fpga_platform.csv")
    assert set(runs.system) == {"cpu+gpu", "cpu+gpu+fpga"}
    assert (runs[runs.role == "library"][["replay", "learn"]] == ["cpu", "gpu"]).all().all()
    assert len(runs[runs.draw >= 0]) == 2 * 2 * 2  # workloads x draws x (PEARL, library)
    for name in ("pearl_pairs.png", "fpga_platform.png"):
        assert (report.parent / name).stat().st_size > 0
