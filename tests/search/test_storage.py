"""Study storage: passwords never shown, a torn journal line recovered, and on a database
every trial beats from its creation and one that never beat still goes stale."""

from __future__ import annotations

import signal

import optuna
import pytest
import sqlalchemy
from optuna.storages._rdb import models
from optuna.trial import TrialState

from rldse.errors import RldseError, redact_url
from rldse.search import load_study_file, run_study
from rldse.search import storage as storage_mod
from rldse.search.storage import StorageRef, open_storage, storage_ref

SECRET = "s3cr3t"
FORMS = [
    f"postgresql://rldse:{SECRET}@127.0.0.1:1/db",
    f"postgresql://rldse@127.0.0.1:1/db?password={SECRET}&connect_timeout=1",
    f"postgresql://:{SECRET}@127.0.0.1:1/db",
    f"rldse:{SECRET}@127.0.0.1",  # no scheme
    f"postgresql://rldse:{SECRET}@x@127.0.0.1:1/db",  # an unencoded '@' in the password
    f"postgresql+psycopg://rldse:{SECRET}@127.0.0.1:1/db?password={SECRET}",
]


@pytest.mark.parametrize("url", FORMS)
def test_no_password_form_is_ever_shown(url, write_study):
    assert SECRET not in redact_url(url) and "***" in redact_url(url)
    assert redact_url(url).split("***")[0] in url  # the rest is kept to recognise it
    with pytest.raises(RldseError) as err:
        open_storage(StorageRef(url, "--storage", embedded=False))
    assert SECRET not in str(err.value) and "\n" not in str(err.value), str(err.value)
    with pytest.raises(RldseError) as err:  # the study path: its message and the report
        run_study(write_study(), storage=url, progress=False)
    assert SECRET not in str(err.value), str(err.value)


def _finished(study: optuna.Study) -> list:
    return [t for t in study.trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]


def _load(path) -> optuna.Study:
    sf = load_study_file(path)
    return optuna.load_study(study_name=sf.study_name,
                             storage=open_storage(storage_ref(sf.out_dir, None, None, "")))


def test_a_journal_line_torn_by_a_kill_is_cut_with_a_warning(write_study, capsys):
    path = write_study(trials=4, sampler="random")
    run_study(path, progress=False)
    journal = path.parent / "out" / "journal.log"
    kept = [(t.number, t.values, t.params) for t in _finished(_load(path))]
    journal.write_bytes(journal.read_bytes() + b'{"op_code":6,"worker_id":"x","trial_')
    report = run_study(path, trials=6, resume=True, progress=False)
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"rldse: warning: {journal}: cut a last line torn") and "\n" not in err
    assert any("torn" in n for n in report.notes)
    after = _finished(_load(path))
    assert len(after) == 6 and [(t.number, t.values, t.params) for t in after[:4]] == kept
    assert journal.read_bytes().endswith(b"\n")


def test_a_damaged_journal_line_is_refused_in_one_line(write_study):
    path = write_study(trials=2, sampler="random")
    run_study(path, progress=False)
    journal = path.parent / "out" / "journal.log"
    lines = journal.read_bytes().splitlines(keepends=True)
    journal.write_bytes(b"".join([lines[0], b"not json\n", *lines[1:]]))
    with pytest.raises(RldseError, match=r"journal.log: line 2 is not a journal record"):
        run_study(path, trials=3, resume=True, progress=False)


