"""Atomic outputs: a failed or killed write leaves the old file; orphans of dead writers
are cleaned, those of live ones kept."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import pytest

from rldse import files
from rldse.errors import RldseError
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


def _dead_pid() -> str:
    return subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()


@pytest.mark.parametrize("name", ["t.json", "a[1]*.txt"])  # glob characters in the name
def test_a_write_first_removes_what_killed_writers_of_that_file_left(tmp_path, name):
    target = tmp_path / name
    orphan = tmp_path / f".{name}.rldse-{_dead_pid()}.tmp"
    orphan.write_bytes(b"torn")
    others = [tmp_path / f".other.json.rldse-{_dead_pid()}.tmp",  # another file's: kept
              tmp_path / f".{name}.rldse-{os.getppid()}.tmp"]  # a live writer's: kept
    for other in others:
        other.write_bytes(b"x")
    atomic_write_text(target, "new")
    assert target.read_text() == "new" and not orphan.exists()
    assert all(other.exists() for other in others)
    orphan.write_bytes(b"torn")  # and a streamed writer's temporary (a timeline)
    tmp = files.open_temporary(target)
    assert tmp == temporary_for(target) and tmp.exists() and not orphan.exists()


# ---- a folder replaced as a whole (rldse.files.replaced_folder) ------------------------

def _tree(folder):
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _fill(folder, text):
    (folder / "sub").mkdir(parents=True, exist_ok=True)
    (folder / "a.txt").write_text(text)
    (folder / "sub" / "b.txt").write_text(text)


@pytest.fixture(params=["exchange", "two renames"])
def swap_kind(request, monkeypatch):
    """Both ways a folder is swapped in: one renameat2 exchange, or (where the system or
    filesystem cannot exchange) old aside then new in."""
    if request.param == "two renames":
        monkeypatch.setattr(files, "_exchange", lambda a, b: False)
    return request.param


def test_the_new_folder_replaces_the_old_one_only_when_built(tmp_path, swap_kind):
    out = tmp_path / "out"
    _fill(out, "old")
    with files.replaced_folder(out, tmp_path) as new:
        assert new.parent == tmp_path and not list(new.iterdir())
        _fill(new, "new")
        assert _tree(out) == {"a.txt": b"old", "sub/b.txt": b"old"}  # whole until the end
    assert _tree(out) == {"a.txt": b"new", "sub/b.txt": b"new"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_failed_build_leaves_the_old_folder_and_no_new_one(tmp_path, swap_kind):
    out = tmp_path / "out"
    _fill(out, "old")
    with pytest.raises(KeyboardInterrupt), files.replaced_folder(out, tmp_path) as new:
        _fill(new, "half")
        raise KeyboardInterrupt
    assert _tree(out) == {"a.txt": b"old", "sub/b.txt": b"old"}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_a_first_build_creates_the_folder(tmp_path, swap_kind):
    with files.replaced_folder(tmp_path / "out", tmp_path) as new:
        _fill(new, "new")
    assert _tree(tmp_path / "out") == {"a.txt": b"new", "sub/b.txt": b"new"}


@pytest.mark.parametrize("left, after, warned", [
    # killed while building: the unfinished new folder goes, the old stays
    ({"out": "old", ".out.new": "half"}, "old", "removed what a killed run left"),
    # killed between the two renames: the new folder was whole, the swap is finished
    ({".out.old": "old", ".out.new": "new"}, "new", "finished the swap"),
    # killed while removing the old content (either way of swapping)
    ({"out": "new", ".out.old": "old"}, "new", None),
    ({"out": "new", ".out.new": "old"}, "new", "removed what a killed run left"),
    # only the old folder aside (not left by rldse's order, but never lost)
    ({".out.old": "old"}, "old", "put back"),
])
def test_what_a_killed_swap_left_is_finished_or_undone_first(tmp_path, capsys, left, after,
                                                             warned):
    for name, text in left.items():
        _fill(tmp_path / name, text)
    with files.replaced_folder(tmp_path / "out", tmp_path) as new:
        assert _tree(tmp_path / "out") == {"a.txt": after.encode(),
                                           "sub/b.txt": after.encode()}
        assert sorted(p.name for p in tmp_path.iterdir()) == [".out.new", "out"]
        assert not list(new.iterdir())
    err = capsys.readouterr().err
    assert (warned in err) if warned else not err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]


def test_exchange_swaps_two_folders_in_one_step(tmp_path):
    _fill(tmp_path / "a", "a")
    _fill(tmp_path / "b", "b")
    if not files._exchange(tmp_path / "a", tmp_path / "b"):
        pytest.skip("this system or filesystem cannot exchange two names (renameat2)")
    assert _tree(tmp_path / "a")["a.txt"] == b"b" and _tree(tmp_path / "b")["a.txt"] == b"a"


# ---- a full disk or a read-only folder: one line, nothing torn ------------------------

_FAULTS = {"disk full": (errno.ENOSPC, "the disk is full"),
           "read-only": (errno.EROFS, "the file system is read-only")}


@pytest.fixture(params=list(_FAULTS))
def fault(request):
    return _FAULTS[request.param]


def test_a_write_that_fails_is_one_line_naming_the_file_and_cause(tmp_path, fault):
    code, cause = fault
    target = atomic_write_text(tmp_path / "summary.json", "old")

    def fails(tmp):  # the disk fills (or the folder goes read-only) half-way through
        tmp.write_text("half")
        raise OSError(code, os.strerror(code))
    with pytest.raises(RldseError) as err:
        files.atomic_write(target, fails)
    assert str(err.value) == f"{target}: cannot write: {cause}"
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_rename_that_fails_leaves_the_old_file_and_no_temporary(tmp_path, fault,
                                                                  monkeypatch):
    code, cause = fault
    target = atomic_write_text(tmp_path / "trials.csv", "old")

    def replace(src, dst):
        raise OSError(code, os.strerror(code), str(src))
    monkeypatch.setattr(os, "replace", replace)
    with pytest.raises(RldseError, match=f"^{target}: cannot write: {cause}$"):
        atomic_write_text(target, "new")
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == [target.name]


def test_a_folder_swap_that_fails_leaves_the_old_folder(tmp_path, fault, monkeypatch):
    code, cause = fault
    _fill(tmp_path / "out", "old")

    def fails(*args, **kwargs):
        raise OSError(code, os.strerror(code))
    monkeypatch.setattr(files, "_exchange", fails)
    with pytest.raises(RldseError, match=f"^{tmp_path / 'out'}: cannot write: {cause}$"), \
            files.replaced_folder(tmp_path / "out", tmp_path) as new:
        _fill(new, "new")
    assert _tree(tmp_path / "out") == {"a.txt": b"old", "sub/b.txt": b"old"}
    # the built folder is left beside it, and cleared by the next run
    monkeypatch.undo()
    with files.replaced_folder(tmp_path / "out", tmp_path):
        assert _tree(tmp_path / "out") == {"a.txt": b"old", "sub/b.txt": b"old"}


# ---- names at the file system's limits ------------------------------------------------

def test_a_name_near_the_limit_is_written_through_a_shorter_temporary(tmp_path):
    """A 250-byte name leaves no room for `.NAME.rldse-PID.tmp`: the temporary is named
    after the name cut short and its hash; the user's name is written whole, and a killed
    writer's temporary of it is still found and removed."""
    name = "é" * 120 + "x.json"  # 246 bytes in UTF-8: a cut must not split a character
    target = tmp_path / name
    tmp = temporary_for(target)
    assert len(os.fsencode(tmp.name)) <= files.NAME_MAX and tmp.name.startswith(".é")
    tmp.name.encode("utf-8")  # whole characters only
    assert temporary_for(tmp_path / ("é" * 120 + "y.json")) != tmp  # the hash tells them apart
    orphan = tmp.with_name(tmp.name.replace(str(os.getpid()), _dead_pid()))
    orphan.write_bytes(b"torn")
    atomic_write_text(target, "whole")
    assert [p.name for p in tmp_path.iterdir()] == [name] and target.read_text() == "whole"


def test_a_short_name_keeps_its_temporary_name():
    from pathlib import Path

    assert temporary_for(Path("/x/t.json")).name == f".t.json.rldse-{os.getpid()}.tmp"


def test_a_path_that_is_not_utf8_is_one_line_naming_it(tmp_path):
    folder = tmp_path / os.fsdecode(b"bad\xff")
    with pytest.raises(RldseError) as err:
        files.check_utf8(folder / "trials.parquet")
    assert str(err.value).startswith(f"{folder / 'trials.parquet'}: the path is not UTF-8")
    files.check_utf8(tmp_path / "é.parquet")  # UTF-8 beyond ASCII is fine

    def parquet_like(tmp):  # pyarrow refuses such a path the same way
        str(tmp).encode("utf-8")
    with pytest.raises(RldseError, match="the path is not UTF-8"):
        files.atomic_write(folder / "t.parquet", parquet_like)
