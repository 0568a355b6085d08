"""Small copies of the CPU/GPU-ratio study: four ratios of 30,000 env steps, three band
draws and a four-trial search; one run of it is shared by this folder's tests."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rldse.studies import common, run_study

ROOT = Path(__file__).resolve().parents[3]


def _copy(tmp_path: Path, **changes) -> Path:
    dst = tmp_path / "studies" / "cpu_gpu_ratio"
    shutil.copytree(ROOT / "studies" / "cpu_gpu_ratio", dst, ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces", dirs_exist_ok=True)
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params.update({"ratios": [1, 4, 16, 32], "env_steps": 30_000, "bands": 3}, **changes)
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    search = yaml.safe_load((dst / "search.yaml").read_text())
    search["base"]["workload"]["env_steps"] = 30_000
    search["trials"] = 4
    (dst / "search.yaml").write_text(yaml.safe_dump(search, sort_keys=False))
    return tmp_path / "studies"


@pytest.fixture
def small_copy(tmp_path):
    """A function: a small copy of the study under tmp_path (study.yaml ``changes``
    applied); returns the studies root."""
    return lambda **changes: _copy(tmp_path, **changes)


@pytest.fixture(scope="package")
def ratio_out(tmp_path_factory) -> Path:
    """The small copy's run: its out/ folder."""
    root = _copy(tmp_path_factory.mktemp("cpu_gpu_ratio"))
    common.ILLEGIBLE.clear()  # run before the per-test check (tests/studies/conftest.py)
    report = run_study("cpu_gpu_ratio", root=root, progress=False)
    assert not common.ILLEGIBLE, f"illegible figures: {common.ILLEGIBLE}"
    return report.parent