def _within(seconds: int, call):
    """`call()`, failing the test if it has not returned after `seconds` (a trial left
    RUNNING for ever makes a run wait for ever)."""
    def expire(*_):
        raise TimeoutError(f"still waiting after {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        return call()
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _heartbeats(st) -> dict[int, int]:
    with st.engine.connect() as conn:
        rows = conn.execute(sqlalchemy.select(models.TrialHeartbeatModel.trial_id)).all()
    return {r[0]: 1 for r in rows}


@pytest.mark.filterwarnings("ignore:Heartbeat of storage:UserWarning")
def test_a_trial_beats_from_its_creation(tmp_path):
    st = open_storage(StorageRef(f"sqlite:///{tmp_path / 'db.sqlite'}", "--storage", False))
    study = optuna.create_study(storage=st, study_name="s")
    trial = study.ask()  # no heartbeat thread yet: the storage beat on creation
    assert trial._trial_id in _heartbeats(st)
    study.tell(trial, state=TrialState.FAIL)
    study.enqueue_trial({"x": 1.0})
    queued = study.ask()  # a queued trial taken to run beats too
    assert queued._trial_id in _heartbeats(st)


def test_a_trial_killed_before_its_first_heartbeat_is_failed_and_run_again(
        write_study, tmp_path, monkeypatch):
    url = f"sqlite:///{tmp_path / 'db.sqlite'}"
    path = write_study(trials=3, sampler="random")
    run_study(path, storage=url, progress=False)
    # a worker that created its trial and died before beating: Optuna's own storage,
    # without heartbeats, leaves exactly that behind
    plain = optuna.load_study(study_name="study", storage=url)
    orphan = plain.ask()
    monkeypatch.setattr(storage_mod, "HEARTBEAT_S", 1)
    monkeypatch.setattr(storage_mod, "GRACE_S", 1)
    report = _within(60, lambda: run_study(path, storage=url, trials=5, resume=True,
                                            progress=False))
    trials = optuna.load_study(study_name="study", storage=url).trials
    assert trials[orphan.number].state == TrialState.FAIL
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == orphan.number]
    assert len(retried) == 1 and retried[0].state in (TrialState.COMPLETE, TrialState.PRUNED)
    assert len(_finished(optuna.load_study(study_name="study", storage=url))) == 5
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    assert report.finished_now == 2


#: the characters a URL reserves, each in a password written unencoded
RESERVED = "@:/%#?&="
PASSWORDS = [f"Pw{c}9x{c}Zq" for c in RESERVED] + ["S3cr@t:pa/ss%word#Q?x&y=1"]


def _forms(password: str) -> list[str]:
    return [f"postgresql://rldse:{password}@127.0.0.1:1/db",
            f"postgresql://rldse@127.0.0.1:1/db?connect_timeout=1&password={password}"]


@pytest.mark.parametrize("password", PASSWORDS)
def test_a_password_with_reserved_characters_appears_nowhere(password, write_study, capsys,
                                                             monkeypatch, tmp_path):
    """--storage, the study file's storage: and RLDSE_STORAGE: no output, error, report or
    file holds the password (an unencoded '&' in the query form ends it, as URL parsers
    read it: the test checks the part before the first '&')."""
    from rldse.cli import main

    secret = password.split("&")[0] if "&" in password else password
    for i, url in enumerate(_forms(password)):
        assert secret not in redact_url(url) and "***" in redact_url(url)
        for how in ("flag", "file", "env"):
            path = write_study(folder=f"s{i}{how}", **({"storage": url} if how == "file" else {}))
            argv = ["search", str(path), "--trials", "1"]
            if how == "flag":
                argv += ["--storage", url]
            with monkeypatch.context() as env:
                if how == "env":
                    env.setenv(storage_mod.STORAGE_ENV, url)
                assert main(argv) == 2
            out, err = capsys.readouterr()
            assert err.count("\n") == 1 and "***" in err, err
            assert secret not in out + err, (how, url, err)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix != ".yaml"]
    assert all(secret.encode() not in p.read_bytes() for p in written)


def test_a_short_password_leaves_the_message_whole():
    """A password 'p' is masked where it stands alone, not in 'postgresql' or 'port'."""
    from rldse.errors import redact_text

    url = "postgresql://rldse:p@db-host:5432/rldse"
    assert redact_url(url) == "postgresql://rldse:***@db-host:5432/rldse"
    message = f'connection to {url} at "db-host", port 5432 failed: password "p" refused'
    assert redact_text(message, url) == ('connection to postgresql://rldse:***@db-host:5432/'
                                         'rldse at "db-host", port 5432 failed: password '
                                         '"***" refused')
    assert redact_url("postgresql://u@h/db?password=p&sslmode=require") == \
        "postgresql://u@h/db?password=***&sslmode=require"


