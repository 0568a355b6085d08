"""Every study's claims as one markdown table, for the README: read from each registered
study's ``out/claims.csv`` (what ``rldse study run`` wrote), never retyped.

``python -m rldse.studies.claims [ROOT]`` prints it; ROOT is the studies folder
(default ``studies``).
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pandas as pd

from rldse.errors import RldseError
from rldse.studies import STUDIES
from rldse.studies.report import CLAIMS_COLUMNS


def load_claims(root: str | Path = "studies") -> pd.DataFrame:
    """All studies' claims.csv rows, in registry order; a missing or malformed file is
    an error naming it."""
    frames = []
    for name in STUDIES:
        path = Path(root) / name / "out" / "claims.csv"
        if not path.is_file():
            raise RldseError(f"{path}: no such file (run `rldse study run {name}` first)")
        try:
            frame = pd.read_csv(path, keep_default_na=False, na_values=[""])
        except (pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise RldseError(f"{path}: not a CSV file ({exc})") from None
        missing = [c for c in CLAIMS_COLUMNS if c not in frame.columns]
        if missing:
            raise RldseError(f"{path}: missing column(s) {', '.join(missing)} (expected "
                             f"{', '.join(CLAIMS_COLUMNS)})")
        frames.append(frame[list(CLAIMS_COLUMNS)])
    return pd.concat(frames, ignore_index=True)


def _band(row) -> str:
    if any(isinstance(v, float) and math.isnan(v) for v in (row.p5, row.p50, row.p95)):
        return "–"
    return f"{row.p50:.3g} ({row.p5:.3g}–{row.p95:.3g})"


def _cell(text) -> str:
    return "" if isinstance(text, float) and math.isnan(text) else str(text).replace("|", "/")


def claims_table(claims: pd.DataFrame) -> str:
    """study | claim | kind | published | rldse p50 (p5–p95) | verdict, as markdown."""
    lines = ["| study | claim | kind | published | rldse p50 (p5–p95) | verdict |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r.study} | {_cell(r.claim)} | {r.kind} | {_cell(r.published)} | "
              f"{_band(r)} | {r.verdict} |" for r in claims.itertuples(index=False)]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1:
        print("usage: python -m rldse.studies.claims [ROOT]", file=sys.stderr)
        return 2
    try:
        print(claims_table(load_claims(args[0] if args else "studies")))
    except RldseError as exc:
        print(f"rldse: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
