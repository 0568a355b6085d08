"""Commands that read no trace and run no search load no heavy library: each runs in a
fresh copy of an interpreter that has imported only ``rldse.cli`` and reports which of them
ended up in ``sys.modules`` (structural, not timed: `benchmarks/speed/startup_costs.py` prints
the times)."""

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

TRACE = Path(__file__).parents[2] / "traces" / "tabular_frozenlake.parquet"
LIGHT = [
    ["--version"], ["--help"], ["capture", "--help"], ["capture", "script", "--help"],
    *(["capture", name, "--help"] for name in WORKLOADS),  # each lists its Config's options
    ["metrics"], ["spec", "schema"], ["parts", "list"], ["parts", "show", "a100-40g"],
]
READS_A_TRACE = ["trace", "info", str(TRACE)]

#: One fresh interpreter imports rldse.cli, then forks a child per command (argv[2], JSON):
#: each child starts from that state, as a new ``rldse`` process would after its first
#: import, runs the command silenced and prints its exit code and which of the libraries
#: named in argv[1] (JSON) are loaded. A child never returns to the loop.
_PROBE = """
import contextlib, io, json, os, sys
from rldse.cli import main
heavy = json.loads(sys.argv[1])
for argv in json.loads(sys.argv[2]):
    pid = os.fork()
    if pid:
        os.waitpid(pid, 0)
        continue
    try:
        with contextlib.redirect_stdout(io.StringIO()), \\
                contextlib.redirect_stderr(io.StringIO()):
            try:
                code = main(argv)
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # reported as the exit code the test checks
                code = f"raised {exc!r}"
        print(json.dumps({"code": code, "heavy": [m for m in heavy if m in sys.modules]}),
              flush=True)
    finally:
        os._exit(0)
"""


@pytest.fixture(scope="module")
def loaded() -> dict[str, dict]:
    """' '.join(argv) -> exit code of ``rldse ARGV`` and the heavy libraries it imported."""
    commands = [*LIGHT, READS_A_TRACE]
    out = subprocess.run([sys.executable, "-c", _PROBE, json.dumps(HEAVY), json.dumps(commands)],
                         capture_output=True, text=True, check=True,
                         cwd=Path(__file__).parents[2]).stdout
    results = [json.loads(line) for line in out.splitlines()[-len(commands):]]
    assert len(results) == len(commands), out  # every child reported
    return {" ".join(argv): r for argv, r in zip(commands, results, strict=True)}


@pytest.mark.parametrize("argv", LIGHT, ids=" ".join)
def test_light_commands_load_no_heavy_library(loaded, argv):
    result = loaded[" ".join(argv)]
    assert result["code"] == 0
    assert result["heavy"] == [], f"rldse {' '.join(argv)} imported {result['heavy']}"


def test_the_probe_sees_a_heavy_import(loaded):
    """A command that reads a trace does load pandas: the probe is not blind."""
    result = loaded[" ".join(READS_A_TRACE)]
    assert result["code"] == 0 and "pandas" in result["heavy"]
