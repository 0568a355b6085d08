"""Where a study's trials live, and how a killed run gives its unfinished trial back.

- Embedded (default): Optuna's journal file `out/journal.log`. One `rldse search` at a
  time runs it (an exclusive lock on `out/run.lock`, which its worker processes share),
  so on `--resume` every trial still marked RUNNING was left by a killed run: it is
  failed and its parameters are queued again, to run first. A last line torn by a kill
  mid-write is cut off (with a warning) before the journal is read.
- A database URL (`postgresql://user@host/db`, its password in PGPASSWORD;
  `sqlite:///path.db`): any number of processes on any machines share the study. Each
  running trial beats a heartbeat from the moment it is created; a trial silent for
  longer than the grace period is failed and re-queued by whichever worker notices
  first (Optuna's heartbeat mechanism). A RUNNING trial with no heartbeat at all (its
  worker killed between creating it and its first beat) gets one on its behalf when
  first seen, so it goes stale too. A new study is created under a database lock, so
  workers starting together agree on it.

Across machines (PostgreSQL reachable from each), the password kept off the command line
(where `ps` shows it) in PGPASSWORD or ~/.pgpass, which the driver (libpq) reads:

    export PGPASSWORD=...   # or a line in ~/.pgpass
    rldse search study.yaml --storage postgresql://rldse@db-host/rldse --workers 8
    rldse search study.yaml --storage postgresql://rldse@db-host/rldse --workers 8 --resume

(the first creates the study; the others, with `--resume`, join it), or the whole URL in
`RLDSE_STORAGE` (`STORAGE_ENV`), which stands for `--storage` when it is not given. A
URL is shown only with its password masked (rldse.errors.redact_url), and one whose
unencoded password makes it ambiguous is refused before any driver sees it.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import time
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import optuna
import sqlalchemy
import sqlalchemy.exc
from optuna.storages import RDBStorage, RetryHeartbeatStaleTrialCallback
from optuna.storages._rdb import models
from optuna.storages.journal import JournalFileBackend, JournalFileOpenLock, JournalStorage
from optuna.trial import FrozenTrial, TrialState

from rldse.errors import RldseError, ambiguous_url, redact_text, redact_url
from rldse.files import disk_error, folder_lock, write_error

JOURNAL = "journal.log"
LOCK = "run.lock"
HEARTBEAT_S = 10
GRACE_S = 30
WAIT_POLL_S = 0.5  # how often a worker past the budget looks at others' trials
JOURNAL_LOCK_GRACE_S = 10  # a journal lock file older than this was left by a killed writer


@dataclass(frozen=True)
class StorageRef:
    url: str  # a database URL, or the journal file's path
    key: str  # what errors name: '--storage', 'storage', or the out folder
    embedded: bool

    @property
    def shown(self) -> str:
        """The URL without its password, for messages and reports."""
        return self.url if self.embedded else redact_url(self.url)


#: The environment variable whose database URL stands for `--storage` when it is not given
STORAGE_ENV = "RLDSE_STORAGE"


def storage_ref(out_dir: Path, cli_url: str | None, file_url: str | None,
                file_key: str) -> StorageRef:
    """Where a study lives: `--storage`, else RLDSE_STORAGE, else the study file's
    `storage:`, else the journal in its out folder."""
    if cli_url:
        return StorageRef(cli_url, "--storage", embedded=False)
    if os.environ.get(STORAGE_ENV):
        return StorageRef(os.environ[STORAGE_ENV], STORAGE_ENV, embedded=False)
    if file_url:
        return StorageRef(file_url, file_key, embedded=False)
    return StorageRef(str(out_dir / JOURNAL), str(out_dir), embedded=True)


#: database schemes whose creation lock and heartbeats are implemented (and tested)
_SCHEMES = ("postgresql", "sqlite")


class _HeartbeatStorage(RDBStorage):
    """RDBStorage whose trials beat from their creation, and whose stale-trial check also
    catches a trial that never beat (Optuna's skips it, leaving it RUNNING for ever)."""

    def _create_new_trial(self, study_id: int,
                          template_trial: FrozenTrial | None = None) -> FrozenTrial:
        frozen = super()._create_new_trial(study_id, template_trial)
        if frozen.state == TrialState.RUNNING:
            self.record_heartbeat(frozen._trial_id)
        return frozen

    def set_trial_state_values(self, trial_id: int, state: TrialState,
                               values=None) -> bool:
        updated = super().set_trial_state_values(trial_id, state, values)
        if updated and state == TrialState.RUNNING:  # a queued trial taken to run
            self.record_heartbeat(trial_id)
        return updated

    def record_heartbeat(self, trial_id: int) -> None:
        # runs in Optuna's heartbeat thread too: an outage is left to the main thread,
        # which reports it at its next storage call, instead of a thread traceback
        with contextlib.suppress(optuna.exceptions.StorageInternalError,
                                 sqlalchemy.exc.SQLAlchemyError):
            super().record_heartbeat(trial_id)

    def _get_stale_trial_ids(self, study_id: int) -> list[int]:
        with self.engine.begin() as conn:
            silent = conn.execute(
                sqlalchemy.select(models.TrialModel.trial_id)
                .where(models.TrialModel.study_id == study_id,
                       models.TrialModel.state == TrialState.RUNNING,
                       ~models.TrialModel.heartbeats.any())).scalars().all()
        for trial_id in silent:  # first seen now: stale after the grace period unless it beats
            self.record_heartbeat(trial_id)
        return super()._get_stale_trial_ids(study_id)


#: PostgreSQL SQLSTATEs of a table or type another process created meanwhile
#: (duplicate_table, duplicate_object; postgresql.org/docs/current/errcodes-appendix.html)
_CREATED_MEANWHILE = ("42P07", "42710")


def open_storage(ref: StorageRef) -> optuna.storages.BaseStorage:
    """The Optuna storage `ref` names; RldseError naming its key when it cannot be opened."""
    if ref.embedded:
        _make_folder(Path(ref.url).parent)
        lock = JournalFileOpenLock(ref.url, grace_period=JOURNAL_LOCK_GRACE_S)
        return JournalStorage(JournalFileBackend(ref.url, lock_obj=lock))
    scheme = ref.url.partition("://")[0].partition("+")[0]
    if "://" not in ref.url or scheme not in _SCHEMES:
        raise RldseError(f"{ref.key} {ref.shown}: expected a database URL such as "
                         "postgresql://user@host/db (the password in PGPASSWORD or "
                         "~/.pgpass) or sqlite:///study.db")
    if ambiguous_url(ref.url):
        raise RldseError(f"{ref.key} {ref.shown}: cannot tell where the URL's password "
                         "ends (it holds an unencoded '@', '/', '?' or '#'): leave it out of "
                         "the URL and set PGPASSWORD or ~/.pgpass, or percent-encode it (@ as "
                         "%40, / as %2F, ? as %3F, # as %23, % as %25)")
    engine_kwargs: dict = {"pool_pre_ping": True}
    if scheme == "postgresql":
        engine_kwargs["connect_args"] = {"connect_timeout": 10}
    for attempt in range(3):
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                return _HeartbeatStorage(
                    ref.url, engine_kwargs=engine_kwargs, heartbeat_interval=HEARTBEAT_S,
                    grace_period=GRACE_S,
                    heartbeat_stale_trial_callback=RetryHeartbeatStaleTrialCallback())
        except ImportError:
            raise RldseError(f"{ref.key} {ref.shown}: no driver for this database (for "
                             "PostgreSQL: pip install 'psycopg[binary]')") from None
        except sqlalchemy.exc.DBAPIError as exc:
            # workers starting together on a new database race to create Optuna's tables:
            # a unique violation, or (PostgreSQL) the table or its type made meanwhile
            if not (isinstance(exc, sqlalchemy.exc.IntegrityError)
                    or getattr(exc.orig, "sqlstate", None) in _CREATED_MEANWHILE):
                raise RldseError(f"{ref.key} {ref.shown}: cannot open the study storage "
                                 f"({_first_line(exc, ref)})") from None
            time.sleep(0.5 * (attempt + 1))
        except Exception as exc:  # sqlalchemy's errors: bad URL, refused, auth, unknown db
            raise RldseError(f"{ref.key} {ref.shown}: cannot open the study storage "
                             f"({_first_line(exc, ref)})") from None
    raise RldseError(f"{ref.key} {ref.shown}: cannot create the study tables (other "
                     "processes kept creating them at the same time)")


def _first_line(exc: BaseException, ref: StorageRef) -> str:
    text = str(exc).strip()
    return redact_text(text.splitlines()[0], ref.url) if text else type(exc).__name__


def _storage_error(exc: BaseException) -> BaseException | None:
    """The database error behind `exc` (itself, or along its causes and contexts)."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, sqlalchemy.exc.SQLAlchemyError):
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


class TrialCut(BaseException):
    """A write the disk refused (rldse.files.DISK_ERRNOS) while a trial ran, raised out of
    the objective past Optuna's `except Exception`: Optuna then records nothing, so the
    trial stays RUNNING and the next run (`--resume`; a shared database's heartbeats)
    fails and queues it again instead of losing it as FAIL. Its cause is the OSError."""


@contextlib.contextmanager
def storage_errors(ref: StorageRef) -> Iterator[None]:
    """A database lost mid-run (server stopped, network gone), or a write the disk
    refused (full, out of quota, read-only), as one RldseError; every trial it recorded
    as finished stays there, and `--resume` re-runs the one it cut."""
    try:
        yield
    except RldseError:
        raise
    except (Exception, TrialCut) as exc:
        refused = disk_error(exc)
        if refused is not None:
            where = Path(refused.filename) if refused.filename else Path(ref.url).parent
            raise RldseError(f"{write_error(where, refused)}; the finished trials are kept: "
                             "make room and run again with --resume (the trial it cut runs "
                             "again)") from None
        cause = None if ref.embedded else _storage_error(exc)
        if cause is None:
            raise
        detail = getattr(cause, "orig", None) or cause  # the driver's own message
        raise RldseError(f"{ref.key} {ref.shown}: lost the study storage "
                         f"({_first_line(detail, ref)}); "
                         "the finished trials are kept there: run again with --resume "
                         "when it is back") from None


@contextlib.contextmanager
def creation_lock(ref: StorageRef, st: optuna.storages.BaseStorage,
                  name: str) -> Iterator[None]:
    """Held while a study is looked up, created and stamped, so that workers starting
    together see either no study or a finished one. The embedded journal's run lock
    already serialises; PostgreSQL takes a session advisory lock, SQLite a file lock."""
    if ref.embedded:
        yield
        return
    key = int.from_bytes(hashlib.sha256(f"rldse/{name}".encode()).digest()[:8], "little",
                         signed=True)
    engine = st.engine  # type: ignore[attr-defined]
    if engine.dialect.name == "postgresql":
        with engine.connect() as conn:
            conn.execute(sqlalchemy.text("SELECT pg_advisory_lock(:k)"), {"k": key})
            try:
                yield
            finally:
                conn.execute(sqlalchemy.text("SELECT pg_advisory_unlock(:k)"), {"k": key})
        return
    fd = os.open(f"{engine.url.database}.rldse-create.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def repair_journal(ref: StorageRef) -> str | None:
    """Cut a last line torn by a kill mid-write (Optuna would refuse the journal for good,
    and append after it); the warning to show, or None. Only under the run lock: no
    writer is live. A complete line that is not JSON is damage elsewhere: refused."""
    path = Path(ref.url)
    if not ref.embedded or not path.is_file():
        return None
    data = path.read_bytes()
    keep = data.rfind(b"\n") + 1
    for number, line in enumerate(data[:keep].splitlines(), start=1):
        try:
            json.loads(line)
        except ValueError:
            raise RldseError(f"{path}: line {number} is not a journal record (the file is "
                             "damaged; restore it from a copy or remove the out/ folder)"
                             ) from None
    if keep == len(data):
        return None
    with open(path, "rb+") as fh:
        fh.truncate(keep)
        os.fsync(fh.fileno())
    return (f"{path}: cut a last line torn by a killed run ({len(data) - keep} bytes); "
            "the operation it held is lost, every finished trial before it is kept")


@contextlib.contextmanager
def run_lock(ref: StorageRef) -> Iterator[None]:
    """Hold the embedded study's run lock (nothing to hold for a shared database)."""
    if not ref.embedded:
        yield
        return
    folder = Path(ref.url).parent
    _make_folder(folder)
    with folder_lock(folder, f"{ref.key}: this study is being run by another process "
                     "(pid {pid}); wait for it, or stop it and --resume", name=LOCK):
        # a journal lock file now can only be a killed writer's (JournalFileOpenLock names
        # it journal path + '.lock'); removing it spares the next write its grace period
        Path(ref.url + ".lock").unlink(missing_ok=True)
        yield


def _make_folder(folder: Path) -> None:
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_error(folder, exc) from None


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


def wait_for_others(study: optuna.Study, ref: StorageRef) -> None:
    """A moment of waiting for other processes' running trials, then fail and queue again
    those whose heartbeat went stale (shared database)."""
    time.sleep(WAIT_POLL_S)
    requeue_stale(study, ref)
