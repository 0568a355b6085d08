"""The claims table of docs/validation.md is generated from every study's claims.csv."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from rldse.studies.claims import claims_table, load_claims, main
from rldse.studies.report import CLAIMS_COLUMNS

#: study folders, in the name order the table follows (not the order they are made in)
STUDIES = ("alpha", "beta", "gamma")


def _write(root: Path, name: str, rows: list[dict]) -> None:
    out = root / name / "out"
    out.mkdir(parents=True)
    (root / name / "study.yaml").write_text(f"module: mod_{name}\n")
    pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS)).to_csv(out / "claims.csv", index=False)


def _studies(root: Path) -> None:
    for i, name in enumerate(STUDIES[::-1]):
        _write(root, name, [
            {"study": name, "claim": f"claim {i} | piped", "kind": "reproduction",
             "published": "5.3×", "tolerance": "p50 within ±25% of 5.3", "p5": 1.0,
             "p50": 2.0, "p95": 3.5, "verdict": "consistent within uncertainty",
             "reason": "why"},
            {"study": name, "claim": "same pattern", "kind": "consistency",
             "published": "yes", "verdict": "reproduced"}])


def test_table_has_every_study_folder_in_name_order(tmp_path):
    _studies(tmp_path)
    claims = load_claims(tmp_path)
    assert list(dict.fromkeys(claims.study)) == list(STUDIES)
    lines = claims_table(claims).splitlines()
    assert len(lines) == 2 + 2 * len(STUDIES)
    assert lines[2] == (f"| {STUDIES[0]} | claim 2 / piped | reproduction | 5.3× | "
                        "p50 within ±25% of 5.3 | 2 (1–3.5) | consistent within uncertainty |")
    assert lines[3].endswith("| consistency | yes |  | – | reproduced |")


def test_missing_or_malformed_file_is_one_line_error(tmp_path, capsys):
    _studies(tmp_path)
    (tmp_path / STUDIES[1] / "out" / "claims.csv").unlink()
    assert main([str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("rldse: error: ") and f"rldse study run {STUDIES[1]}" in err
    assert "\n" not in err
    pd.DataFrame({"study": ["x"]}).to_csv(tmp_path / STUDIES[1] / "out" / "claims.csv",
                                          index=False)
    assert main([str(tmp_path)]) == 2
    assert "missing column(s) claim" in capsys.readouterr().err


def test_doc_table_is_replaced_in_place(tmp_path, capsys):
    _studies(tmp_path)
    readme = tmp_path / "validation.md"
    readme.write_text("# x\n\nbefore\n\n| study | claim | kind | published | rldse p50 (p5–p95) "
                      "| verdict |\n|---|---|\n| old | row |\n\nafter\n")
    assert main([str(tmp_path), "--doc", str(readme)]) == 0
    text = readme.read_text()
    assert "| old | row |" not in text and text.startswith("# x\n\nbefore\n\n| study |")
    assert text.endswith("|\n\nafter\n")
    assert claims_table(load_claims(tmp_path)) in text
    (tmp_path / "other.md").write_text("no table\n")
    assert main([str(tmp_path), "--doc", str(tmp_path / "other.md")]) == 2
    assert "--doc" in capsys.readouterr().err
