"""What every study writes: results.csv, PNG figures, claims.csv (every claim as data), and
report.md with each claim set against the published value, rldse's band and the verdict.

Verdicts come from the band (p5/p50/p95 over every assumed or UNVERIFIED parameter's
range, rldse.sim.bands) against a tolerance each claim states (`Tolerance`, claims.csv's
tolerance column): `band_verdict` is the one rule. Reproduced needs the p50 inside the
tolerance; a band that only overlaps it is "consistent within uncertainty". Where a claim
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

Verdict = Literal["reproduced", "consistent within uncertainty", "not reproduced",
                  "not comparable"]
#: reproduction: the paper's program against its published value; consistency: the paper's
#: own numbers fed back, or rldse checked against itself; what-if: a program other than the
#: paper's (its verdict says whether that program would bear the claim out, never that the
#: paper's program does); prediction: rldse's answer where nothing published can be read
#: to compare it with (verdict "not comparable")
Kind = Literal["reproduction", "consistency", "what-if", "prediction"]
CLAIMS_COLUMNS = ("study", "claim", "kind", "published", "tolerance", "p5", "p50", "p95",
                  "draws", "verdict", "reason")
#: a point value's tolerance: rldse's p50 within ±25 % of it reproduces it
POINT_TOLERANCE = 0.25
#: a per-configuration claim's reason names at most this many missing configurations (the
#: report's per-configuration section lists them all)
MISSES_NAMED = 8


@dataclass(frozen=True)
class Tolerance:
    """The window [low, high] rldse's p50 must lie in for a claim to read "reproduced", and
    the words that state it (claims.csv: tolerance). A published range is its own window; a
    published point gets ±25 % (`around`); a qualitative claim ("faster", "grows") gets
    the threshold the paper implies, stated by the study (`at_least`)."""

    low: float
    high: float
    text: str

    @classmethod
    def around(cls, value: float, unit: str = "", rel: float = POINT_TOLERANCE) -> Tolerance:
        a, b = sorted((value * (1 - rel), value * (1 + rel)))
        return cls(a, b, f"p50 within ±{rel:.0%} of {value:g}{unit} ({a:.3g}-{b:.3g}{unit})")

    @classmethod
    def within(cls, low: float, high: float, unit: str = "") -> Tolerance:
        return cls(low, high, f"p50 inside the published {low:.3g}-{high:.3g}{unit}")

    @classmethod
    def at_least(cls, low: float, unit: str = "", why: str = "") -> Tolerance:
        return cls(low, math.inf, f"p50 ≥ {low:.3g}{unit}" + (f" ({why})" if why else ""))

    @classmethod
    def of(cls, low: float, high: float | None, unit: str = "") -> Tolerance:
        """The default window for a published value (high None) or range; an open range
        (high inf) has no default: its claim states the paper's threshold."""
        if high is None or high == low:
            return cls.around(low, unit)
        if math.isinf(high):
            raise ValueError("an open published range needs a stated Tolerance")
        return cls.within(low, high, unit)


def _miss(lo: float, hi: float, low: float, high: float) -> float:
    """How far [lo, hi] lies from the window [low, high], used only to rank
    configurations: 0 when they overlap, else log2 of the factor it misses by (positive
    values), or the gap over the window's magnitude."""
    if hi >= low and lo <= high:
        return 0.0
    if lo > 0 and low > 0:
        return math.log2(low / hi if hi < low else lo / high)
    return min(abs(hi - low), abs(lo - high)) / max(abs(low), abs(high), 1e-300)


def band_verdict(p5: float, p50: float, p95: float, tol: Tolerance) -> Verdict:
    """Reproduced when rldse's p50 lies inside the claim's tolerance window; consistent
    within uncertainty when only the p5-p95 band overlaps the window; otherwise not
    reproduced."""
    if tol.low <= p50 <= tol.high:
        return "reproduced"
    if _miss(min(p5, p95), max(p5, p95), tol.low, tol.high) == 0.0:
        return "consistent within uncertainty"
    return "not reproduced"