def test_unencoded_at_in_password_never_half_leaks():
    """A driver that splits at the first '@' would name the password's tail as the host
    (and look it up): such a URL is refused before any driver sees it."""
    url = "postgresql://simple:a@LongSecretTail99@127.0.0.1:55432/s1"
    assert "LongSecretTail99" not in redact_url(url)
    with pytest.raises(RldseError, match="cannot tell where the URL's password ends") as err:
        open_storage(StorageRef(url, "--storage", embedded=False))
    assert "LongSecretTail99" not in str(err.value) and "Tail" not in str(err.value)
    assert "pa" not in redact_url("postgresql://user@pa:ss@host/db").split("@")[0]
    assert redact_url("postgresql://u@h/db") == "postgresql://u@h/db"


# ---- a folder that takes no writes, a disk that fills ---------------------------------

def test_a_read_only_study_folder_is_one_line_before_any_trial(write_study, monkeypatch):
    """Root ignores the permission bits, so the read-only mount is the os call failing."""
    import errno
    import os

    path = write_study(trials=2)
    real_mkdir = os.mkdir

    def read_only(target, *args, **kwargs):
        if str(target).startswith(str(path.parent)):
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(target))
        return real_mkdir(target, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", read_only)
    with pytest.raises(RldseError) as err:
        run_study(path, progress=False)
    assert str(err.value) == f"{path.parent / 'out'}: cannot write: the file system is read-only"
    assert sorted(p.name for p in path.parent.iterdir()) == ["study.yaml"]


def test_a_trial_cut_by_a_full_disk_is_one_line_and_runs_again_on_resume(write_study,
                                                                         monkeypatch):
    """The journal's third write after the study is set up fails for a full disk (a
    trial's record): the run stops in one line, that trial stays RUNNING, and --resume
    fails it and runs its point again; the budget ends up finished, each trial once."""
    import errno
    import os

    from optuna.storages.journal import JournalFileBackend

    path = write_study(trials=4, sampler="random", estimate={"prune": False})
    real_append = JournalFileBackend.append_logs
    calls = {"n": 0}

    def fills(self, logs):
        calls["n"] += 1
        if calls["n"] == 12:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_append(self, logs)

    monkeypatch.setattr(JournalFileBackend, "append_logs", fills)
    with pytest.raises(RldseError) as err:
        run_study(path, progress=False)
    assert str(err.value).startswith(f"{path.parent / 'out'}: cannot write: the disk is full")
    assert "--resume" in str(err.value) and "\n" not in str(err.value)
    sf = load_study_file(path)
    study = optuna.load_study(study_name=sf.study_name,
                              storage=open_storage(storage_ref(sf.out_dir, None, None, "")))
    cut = [t for t in study.trials if t.state == TrialState.RUNNING]
    assert len(cut) == 1 and not any(t.state == TrialState.FAIL for t in study.trials)

    monkeypatch.setattr(JournalFileBackend, "append_logs", real_append)
    report = run_study(path, resume=True, progress=False)
    after = optuna.load_study(study_name=sf.study_name,
                              storage=open_storage(storage_ref(sf.out_dir, None, None, "")))
    assert report.requeued == 1
    assert after.trials[cut[0].number].state == TrialState.FAIL
    retried = [t for t in after.trials if t.system_attrs.get("failed_trial") == cut[0].number]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE
    assert cut[0].params.items() <= retried[0].params.items()
    assert sum(t.state == TrialState.COMPLETE for t in after.trials) == 4


def test_a_search_the_free_space_cannot_hold_is_refused_before_any_trial(write_study,
                                                                         monkeypatch):
    import shutil

    path = write_study(trials=100)
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(1, 1, 10**5))
    with pytest.raises(RldseError, match=r"out: would write about 1 MB \(out/ for 100 trials"):
        run_study(path, progress=False)
    assert not (path.parent / "out").exists()
