"""Verdicts come from per-configuration bands: a claim that fails in one configuration
cannot read "reproduced" because pooling every configuration's draws overlaps the
published value."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rldse.sim.bands import percentiles
from rldse.studies.report import (
    CLAIMS_COLUMNS,
    Claim,
    Report,
    band_verdict,
    configurations_verdict,
)


def test_pooled_band_overlaps_but_one_configuration_misses():
    rng = np.random.default_rng(0)
    # "PIM faster" (ratio >= 1): FrozenLake's draws sit at 3-5x, Taxi's at 0.2-0.5x
    frozen, taxi = rng.uniform(3, 5, 20), rng.uniform(0.2, 0.5, 20)
    pooled = percentiles(np.concatenate([frozen, taxi]))
    assert band_verdict(pooled[0], pooled[2], 1.0, math.inf) == "reproduced"
    c = Claim.per_configuration("PIM faster", published="PIM faster", low=1.0, high=math.inf,
                                bands={"FrozenLake": percentiles(frozen),
                                       "Taxi": percentiles(taxi)}, unit="x")
    assert c.verdict == "partly reproduced"
    # the row's band is the worst configuration's, and the reason names it with its p50
    assert (c.p5, c.p50, c.p95) == percentiles(taxi)
    assert c.note.startswith("1 of 2 configurations' p5-p95 bands miss ≥ 1x")
    assert f"Taxi {c.p50:.3g}x" in c.note and "FrozenLake" not in c.note
    assert c.difference == "1 of 2 configurations' bands overlap"


@pytest.mark.parametrize(("bands", "verdict"), [
    ({"a": (1.2, 1.5, 2.0), "b": (0.9, 1.1, 1.4)}, "reproduced"),
    ({"a": (1.2, 1.5, 2.0), "b": (0.1, 0.2, 0.3)}, "partly reproduced"),
    ({"a": (0.6, 0.7, 0.8), "b": (0.55, 0.6, 0.9)}, "partly reproduced"),  # all within 2x
    ({"a": (0.6, 0.7, 0.8), "b": (0.1, 0.2, 0.3)}, "not reproduced"),
    ({"a": (0.01, 0.02, 0.03)}, "not reproduced"),
])
def test_configuration_verdicts_combine(bands, verdict):
    c = Claim.per_configuration("x", published="≥ 1", low=1.0, high=math.inf, bands=bands)
    assert c.verdict == verdict
    assert [r[4] for r in c.configurations] == [band_verdict(b[0], b[2], 1.0, math.inf)
                                                for b in bands.values()]
    assert c.verdict == configurations_verdict(r[4] for r in c.configurations)
    assert ("miss" in c.note) == (verdict != "reproduced")


def test_published_point_and_range_and_worst_band():
    c = Claim.per_configuration("x", published="55-270x", low=55, high=270,
                                bands={"small": (60, 100, 200), "big": (300, 400, 500),
                                       "mid": (50, 300, 700)})
    assert c.verdict == "partly reproduced" and c.p50 == 400  # "big" lies farthest
    assert "55-270 (p50 given): big 400" in c.note
    point = Claim.per_configuration("x", published="2", low=2.0, high=None,
                                    bands={"one": (1.5, 2.5, 3.0)})
    assert point.verdict == "reproduced" and point.note == ""


def test_reason_names_at_most_a_few_misses_and_keeps_the_note():
    bands = {f"c{i}": (0.1 + i / 100, 0.2, 0.3) for i in range(12)}
    c = Claim.per_configuration("x", published="≥ 1", low=1.0, high=math.inf, bands=bands,
                                note="why it misses")
    assert c.verdict == "not reproduced"
    assert "and 4 more (report.md)" in c.note and c.note.endswith(". why it misses")
    with pytest.raises(ValueError, match="no configurations"):
        Claim.per_configuration("x", published="1", low=1.0, high=None, bands={})


def test_report_writes_the_row_and_every_configuration(tmp_path):
    r = Report("s", "t", "src")
    r.claims.append(Claim.per_configuration("ratio", published="≥ 1", low=1.0,
                                            high=math.inf, bands={"A": (2.0, 3.0, 4.0),
                                                                  "B": (0.2, 0.3, 0.4)}))
    r.claims.append(Claim.banded("old form", published="5", low=5.0, high=None, p5=4.0,
                                 p50=5.0, p95=6.0))
    text = r.write(tmp_path).read_text()
    frame = pd.read_csv(tmp_path / "claims.csv")
    assert list(frame.columns) == list(CLAIMS_COLUMNS) and len(frame) == 2
    row = frame.iloc[0]
    assert (row.p5, row.p50, row.p95, row.verdict) == (0.2, 0.3, 0.4, "partly reproduced")
    assert frame.iloc[1].verdict == "reproduced"
    assert "## Per configuration: ratio" in text
    assert "| A | 2 | 3 | 4 | reproduced |" in text
    assert "| B | 0.2 | 0.3 | 0.4 | not reproduced |" in text
