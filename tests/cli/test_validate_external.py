"""`rldse validate external`: the table, --csv and --doc (predictions stubbed: the data
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

    def predictions(names=None, each=lambda name: None):
        for name in names or []:
            each(name)
        out = rows.copy()
        out["error"] = external.relative_error(out["predicted"], out["measured"])
        return out

    monkeypatch.setattr(external, "predictions", predictions)
    # one stand-in data set: the real ones' same-path checks run simulations (their own
    # tests cover them); the command prints each data set's line
    monkeypatch.setattr(external, "DATASETS", {"d": external.Dataset(
        "d", "", "", rows=lambda: rows, part_of=lambda device: f"gpu/{device}-preset",
        same_path=lambda: "d: priced by the same path")})
    monkeypatch.setattr(external, "_load_all", lambda: None)


def test_doc_table_is_replaced_and_csv_written(two_rows, tmp_path, capsys):
    readme = tmp_path / "validation.md"
    readme.write_text("intro\n\n" + external.TABLE_HEADER + "\n|---|\n| old | row |\n\nafter\n")
    out = tmp_path / "rows.csv"
    assert main(["validate", "external", "--doc", str(readme), "--csv", str(out)]) == 0
    text = readme.read_text()
    assert "| old | row |" not in text and text.startswith("intro") and "after" in text
    assert "| d | g | r | 2 | -5.0 % | 15.0 % |" in text  # errors +10 % and -20 %
    assert len(pd.read_csv(out)) == 2
    assert "d: priced by the same path" in capsys.readouterr().out


def test_doc_without_the_table_is_one_line(two_rows, tmp_path, capsys):
    readme = tmp_path / "validation.md"
    readme.write_text("no table here\n")
    assert main(["validate", "external", "--doc", str(readme)]) == 2
    err = capsys.readouterr().err
    assert "--doc" in err and "no table to replace" in err and err.count("\n") == 1


def test_checked_writes_the_summary_per_part(two_rows, tmp_path, monkeypatch):
    monkeypatch.setitem(external.DATASETS, "d", external.Dataset(
        "d", "", "", rows=lambda: None, part_of=lambda device: f"gpu/{device}-preset"))
    monkeypatch.setattr(external, "_load_all", lambda: None)
    out = tmp_path / "checked.csv"
    assert main(["validate", "external", "--checked", str(out)]) == 0
    table = pd.read_csv(out)
    assert list(table.columns) == list(external.CHECKED_COLUMNS)
    assert table.loc[0, "part"] == "gpu/g-preset" and table.loc[0, "n"] == 2
    assert table.loc[0, "median_err"] == pytest.approx(-0.05)
    lines = external.checked_lines("gpu/g-preset", out)
    assert "n 2, signed median -5.0 %, median |error| 15.0 %" in lines[1]
    assert "not yet" in external.checked_lines("gpu/other", out)[0]


def test_checked_with_dataset_is_one_line(capsys):
    assert main(["validate", "external", "--dataset", "envpool", "--checked", "x.csv"]) == 2
    assert "--checked" in capsys.readouterr().err
