"""The one verdict rule: reproduced only when the p50 lies inside the claim's stated
tolerance; consistent within uncertainty when only the p5-p95 band overlaps it; not
reproduced otherwise. Per-configuration claims: a claim that fails in one configuration
cannot read "reproduced" because pooling every configuration's draws overlaps it."""

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
    Tolerance,
    band_verdict,
    configurations_verdict,
)

FASTER = Tolerance.at_least(1.25, "x", "faster")


@pytest.mark.parametrize(("band", "verdict"), [
    ((4.0, 5.0, 6.0), "reproduced"),  # p50 within ±25 % of 5.3
    ((3.0, 3.8, 4.5), "consistent within uncertainty"),  # p50 below 3.975, band overlaps
    ((8.0, 12.4, 15.0), "not reproduced"),  # TimeRL's 12.4x against 5.3x
])
def test_point_claims_need_the_p50_within_25_percent(band, verdict):
    tol = Tolerance.around(5.3, "x")
    assert (tol.low, tol.high) == pytest.approx((3.975, 6.625))
    assert band_verdict(*band, tol) == verdict
    assert Claim.banded("r", published="5.3x", low=5.3, high=None, p5=band[0], p50=band[1],
                        p95=band[2], unit="x").verdict == verdict


def test_a_range_is_its_own_tolerance_and_an_open_range_needs_one():
    # AMPER's eager row: p50 1,322x, band 252-3,271 against 55-270x
    c = Claim.banded("eager", published="55-270x", low=55, high=270, p5=252, p50=1322,
                     p95=3271, unit="x")
    assert c.verdict == "consistent within uncertainty"
    assert c.tolerance == "p50 inside the published 55-270x"
    with pytest.raises(ValueError, match="open published range"):
        Claim.banded("q", published="faster", low=1, high=math.inf, p5=1, p50=2, p95=3)
    # a qualitative claim states its threshold: a 0.52-1.8 band no longer reads reproduced
    q = Claim.banded("q", published="faster", low=1, high=math.inf, p5=0.52, p50=1.0,
                     p95=1.8, tolerance=FASTER)
    assert q.verdict == "consistent within uncertainty" and q.tolerance.startswith("p50 ≥ 1.25")


def test_pooled_band_reproduces_but_one_configuration_misses():
    rng = np.random.default_rng(0)
    # "PIM faster": FrozenLake's draws sit at 3-5x, Taxi's at 0.2-0.5x
    frozen, taxi = rng.uniform(3, 5, 20), rng.uniform(0.2, 0.5, 20)
    assert band_verdict(*percentiles(np.concatenate([frozen, taxi])), FASTER) != \
        "not reproduced"
    c = Claim.per_configuration("PIM faster", published="PIM faster", low=1.0, high=math.inf,
                                bands={"FrozenLake": percentiles(frozen),
                                       "Taxi": percentiles(taxi)}, unit="x", tolerance=FASTER)
    assert c.verdict == "not reproduced"
    # the row's band is the worst configuration's, and the reason names it with its p50
    assert (c.p5, c.p50, c.p95) == percentiles(taxi)
    assert c.note.startswith("1 of 2 configurations' p50 miss the tolerance (p50 ≥ 1.25x")
    assert f"Taxi {c.p50:.3g}x" in c.note and "FrozenLake" not in c.note
    assert c.difference == "1 of 2 configurations' p50 within tolerance"


@pytest.mark.parametrize(("bands", "verdict"), [
    ({"a": (1.2, 1.5, 2.0), "b": (1.0, 1.3, 1.4)}, "reproduced"),
    ({"a": (1.2, 1.5, 2.0), "b": (0.9, 1.1, 1.4)}, "consistent within uncertainty"),
    ({"a": (1.2, 1.5, 2.0), "b": (0.1, 0.2, 0.3)}, "not reproduced"),
    ({"a": (0.01, 0.02, 0.03)}, "not reproduced"),
])
def test_configuration_verdicts_combine(bands, verdict):
    c = Claim.per_configuration("x", published="≥ 1", low=1.0, high=math.inf, bands=bands,
                                tolerance=FASTER)
    assert c.verdict == verdict
    assert [r[4] for r in c.configurations] == [band_verdict(*b, FASTER)
                                                for b in bands.values()]
    assert c.verdict == configurations_verdict(r[4] for r in c.configurations)
    assert ("miss" in c.note) == (verdict != "reproduced")


def test_published_range_and_worst_band():
    c = Claim.per_configuration("x", published="55-270x", low=55, high=270,
                                bands={"small": (60, 100, 200), "big": (300, 400, 500),
                                       "mid": (50, 300, 700)})
    assert c.verdict == "not reproduced" and c.p50 == 400  # "big" lies farthest
    assert "(p50 inside the published 55-270): big 400; mid 300" in c.note
    point = Claim.per_configuration("x", published="2", low=2.0, high=None,
                                    bands={"one": (1.5, 2.4, 3.0)})
    assert point.verdict == "reproduced" and point.note == ""


def test_reason_names_at_most_a_few_misses_and_keeps_the_note():
    bands = {f"c{i}": (0.1 + i / 100, 0.2, 0.3) for i in range(12)}
    c = Claim.per_configuration("x", published="≥ 1", low=1.0, high=math.inf, bands=bands,
                                note="why it misses", tolerance=FASTER)
    assert c.verdict == "not reproduced"
    assert "and 4 more (report.md)" in c.note and c.note.endswith(". why it misses")
    with pytest.raises(ValueError, match="no configurations"):
        Claim.per_configuration("x", published="1", low=1.0, high=None, bands={})


def test_report_writes_the_row_its_tolerance_and_every_configuration(tmp_path):
    r = Report("s", "t", "src", draws=48)
    r.claims.append(Claim("boolean", "yes", "yes", "same", "reproduced", tolerance="same"))
    r.claims.append(Claim.per_configuration("ratio", published="≥ 1", low=1.0,
                                            high=math.inf, bands={"A": (2.0, 3.0, 4.0),
                                                                  "B": (1.0, 1.2, 1.3)},
                                            tolerance=FASTER))
    r.claims.append(Claim.banded("point", published="5", low=5.0, high=None, p5=4.0,
                                 p50=5.0, p95=6.0))
    text = r.write(tmp_path).read_text()
    frame = pd.read_csv(tmp_path / "claims.csv")
    assert list(frame.columns) == list(CLAIMS_COLUMNS) and len(frame) == 3
    assert frame.draws.isna().iloc[0] and frame.draws.iloc[1:].tolist() == [48, 48]
    assert "Bands: p5/p50/p95 over 48 Latin-hypercube draws" in text
    frame = frame.iloc[1:]
    row = frame.iloc[0]
    assert (row.p5, row.p50, row.p95, row.verdict) == (1.0, 1.2, 1.3,
                                                       "consistent within uncertainty")
    assert row.tolerance == FASTER.text
    assert frame.iloc[1].verdict == "reproduced"
    assert frame.iloc[1].tolerance == "p50 within ±25% of 5 (3.75-6.25)"
    assert "## Per configuration: ratio" in text
    assert "| A | 2 | 3 | 4 | reproduced |" in text
    assert "| B | 1 | 1.2 | 1.3 | consistent within uncertainty |" in text
