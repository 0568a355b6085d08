"""Commands that read no trace and run no search load no heavy library: each runs in a
fresh interpreter and reports which of them ended up in ``sys.modules`` (structural, not
timed: `benchmarks/startup_costs.py` prints the times)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from rldse.workloads import WORKLOADS

#: Libraries that cost 0.1-1 s to import each and that only tables, real training,
#: search or figures need.
HEAVY = ("pandas", "pyarrow", "gymnasium", "torch", "optuna", "matplotlib", "seaborn",
         "scipy")

#: Runs ``rldse ARGV`` (argv[2:]) silenced, then prints its exit code and which of the
#: libraries named in argv[1] (JSON) are loaded.
_PROBE = """
import contextlib, io, json, sys
from rldse.cli import main
with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
    try:
        code = main(sys.argv[2:])
    except SystemExit as exc:
        code = exc.code
print(json.dumps({"code": code,
                  "heavy": [m for m in json.loads(sys.argv[1]) if m in sys.modules]}))
"""


def loaded(argv: list[str]) -> dict:
    """Exit code of ``rldse ARGV`` and the heavy libraries it imported, in a fresh process."""
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(HEAVY), *argv], capture_output=True,
                         text=True, check=True, cwd=Path(__file__).parents[2]).stdout
    return json.loads(out.splitlines()[-1])


@pytest.mark.parametrize("argv", [
    ["--version"], ["--help"], ["capture", "--help"], ["capture", "script", "--help"],
    *(["capture", name, "--help"] for name in WORKLOADS),  # each lists its Config's options
    ["metrics"], ["spec", "schema"], ["parts", "list"], ["parts", "show", "a100-40g"],
], ids=" ".join)
def test_light_commands_load_no_heavy_library(argv):
    result = loaded(argv)
    assert result["code"] == 0
    assert result["heavy"] == [], f"rldse {' '.join(argv)} imported {result['heavy']}"


def test_the_probe_sees_a_heavy_import():
    """A command that reads a trace does load pandas: the probe is not blind."""
    trace = Path(__file__).parents[2] / "traces" / "tabular_frozenlake.parquet"
    result = loaded(["trace", "info", str(trace)])
    assert result["code"] == 0 and "pandas" in result["heavy"]
