"""Reliability: kill -9 at random points of the commands that write, damaged traces and
bad specs; prints one table (class, cases, tracebacks, silent changes) and exits 1 unless
both counts are 0 everywhere. Not a test: it runs the real commands in
subprocesses, on local files only, in a few minutes.

    python benchmarks/probes/reliability.py [--seed 0] [--kills 3]

Kills: each command runs once whole (its reference), then ``--kills`` times is sent
SIGKILL (its process group, workers included) after a delay drawn from a seeded
uniform(0, the reference's wall time), and is run again to the end. Checked after each:

- `rldse search` (a 6-trial study; the rerun adds --resume where the kill left a study):
  the budget finished, nothing left RUNNING, every failed (killed) trial run again exactly
  once, every trial finished before the kill kept with its values, trials.csv one row per
  trial (the failed ones too);
- `rldse study run` (pearl_mapping, deterministic): after the kill out/ is the earlier
  run's, byte for byte (the folder is swapped whole); after the rerun too;
- `rldse capture dqn` (over an earlier capture, --force): after the kill the file is the
  earlier one or a whole new trace (its digest verified on load); after the rerun, whole;
- `rldse trace export` (deterministic): after the kill, the earlier export byte for byte;
  after the rerun too;
- for every command, no temporary (``.NAME.rldse-PID.tmp``, ``.out.new``/``.old``) left
  after the rerun, and no traceback from it.

A failed check counts as a silent change (an output lost, torn, duplicated or changed
without a word); a traceback in the rerun as a traceback. Damaged traces, bad specs,
bad --set values, containment cases (files a spec must not read, passwords,
outputs that exist) and paths at the file system's limits are the
fuzz corpus (scripts/make_fuzz_corpus.py), run in process: a traceback is a traceback,
a result from an input that must be refused a silent change.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
RLDSE = [sys.executable, "-m", "rldse.cli"]
TIMEOUT_S = 300  # one command's rerun; a hang is a failure, not a stuck benchmark


@dataclass
class Row:
    name: str
    cases: int = 0
    tracebacks: int = 0
    silent: int = 0
    landed: int = 0  # kills that found the command still running
    notes: list[str] = field(default_factory=list)

    def fail(self, case: str, what: str) -> None:
        self.silent += 1
        self.notes.append(f"{self.name} [{case}]: {what}")


def _env() -> dict[str, str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT), TQDM_DISABLE="1")
    env.pop("RLDSE_STORAGE", None)
    return env


def _run(argv: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*RLDSE, *argv], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=TIMEOUT_S)


def _timed(argv: list[str], cwd: Path) -> float:
    t0 = time.perf_counter()
    done = _run(argv, cwd)
    if done.returncode != 0:
        raise SystemExit(f"reference run failed: rldse {' '.join(argv)}\n{done.stderr}")
    return time.perf_counter() - t0


def _killed(row: Row, argv: list[str], cwd: Path, delay_s: float) -> None:
    """Start ``argv``, SIGKILL its process group after ``delay_s`` (if still running)."""
    proc = subprocess.Popen([*RLDSE, *argv], cwd=cwd, env=_env(), start_new_session=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        proc.wait(timeout=delay_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        row.landed += 1


def _temporaries(folder: Path) -> list[str]:
    return sorted(str(p) for p in folder.rglob(".*")
                  if ".rldse-" in p.name and p.name.endswith(".tmp")
                  or p.name.endswith((".new", ".old")))


def _files(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*"))
            if p.is_file() and p.name != ".lock"}


def _rerun(row: Row, case: str, argv: list[str], cwd: Path) -> bool:
    done = _run(argv, cwd)
    if "Traceback" in done.stderr:
        row.tracebacks += 1
        row.notes.append(f"{row.name} [{case}]: traceback: {done.stderr.strip()[-300:]}")
        return False
    if done.returncode != 0:
        row.fail(case, f"rerun exit {done.returncode}: {done.stderr.strip()[-200:]}")
        return False
    return True


def _kills(row: Row, reference_s: float, kills: int, rng: random.Random,
           case: Callable[[str, float], None]) -> None:
    for k in range(kills):
        delay_s = rng.uniform(0.05, reference_s)
        row.cases += 1
        case(f"kill {k + 1} at {delay_s:.2f} s", delay_s)


# ---- rldse search ---------------------------------------------------------------------

def search_kills(work: Path, kills: int, rng: random.Random) -> Row:
    import optuna
    from optuna.trial import TrialState

    from rldse.search import load_study_file
    from rldse.search.storage import open_storage, storage_ref

    row = Row("kill: rldse search")
    body = {"trace": str(ROOT / "traces" / "dqn_cartpole_uniform.parquet"),
            "base": {"name": "rel", "cpu": {"preset": "xeon-silver-4215"},
                     "gpu": {"preset": "v100-sxm2"}, "placement": {"learn": "gpu"},
                     "workload": {"learner": "sync", "env_steps": 3000}},
            "space": {"workload.batch_size": {"int": [16, 256]},
                      "workload.actors": {"int": [1, 8]}},
            "objectives": [{"maximize": "steps_per_joule"}], "trials": 6, "seed": 0,
            "sampler": "random", "estimate": {"prune": False}, "figures": False}

    def folder(name: str) -> Path:
        path = work / "search" / name
        path.mkdir(parents=True)
        (path / "study.yaml").write_text(yaml.safe_dump(body, sort_keys=False))
        return path

    def trials(path: Path):
        sf = load_study_file(path / "study.yaml")
        st = open_storage(storage_ref(sf.out_dir, None, None, ""))
        if sf.study_name not in optuna.get_all_study_names(st):
            return []
        return optuna.load_study(study_name=sf.study_name, storage=st).trials

    reference_s = _timed(["search", "study.yaml"], folder("reference"))

    def case(name: str, delay_s: float) -> None:
        path = folder(name.split(" at ")[0].replace(" ", "_"))
        _killed(row, ["search", "study.yaml"], path, delay_s)
        before = {t.number: t.values for t in trials(path) if t.state == TrialState.COMPLETE}
        resume = ["--resume"] if trials(path) else []
        if not _rerun(row, name, ["search", "study.yaml", *resume], path):
            return
        after = trials(path)
        finished = [t for t in after if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
        if len(finished) != body["trials"]:
            row.fail(name, f"{len(finished)} trials finished, not {body['trials']}")
        if any(t.state == TrialState.RUNNING for t in after):
            row.fail(name, "a trial left RUNNING")
        for t in after:
            if t.state == TrialState.FAIL:
                retries = [r for r in after if r.system_attrs.get("failed_trial") == t.number]
                if len(retries) != 1:
                    row.fail(name, f"failed trial {t.number} run again {len(retries)} times")
        for number, values in before.items():
            if after[number].values != values:
                row.fail(name, f"trial {number}'s values changed by the rerun")
        rows = (path / "out" / "trials.csv").read_text().strip().splitlines()[1:]
        if len(rows) != len(after):
            row.fail(name, f"trials.csv has {len(rows)} rows for {len(after)} trials")
        if _temporaries(path):
            row.fail(name, f"left {_temporaries(path)}")

    _kills(row, reference_s, kills, rng, case)
    return row


# ---- rldse study run ------------------------------------------------------------------

def study_kills(work: Path, kills: int, rng: random.Random) -> Row:
    row = Row("kill: rldse study run")
    root = work / "studies"
    shutil.copytree(ROOT / "studies" / "pearl_mapping", root / "pearl_mapping",
                    ignore=shutil.ignore_patterns("out"))
    study = root / "pearl_mapping" / "study.yaml"
    study.write_text(study.read_text().replace("../../traces/", f"{ROOT / 'traces'}/"))
    argv = ["study", "run", "pearl_mapping", "--root", str(root)]
    reference_s = _timed(argv, work)
    out = root / "pearl_mapping" / "out"
    earlier = _files(out)

    def case(name: str, delay_s: float) -> None:
        _killed(row, argv, work, delay_s)
        if _files(out) != earlier:
            row.fail(name, "out/ after the kill is not the earlier run's")
        if not _rerun(row, name, argv, work):
            return
        if _files(out) != earlier:
            changed = sorted(set(_files(out).items()) ^ set(earlier.items()))
            row.fail(name, f"the rerun's out/ differs from the earlier run's: "
                           f"{sorted({k for k, _ in changed})[:4]}")
        if _temporaries(root):
            row.fail(name, f"left {_temporaries(root)}")

    _kills(row, reference_s, kills, rng, case)
    return row


# ---- rldse capture --------------------------------------------------------------------

def capture_kills(work: Path, kills: int, rng: random.Random) -> Row:
    from rldse.errors import RldseError
    from rldse.trace import load_trace

    row = Row("kill: rldse capture")
    folder = work / "capture"
    folder.mkdir()
    argv = ["capture", "dqn", "--env", "CartPole-v1", "--steps", "3000", "-o", "run.parquet",
            "--force"]
    reference_s = _timed(argv, folder)
    target = folder / "run.parquet"

    def whole(name: str, when: str) -> bool:
        try:
            load_trace(target)  # its digest verified: a torn or changed file is refused
        except (RldseError, OSError) as exc:
            row.fail(name, f"{when}: {target.name} is not a whole trace ({exc})")
            return False
        return True

    def case(name: str, delay_s: float) -> None:
        earlier = target.read_bytes()
        _killed(row, argv, folder, delay_s)
        if target.read_bytes() != earlier:
            whole(name, "after the kill")  # a new capture swapped in whole is fine
        if not _rerun(row, name, argv, folder):
            return
        whole(name, "after the rerun")
        if _temporaries(folder):
            row.fail(name, f"left {_temporaries(folder)}")

    _kills(row, reference_s, kills, rng, case)
    return row


# ---- rldse trace export ---------------------------------------------------------------

def export_kills(work: Path, kills: int, rng: random.Random) -> Row:
    row = Row("kill: rldse trace export")
    folder = work / "export"
    folder.mkdir()
    argv = ["trace", "export", "--format", "swiftrl",
            str(ROOT / "traces" / "tabular_taxi.parquet"), "-o", "taxi.txt", "--force"]
    reference_s = _timed(argv, folder)
    earlier = (folder / "taxi.txt").read_bytes()

    def case(name: str, delay_s: float) -> None:
        _killed(row, argv, folder, delay_s)
        if (folder / "taxi.txt").read_bytes() != earlier:
            row.fail(name, "the export after the kill is not the earlier one")
        if not _rerun(row, name, argv, folder):
            return
        if (folder / "taxi.txt").read_bytes() != earlier:
            row.fail(name, "the rerun's export differs from the earlier one")
        if _temporaries(folder):
            row.fail(name, f"left {_temporaries(folder)}")

    _kills(row, reference_s, kills, rng, case)
    return row


# ---- the fuzz corpus ------------------------------------------------------------------

def corpus_rows(work: Path) -> list[Row]:
    from rldse.cli import main

    spec = importlib.util.spec_from_file_location("make_fuzz_corpus",
                                                  ROOT / "scripts" / "make_fuzz_corpus.py")
    corpus = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(corpus)
    out = work / "corpus"
    runs = corpus.corpus(out)
    contained = set(corpus.containment_cases(work / "names"))
    paths = {r.name for r in corpus.filesystem_cases(work / "paths_names")}
    rows = {key: Row(key) for key in ("damaged traces", "bad specs", "bad --set values",
                                      "containment", "paths at fs limits")}

    def kind(name: str) -> str:
        if name in contained:
            return "containment"
        if name in paths:
            return "paths at fs limits"
        if name.startswith("--set"):
            return "bad --set values"
        return "bad specs" if name.startswith("spec-") else "damaged traces"

    cwd = Path.cwd()
    os.chdir(out)
    try:
        for run in runs:
            row = rows[kind(run.name)]
            row.cases += 1
            stdout, stderr = io.StringIO(), io.StringIO()
            try:
                with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                    code = main(run.argv)
            except SystemExit as exc:
                code = exc.code
            except Exception as exc:  # noqa: BLE001 (what this benchmark counts)
                row.tracebacks += 1
                row.notes.append(f"{row.name} [{run.name}]: {type(exc).__name__}: {exc}")
                continue
            lines = [line for line in stderr.getvalue().splitlines() if line.strip()]
            if code == 2 and len(lines) != 1:
                row.fail(run.name, f"{len(lines)} lines of error")
            elif code in (0, None) and run.refused is not None:
                row.fail(run.name, "a result from an input that must be refused")
            elif code == 2 and run.refused and run.refused not in lines[0]:
                row.fail(run.name, f"refused for another reason: {lines[0][:160]}")
            elif code not in (0, None, 2):
                row.fail(run.name, f"exit {code}")
    finally:
        os.chdir(cwd)
    if _temporaries(out):
        rows["paths at fs limits"].fail("all", f"left {_temporaries(out)}")
    return list(rows.values())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0, help="seeds the kill delays")
    parser.add_argument("--kills", type=int, default=3, help="kills per command")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    t0 = time.perf_counter()
    rows: list[Row] = []
    with tempfile.TemporaryDirectory(prefix="rldse-reliability-") as tmp:
        work = Path(tmp)
        for kind in (search_kills, study_kills, capture_kills, export_kills):
            rows.append(kind(work, args.kills, rng))
            print(f"{rows[-1].name}: done at {time.perf_counter() - t0:.0f} s",
                  file=sys.stderr)
        rows += corpus_rows(work)
    print("| class | cases | tracebacks | silent changes |\n|---|---:|---:|---:|")
    for row in rows:
        print(f"| {row.name} | {row.cases} | {row.tracebacks} | {row.silent} |")
    total = Row("total", sum(r.cases for r in rows), sum(r.tracebacks for r in rows),
                sum(r.silent for r in rows))
    print(f"| **{total.name}** | {total.cases} | {total.tracebacks} | {total.silent} |")
    landed = ", ".join(f"{r.name.removeprefix('kill: ')} {r.landed}/{r.cases}"
                       for r in rows if r.name.startswith("kill: "))
    print(f"\nseed {args.seed}, {args.kills} kills per command (landing mid-run: {landed}), "
          f"{time.perf_counter() - t0:.0f} s")
    for row in rows:
        for note in row.notes:
            print(f"- {note}")
    return 1 if total.tracebacks or total.silent else 0


if __name__ == "__main__":
    sys.exit(main())
