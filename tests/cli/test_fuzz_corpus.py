"""The fuzz corpus (scripts/make_fuzz_corpus.py) through the CLI entry point, in process:
every damaged trace, spec and --set gives exit 2 with one line, or a result whose
physical quantities are finite and non-negative; never a traceback. The default suite
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
def runs(tmp_path_factory):
    return make_fuzz_corpus.corpus(tmp_path_factory.mktemp("corpus"))


def test_corpus_gives_one_line_or_a_physical_result(runs, capsys, record_property):
    _check(runs[::3], capsys, record_property)


@pytest.mark.slow
def test_rest_of_the_corpus_gives_one_line_or_a_physical_result(runs, capsys, record_property):
    _check([run for i, run in enumerate(runs) if i % 3], capsys, record_property)


def _check(runs, capsys, record_property):
    bad, codes = [], {}
    for name, argv in runs:
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        except Exception as exc:  # a traceback: the defect this suite exists to catch
            bad.append(f"{name}: traceback {type(exc).__name__}: {exc}")
            continue
        out, err = capsys.readouterr()
        codes[code] = codes.get(code, 0) + 1
        if code == 2:
            if len(err.strip().splitlines()) != 1:
                bad.append(f"{name}: exit 2 with {len(err.strip().splitlines())} lines: {err!r}")
        elif code in (0, None):
            if _UNPHYSICAL.search(out):
                bad.append(f"{name}: unphysical output {_UNPHYSICAL.search(out).group(0)!r}")
        else:
            bad.append(f"{name}: exit {code}: {err.strip()[-200:]!r}")
    # printed at the end of the run (tests/conftest.py), from any pytest-xdist worker
    record_property(SUMMARY, f"fuzz corpus: {len(runs)} inputs, exit codes {codes}, "
                             f"{len(bad)} failures")
    assert not bad, f"{len(bad)} of {len(runs)}:\n" + "\n".join(bad)
