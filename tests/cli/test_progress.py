"""Progress bars: every long command takes --no-progress, and no bar is drawn when stderr
is not a terminal (pipes, logs, these tests), so what a command writes stays the same."""

from __future__ import annotations

import pytest

from rldse.cli import build_parser
from rldse.cli.common import progress_bar


@pytest.mark.parametrize("argv", [
    ["search", "s.yaml"], ["study", "run", "cpu_gpu_ratio"], ["validate", "external"],
    ["capture", "dqn", "--env", "CartPole-v1", "-o", "d.parquet"],
    ["trace", "import", "f.txt", "--format", "swiftrl", "-o", "t.parquet"],
])
def test_long_commands_take_no_progress(argv):
    parser = build_parser()
    assert parser.parse_args(argv).progress is True
    assert parser.parse_args([*argv, "--no-progress"]).progress is False


def test_a_bar_is_off_when_asked_and_when_stderr_is_not_a_terminal():
    with progress_bar(10, "off", enabled=False) as bar:
        assert bar.disable
    with progress_bar(10, "captured stderr") as bar:  # pytest's stderr is no terminal
        assert bar.disable


def test_validate_external_ticks_once_per_data_set(monkeypatch, capsys):
    import pandas as pd

    import rldse.external as external
    from rldse.cli import main

    ticks = []
    rows = pd.DataFrame({"dataset": ["d"], "device": ["g"], "regime": ["r"], "case": ["a"],
                         "measured": [1.0], "predicted": [1.1], "unit": ["s"]})
    fake = {name: external.Dataset(name, "", "", lambda: rows, lambda device: "gpu/x")
            for name in ("one", "two")}
    monkeypatch.setattr(external, "datasets", lambda: fake)
    real = external.predictions
    monkeypatch.setattr(external, "predictions", lambda names, each: real(
        names, lambda name: (ticks.append(name), each(name))))
    assert main(["validate", "external", "--no-progress"]) == 0
    assert ticks == ["one", "two"]
