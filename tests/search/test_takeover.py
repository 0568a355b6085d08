"""A worker paused past the heartbeat grace period finds, when it resumes, that another
worker failed and re-queued its trial: it warns and moves on (before, Optuna's tell on a
FAIL trial ended the worker with a traceback)."""

from __future__ import annotations

import optuna
from optuna.trial import TrialState

from rldse.search import load_study_file, run_study
from rldse.search.storage import open_storage, storage_ref
from rldse.search.trial import TrialRunner


def test_a_trial_failed_by_another_worker_is_left_and_the_study_goes_on(write_study,
                                                                        monkeypatch, capsys):
    real = TrialRunner._run
    taken = []

    def run(self, trial, attrs):
        value = real(self, trial, attrs)
        if not taken:  # the first trial: another worker fails it while this one is paused
            trial.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            taken.append(trial.number)
        return value

    monkeypatch.setattr(TrialRunner, "_run", run)
    path = write_study(trials=4, sampler="random", estimate={"prune": False})
    report = run_study(path, progress=False)
    err = capsys.readouterr().err
    assert f"trial {taken[0]} was failed and re-queued by another worker" in err
    sf = load_study_file(path)
    study = optuna.load_study(study_name=sf.study_name,
                              storage=open_storage(storage_ref(sf.out_dir, None, None, "")))
    states = [t.state for t in study.trials]
    assert states[taken[0]] == TrialState.FAIL and states.count(TrialState.COMPLETE) == 4
    assert report.best


def test_a_forked_workers_notes_reach_the_summary(write_study, monkeypatch):
    """Notes a forked worker warns of (here: its trial taken over) are the run's notes
    too, in summary.json, as the single-process run's are."""
    from rldse.search.report import StudyReport

    real = TrialRunner._run
    taken = []  # per worker (each forked process has its own copy)

    def run(self, trial, attrs):
        value = real(self, trial, attrs)
        if not taken:
            trial.study._storage.set_trial_state_values(trial._trial_id, TrialState.FAIL)
            taken.append(trial.number)
        return value

    monkeypatch.setattr(TrialRunner, "_run", run)
    path = write_study(trials=4, sampler="random", estimate={"prune": False})
    report = run_study(path, workers=2, progress=False)
    summary = StudyReport.model_validate_json(
        (load_study_file(path).out_dir / "summary.json").read_text())
    moved_on = [n for n in summary.notes if "was failed and re-queued by another worker" in n]
    assert len(moved_on) == 2 and summary.notes == report.notes  # one per worker
