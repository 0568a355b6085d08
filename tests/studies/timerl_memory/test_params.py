"""The study's parameters: an n-step TD horizon that does not end within an iteration is
one line naming the field, before any run."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from rldse.errors import RldseError
from rldse.studies.common import load_params
from rldse.studies.timerl_memory.params import Params

ROOT = Path(__file__).resolve().parents[3]


def test_the_shipped_parameters_load():
    p = load_params(ROOT / "studies" / "timerl_memory", Params)
    assert p.reinforce.td_steps == [1, 8, 64] and p.steps == 1000


def test_a_td_horizon_beyond_the_iteration_is_one_line(tmp_path):
    study = tmp_path / "timerl_memory"
    shutil.copytree(ROOT / "studies" / "timerl_memory", study,
                    ignore=shutil.ignore_patterns("out", ".lock"))
    params = yaml.safe_load((study / "study.yaml").read_text())
    params["reinforce"]["td_steps"] = [1, 1000]
    (study / "study.yaml").write_text(yaml.safe_dump(params))
    with pytest.raises(RldseError, match="td_steps") as err:
        load_params(study, Params)
    assert "\n" not in str(err.value)
