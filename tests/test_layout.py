"""tests/ mirrors rldse/: the tests of a package live in the folder of the same path under
tests/ (rldse/workloads/tabular/program/ → tests/workloads/tabular/program/), so a reader
finds a module's tests from its path, and a package's tests never sit one folder up.

Read from the file tree alone: nothing is imported."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TESTS = ROOT / "tests"
PACKAGE = ROOT / "rldse"

#: folders of tests/ holding Python files that are not tests, and why they mirror nothing
NOT_MIRRORED = {
    "recording/data": "training scripts kept as their authors wrote them, the input that "
                      "tests/recording feeds to `rldse capture script`",
}


def _folders() -> list[str]:
    """Every folder below tests/ holding a Python file, as a path relative to tests/."""
    found = {p.parent.relative_to(TESTS).as_posix() for p in TESTS.rglob("*.py")}
    return sorted(found - {"."} - set(NOT_MIRRORED))


def test_every_test_folder_has_a_package_of_the_same_path():
    orphans = [f"tests/{f}" for f in _folders() if not (PACKAGE / f / "__init__.py").is_file()]
    assert not orphans, f"no package rldse/<same path> for: {orphans}"


def test_every_test_folder_is_a_package():
    # test modules of the same name in two folders (test_program.py) need distinct packages
    bare = [f"tests/{f}" for f in _folders() if not (TESTS / f / "__init__.py").is_file()]
    assert not bare, f"missing __init__.py in: {bare}"


def test_a_subpackage_is_tested_in_its_own_folder():
    """tests/<path>/test_NAME.py while rldse/<path>/NAME/ is a package: it belongs in
    tests/<path>/NAME/."""
    misplaced = [p.relative_to(ROOT).as_posix() for p in sorted(TESTS.rglob("test_*.py"))
                 if (PACKAGE / p.parent.relative_to(TESTS)
                     / p.stem.removeprefix("test_") / "__init__.py").is_file()]
    assert not misplaced, f"move into the folder of the package they test: {misplaced}"


def test_folders_left_unmirrored_hold_no_tests():
    for folder in NOT_MIRRORED:
        assert (TESTS / folder).is_dir(), folder
        assert not list((TESTS / folder).rglob("test_*.py")), folder
