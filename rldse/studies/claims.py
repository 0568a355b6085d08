"""Every study's claims as one markdown table, for docs/validation.md: read from each
study's ``out/claims.csv`` (what ``rldse study run`` wrote), never retyped.

``python -m rldse.studies.claims [ROOT] [--doc PATH]`` prints it, or with ``--doc``
writes it over the claims table in PATH (the block of table lines under its header row);
ROOT is the studies folder (default ``studies``). Banded rows show each claim's worst
configuration's band (rldse.studies.report.Claim.per_configuration; a claim with one
configuration: its band).
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import pandas as pd

from rldse.errors import RldseError
from rldse.studies.discovery import study_names
from rldse.studies.report import CLAIMS_COLUMNS


def load_claims(root: str | Path = "studies") -> pd.DataFrame:
    """All studies' claims.csv rows, studies in name order (the folders of ``root`` that
    hold a study.yaml); a missing or malformed file is an error naming it."""
    frames = []
    for name in study_names(root):
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


HEADER = ("| study | claim | kind | published | tolerance | rldse p50 (p5–p95), worst "
          "configuration | verdict |")


def claims_table(claims: pd.DataFrame) -> str:
    """study | claim | kind | published | tolerance | rldse p50 (p5–p95) | verdict."""
    lines = [HEADER, "|---|---|---|---|---|---|---|"]
    lines += [f"| {r.study} | {_cell(r.claim)} | {r.kind} | {_cell(r.published)} | "
              f"{_cell(r.tolerance)} | {_band(r)} | {r.verdict} |"
              for r in claims.itertuples(index=False)]
    return "\n".join(lines)


def write_doc(path: Path, table: str) -> Path:
    """Replace the claims table in `path` by `table` (rldse.files.replace_markdown_table)."""
    from rldse.files import replace_markdown_table

    # the first columns only: a table written before a column was added is still found
    return replace_markdown_table(path, "| study | claim | kind | published |", table,
                                  "--doc")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m rldse.studies.claims",
                                     description="every study's claims as a markdown table")
    parser.add_argument("root", nargs="?", default="studies", help="the studies folder")
    parser.add_argument("--doc", type=Path, metavar="PATH",
                        help="write the table over the claims table in PATH "
                        "(docs/validation.md)")
    args = parser.parse_args(argv)
    try:
        table = claims_table(load_claims(args.root))
        print(table if args.doc is None else write_doc(args.doc, table))
    except RldseError as exc:
        print(f"rldse: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
