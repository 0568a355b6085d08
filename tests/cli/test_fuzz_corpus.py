"""The fuzz corpus (scripts/make_fuzz_corpus.py) through the CLI entry point, in process:
every damaged trace, spec and --set gives exit 2 with one line, or a result whose
physical quantities are finite and non-negative; never a traceback; an input the corpus
says must be refused (`Run.refused`) is refused in one line holding what it names, since
a result from it would be a silent change. No temporary is left behind. The default suite
runs every third input (a stride over the corpus, so every kind of damage and family
is sampled); the `slow` suite runs the other two thirds."""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

from rldse.cli import main
from tests.conftest import SUMMARY

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("make_fuzz_corpus",
                                               ROOT / "scripts" / "make_fuzz_corpus.py")
make_fuzz_corpus = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(make_fuzz_corpus)

#: a printed physical quantity that is negative or not a number
_UNPHYSICAL = re.compile(r"(-\d[\d,.]*\s*(s|J|W|B|GB|MB|KB|KiB|MiB|GiB)\b)|\b(nan|inf)\b")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    return out, make_fuzz_corpus.corpus(out)


def test_corpus_gives_one_line_or_a_physical_result(corpus, capsys, record_property,
                                                    monkeypatch):
    out, runs = corpus
    _check(out, runs[::3], capsys, record_property, monkeypatch)


@pytest.mark.slow
def test_rest_of_the_corpus_gives_one_line_or_a_physical_result(corpus, capsys,
                                                                record_property, monkeypatch):
    out, runs = corpus
    _check(out, [run for i, run in enumerate(runs) if i % 3], capsys, record_property,
           monkeypatch)


def test_the_corpus_covers_every_class_of_damage(corpus):
    """Every class of damage the corpus builds (scripts/make_fuzz_corpus.py), each with
    runs that must be refused."""
    _, runs = corpus
    names = " ".join(run.name for run in runs if run.refused is not None)
    for tag in (*make_fuzz_corpus.MUST_REFUSE, "latency_csv", "password", "module this.x",
                "bare metric", "step over range", "exists", "--workers", "grid",
                "300 bytes", "not UTF-8"):
        assert tag in names, tag


def _check(out, runs, capsys, record_property, monkeypatch):
    monkeypatch.chdir(out)
    monkeypatch.delenv("RLDSE_STORAGE", raising=False)
    bad, codes, tracebacks, silent = [], {}, 0, 0
    for name, argv, refused in runs:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:  # a traceback: the defect this suite exists to catch
            tracebacks += 1
            bad.append(f"{name}: traceback {type(exc).__name__}: {exc}")
            continue
        stdout, err = capsys.readouterr()
        codes[code] = codes.get(code, 0) + 1
        lines = err.strip().splitlines()
        if code == 2:
            if len(lines) != 1:
                bad.append(f"{name}: exit 2 with {len(lines)} lines: {err!r}")
            elif refused and refused not in lines[0]:
                bad.append(f"{name}: refused for another reason: {lines[0]!r}")
        elif code in (0, None):
            if refused is not None:
                silent += 1
                bad.append(f"{name}: gave a result; it must be refused (a silent change)")
            elif _UNPHYSICAL.search(stdout):
                bad.append(f"{name}: unphysical output {_UNPHYSICAL.search(stdout).group(0)!r}")
        else:
            bad.append(f"{name}: exit {code}: {err.strip()[-200:]!r}")
    left = [str(p) for p in out.rglob(".*.rldse-*.tmp")]
    bad += [f"temporary left behind: {p}" for p in left]
    # printed at the end of the run (tests/conftest.py), from any pytest-xdist worker
    record_property(SUMMARY, f"fuzz corpus: {len(runs)} inputs, exit codes {codes}, "
                             f"{tracebacks} tracebacks, {silent} silent changes, "
                             f"{len(bad)} failures")
    assert not bad, f"{len(bad)} of {len(runs)}:\n" + "\n".join(bad)
