"""What every study writes: results.csv, PNG figures, claims.csv (every claim as data), and
report.md with each claim set against the published value, rldse's band and the verdict.

Verdicts come from the band (p5..p95 over every assumed or UNVERIFIED parameter's range,
rldse.sim.bands), never from one point: `band_verdict` is the one rule. Where a claim
holds for several configurations (environments, DPU counts, buffer sizes), each
configuration gets its own band from the parameter draws (`Claim.per_configuration`):
pooling configurations and draws into one band lets a claim that fails in some
configurations read "reproduced".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pandas as pd

Verdict = Literal["reproduced", "partly reproduced", "not reproduced", "not comparable"]
Kind = Literal["reproduction", "consistency"]  # consistency: the paper's own numbers fed back
CLAIMS_COLUMNS = ("study", "claim", "kind", "published", "p5", "p50", "p95", "verdict", "reason")
#: a per-configuration claim's reason names at most this many missing configurations (the
#: report's per-configuration section lists them all)
MISSES_NAMED = 8


def _miss(lo: float, hi: float, low: float, high: float) -> float:
    """How far the band [lo, hi] lies from the published [low, high], in units of
    `band_verdict`'s "partly" margin: 0 when they overlap, else log2 of the factor it
    misses by (positive values), or the gap over a quarter of the published magnitude."""
    if hi >= low and lo <= high:
        return 0.0
    if lo > 0 and low > 0:
        return math.log2(low / hi if hi < low else lo / high)
    return min(abs(hi - low), abs(lo - high)) / (0.25 * max(abs(low), abs(high), 1e-300))


def band_verdict(p5: float, p95: float, low: float, high: float | None = None) -> Verdict:
    """Reproduced when the band [p5, p95] overlaps the published value or range [low, high];
    partly reproduced when it misses by at most a factor of 2 (values of either sign: by at
    most a quarter of the published magnitude); otherwise not reproduced."""
    miss = _miss(min(p5, p95), max(p5, p95), low, low if high is None else high)
    if miss == 0.0:
        return "reproduced"
    return "partly reproduced" if miss <= 1.0 else "not reproduced"


def configurations_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """One claim's verdict from its configurations' `band_verdict`s: reproduced when every
    configuration's band overlaps the published value or range; partly reproduced when
    some do, or when all miss within band_verdict's "partly" margin; otherwise not."""
    vs = list(verdicts)
    if all(v == "reproduced" for v in vs):
        return "reproduced"
    if any(v == "reproduced" for v in vs) or all(v == "partly reproduced" for v in vs):
        return "partly reproduced"
    return "not reproduced"


def _published_range(low: float, high: float, unit: str) -> str:
    if math.isinf(high):
        return f"≥ {low:g}{unit}"
    return f"{low:g}{unit}" if high == low else f"{low:g}-{high:g}{unit}"


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
    #: per-configuration claims: (configuration, p5, p50, p95, its band_verdict), each band
    #: over the parameter draws only
    configurations: tuple[tuple[str, float, float, float, Verdict], ...] = ()

    @classmethod
    def banded(cls, claim: str, *, published: str, low: float, high: float | None,
               p5: float, p50: float, p95: float, unit: str = "", kind: Kind = "reproduction",
               note: str = "") -> Claim:
        """A claim judged by `band_verdict` on rldse's p5..p95 against [low, high]."""
        verdict = band_verdict(p5, p95, low, high)
        mid = low if high is None else (low + high) / 2
        return cls(claim, published, f"{p50:.3g}{unit} (p5-p95 {p5:.3g}-{p95:.3g}{unit})",
                   pct(p50, mid), verdict, note, kind, p5, p50, p95)

    @classmethod
    def per_configuration(cls, claim: str, *, published: str, low: float,
                          high: float | None, bands: Mapping[str, tuple[float, float, float]],
                          unit: str = "", kind: Kind = "reproduction", note: str = "") -> Claim:
        """A claim that must hold in every configuration: `bands` maps each configuration
        to its own p5/p50/p95 over the parameter draws, each judged by `band_verdict`
        against [low, high] (high inf: at least low), combined by `configurations_verdict`.
        The row's p5/p50/p95 are the worst configuration's band (the one farthest from
        the published range), not an envelope; the reason names the configurations that
        miss, with their p50."""
        if not bands:
            raise ValueError(f"{claim}: no configurations")
        top = low if high is None else high
        rows = tuple((label, *b, band_verdict(b[0], b[2], low, top))
                     for label, b in bands.items())
        worst = max(rows, key=lambda r: (_miss(r[1], r[3], low, top),
                                         _miss(r[2], r[2], low, top)))
        misses = sorted((r for r in rows if r[4] != "reproduced"),
                        key=lambda r: -_miss(r[1], r[3], low, top))
        n, hits = len(rows), len(rows) - len(misses)
        why = ""
        if misses:
            named = "; ".join(f"{r[0]} {r[2]:.3g}{unit}" for r in misses[:MISSES_NAMED])
            more = (f"; and {len(misses) - MISSES_NAMED} more (report.md)"
                    if len(misses) > MISSES_NAMED else "")
            why = (f"{len(misses)} of {n} configurations' p5-p95 bands miss "
                   f"{_published_range(low, top, unit)} (p50 given): {named}{more}")
        _, p5, p50, p95, _ = worst
        simulated = (f"worst of {n} configurations, {worst[0]}: {p50:.3g}{unit} (p5-p95 "
                     f"{p5:.3g}-{p95:.3g}{unit})")
        return cls(claim, published, simulated, f"{hits} of {n} configurations' bands overlap",
                   configurations_verdict(r[4] for r in rows),
                   ". ".join(t for t in (why, note) if t), kind, p5, p50, p95, rows)


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
        for c in (c for c in self.claims if c.configurations):
            lines += ["", f"## Per configuration: {c.claim}", "",
                      f"Published: {c.published}. Each band over the parameter draws only.",
                      "", "| configuration | p5 | p50 | p95 | verdict |", "|---|---|---|---|---|"]
            lines += [f"| {lab} | {a:.3g} | {b:.3g} | {h:.3g} | {v} |"
                      for lab, a, b, h, v in c.configurations]
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
