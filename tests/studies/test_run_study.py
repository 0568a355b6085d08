"""`study run` never loses a finished run's outputs: its new outputs are built beside out/
and swapped in at the end, so a run killed with SIGKILL at any point leaves the previous
outputs whole (or, past the swap, the new ones whole), and the next run finishes or
clears what it left; a second run beside a running one is refused in one line.

The runs are of a toy study (a few small files, a search summary naming its paths) so
that ten kill points take a few seconds; each kill is a forked run that SIGKILLs itself
just before its k-th filesystem change (mkdir, rename, replace, exchange, unlink, rmdir).
The `slow` variants kill at every point, and run a shipped study killed at ten points.
"""

from __future__ import annotations

import errno
import importlib.machinery
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import types
from pathlib import Path

import numpy as np
import pytest
import yaml

from rldse import files
from rldse.files import atomic_write_text
from rldse.search.report import StudyReport
from rldse.studies import run_study
from rldse.studies.report import Report

ROOT = Path(__file__).resolve().parents[2]
TOY = "toy"
#: the filesystem changes a kill is placed before
_CHANGES = ("mkdir", "rename", "replace", "unlink", "rmdir")


def _toy_run(study_dir: Path, out: Path, progress: bool = True) -> Report:
    """A study in small: its results, a figure and a search whose summary names its files.
    With a file `hold` in the study folder it waits (after writing half) for `go`."""
    generation = str(yaml.safe_load((study_dir / "study.yaml").read_text())["generation"])
    atomic_write_text(out / "results.csv", f"generation\n{generation}\n")
    if (study_dir / "hold").exists():
        (study_dir / "started").write_text(str(os.getpid()))
        while not (study_dir / "go").exists():
            time.sleep(0.01)
    search = out / "search"
    files_ = {"trials.csv": search / "trials.csv", "figures": search / "figures"}
    atomic_write_text(files_["trials.csv"], f"number,value\n0,{generation}\n")
    atomic_write_text(search / "figures" / "history.png", generation)
    summary = StudyReport(
        name="toy-search", study_file=str(study_dir / "search.yaml"),
        storage=str(search / "journal.log"), out_dir=str(search), budget=1, workers=1,
        objectives=["env_steps_per_s"], constraints=[], states={"COMPLETE": 1}, simulated=1,
        cache_hits=0, pruned_by_estimate=0, invalid=0, requeued=0, best=[],
        files={k: str(v) for k, v in files_.items()}, notes=[], finished_now=1,
        elapsed_s=1.0)
    atomic_write_text(search / "summary.json", summary.model_dump_json(indent=1))
    return Report(name=TOY, title=f"toy generation {generation}", source="this test")


@pytest.fixture
def toy(tmp_path, monkeypatch) -> Path:
    """The studies root holding the toy study (generation 1 in its study.yaml)."""
    module = types.ModuleType(f"rldse.studies.{TOY}")
    module.__spec__ = importlib.machinery.ModuleSpec(module.__name__, None)  # found as imported
    module.run = _toy_run
    monkeypatch.setitem(sys.modules, module.__name__, module)
    (tmp_path / TOY).mkdir()
    _generation(tmp_path / TOY, 1)
    return tmp_path


def _generation(study: Path, n: int) -> None:
    """The toy's study.yaml: the module that runs it (rldse.studies.discovery) and the
    generation its outputs carry."""
    (study / "study.yaml").write_text(f"module: rldse.studies.{TOY}\ngeneration: {n}\n")


def _tree(folder: Path) -> dict[str, bytes] | None:
    if not folder.is_dir():
        return None
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file()}


