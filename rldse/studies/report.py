"""What every study writes: results.csv, PNG figures, and report.md with each claim set
against the published value, the simulated value and their difference."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

Verdict = Literal["reproduced", "partly reproduced", "not reproduced", "not comparable"]


@dataclass(frozen=True)
class Claim:
    """One published claim, and what this run of rldse found."""

    claim: str
    published: str
    simulated: str
    difference: str
    verdict: Verdict
    note: str = ""  # the most likely reason where they disagree


@dataclass
class Report:
    """A study's report, built up by the study and written once at the end."""

    name: str
    title: str
    source: str  # the paper, with its identifier
    summary: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    claims: list[Claim] = field(default_factory=list)
    figures: list[tuple[Path, str]] = field(default_factory=list)  # (file, caption)
    sections: list[tuple[str, str]] = field(default_factory=list)  # (heading, markdown)

    def claims_frame(self) -> pd.DataFrame:
        return pd.DataFrame([c.__dict__ for c in self.claims])

    def write(self, out_dir: Path) -> Path:
        out_dir.mkdir(parents=True, exist_ok=True)
        lines = [f"# {self.title}", "", f"Source: {self.source}", ""]
        if self.summary:
            lines += [self.summary, ""]
        lines += ["## Claims", "", "| claim | published | rldse | difference | verdict |",
                  "|---|---|---|---|---|"]
        for c in self.claims:
            lines.append(f"| {c.claim} | {c.published} | {c.simulated} | {c.difference} | "
                         f"{c.verdict} |")
        notes = [c for c in self.claims if c.note]
        if notes:
            lines += ["", "Where they differ, and why (most likely):", ""]
            lines += [f"- *{c.claim}*: {c.note}" for c in notes]
        for heading, body in self.sections:
            lines += ["", f"## {heading}", "", body]
        if self.figures:
            lines += ["", "## Figures", ""]
            for path, caption in self.figures:
                lines += [f"![{caption}]({path.name})", "", f"*{caption}*", ""]
        lines += ["", "## Parameters", "", "| parameter | value |", "|---|---|"]
        lines += [f"| {k} | {v} |" for k, v in self.parameters.items()]
        lines.append("")
        path = out_dir / "report.md"
        path.write_text("\n".join(lines))
        return path


def markdown_table(df: pd.DataFrame, digits: int = 4) -> str:
    """A DataFrame as a GitHub markdown table (numbers to `digits` significant digits)."""
    def cell(v) -> str:
        return f"{v:.{digits}g}" if isinstance(v, float) else str(v)

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "---|" * len(df.columns)
    body = ["| " + " | ".join(cell(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body])


def pct(simulated: float, published: float) -> str:
    """Signed relative difference as text."""
    return f"{(simulated - published) / published:+.1%}" if published else "n/a"
