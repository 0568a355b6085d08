"""The AMPER study's runs: every latency point on every preset and draw, the learning runs
of every replay and the engine's replays of the AMPER-k trace."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rldse.errors import RldseError
from rldse.studies import run_study

ROOT = Path(__file__).resolve().parents[3]


def test_amper_latency_points_cover_every_preset_and_draw(amper_out):
    every = pd.read_csv(amper_out / "results.csv")
    # 2 GPUs x 7 TCAM presets x 2 variants x 2 buffers x 2 batches, presets' values + 3 draws
    assert len(every) == 2 * 7 * 2 * 2 * 2 * 4
    drawn = every[every.draw >= 0]
    assert drawn.groupby(["gpu", "am"]).ratio_sample.nunique().min() > 1  # draws differ
    results = every[every.draw == -1]
    assert (results.ratio_sample > 1).all()
    assert (results.ratio_sample_eager > results.ratio_sample).all()
    assert (results.searches_per_batch >= results.batch).all()  # >= 1 search per target
    # the sum tree deepens with the buffer: eager ops per level grow; the fused kernel's
    # descent is hidden behind its host dispatch at these depths
    big = results[results.buffer == 2**20].set_index(["gpu", "am", "variant", "batch"])
    small = results[results.buffer == 2**14].set_index(["gpu", "am", "variant", "batch"])
    assert (big.gpu_sample_eager_s > small.gpu_sample_eager_s).all()
    assert (big.gpu_sample_s >= small.gpu_sample_s).all()


def test_amper_learning_and_end_to_end_runs(amper_out):
    learning_csv = pd.read_csv(amper_out / "learning.csv")
    assert set(learning_csv.replay) == {"uniform", "per", "amper_k", "amper_fr"}
    e2e = pd.read_csv(amper_out / "end_to_end.csv")
    assert list(e2e.replay) == ["cpu", "gpu", "tcam"]


def test_amper_refuses_replays_without_per_before_any_run(tmp_path):
    dst = tmp_path / "studies" / "amper_replay"
    shutil.copytree(ROOT / "studies" / "amper_replay", dst,
                    ignore=shutil.ignore_patterns("out"))
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params["learning"]["replays"] = ["uniform", "amper_k"]
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(RldseError, match="learning.replays must include per"):
        run_study("amper_replay", root=tmp_path / "studies", progress=False)