def _killed_run(root: Path, kill_before: int | None, exchange: bool) -> list[str]:
    """Run the toy study in a forked child that SIGKILLs itself just before its
    ``kill_before``-th filesystem change (None: never); the changes it made, in order."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: count (and die at) the changes, then run
        os.close(read)
        done: list[str] = []

        def counted(name, real):
            def change(*args, **kwargs):
                if kill_before is not None and len(done) + 1 == kill_before:
                    os.kill(os.getpid(), signal.SIGKILL)
                done.append(f"{name} {args[0]}")
                return real(*args, **kwargs)
            return change
        for name in _CHANGES:
            setattr(os, name, counted(name, getattr(os, name)))
        files._exchange = counted("exchange", files._exchange if exchange
                                  else lambda a, b: False)
        code = 0
        try:
            run_study(TOY, root, progress=False)
        except BaseException:  # noqa: BLE001 - the parent sees the exit code
            code = 1
        os.write(write, json.dumps(done).encode())
        os._exit(code)
    os.close(write)
    with os.fdopen(read) as pipe:
        text = pipe.read()
    _, status = os.waitpid(pid, 0)
    if kill_before is not None and text == "":
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
        return []
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    return json.loads(text)


def _kill_points(changes: list[str], every: bool) -> list[int]:
    """Ten kill points: seven spread over building the new outputs, then just before the
    swap, just after its first step and just after its second; or every point."""
    if every:
        return list(range(1, len(changes) + 1))
    swap = next(i for i, c in enumerate(changes, 1)
                if c.startswith("exchange") or c.startswith("rename") and c.endswith("/out"))
    build = np.linspace(1, swap - 1, 7).round().astype(int).tolist()
    return [*build, swap, swap + 1, swap + 2]


@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_study_run_killed_at_ten_points_keeps_the_old_outputs_until_the_swap(
        toy, capsys, exchange):
    _check_kills(toy, capsys, exchange, every=False)


@pytest.mark.slow
@pytest.mark.parametrize("exchange", [True, False], ids=["exchange", "two-renames"])
def test_a_study_run_killed_at_every_point_keeps_the_old_outputs_until_the_swap(
        toy, capsys, exchange):
    _check_kills(toy, capsys, exchange, every=True)


def _check_kills(root: Path, capsys, exchange: bool, every: bool) -> None:
    study, out = root / TOY, root / TOY / "out"
    run_study(TOY, root, progress=False)
    old = _tree(out)
    _generation(study, 2)
    changes = _killed_run(root, None, exchange)  # a whole run: the points to kill at
    new = _tree(out)
    assert old != new and json.loads(new["search/summary.json"])["out_dir"] == str(
        out / "search")  # the summary names where its files are after the swap
    points = _kill_points(changes, every)
    assert len(points) == (len(changes) if every else 10)
    for k in points:
        _generation(study, 1)
        run_study(TOY, root, progress=False)
        assert _tree(out) == old
        _generation(study, 2)
        capsys.readouterr()
        assert _killed_run(root, k, exchange) == [], f"the run finished before change {k}"
        left = _tree(out)
        aside = {p.name: _tree(p) for p in study.glob(".out.*")}
        # the outputs are the old ones, whole, until the new ones replace them
        if left is None:  # between the two renames: both whole, beside each other
            assert not exchange and aside[".out.old"] == old and aside[".out.new"] == new, k
        else:
            assert left in (old, new), f"killed before change {k} ({changes[k - 1]})"
        # the next run finishes or clears what the killed one left, and says so
        run_study(TOY, root, progress=False)
        assert _tree(out) == new
        assert sorted(p.name for p in study.iterdir()) == [".lock", "out", "study.yaml"]
        warned = capsys.readouterr().err
        assert ("rldse: warning" in warned) == (left is None or ".out.new" in aside), k


def test_a_second_run_beside_a_running_one_is_refused_in_one_line(toy, capsys):
    from rldse.cli import main

    study = toy / TOY
    run_study(TOY, toy, progress=False)
    old = _tree(study / "out")
    _generation(study, 2)
    (study / "hold").write_text("")
    pid = os.fork()
    if pid == 0:
        code = 0
        try:
            run_study(TOY, toy, progress=False)
        except BaseException:  # noqa: BLE001
            code = 1
        os._exit(code)
    try:
        while not (study / "started").exists():
            time.sleep(0.01)
        capsys.readouterr()
        assert main(["study", "run", TOY, "--root", str(toy)]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and f"being run by another process (pid {pid})" in err
        assert _tree(study / "out") == old  # the running one's outputs are not in yet
    finally:
        (study / "go").write_text("")
        _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert _tree(study / "out")["results.csv"] == b"generation\n2\n"


# ---- a shipped study, killed in a subprocess (slow) -------------------------------------

_KILLER = """
import os, signal, sys
from rldse.studies import run_study
k, n = int(sys.argv[2]), [0]
def counted(real):
    def change(*args, **kwargs):
        n[0] += 1
        if n[0] == k:
            os.kill(os.getpid(), signal.SIGKILL)
        return real(*args, **kwargs)
    return change
for name in ("mkdir", "rename", "replace", "unlink", "rmdir"):
    setattr(os, name, counted(getattr(os, name)))
run_study("timerl_memory", sys.argv[1], progress=False)
print(n[0])
"""


@pytest.mark.slow
def test_a_shipped_study_killed_at_ten_points_keeps_its_old_outputs(tmp_path):

    study = tmp_path / "studies" / "timerl_memory"
    shutil.copytree(ROOT / "studies" / "timerl_memory", study,
                    ignore=shutil.ignore_patterns("out", ".lock"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces")
    params = yaml.safe_load((study / "study.yaml").read_text())
    params["bands"] = 4
    (study / "study.yaml").write_text(yaml.safe_dump(params))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}

    def run(k: int) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-c", _KILLER, str(tmp_path / "studies"),
                               str(k)], capture_output=True, text=True, env=env, cwd=ROOT)

    whole = run(0)
    assert whole.returncode == 0, whole.stderr
    new = _tree(study / "out")  # a run's outputs (the same bit for bit each run)
    total = int(whole.stdout.split()[-1])
    for k in np.linspace(1, total, 10).round().astype(int):
        (study / "out" / "claims.csv").write_text("an earlier run's")  # the old outputs
        old = _tree(study / "out")
        killed = run(int(k))
        assert killed.returncode == -signal.SIGKILL, killed.stderr
        assert _tree(study / "out") in (old, new), f"killed before change {k} of {total}"
    again = run(0)
    assert again.returncode == 0, again.stderr
    assert _tree(study / "out") == new
    assert not [p for p in study.iterdir() if p.name.startswith(".out")]


@pytest.mark.parametrize("code, cause", [(errno.ENOSPC, "the disk is full"),
                                         (errno.EROFS, "the file system is read-only")])
def test_a_study_run_that_cannot_write_is_one_line_and_keeps_the_old_outputs(
        toy, capsys, monkeypatch, code, cause):
    from rldse.cli import main

    study = toy / TOY
    run_study(TOY, toy, progress=False)
    old = _tree(study / "out")
    _generation(study, 2)
    real = os.replace

    def replace(src, dst):  # the disk fills as the search's summary is written
        if Path(dst).name == "summary.json":
            raise OSError(code, os.strerror(code))
        return real(src, dst)
    monkeypatch.setattr(os, "replace", replace)
    capsys.readouterr()
    assert main(["study", "run", TOY, "--root", str(toy)]) == 2
    err = capsys.readouterr().err
    assert err == (f"rldse: error: {study / '.out.new' / 'search' / 'summary.json'}: cannot "
                   f"write: {cause}\n")
    assert _tree(study / "out") == old
    assert sorted(p.name for p in study.iterdir()) == [".lock", "out", "study.yaml"]