def configurations_verdict(verdicts: Iterable[Verdict]) -> Verdict:
    """One claim's verdict from its configurations' `band_verdict`s: reproduced when every
    configuration reproduces it; consistent within uncertainty when every configuration
    is at least consistent; otherwise not reproduced."""
    vs = list(verdicts)
    if all(v == "reproduced" for v in vs):
        return "reproduced"
    if all(v in ("reproduced", "consistent within uncertainty") for v in vs):
        return "consistent within uncertainty"
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
    #: per-configuration claims: (configuration, p5, p50, p95, its band_verdict), each band
    #: over the parameter draws only
    configurations: tuple[tuple[str, float, float, float, Verdict], ...] = ()
    tolerance: str = ""  # what "reproduced" requires (claims.csv: tolerance)

    @classmethod
    def banded(cls, claim: str, *, published: str, low: float, high: float | None,
               p5: float, p50: float, p95: float, unit: str = "", kind: Kind = "reproduction",
               note: str = "", tolerance: Tolerance | None = None) -> Claim:
        """A claim judged by `band_verdict` on rldse's p5/p50/p95 against its tolerance
        (default `Tolerance.of(low, high)`)."""
        tol = tolerance or Tolerance.of(low, high, unit)
        verdict = band_verdict(p5, p50, p95, tol)
        mid = low if high is None or math.isinf(high) else (low + high) / 2
        return cls(claim, published, f"{p50:.3g}{unit} (p5-p95 {p5:.3g}-{p95:.3g}{unit})",
                   pct(p50, mid), verdict, note, kind, p5, p50, p95, tolerance=tol.text)

    @classmethod
    def per_configuration(cls, claim: str, *, published: str, low: float,
                          high: float | None, bands: Mapping[str, tuple[float, float, float]],
                          unit: str = "", kind: Kind = "reproduction", note: str = "",
                          tolerance: Tolerance | None = None) -> Claim:
        """A claim that must hold in every configuration: `bands` maps each configuration
        to its own p5/p50/p95 over the parameter draws, each judged by `band_verdict`
        against the tolerance (default `Tolerance.of(low, high)`), combined by
        `configurations_verdict`. The row's p5/p50/p95 are the worst configuration's band
        (its p50 farthest from the window), not an envelope; the reason names the
        configurations that do not reproduce it, with their p50."""
        if not bands:
            raise ValueError(f"{claim}: no configurations")
        tol = tolerance or Tolerance.of(low, high, unit)
        rows = tuple((label, *b, band_verdict(*b, tol)) for label, b in bands.items())
        worst = max(rows, key=lambda r: (_miss(r[2], r[2], tol.low, tol.high),
                                         _miss(r[1], r[3], tol.low, tol.high)))
        misses = sorted((r for r in rows if r[4] != "reproduced"),
                        key=lambda r: -_miss(r[2], r[2], tol.low, tol.high))
        n, hits = len(rows), len(rows) - len(misses)
        why = ""
        if misses:
            named = "; ".join(f"{r[0]} {r[2]:.3g}{unit}" for r in misses[:MISSES_NAMED])
            more = (f"; and {len(misses) - MISSES_NAMED} more (report.md)"
                    if len(misses) > MISSES_NAMED else "")
            why = (f"{len(misses)} of {n} configurations' p50 miss the tolerance "
                   f"({tol.text}): {named}{more}")
        _, p5, p50, p95, _ = worst
        simulated = (f"worst of {n} configurations, {worst[0]}: {p50:.3g}{unit} (p5-p95 "
                     f"{p5:.3g}-{p95:.3g}{unit})")
        return cls(claim, published, simulated,
                   f"{hits} of {n} configurations' p50 within tolerance",
                   configurations_verdict(r[4] for r in rows),
                   ". ".join(t for t in (why, note) if t), kind, p5, p50, p95, rows, tol.text)


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
    draws: int | None = None  # Latin-hypercube draws behind every band (claims.csv: draws)

    def claims_frame(self) -> pd.DataFrame:
        """claims.csv's rows: one per claim, columns CLAIMS_COLUMNS."""
        rows = [{"study": self.name, "claim": c.claim, "kind": c.kind, "published": c.published,
                 "tolerance": c.tolerance, "p5": c.p5, "p50": c.p50, "p95": c.p95,
                 "draws": self.draws if c.p5 is not None and c.p5 != c.p95 else None,
                 "verdict": c.verdict,
                 "reason": c.note} for c in self.claims]
        return pd.DataFrame(rows, columns=list(CLAIMS_COLUMNS)).astype({"draws": "Int64"})

    def write(self, out_dir: Path) -> Path:
        from rldse.files import atomic_write, atomic_write_text

        out_dir.mkdir(parents=True, exist_ok=True)
        frame = self.claims_frame()
        atomic_write(out_dir / "claims.csv", lambda tmp: frame.to_csv(tmp, index=False))
        lines = [f"# {self.title}", "", f"Source: {self.source}", ""]
        if self.summary:
            lines += [self.summary, ""]
        lines += ["## Claims", ""]
        if self.draws is not None:
            lines += [f"Bands: p5/p50/p95 over {self.draws} Latin-hypercube draws of every "
                      "ranged preset number.", ""]
        lines += ["| claim | kind | published | tolerance | rldse | difference "
                  "| verdict |", "|---|---|---|---|---|---|---|"]
        for c in self.claims:
            lines.append(f"| {c.claim} | {c.kind} | {c.published} | {c.tolerance} | "
                         f"{c.simulated} | {c.difference} | {c.verdict} |")
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
