"""PostgreSQL for real: a server on loopback in a temporary directory, three `rldse search`
processes creating and sharing one study (as three machines would), every trial recorded
exactly once; killed, paused and cut-off workers.

Needs PostgreSQL's server binaries (Debian: `apt-get install -y postgresql`) and the
psycopg driver (`pip install 'psycopg[binary]'`); skipped, saying which, without them.
As root, initdb and postgres run as the `postgres` user (initdb refuses root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest
import sqlalchemy
from optuna.trial import TrialState

from rldse.search import run_study
from rldse.search.trial import trial_attrs

ROOT = Path(__file__).parents[2]
BUDGET = 16

def _pg_bin(name: str) -> str | None:
    found = shutil.which(name) or sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return found if isinstance(found, str) else (found[-1] if found else None)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _server():
    """A throwaway PostgreSQL server on loopback: yields (url, start, stop)."""
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("PostgreSQL server binaries (initdb, pg_ctl) not found "
                    "(apt-get install -y postgresql)")
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

    def start() -> None:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-l", str(home / "log"), "-w", "-o",
                        f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off",
                        "start"], **run)

    def stop() -> None:
        subprocess.run([*as_user, pg_ctl, "-D", str(data), "-m", "immediate", "stop"],
                       capture_output=True, timeout=60)

    start()
    try:
        yield f"postgresql://rldse@127.0.0.1:{port}/postgres", start, stop
    finally:
        stop()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="module")
def postgres_url():
    with _server() as (url, _, _):
        yield url


def _database(url: str, name: str) -> str:
    """A fresh database on the server of `url`: each test gets its own."""
    engine = sqlalchemy.create_engine(url, isolation_level="AUTOCOMMIT")
    with engine.connect() as conn:
        conn.execute(sqlalchemy.text(f"CREATE DATABASE {name}"))
    engine.dispose()
    return url.rsplit("/", 1)[0] + f"/{name}"


#: a worker whose run_study may be slowed down, sped up or killed by the test
JOINER = """
import os, signal, sys, time
from pathlib import Path
sys.path.insert(0, {root!r})
from tests.search import stand_in
stand_in.register()
import optuna
from rldse.errors import RldseError
from rldse.search import run_study
from rldse.search import storage
storage.HEARTBEAT_S, storage.GRACE_S = 1, 2
mode, barrier = {mode!r}, Path({barrier!r})
if mode == "slow-creator":  # widen the gap between creating a study and stamping it
    stamp = optuna.Study.set_user_attr
    def slow_stamp(self, key, value):
        time.sleep(1.0)
        stamp(self, key, value)
    optuna.Study.set_user_attr = slow_stamp
if mode in ("slow-creator", "slow-trials", "killed-in-trial", "paused-in-trial"):
    fast = stand_in.program
    def slow(machine):
        if mode == "killed-in-trial" and len(list(Path({barrier!r}).glob("go"))):
            os.kill(os.getpid(), signal.SIGKILL)
        if mode == "paused-in-trial" and not (barrier / "in-trial").exists():
            (barrier / "in-trial").touch()  # the test SIGSTOPs this process now
            time.sleep(1.0)
        time.sleep(0.3)
        return fast(machine)
    stand_in.program = slow
(barrier / str({k})).touch()
while len([p for p in barrier.iterdir() if p.name.isdigit()]) < {n}:
    time.sleep(0.01)
try:
    report = run_study({path!r}, storage={url!r}, resume=True, progress=False,
                       trials={trials!r})
except RldseError as exc:
    print(exc, file=sys.stderr)
    sys.exit(2)
