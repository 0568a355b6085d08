"""`rldse search` ends with its headline: the designs to act on, all feasible."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from rldse.cli import main

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def example(tmp_path) -> Path:
    """A shipped example study in a scratch copy of the repository's layout."""
    (tmp_path / "studies" / "examples").mkdir(parents=True)
    os.symlink(REPO / "traces", tmp_path / "traces")
    return Path(shutil.copy(REPO / "studies" / "examples" / "cpu_gpu_ratio.yaml",
                            tmp_path / "studies" / "examples"))


def test_search_ends_with_the_best_design_and_its_feasibility(example, capsys):
    assert main(["search", str(example), "--trials", "6"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("best design"))
    assert lines[head].startswith("best design, meeting every constraint (avg_power_w <= "
                                  "1500; cost_usd <= 60000; gpu_memory_ok; the part checks ")
    assert lines[head + 1].startswith("  trial ") and "steps_per_joule=" in lines[head + 1]
    assert "env steps/s" in lines[head + 1] and lines[head + 1].endswith(".yaml")
    assert head == len(lines) - 2  # the last thing printed
    assert f"  dashboard: rldse dashboard {example.resolve()}" in lines
