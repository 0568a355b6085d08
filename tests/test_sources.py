"""The repository stands alone: no file cites a document kept outside it, and every
preset number names its original source (a range where that source is a guess)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from rldse.models.presets import get_preset, list_presets

ROOT = Path(__file__).resolve().parents[1]
THIS = Path(__file__).resolve().relative_to(ROOT).as_posix()
#: What the check walks: the package, studies, examples, benchmarks, docs and the top READMEs.
SCOPE = ("rldse", "studies", "examples", "benchmarks", "docs", "traces/README.md", "README.md")
#: Documents outside the repository that a file must not cite in place of a source.
EXTERNAL = re.compile(r"REFERENCE\.md|DESIGN\.md")
BINARY_SUFFIXES = {".parquet", ".png", ".jpg", ".jpeg", ".gif", ".pdf", ".pkl", ".npz",
                   ".npy", ".gz", ".zip", ".db", ".sqlite"}
UNCERTAIN = re.compile(r"assum|unverified", re.IGNORECASE)


def tracked_files(scope: tuple[str, ...] = SCOPE) -> list[Path]:
    """Text files in ``scope`` that git tracks or would add (not ignored); by walking it
    where git is not available."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard", "--", *scope],
                             cwd=ROOT, check=True, capture_output=True).stdout
        names = sorted({n for n in out.decode("utf-8").split("\0") if n})
    except (OSError, subprocess.CalledProcessError):
        names = []
        for entry in scope:
            path = ROOT / entry
            found = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
            names += [p.relative_to(ROOT).as_posix() for p in found]
    files = []
    for name in names:
        path = ROOT / name
        if name == THIS or path.suffix.lower() in BINARY_SUFFIXES or not path.is_file():
            continue
        files.append(path)
    return files


def _text(path: Path) -> str | None:
    data = path.read_bytes()
    if b"\0" in data:
        return None  # binary
    return data.decode("utf-8", errors="replace")


def test_no_file_cites_a_document_outside_the_repository():
    files = tracked_files()
    assert files, "no files found to check"
    offenders = []
    for path in files:
        text = _text(path)
        if text is None:
            continue
        lines = [i for i, line in enumerate(text.splitlines(), 1) if EXTERNAL.search(line)]
        if lines:
            offenders.append(f"{path.relative_to(ROOT).as_posix()} (lines "
                             f"{', '.join(map(str, lines))})")
    assert not offenders, ("cite the original source instead of REFERENCE.md / DESIGN.md "
                           "in:\n  " + "\n  ".join(offenders))


#: a benchmark script named by its path: benchmarks/FOLDER/NAME.py or .sh (a * a glob)
BENCHMARK = re.compile(r"benchmarks/[\w/*.-]*\w\.(?:py|sh)\b")


def test_every_benchmark_a_file_names_exists():
    """A file that points to a benchmark (its docstring, a preset's source, a page) points
    to one that is there: moving a script means fixing who names it."""
    missing = []
    for path in tracked_files((*SCOPE, "tests", "scripts", "pyproject.toml")):
        if path.is_relative_to(ROOT / "benchmarks" / "results"):
            continue  # records of past runs name the scripts where they were then
        text = _text(path)
        for name in set(BENCHMARK.findall(text or "")):
            if not list(ROOT.glob(name)):
                missing.append(f"{path.relative_to(ROOT).as_posix()}: {name}")
    assert not missing, "no such benchmark:\n  " + "\n  ".join(sorted(missing))


def all_presets() -> list[tuple[str, str]]:
    df = list_presets()
    return [(k, n) for k, n in zip(df["kind"], df["name"], strict=True)
            if not (k == "cpu" and n == "host")]


@pytest.mark.parametrize(("kind", "name"), all_presets())
def test_every_preset_number_has_a_source_and_a_range_when_guessed(kind, name):
    preset = get_preset(kind, name)
    problems = []
    for field, p in preset.params.items():
        if not str(p.source).strip():
            problems.append(f"{field}: empty source")
            continue
        if EXTERNAL.search(p.source):
            problems.append(f"{field}: cites {EXTERNAL.search(p.source).group()} ({p.source})")
        # Ranges exist for numbers only (texts and per-phase tables cannot be swept).
        numeric = isinstance(p.value, int | float) and not isinstance(p.value, bool)
        if numeric and UNCERTAIN.search(p.source) and p.range is None:
            problems.append(f"{field}: assumed / UNVERIFIED but has no range ({p.source})")
        if p.range is not None:
            lo, hi = p.range
            if not lo <= p.value <= hi:
                problems.append(f"{field}: value {p.value} outside its range [{lo}, {hi}]")
    assert not problems, f"{kind}/{name}:\n  " + "\n  ".join(problems)
