"""`rldse dashboard STUDY`: optuna-dashboard on 127.0.0.1, or one line naming the extra."""

from __future__ import annotations

import sys
import types
from pathlib import Path

import pytest

from rldse.cli import main


@pytest.fixture
def example(scratch_example) -> Path:
    return scratch_example("pareto_cost")


def test_without_the_extra_one_line_names_it(example, monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "optuna_dashboard", None)  # import fails
    assert main(["dashboard", str(example)]) == 2
    err = capsys.readouterr().err
    assert err == ("rldse: error: rldse dashboard needs optuna-dashboard: "
                   "pip install 'rldse[dashboard]'\n")


def test_serves_the_study_storage_on_localhost_only(example, monkeypatch, capsys):
    calls = []
    fake = types.SimpleNamespace(run_server=lambda storage, host, port: calls.append(
        (storage, host, port)))
    monkeypatch.setitem(sys.modules, "optuna_dashboard", fake)
    assert main(["dashboard", str(example)]) == 2  # nothing has run yet
    assert "run rldse search" in capsys.readouterr().err and not calls
    assert main(["search", str(example), "--trials", "2"]) == 0
    assert main(["dashboard", str(example), "--port", "8123"]) == 0
    (storage, host, port), = calls
    assert (host, port) == ("127.0.0.1", 8123)
    import optuna

    assert optuna.get_all_study_names(storage) == ["pareto_cost"]
    assert main(["dashboard", str(example), "--port", "0"]) == 2
