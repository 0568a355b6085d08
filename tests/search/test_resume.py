"""Kill a running study with SIGKILL, resume it: every finished trial is kept, none is
duplicated, the trial the kill interrupted runs again exactly once, the count goes on."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from rldse.search import load_study_file, run_study
from rldse.search.storage import open_storage, storage_ref

ROOT = Path(__file__).parents[2]
BUDGET = 12

#: a `rldse search` whose simulations take 0.2 s each, so the kill lands in a trial
RUNNER = """
import sys, time
sys.path.insert(0, {root!r})
from tests.search import stand_in
stand_in.register()
fast = stand_in.program
def slow(machine):
    time.sleep(0.2)
    return fast(machine)
stand_in.program = slow
from rldse.search import run_study
run_study({path!r}, progress=False)
"""

FINISHED = (TrialState.COMPLETE, TrialState.PRUNED)


def _load(path: Path) -> optuna.Study:
    sf = load_study_file(path)
    st = open_storage(storage_ref(sf.out_dir, None, None, ""))
    return optuna.load_study(study_name=sf.study_name, storage=st)


def test_sigkill_then_resume_keeps_every_finished_trial_once(write_study):
    path = write_study(trials=BUDGET, sampler="random", estimate={"prune": False})
    proc = subprocess.Popen([sys.executable, "-c", RUNNER.format(root=str(ROOT), path=str(path))],
                            start_new_session=True, stderr=subprocess.PIPE)
    journal = path.parent / "out" / "journal.log"
    deadline = time.monotonic() + 60
    try:
        while True:
            assert proc.poll() is None, proc.stderr.read().decode()
            assert time.monotonic() < deadline, "the study did not get going"
            if journal.exists():
                trials = _load(path).trials
                done = [t for t in trials if t.state in FINISHED]
                if len(done) >= 4 and trials[-1].state == TrialState.RUNNING:
                    break
            time.sleep(0.05)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()

    before = _load(path).trials
    kept = {t.number: (t.state, t.values, t.params) for t in before if t.state in FINISHED}
    stale = [t.number for t in before if t.state == TrialState.RUNNING]
    assert 4 <= len(kept) < BUDGET and stale

    report = run_study(path, resume=True, progress=False)
    after = _load(path).trials
    numbers = [t.number for t in after]
    assert numbers == list(range(len(after)))  # none duplicated, the count goes on
    assert min(set(numbers) - {t.number for t in before}) == len(before)
    for number, (state, values, params) in kept.items():
        t = after[number]
        assert (t.state, t.values, t.params) == (state, values, params)
    assert report.requeued == len(stale)
    for number in stale:
        assert after[number].state == TrialState.FAIL
        retried = [t for t in after if t.system_attrs.get("failed_trial") == number]
        assert len(retried) == 1 and retried[0].state in FINISHED
        # the retry keeps what the killed trial had drawn (all of it, unless the kill
        # landed between two suggestions)
        assert after[number].params.items() <= retried[0].params.items()
    assert sum(t.state in FINISHED for t in after) == BUDGET
    assert report.finished_now == BUDGET - len(kept)
