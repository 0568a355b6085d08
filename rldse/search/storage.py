"""Where a study's trials live, and how a killed run gives its unfinished trial back.

- Embedded (default): Optuna's journal file `out/journal.log`. One `rldse search` at a
  time runs it (an exclusive lock on `out/run.lock`, which its worker processes share),
  so on `--resume` every trial still marked RUNNING was left by a killed run: it is
  failed and its parameters are queued again, to run first.
- A database URL (`postgresql://user:pw@host/db`, `sqlite:///path.db`): any number of
  processes on any machines share the study. Each running trial beats a heartbeat;
  a trial silent for longer than the grace period is failed and re-queued by whichever
  worker notices first (Optuna's heartbeat mechanism).

Across machines (PostgreSQL reachable from each):

    rldse search study.yaml --storage postgresql://rldse:PW@db-host/rldse --workers 8
    rldse search study.yaml --storage postgresql://rldse:PW@db-host/rldse --workers 8 --resume

(the first creates the study; the others, with `--resume`, join it.)
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import sqlalchemy.exc
from optuna.storages import RetryHeartbeatStaleTrialCallback
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock, JournalStorage
from optuna.trial import TrialState

from rldse.errors import RldseError

JOURNAL = "journal.log"
LOCK = "run.lock"
HEARTBEAT_S = 10
GRACE_S = 30
JOURNAL_LOCK_GRACE_S = 10  # a journal lock file older than this was left by a killed writer


@dataclass(frozen=True)
class StorageRef:
    url: str  # a database URL, or the journal file's path
    key: str  # what errors name: '--storage', 'storage', or the out folder
    embedded: bool

    @property
    def shown(self) -> str:
        """The URL without its password, for messages and reports."""
        return re.sub(r"://([^:/@]+):[^@]*@", r"://\1:***@", self.url)


def storage_ref(out_dir: Path, cli_url: str | None, file_url: str | None,
                file_key: str) -> StorageRef:
    if cli_url:
        return StorageRef(cli_url, "--storage", embedded=False)
    if file_url:
        return StorageRef(file_url, file_key, embedded=False)
    return StorageRef(str(out_dir / JOURNAL), str(out_dir), embedded=True)


def open_storage(ref: StorageRef) -> optuna.storages.BaseStorage:
    """The Optuna storage `ref` names; RldseError naming its key when it cannot be opened."""
    if ref.embedded:
        Path(ref.url).parent.mkdir(parents=True, exist_ok=True)
        lock = JournalFileOpenLock(ref.url, grace_period=JOURNAL_LOCK_GRACE_S)
        return JournalStorage(JournalFileBackend(ref.url, lock_obj=lock))
    if "://" not in ref.url:
        raise RldseError(f"{ref.key} {ref.shown}: expected a database URL such as "
                         "postgresql://user:password@host/db or sqlite:///study.db")
    engine_kwargs: dict = {"pool_pre_ping": True}
    if ref.url.startswith("postgresql"):
        engine_kwargs["connect_args"] = {"connect_timeout": 10}
    for attempt in range(3):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return optuna.storages.RDBStorage(
                    ref.url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_S,
                    grace_period=GRACE_S,
                    heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback())
        except ImportError:
            raise RldseError(f"{ref.key} {ref.shown}: no driver for this database (for "
                             "PostgreSQL: pip install 'psycopg[binary]')") from None
        except sqlalchemy.exc.IntegrityError:
            # workers starting together on a new database race to create Optuna's tables
            time.sleep(0.5 * (attempt + 1))
        except Exception as exc:  # sqlalchemy's errors: bad URL, refused, auth, unknown db
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise RldseError(f"{ref.key} {ref.shown}: cannot open the study storage "
                             f"({first})") from None
    raise RldseError(f"{ref.key} {ref.shown}: cannot create the study tables (other "
                     "processes kept creating them at the same time)")


@contextlib.contextmanager
def run_lock(ref: StorageRef) -> Iterator[None]:
    """Hold the embedded study's run lock (nothing to hold for a shared database)."""
    if not ref.embedded:
        yield
        return
    path = Path(ref.url).parent / LOCK
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise RldseError(f"{ref.key}: this study is being run by another process "
                             f"(pid {holder}); wait for it, or stop it and --resume") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        # a journal lock file now can only be a killed writer's (JournalFileOpenLock names
        # it journal path + '.lock'); removing it spares the next write its grace period
        Path(ref.url + ".lock").unlink(missing_ok=True)
        yield
    finally:
        os.close(fd)


def requeue_stale(study: optuna.Study, ref: StorageRef) -> int:
    """Fail the trials a killed run left RUNNING and queue their parameters again.

    Embedded storage only: the run lock proves no live process owns them. A shared
    database relies on heartbeats instead (Optuna checks them before each trial).
    """
    running = (TrialState.RUNNING,)
    if not ref.embedded:
        before = len(study.get_trials(deepcopy=False, states=running))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            optuna.storages.fail_stale_trials(study)
        return before - len(study.get_trials(deepcopy=False, states=running))
    stale = [t.number for t in study.get_trials(deepcopy=False, states=running)]
    for number in stale:
        study.tell(number, state=TrialState.FAIL)
    failed = {t.number: t for t in study.get_trials(states=(TrialState.FAIL,))}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
        retry = RetryHeartbeatStaleTrialCallback()
        for number in stale:
            retry(study, failed[number])
    return len(stale)
