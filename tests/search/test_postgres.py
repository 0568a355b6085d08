"""PostgreSQL for real: a server on loopback in a temporary directory, two `rldse search`
processes sharing one study (as two machines would), every trial recorded exactly once.

Needs PostgreSQL's server binaries (Debian: `apt-get install -y postgresql`) and the
psycopg driver (`pip install 'psycopg[binary]'`); skipped, saying which, without them.
As root, initdb and postgres run as the `postgres` user (initdb refuses root).
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from rldse.search import run_study
from rldse.search.trial import trial_attrs

ROOT = Path(__file__).parents[2]
BUDGET = 16

# Each worker imports everything, then waits at a file barrier until both are ready: the
# stand-in's trials take milliseconds, and without it one worker could finish the whole
# budget while the other is still importing Optuna (seen under load).
WORKER = """
import sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.search import stand_in
stand_in.register()
from rldse.search import run_study
barrier = Path({barrier!r})
(barrier / str({k})).touch()
while len(list(barrier.iterdir())) < 2:
    time.sleep(0.01)
report = run_study({path!r}, storage={url!r}, resume=True, progress=False)
print(report.finished_now)
"""


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def postgres_url():
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL server binaries not found (apt-get install -y postgresql)")
    pytest.importorskip("psycopg", reason="pip install 'psycopg[binary]'")
    as_user: list[str] = []
    if os.geteuid() == 0:
        try:
            pw = pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("running as root and there is no 'postgres' user to run initdb")
        as_user = ["runuser", "-u", "postgres", "--"]
    home = Path(tempfile.mkdtemp(prefix="rldse-pg-"))
    if as_user:
        os.chown(home, pw.pw_uid, pw.pw_gid)
    data, port = home / "data", _free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run([*as_user, initdb, "-D", str(data), "-U", "rldse", "-A", "trust",
                    "--no-sync"], **run)
    subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(home / "log"), "-w", "-o",
                    f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off",
                    "start"], **run)
    try:
        yield f"postgresql://rldse@127.0.0.1:{port}/postgres"
    finally:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)
        shutil.rmtree(home, ignore_errors=True)


def test_two_processes_share_one_study(write_study, postgres_url, tmp_path):
    path = write_study(trials=BUDGET, sampler="random")
    barrier = tmp_path / "barrier"
    barrier.mkdir()
    procs = [subprocess.Popen(
        [sys.executable, "-c", WORKER.format(root=str(ROOT), path=str(path), url=postgres_url,
                                             barrier=str(barrier), k=k)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(2)]
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err
    study = optuna.load_study(study_name="study", storage=postgres_url)
    trials = study.trials
    numbers = [t.number for t in trials]
    assert numbers == list(range(len(trials)))  # each trial recorded once, numbered once
    finished = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    assert len(finished) == len(trials)
    assert BUDGET <= len(trials) <= BUDGET + 1  # two may start the last trial together
    workers = Counter(trial_attrs(t)["worker"] for t in trials)
    assert len(workers) == 2, workers  # both processes ran trials of the one study
    # a third process, with the budget already reached, adds nothing
    report = run_study(path, storage=postgres_url, resume=True, progress=False)
    assert report.finished_now == 0 and len(optuna.load_study(
        study_name="study", storage=postgres_url).trials) == len(trials)
