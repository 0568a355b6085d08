"""`rldse validate external`: the table, --csv and --readme (predictions stubbed: the data
sets' own tests cover them; here the command's plumbing)."""

from __future__ import annotations

import pandas as pd
import pytest

import rldse.external as external
from rldse.cli import main


@pytest.fixture
def two_rows(monkeypatch):
    rows = pd.DataFrame({"dataset": ["d", "d"], "device": ["g", "g"], "regime": ["r", "r"],
                         "case": ["a", "b"], "measured": [1.0, 2.0],
                         "predicted": [1.1, 1.6], "unit": ["s", "s"]})

    def predictions(names=None):
        out = rows.copy()
        out["error"] = external.relative_error(out["predicted"], out["measured"])
        return out

    monkeypatch.setattr(external, "predictions", predictions)


def test_readme_table_is_replaced_and_csv_written(two_rows, tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("intro\n\n" + external.TABLE_HEADER + "\n|---|\n| old | row |\n\nafter\n")
    out = tmp_path / "rows.csv"
    assert main(["validate", "external", "--readme", str(readme), "--csv", str(out)]) == 0
    text = readme.read_text()
    assert "| old | row |" not in text and text.startswith("intro") and "after" in text
    assert "| d | g | r | 2 | -5.0 % | 15.0 % |" in text  # errors +10 % and -20 %
    assert len(pd.read_csv(out)) == 2


def test_readme_without_the_table_is_one_line(two_rows, tmp_path, capsys):
    readme = tmp_path / "README.md"
    readme.write_text("no table here\n")
    assert main(["validate", "external", "--readme", str(readme)]) == 2
    err = capsys.readouterr().err
    assert "--readme" in err and "no table to replace" in err and err.count("\n") == 1
