"""What every study writes: results.csv, PNG figures, claims.csv (every claim as data), and
report.md with each claim set against the published value, rldse's band and the verdict.

Verdicts come from the band (p5..p95 over every assumed or UNVERIFIED parameter's range,
rldse.sim.bands), never from one point: `band_verdict` is the one rule.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

Verdict = Literal["reproduced", "partly reproduced", "not reproduced", "not comparable"]
Kind = Literal["reproduction", "consistency"]  # consistency: the paper's own numbers fed back
CLAIMS_COLUMNS = ("study", "claim", "kind", "published", "p5", "p50", "p95", "verdict", "reason")


def band_verdict(p5: float, p95: float, low: float, high: float | None = None) -> Verdict:
    """Reproduced when the band [p5, p95] overlaps the published value or range [low, high];
    partly reproduced when it misses by at most a factor of 2 (values of either sign: by at
    most a quarter of the published magnitude); otherwise not reproduced."""
    high = low if high is None else high
    lo_b, hi_b = min(p5, p95), max(p5, p95)
    if hi_b >= low and lo_b <= high:
        return "reproduced"
    if lo_b > 0 and low > 0:
        near = (low / hi_b if hi_b < low else lo_b / high) <= 2.0
    else:
        near = min(abs(hi_b - low), abs(lo_b - high)) <= 0.25 * max(abs(low), abs(high))
    if near:
        return "partly reproduced"
    return "not reproduced"


@dataclass(frozen=True)
class Claim:
    """One published claim, and what this run of rldse found."""

    claim: str
    published: str
    simulated: str
    difference: str
    verdict: Verdict
    note: str = ""  # the most likely reason where they disagree (claims.csv: reason)
    kind: Kind = "reproduction"
    p5: float | None = None  # rldse's band on the claimed quantity (None: not banded)
    p50: float | None = None
    p95: float | None = None

    @classmethod
    def banded(cls, claim: str, *, published: str, low: float, high: float | None,
               p5: float, p50: float, p95: float, unit: str = "", kind: Kind = "reproduction",
               note: str = "") -> Claim:
        """A claim judged by `band_verdict` on rldse's p5..p95 against [low, high]."""
        verdict = band_verdict(p5, p95, low, high)
        mid = low if high is None else (low + high) / 2
        return cls(claim, published, f"{p50:.3g}{unit} (p5-p95 {p5:.3g}-{p95:.3g}{unit})",
                   pct(p50, mid), verdict, note, kind, p5, p50, p95)


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
        """claims.csv's rows: one per claim, columns CLAIMS_COLUMNS."""
        rows = [{"study": self.name, "claim": c.claim, "kind": c.kind, "published": c.published,
                 "p5": c.p5, "p50": c.p50, "p95": c.p95, "verdict": c.verdict,
                 "reason": c.note} for c in self.claims]
        return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS))

    def write(self, out_dir: Path) -> Path:
        from rldse.files import atomic_write, atomic_write_text

        out_dir.mkdir(parents=True, exist_ok=True)
        frame = self.claims_frame()
        atomic_write(out_dir / "claims.csv", lambda tmp: frame.to_csv(tmp, index=False))
        lines = [f"# {self.title}", "", f"Source: {self.source}", ""]
        if self.summary:
            lines += [self.summary, ""]
        lines += ["## Claims", "", "| claim | kind | published | rldse | difference | verdict |",
                  "|---|---|---|---|---|---|"]
        for c in self.claims:
            lines.append(f"| {c.claim} | {c.kind} | {c.published} | {c.simulated} | "
                         f"{c.difference} | {c.verdict} |")
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
        return atomic_write_text(out_dir / "report.md", "\n".join(lines))


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
