"""A workload family added by a test alone: docs/extending-families.md's snippet, run as a
module, registers a toy family that is then captured, loaded, checked, bounded and
simulated through the same registry as the built-in families (no file of rldse names it)."""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path

import numpy as np
import pytest

import rldse
from rldse.errors import RldseError
from rldse.search.estimate import estimate
from rldse.sim.check_replay import check_replay
from rldse.system import parse_spec, resolve
from rldse.trace import host_cost_s
from rldse.workloads import WORKLOADS, open_trace
from rldse.workloads.common.base import CaptureConfig

DOC = Path(__file__).parents[2] / "docs" / "extending-families.md"


def snippet() -> str:
    """The page's one Python block."""
    (code,) = re.findall(r"```python\n(.*?)```", DOC.read_text(), re.S)
    return code


@pytest.fixture
def toy(monkeypatch):
    """The snippet as module ``rldse_toy_family``; the registry as it was afterwards."""
    module = types.ModuleType("rldse_toy_family")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    before = dict(WORKLOADS)
    exec(compile(snippet(), str(DOC), "exec"), module.__dict__)
    yield module
    WORKLOADS.clear()
    WORKLOADS.update(before)


@pytest.fixture
def toy_trace(toy, tmp_path):
    cfg = CaptureConfig(workload="toy", env_id="toy-v0", steps=200, seed=3)
    path = rldse.capture(cfg).save(tmp_path / "toy.parquet")
    return open_trace(path)  # loaded and passed through the family's door (Workload.check)


def test_the_toy_registers_as_a_family(toy):
    assert WORKLOADS["toy"].program_module == "rldse_toy_family"
    assert WORKLOADS["toy"].recording.loop == "toy"


def test_a_toy_capture_simulates_on_the_capture_host(toy_trace):
    ops = toy_trace.ops
    assert toy_trace.meta.workload == "toy"
    assert set(ops["phase"].astype(str)) == {"env_step", "learn"}
    system = resolve(parse_spec({"name": "host", "cpu": {"preset": "host"}}), toy_trace)
    assert system.info.learn_every == 4  # the typed Info the program reads
    result = rldse.simulate(toy_trace, system)
    assert (result.env_steps, result.updates) == (200, 50)
    # closed form: on the capture host every row costs what it cost there, one after another
    assert result.sim_time_s == pytest.approx(float(np.sum(host_cost_s(ops, toy_trace.meta))),
                                              rel=1e-9)
    # rldse validate's replay-consistency table: each phase as measured
    table, _ = check_replay(toy_trace)
    assert (table.loc[["env_step", "learn"], "error"].abs() < 1e-9).all(), table.to_string()
    # the search's bound reads the family's (default) phase sides, and stays a bound
    assert estimate(toy_trace, system).values["sim_time_s"] <= result.sim_time_s * (1 + 1e-9)


def test_a_knob_the_toy_lacks_is_refused(toy_trace):
    with pytest.raises(RldseError, match="not a knob of toy traces"):
        resolve(parse_spec({"cpu": {"preset": "host"}, "workload": {"actors": 2}}), toy_trace)


def test_the_pages_commands_run_on_the_toy(toy, tmp_path, capsys):
    """The page's two commands, in process (the toy's module is no package under
    rldse/workloads, so a subprocess would not find it)."""
    from rldse.cli import main

    out = tmp_path / "toy.parquet"
    assert main(["capture", "toy", "--env", "toy-v0", "--steps", "100", "-o", str(out)]) == 0
    system = Path(__file__).parents[2] / "examples" / "cpu_only.yaml"
    assert main(["simulate", str(out), "--system", str(system)]) == 0
    assert ": 100 env steps" in capsys.readouterr().out
