"""Atomic outputs: a failed or killed write leaves the old file; orphans of dead writers
are cleaned, those of live ones kept."""

from __future__ import annotations

import subprocess
import sys

import pytest

from rldse.files import atomic_path, atomic_write_text, clean_stale_temporaries, temporary_for


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = atomic_write_text(tmp_path / "report.md", "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half of the new")
        raise RuntimeError("killed mid-write")
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_a_write_replaces_the_file_and_creates_its_folder(tmp_path):
    target = atomic_write_text(tmp_path / "out" / "figures" / "a.txt", "new")
    assert target.read_text() == "new"
    assert [p.name for p in target.parent.iterdir()] == ["a.txt"]


def test_stale_temporaries_of_dead_writers_go_live_ones_stay(tmp_path):
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    (tmp_path / "figures").mkdir()
    orphan = tmp_path / "figures" / f".history.png.rldse-{dead}.tmp"
    orphan.write_bytes(b"torn")
    live = temporary_for(tmp_path / "trials.csv")  # this process's: a write under way
    live.write_text("partial")
    other = tmp_path / ".notes.tmp"  # not rldse's naming: never touched
    other.write_text("x")
    assert clean_stale_temporaries(tmp_path) == [orphan]
    assert not orphan.exists() and live.exists() and other.exists()
    assert clean_stale_temporaries(tmp_path / "missing") == []
