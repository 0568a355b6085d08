"""`rldse search` ends with its headline: the designs to act on, all feasible."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.cli import main


@pytest.fixture
def example(scratch_example) -> Path:
    return scratch_example("cpu_gpu_ratio")


def test_search_ends_with_the_best_design_and_its_feasibility(example, capsys):
    assert main(["search", str(example), "--trials", "6"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith("best design"))
    assert lines[head].startswith("best design, meeting every constraint (avg_power_w <= "
                                  "1500; cost_usd <= 60000; gpu_memory_ok; the part checks ")
    assert lines[head + 1].startswith("  trial ") and "steps_per_joule=" in lines[head + 1]
    assert "env steps/s" in lines[head + 1] and lines[head + 1].endswith(".yaml")
    # the last thing printed, or followed only by the designs that tie with it (within
    # the model's resolution: CartPole's steps/J is flat past the knee) and the pick
    tail = lines[head + 2:]
    assert tail == [] or (tail[0].startswith("near tie: ") and tail[-1].startswith(
        "prefer trial ") and all(line.startswith("  trial ") for line in tail[1:-1]))
    assert f"  dashboard: rldse dashboard {example.resolve()}" in lines