print(report.finished_now)
"""


def _joiners(n, mode, path, url, barrier, trials=None, ready=None):
    """n workers that start their search once ``ready`` (default n) files 0, 1, ... are in
    ``barrier`` (each touches its own: the test may touch the rest)."""
    barrier.mkdir(exist_ok=True)
    return [subprocess.Popen(
        [sys.executable, "-c", JOINER.format(root=str(ROOT), path=str(path), url=url,
                                             barrier=str(barrier), k=k, n=ready or n,
                                             mode=mode,
                                             trials=trials)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for k in range(n)]


def test_three_workers_creating_one_study_at_once_all_join_and_share_it(
        write_study, postgres_url, tmp_path):
    """Three processes (as three machines would) create one study at once and share it:
    none is told the study came from another trace, each trial is recorded and numbered
    once, and the budget is met, not exceeded by more than the trials started together."""
    url = _database(postgres_url, "creation")
    path = write_study(trials=BUDGET, sampler="random")
    procs = _joiners(3, "slow-creator", path, url, tmp_path / "barrier")
    for p in procs:
        out, err = p.communicate(timeout=180)
        assert p.returncode == 0, err  # none falsely told 'started from another trace'
    assert optuna.get_all_study_names(url) == ["study"]
    trials = optuna.load_study(study_name="study", storage=url).trials
    assert [t.number for t in trials] == list(range(len(trials)))  # each recorded once
    assert all(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials)
    assert BUDGET <= len(trials) <= BUDGET + 2  # the three may start the last trials together
    workers = Counter(trial_attrs(t)["worker"] for t in trials)
    assert len(workers) >= 2, workers  # the processes ran trials of the one study
    # a fourth, with the budget already reached, adds nothing
    report = run_study(path, storage=url, resume=True, progress=False)
    assert report.finished_now == 0 and len(optuna.load_study(
        study_name="study", storage=url).trials) == len(trials)


def test_trials_of_killed_workers_are_failed_run_again_and_the_budget_met(
        write_study, postgres_url, tmp_path):
    url = _database(postgres_url, "killed")
    path = write_study(trials=8, sampler="random", estimate={"prune": False})
    run_study(path, storage=url, trials=2, progress=False)
    # a worker that created its trial and died before any heartbeat (Optuna's own
    # storage, which has none, leaves exactly that behind) ...
    silent = optuna.load_study(study_name="study", storage=url).ask()
    # ... and one SIGKILLed in the middle of a trial, its heartbeat beating until then
    (tmp_path / "barrier").mkdir()
    (tmp_path / "barrier" / "go").touch()
    (killed,) = _joiners(1, "killed-in-trial", path, url, tmp_path / "barrier", trials=4)
    killed.communicate(timeout=120)
    assert killed.returncode == -9
    study = optuna.load_study(study_name="study", storage=url)
    running = [t.number for t in study.trials if t.state == TrialState.RUNNING]
    assert silent.number in running and len(running) == 2
    # a resumed worker fails both once their heartbeats are stale, runs them again, and
    # ends with the budget finished (heartbeats off: it would wait on them for ever)
    (resumed,) = _joiners(1, "slow-trials", path, url, tmp_path / "barrier2")
    out, err = resumed.communicate(timeout=120)
    assert resumed.returncode == 0, err
    trials = optuna.load_study(study_name="study", storage=url).trials
    for number in running:
        assert trials[number].state == TrialState.FAIL
        (retry,) = [t for t in trials if t.system_attrs.get("failed_trial") == number]
        assert retry.state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials) >= 8
    assert not [t for t in trials if t.state == TrialState.RUNNING]


@pytest.mark.slow  # two workers' start-up and the grace period: tens of seconds here
def test_a_worker_paused_past_the_grace_period_moves_on_when_resumed(
        write_study, postgres_url, tmp_path):
    url = _database(postgres_url, "paused")
    path = write_study(trials=6, sampler="random", estimate={"prune": False})
    barrier, later = tmp_path / "barrier", tmp_path / "later"
    (paused,) = _joiners(1, "paused-in-trial", path, url, barrier)
    (other,) = _joiners(1, "slow-trials", path, url, later, ready=2)  # starts when told
    deadline = time.monotonic() + 120
    while not (barrier / "in-trial").exists():  # its first trial, number 0, is under way
        assert paused.poll() is None and time.monotonic() < deadline, paused.stderr.read()
        time.sleep(0.01)
    os.kill(paused.pid, signal.SIGSTOP)
    try:  # another worker fails trial 0 once its heartbeat is past the grace period
        (later / "1").touch()
        while optuna.load_study(study_name="study", storage=url).trials[0].state != \
                TrialState.FAIL:
            assert other.poll() is None and time.monotonic() < deadline, other.stderr.read()
            time.sleep(0.2)
    finally:
        os.kill(paused.pid, signal.SIGCONT)
    out, err = paused.communicate(timeout=120)
    assert paused.returncode == 0 and "Traceback" not in err, err
    assert "trial 0 was failed and re-queued by another worker while this one was " \
           "paused; moving on" in err
    out, err = other.communicate(timeout=120)
    assert other.returncode == 0, err
    trials = optuna.load_study(study_name="study", storage=url).trials
    assert trials[0].state == TrialState.FAIL
    (retry,) = [t for t in trials if t.system_attrs.get("failed_trial") == 0]
    assert retry.state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert sum(t.state in (TrialState.COMPLETE, TrialState.PRUNED) for t in trials) >= 6
    assert not [t for t in trials if t.state == TrialState.RUNNING]


def test_a_server_stopped_mid_run_is_one_line_and_exit_2_keeping_finished_trials(
        write_study, tmp_path):
    with _server() as (url, start, stop):
        url = f"{url}?password=s3cr3t"  # trust authentication ignores it; it must not show
        path = write_study(trials=40, sampler="random", estimate={"prune": False})
        (proc,) = _joiners(1, "slow-trials", path, url, tmp_path / "barrier")
        deadline = time.monotonic() + 90
        while True:
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            with contextlib.suppress(Exception):
                if len(optuna.load_study(study_name="study", storage=url).get_trials(
                        states=(TrialState.COMPLETE,))) >= 3:
                    break
            time.sleep(0.2)
        stop()
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 2, err
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert "lost the study storage" in err and "s3cr3t" not in err, err
        start()
        done = optuna.load_study(study_name="study", storage=url).get_trials(
            states=(TrialState.COMPLETE,))
        assert len(done) >= 3
