"""One small run of the AMPER study, shared by this folder's tests: its parameters cut to
two buffers, two batches, one seed of 1,500 steps and three band draws; its end-to-end part
replays the shipped AMPER-k capture for 1,500 env steps. The figures it draws are kept by
name (``amper_figures``) for the tests to read what is on them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml
from matplotlib.figure import Figure

from rldse.studies import common, run_study
from rldse.studies.amper_replay import figures

ROOT = Path(__file__).resolve().parents[3]


@pytest.fixture(scope="package")
def amper_run(tmp_path_factory) -> tuple[Path, dict[str, Figure]]:
    """The small run's out/ folder (report.md, claims.csv, the CSVs and figures), and each
    figure it saved, by file name without .png."""
    studies = tmp_path_factory.mktemp("amper") / "studies"
    dst = studies / "amper_replay"
    shutil.copytree(ROOT / "studies" / "amper_replay", dst,
                    ignore=shutil.ignore_patterns("out"))
    link_traces(studies.parent)
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params["learning"].update(steps=1500, seeds=[0])
    params["latency"].update(buffer_log2=[14, 20], batches=[32, 256], batches_per_point=1,
                             figure_batch=32, bands=3)
    params["end_to_end"]["env_steps"] = 1500
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    common.ILLEGIBLE.clear()  # run before the per-test check (tests/studies/conftest.py)
    drawn: dict[str, Figure] = {}
    save = figures.save_figure

    def keep(fig: Figure, out: Path, name: str) -> Path:
        drawn[name] = fig
        return save(fig, out, name)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(figures, "save_figure", keep)
        report = run_study("amper_replay", root=studies, progress=False)
    assert not common.ILLEGIBLE, f"illegible figures: {common.ILLEGIBLE}"
    return report.parent, drawn


@pytest.fixture(scope="package")
def amper_out(amper_run) -> Path:
    return amper_run[0]


@pytest.fixture(scope="package")
def amper_figures(amper_run) -> dict[str, Figure]:
    return amper_run[1]


def link_traces(root: Path) -> None:
    """root/traces/: links to the shipped traces, which a copy's study.yaml names as
    ../../traces/ (its end_to_end.trace)."""
    (root / "traces").mkdir(exist_ok=True)
    for trace in (ROOT / "traces").glob("*.parquet"):
        (root / "traces" / trace.name).symlink_to(trace)
