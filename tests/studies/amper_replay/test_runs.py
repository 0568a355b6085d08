"""The AMPER study's runs: every latency point on every preset and draw, the learning runs
of every replay and the engine's replays of the shipped AMPER-k capture."""

from __future__ import annotations

import itertools
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest
import yaml

import rldse.trace
from rldse.errors import RldseError
from rldse.studies import run_study
from rldse.studies.amper_replay import runs
from rldse.studies.amper_replay.params import Params
from rldse.studies.amper_replay.runs import _end_to_end, _shipped_trace, plan
from rldse.studies.common import load_params
from tests.studies.amper_replay.conftest import link_traces

ROOT = Path(__file__).resolve().parents[3]


def test_amper_latency_points_cover_every_preset_and_draw(amper_out):
    every = pd.read_csv(amper_out / "results.csv")
    # 2 GPUs x 7 TCAM presets x 2 variants x 2 buffers x 2 batches, presets' values + 3 draws
    assert len(every) == 2 * 7 * 2 * 2 * 2 * 4
    drawn = every[every.draw >= 0]
    assert drawn.groupby(["gpu", "tcam"]).ratio_sample.nunique().min() > 1  # draws differ
    results = every[every.draw == -1]
    assert (results.ratio_sample > 1).all()
    assert (results.ratio_sample_eager > results.ratio_sample).all()
    assert (results.searches_per_batch >= results.batch).all()  # >= 1 search per target
    # the sum tree deepens with the buffer: eager ops per level grow; the fused kernel's
    # descent is hidden behind its host dispatch at these depths
    big = results[results.buffer == 2**20].set_index(["gpu", "tcam", "variant", "batch"])
    small = results[results.buffer == 2**14].set_index(["gpu", "tcam", "variant", "batch"])
    assert (big.gpu_sample_eager_s > small.gpu_sample_eager_s).all()
    assert (big.gpu_sample_s >= small.gpu_sample_s).all()


def test_amper_learning_and_end_to_end_runs(amper_out):
    learning_csv = pd.read_csv(amper_out / "learning.csv")
    assert set(learning_csv.replay) == {"uniform", "per", "amper_k", "amper_fr"}
    e2e = pd.read_csv(amper_out / "end_to_end.csv")
    assert list(e2e.replay) == ["cpu", "gpu", "tcam"]


def test_amper_end_to_end_rows_are_the_shipped_captures_not_live_timing(amper_out,
                                                                        monkeypatch):
    """The study run's end-to-end rows, recomputed here from the shipped capture under
    clocks that run a thousand times fast, are the same to the byte: the part reads its
    op durations from end_to_end.trace and times nothing itself."""
    study_dir = amper_out.parent
    p = load_params(study_dir, Params)
    ticks = itertools.count()
    for clock in ("perf_counter", "process_time", "monotonic", "time"):
        monkeypatch.setattr(time, clock, lambda: next(ticks) * 1e3)
    for clock in ("perf_counter_ns", "process_time_ns", "monotonic_ns", "time_ns"):
        monkeypatch.setattr(time, clock, lambda: next(ticks) * 10**12)
    again = _end_to_end(p, _shipped_trace(study_dir, p))
    assert again.to_csv(index=False) == (amper_out / "end_to_end.csv").read_text()
    report = (amper_out / "report.md").read_text()
    assert "`amper_k_cartpole.parquet` (end_to_end.trace; digest " in report


def test_amper_plan_and_run_read_the_shipped_capture_once(monkeypatch):
    """`study run` plans the study (pricing the engine's replays of the shipped capture)
    and then runs it: the run checks and replays the trace the plan read, not a second
    read of the file."""
    study_dir = ROOT / "studies" / "amper_replay"
    reads, real = [], rldse.trace.load_trace
    monkeypatch.setattr(rldse.trace, "load_trace", lambda path: reads.append(path) or real(path))
    runs._opened.cache_clear()
    planned = [item.trace for item in plan(study_dir) if item.trace is not None]
    assert planned and _shipped_trace(study_dir, load_params(study_dir, Params)) is planned[0]
    assert len(reads) == 1


def _copy(tmp_path: Path, **changes) -> Path:
    """A copy of the study (its study.yaml's sections updated by ``changes``) beside links
    to the shipped traces; returns the studies root."""
    dst = tmp_path / "studies" / "amper_replay"
    shutil.copytree(ROOT / "studies" / "amper_replay", dst,
                    ignore=shutil.ignore_patterns("out"))
    link_traces(tmp_path)
    params = yaml.safe_load((dst / "study.yaml").read_text())
    for section, values in changes.items():
        params[section].update(values)
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    return tmp_path / "studies"


def test_amper_refuses_replays_without_per_before_any_run(tmp_path):
    root = _copy(tmp_path, learning={"replays": ["uniform", "amper_k"]})
    with pytest.raises(RldseError, match="learning.replays must include per"):
        run_study("amper_replay", root=root, progress=False)


def test_amper_refuses_a_missing_or_foreign_trace_before_any_run(tmp_path):
    """A missing end_to_end.trace, or a capture of another AMPER design, is one line
    naming the field, before the learning runs start."""
    root = _copy(tmp_path / "a", end_to_end={"trace": "missing.parquet"})
    with pytest.raises(RldseError, match=r"study\.yaml: end_to_end\.trace: .*missing"
                                         r"\.parquet: no such file") as err:
        run_study("amper_replay", root=root, progress=False)
    assert "\n" not in str(err.value)
    root = _copy(tmp_path / "b", amper={"k": 8})
    with pytest.raises(RldseError, match=r"end_to_end\.trace: .*its amper_k is 4, this "
                                         r"study's AMPER-k run has 8"):
        run_study("amper_replay", root=root, progress=False)
