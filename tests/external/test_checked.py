"""The shipped per-part summary (data/checked.csv, what `rldse parts show` prints): every
part it names is a preset, and every data set with measurements is in it."""

import pandas as pd

from rldse.external import CHECKED_COLUMNS, CHECKED_FILE, checked_lines, datasets
from rldse.models import load_part


def test_shipped_summary_names_presets_of_every_measured_data_set():
    table = pd.read_csv(CHECKED_FILE)
    assert list(table.columns) == list(CHECKED_COLUMNS)
    for part in table["part"].unique():
        kind, _, name = part.partition("/")
        load_part(kind, name)
    measured = {name for name in datasets() if name != "swiftrl"}  # swiftrl: nothing measured
    assert set(table["dataset"]) == measured
    assert (table["n"] > 0).all()


def test_a_checked_part_says_against_what():
    lines = checked_lines("cpu/epyc-7742")
    assert lines[0].startswith("checked against real machines")
    assert any("envpool, for-loop" in line for line in lines[1:])
