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
    # then, maybe, the designs that tie with it (within the model's resolution: CartPole's
    # steps/J is flat past the knee); last, one recommendation, its rule and why
    tail = lines[head + 2:]
    picks = [i for i, line in enumerate(tail) if line.startswith("recommendation: trial ")]
    assert len(picks) == 1 and tail[picks[0]].endswith(".yaml")
    ties, why = tail[:picks[0]], tail[picks[0] + 1:]
    assert ties == [] or (ties[0].startswith("near tie: ")
                          and all(line.startswith("  trial ") for line in ties[1:]))
    assert why[0].startswith("  rule: ") and all(line.startswith("  ") for line in why)
    assert any(line.startswith(("  binding constraint: ", "  no constraint binds: "))
               for line in why)
    assert f"  dashboard: rldse dashboard {example.resolve()}" in lines
