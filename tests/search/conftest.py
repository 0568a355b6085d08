"""Search fixtures: the stand-in program registered, its trace on disk, study files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.search import stand_in

BASE = {"name": "ratio", "cpu": {"preset": "epyc-7742"}, "gpu": {"preset": "a100-40g", "count": 1},
        "placement": {"learn": "gpu"}, "workload": {"env_steps": 4096}}
SPACE = {"workload.actors": {"int": [8, 64], "step": 8},
         "workload.cores": {"int": [8, 64], "step": 8},
         "gpu.count": {"int": [1, 4]}}


@pytest.fixture(autouse=True)
def _stand_in_program(monkeypatch):
    from rldse.workloads import WORKLOADS

    monkeypatch.setitem(WORKLOADS, stand_in.NAME, stand_in.WORKLOAD)


@pytest.fixture
def trace_file(tmp_path, host_fp) -> Path:
    return stand_in.make_trace(host_fp).save(tmp_path / "stand_in.parquet")


@pytest.fixture
def write_study(tmp_path, trace_file):
    """write_study(**overrides) -> path of a study.yaml in its own folder. Without figures
    unless asked (``figures=True``): drawing them is most of a small search's CPU, and
    test_figures and test_report check them."""

    def write(folder: str = "study", **overrides) -> Path:
        body = {"trace": str(trace_file), "base": BASE, "space": SPACE,
                "objectives": [{"maximize": "steps_per_joule"}], "seed": 0, "trials": 10,
                "figures": False}
        body.update(overrides)
        path = tmp_path / folder / "study.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(body, sort_keys=False))
        return path

    return write
