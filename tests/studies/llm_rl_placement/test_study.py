"""The placement study on a copy with fewer splits and band draws: the anchor row comes
back at its published time (the study's mean length is the verl validation's), the
protocols keep their order at every split, the claims are banded data with a verdict,
and two runs write the same claims, byte for byte."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rldse.studies import run_study

ROOT = Path(__file__).resolve().parents[3]


def _copy(tmp_path: Path) -> Path:
    dst = tmp_path / "studies" / "llm_rl_placement"
    shutil.copytree(ROOT / "studies" / "llm_rl_placement", dst,
                    ignore=shutil.ignore_patterns("out"))
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "llm_rl_grpo.parquet").symlink_to(
        ROOT / "traces" / "llm_rl_grpo.parquet")
    (tmp_path / "examples").mkdir()
    shutil.copy(ROOT / "examples" / "verl_h20.yaml", tmp_path / "examples")
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params.update(bands=2, rollout_gpus=[32, 64, 96])
    (dst / "study.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    return tmp_path / "studies"


@pytest.fixture(scope="module")
def out(tmp_path_factory):
    report = run_study("llm_rl_placement", _copy(tmp_path_factory.mktemp("a")),
                       progress=False)
    return report.parent


def test_the_anchor_row_is_the_validations(out):
    results = pd.read_csv(out / "results.csv").set_index("configuration")
    # the 32-GPU colocated row's mean length is inferred from its 790.10 s step
    assert results.loc["colocated 32", "step_s"] == pytest.approx(790.10, rel=0.01)
    assert results.fits.all()


def test_protocols_keep_their_order_at_every_split(out):
    r = pd.read_csv(out / "results.csv")
    step = r.set_index("configuration").step_s
    for split in ("32:96", "64:64", "96:32"):
        assert step[f"one_step_off {split}"] <= step[f"disaggregated {split}"]
        assert step[f"async, staleness 0.5, partial {split}"] <= \
            step[f"async, staleness 0 {split}"]
    stale = [step[f"staleness {s} 64:64"] for s in ("0", "0.1", "0.3", "0.5")]
    assert stale[0] == max(stale)


def test_claims_are_banded_with_verdicts(out):
    claims = pd.read_csv(out / "claims.csv")
    assert len(claims) == 4
    banded = claims[claims.kind == "reproduction"]
    assert len(banded) == 3
    assert (banded.p5 <= banded.p50).all() and (banded.p50 <= banded.p95).all()
    assert set(banded.verdict) <= {"reproduced", "consistent within uncertainty",
                                   "not reproduced"}
    assert claims[claims.kind == "prediction"].verdict.tolist() == ["not comparable"]
    md = (out / "report.md").read_text()
    assert "Where the trainer parts ways" in md
    for name in ("step_vs_split.png", "colocated_vs_async.png"):
        assert (out / name).stat().st_size > 10_000


@pytest.mark.slow
def test_two_runs_write_the_same_claims(out, tmp_path):
    again = run_study("llm_rl_placement", _copy(tmp_path), progress=False).parent
    assert (again / "claims.csv").read_bytes() == (out / "claims.csv").read_bytes()
