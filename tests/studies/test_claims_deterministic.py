"""Same inputs and seed, same claims.csv, byte for byte: a study times nothing live (the
SwiftRL CPU baseline is stored data, rldse.studies.ckernel.stored). Slow (two study runs):
run by `scripts/test-slow.sh`."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from rldse.studies import run_study

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_timerl_memory_claims_are_identical_across_two_runs(tmp_path):
    outs = []
    for i in (0, 1):
        root = tmp_path / f"run{i}"
        (root / "traces").mkdir(parents=True)
        shutil.copytree(REPO / "studies" / "timerl_memory", root / "studies" / "timerl_memory",
                        ignore=shutil.ignore_patterns("out"))
        for trace in (REPO / "traces").glob("*.parquet"):
            (root / "traces" / trace.name).symlink_to(trace)
        run_study("timerl_memory", root / "studies", progress=False)
        outs.append((root / "studies" / "timerl_memory" / "out" / "claims.csv").read_bytes())
    assert outs[0] == outs[1]
