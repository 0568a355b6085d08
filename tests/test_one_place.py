"""Concepts kept in one module each, checked by reading rldse/'s source: a second copy
would drift from the first (the messages users see, the limits they are held to)."""

from __future__ import annotations

import re
from pathlib import Path

RLDSE = Path(__file__).resolve().parents[1] / "rldse"


def _lines_matching(pattern: str) -> dict[str, list[int]]:
    rx = re.compile(pattern)
    found: dict[str, list[int]] = {}
    for path in sorted(RLDSE.rglob("*.py")):
        for number, line in enumerate(path.read_text().splitlines(), start=1):
            if rx.search(line):
                found.setdefault(str(path.relative_to(RLDSE.parent)), []).append(number)
    return found


def test_allow_long_is_read_in_the_budget_module_only():
    """Callers build Limits from the --allow-long flag (args.allow_long) and ask it
    (Limits.over, share_s, refuse_over); only rldse/sim/budget.py reads the field."""
    reads = _lines_matching(r"(?<!args)\.allow_long\b")
    assert set(reads) == {"rldse/sim/budget.py"}, reads


def test_pydantic_errors_are_worded_in_rldse_errors_only():
    """A ValidationError becomes words in rldse.errors.validation_error(s) alone: no other
    module reads pydantic's error list (``.errors()``) or its entries' fields."""
    reads = _lines_matching(r"""\.errors\(\)|\berr(or)?\[["'](msg|loc|type|ctx|input)["']\]""")
    assert set(reads) == {"rldse/errors.py"}, reads


def test_a_wall_time_over_its_limit_is_worded_in_the_budget_module_only():
    """Searches, studies, bands and seeds refuse a long estimate through
    rldse.sim.budget.refuse_long: no other module words the limit itself."""
    words = _lines_matching(r"duration\(limits\.wall_s\)")
    assert set(words) == {"rldse/sim/budget.py"}, words
