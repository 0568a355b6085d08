"""What the callgrind benchmarks share: running this script again under callgrind (its
``--child`` part controls instrumentation and dumps through ``control``), and reading the
event totals of each dump."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path


def control(*args: str) -> None:
    """callgrind_control on this process (inside valgrind): --instr=on, --zero, --dump=..."""
    subprocess.run(["callgrind_control", *args, str(os.getpid())], check=True,
                   stdout=subprocess.DEVNULL)


def run_child(script: str, args: list[str], cache_sim: bool = False) -> dict[str, dict[str, int]]:
    """Run ``script args --child FOLDER`` under callgrind (instrumentation off at the start)
    and return, per dump (by its description), the event totals. Exits with one line if
    valgrind is missing or the run fails."""
    name = Path(script).stem
    if shutil.which("valgrind") is None:
        sys.exit(f"{name}: valgrind is not on the PATH")
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        sim = ["--cache-sim=yes", "--branch-sim=yes"] if cache_sim else []
        run = subprocess.run(
            ["valgrind", "--tool=callgrind", "--instr-atstart=no", *sim,
             f"--callgrind-out-file={folder / 'cg.out'}", sys.executable, script, *args,
             "--child", str(folder)],
            capture_output=True, text=True)
        if run.returncode:
            sys.exit(f"{name}: the run under valgrind failed:\n{run.stderr[-2000:]}")
        return _totals(folder)


def _totals(folder: Path) -> dict[str, dict[str, int]]:
    out = {}
    for f in sorted(folder.glob("cg.out.*")):
        text = f.read_text(errors="replace").splitlines()
        desc = next((ln.split("dump ", 1)[1] for ln in text if ln.startswith("desc: Trigger")
                     and "dump " in ln), None)
        events = next((ln.split()[1:] for ln in text if ln.startswith("events:")), [])
        summary = next((ln.split()[1:] for ln in text if ln.startswith("summary:")), [])
        if desc:
            out[desc] = dict(zip(events, map(int, summary), strict=True))
    return out
