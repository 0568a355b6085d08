"""Running a study: open or resume it, run trials in K worker processes, write outputs.

The budget is the study's total of finished trials (COMPLETE or PRUNED; running ones
count as soon as they start), so `--trials 60` after 40 runs 20 more, and a resumed
study goes on numbering where it stopped. Workers are processes (the simulator is pure
Python), forked from this one, each with its own storage connection and sampler (seeded
with the study seed, the worker's index and the trials already there, so a resumed
study does not replay its first proposals). With several workers, a budget may be
overshot by at most K − 1 trials started at the same moment (as Optuna's own
MaxTrialsCallback). On a shared database a worker that reaches the budget while other
processes' trials still run waits for them (or for their heartbeats to go stale, when
they are failed, queued again and run here), so a run ends with its budget finished.

A forked worker killed by a signal (the OOM killer, `kill -9`) is reported on stderr
and in the report's notes; the trials it left running are failed and queued again, and
this process runs what the budget still lacks.
"""

from __future__ import annotations

import hashlib
import multiprocessing
import multiprocessing.queues
import os
import sys
import time
import traceback
import warnings
from pathlib import Path

import optuna
from optuna.trial import TrialState

from rldse.errors import RldseError
from rldse.files import check_utf8, clean_stale_temporaries, disk_error
from rldse.search.cache import ResultCache
from rldse.search.cost import check_search, search_cost
from rldse.search.report import StudyReport, write_outputs
from rldse.search.samplers import make_sampler
from rldse.search.storage import (
    StorageRef,
    TrialCut,
    creation_lock,
    open_storage,
    repair_journal,
    requeue_stale,
    run_lock,
    storage_errors,
    storage_ref,
    wait_for_others,
)
from rldse.search.study_file import StudyFile, load_study_file
from rldse.search.trial import TrialRunner
from rldse.sim.budget import Limits, check_free_space, check_grid, check_workers
from rldse.workloads import workload_of

CACHE_FILE = "cache.sqlite"
#: bytes a trial adds to out/ (journal 2.8 kB, result cache 2.9 kB, trials.csv and
#: .parquet 2.7 kB: a 20-trial 2-dimension study of the test suite's, measured), and
#: what the outputs take whatever the trials (figures 104 kB, summary.json, best/)
BYTES_PER_TRIAL, OUTPUT_BYTES = 8_000, 200_000
_COUNTED = (TrialState.COMPLETE, TrialState.PRUNED, TrialState.RUNNING)
_DIGEST_ATTR = "rldse.study_digest"


def run_study(path: str | Path, trials: int | None = None, workers: int = 1,
              storage: str | None = None, resume: bool = False,
              progress: bool = True, allow_long: bool = False,
              out_dir: Path | None = None, priced: bool = False) -> StudyReport:
    """Run (or resume) the study in `path` to its budget and write its outputs (to
    ``out_dir`` if given, else the file's own out/). The whole search is estimated first
    and refused over rldse.sim.budget's limits (rldse.search.cost), unless ``allow_long``
    or ``priced`` (its caller priced it already: a study's plan); a trial whose
    simulation is estimated over them is invalid unless ``allow_long``."""
    study_file = load_study_file(path)
    study_file._limits = Limits(allow_long=allow_long)
    study_file._out_dir = out_dir
    where = str(path)
    check_utf8(study_file.out_dir)  # trials.parquet is written there
    if workers < 1:
        raise RldseError(f"--workers {workers}: must be at least 1")
    check_workers(workers, study_file.limits, where)
    budget = trial_budget(study_file, trials, where)
    if study_file.sampler.name == "grid":
        space = study_file.search_space
        check_grid(space.grid_size(), len(space.dims), study_file.limits, where)
    try:
        workload_of(study_file.loaded_trace)
    except RldseError as exc:
        raise exc.within(f"{where}: trace") from None
    ref = storage_ref(study_file.out_dir, storage, study_file.storage_url, f"{where}: storage")
    # ERROR: Optuna logs a failed trial at WARNING with its traceback; the error itself
    # reaches the user once, as one line (RldseError) or as the bug's traceback
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    if not resume and not priced:  # before any storage is touched: no empty study left
        _check_cost(study_file, budget, workers, where, progress)
    check_free_space(budget * BYTES_PER_TRIAL + OUTPUT_BYTES, study_file.out_dir,
                     "", f"out/ for {budget:,} trials at about {BYTES_PER_TRIAL / 1e3:.0f} kB "
                     "each", "make room there, or run fewer --trials")
    started = time.perf_counter()
    with run_lock(ref), storage_errors(ref):
        clean_stale_temporaries(study_file.out_dir)
        notes = [n for n in [repair_journal(ref)] if n]
        for note in notes:
            _warn(note)
        st = open_storage(ref)
        with creation_lock(ref, st, study_file.study_name):
            created = study_file.study_name not in optuna.get_all_study_names(st)
            study, requeued = _open_study(study_file, st, ref, resume, where)
        try:
            return _run_opened(study_file, study, st, ref, budget, workers, resume, priced,
                               progress, where, started, notes, requeued)
        except BaseException:
            if created and not study.get_trials(deepcopy=False):
                optuna.delete_study(study_name=study.study_name, storage=st)  # none left
            raise


def _run_opened(study_file: StudyFile, study: optuna.Study, st: optuna.storages.BaseStorage,
                ref: StorageRef, budget: int, workers: int, resume: bool, priced: bool,
                progress: bool, where: str, started: float, notes: list[str],
                requeued: int) -> StudyReport:
    """run_study once its study is open: the trials, then its outputs."""
    if resume and not priced:
        _check_cost(study_file, budget - _finished(study), workers, where, progress)
    if requeued:
        notes.append(f"{requeued} trial(s) left running by an earlier run were failed "
                     "and queued again")
    before = _finished(study)
    if workers == 1:
        notes += _work(study_file, ref, budget, 0, None, progress, st)
    else:
        if hasattr(st, "engine"):
            st.engine.dispose()  # forked workers must not share pooled connections
        notes += _fork_workers(study_file, ref, budget, workers, progress, study)
    elapsed_s = time.perf_counter() - started
    report = write_outputs(study_file, study, ref, budget,
                           finished_now=_finished(study) - before, elapsed_s=elapsed_s,
                           requeued=requeued, workers=workers, run_notes=notes)
    return report


def _check_cost(study_file: StudyFile, trials: int, workers: int, where: str,
                progress: bool) -> None:
    """Refuse a search estimated over its limits (rldse.search.cost), before any trial;
    say the estimate when it is long enough for a progress bar."""
    if trials <= 0:
        return
    limits = study_file.limits
    cost = search_cost(study_file, trials, workers, limits)
    check_search(cost, limits, where)
    if progress and cost.measured and cost.wall_s > limits.progress_after_s:
        print(f"rldse: this search will take {cost.describe()}", file=sys.stderr)


def _warn(text: str) -> None:
    print(f"rldse: warning: {text}", file=sys.stderr)


def trial_budget(study: StudyFile, trials: int | None, where: str) -> int:
    if trials is not None:
        if trials < 1:
            raise RldseError(f"--trials {trials}: must be at least 1")
        return trials
    if study.trials is not None:
        return study.trials
    if study.sampler.name == "grid":
        return study.search_space.grid_size()
    raise RldseError(f"{where}: trials: no budget (set trials: in the file or pass --trials)")


def _open_study(study_file: StudyFile, st: optuna.storages.BaseStorage, ref: StorageRef,
                resume: bool, where: str) -> tuple[optuna.Study, int]:
    name = study_file.study_name
    exists = name in optuna.get_all_study_names(st)
    if exists and not resume:
        n = len(optuna.load_study(study_name=name, storage=st).trials)
        raise RldseError(f"{where}: study '{name}' already exists in {ref.shown} with {n} "
                         "trials: pass --resume to continue (or join) it")
    study = optuna.create_study(storage=st, study_name=name, load_if_exists=True,
                                directions=study_file.directions)
    if not exists:
        study.set_user_attr(_DIGEST_ATTR, study_file.digest)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            study.set_metric_names([o.metric for o in study_file.objectives])
        return study, 0
    if study.user_attrs.get(_DIGEST_ATTR) != study_file.digest:
        raise RldseError(f"{where}: study '{name}' in {ref.shown} was started from another "
                         "trace, base, space, objectives, constraints or seed: set another "
                         "name: in the study file, or remove the old study")
    return study, requeue_stale(study, ref)


def _counted(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=_COUNTED))


def _finished(study: optuna.Study) -> int:
    return len(study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.PRUNED)))


def _work(study_file: StudyFile, ref: StorageRef, budget: int, index: int,
          parent_pid: int | None, progress: bool,
          st: optuna.storages.BaseStorage | None = None) -> list[str]:
    """One worker: trials until the study reaches its budget (or, for a forked worker,
    until its parent is gone: a killed `rldse search` takes its workers with it)."""
    st = st or open_storage(ref)
    existing = len(optuna.load_study(study_name=study_file.study_name, storage=st).trials)
    sampler_seed = study_file.sampler.seed
    seed_text = f"{study_file.seed if sampler_seed is None else sampler_seed}/{index}/{existing}"
    seed = int.from_bytes(hashlib.sha256(seed_text.encode()).digest()[:4], "little")
    sampler = make_sampler(study_file.sampler.name, study_file.sampler.options, seed,
                           study_file.search_space.grid, f"{study_file.file.name}: sampler")
    study = optuna.load_study(study_name=study_file.study_name, storage=st, sampler=sampler)
    cache = ResultCache(study_file.out_dir / CACHE_FILE)
    bar = _bar(study, budget) if progress else None

    def after_trial(study: optuna.Study, _: optuna.trial.FrozenTrial) -> None:
        counted = study.get_trials(deepcopy=False, states=_COUNTED)
        if bar is not None:
            bar.n = min(sum(t.state != TrialState.RUNNING for t in counted), budget)
            bar.refresh()
        orphaned = parent_pid is not None and os.getppid() != parent_pid
        if orphaned or len(counted) >= budget:
            study.stop()

    runner = TrialRunner(study_file, cache)
    objective = _cut_on_refused_write(runner)
    notes: list[str] = []  # what the user is warned of, for the report too
    try:
        while True:
            if _counted(study) < budget:
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
                        study.optimize(objective, callbacks=[after_trial], gc_after_trial=False)
                except Exception:  # Optuna cannot tell a trial another worker has failed
                    if runner.taken_over is None:
                        raise
                    notes.append(f"trial {runner.taken_over} was failed and re-queued by "
                                 "another worker while this one was paused; moving on")
                    _warn(notes[-1])
                    runner.taken_over = None
                    continue
            orphaned = parent_pid is not None and os.getppid() != parent_pid
            if ref.embedded or orphaned or _finished(study) >= budget:
                break
            wait_for_others(study, ref)
    finally:
        cache.close()
        if bar is not None:
            bar.close()
    return notes


def _cut_on_refused_write(runner: TrialRunner):
    """``runner`` as Optuna's objective, a write the disk refused raised as TrialCut (the
    trial stays RUNNING, to be queued again: rldse.search.storage.TrialCut)."""
    def objective(trial: optuna.Trial):
        try:
            return runner(trial)
        except Exception as exc:
            if disk_error(exc) is None:
                raise
            raise TrialCut(f"trial {trial.number}") from exc
    return objective


def _worker_main(study_file: StudyFile, ref: StorageRef, budget: int, index: int,
                 parent_pid: int, messages: multiprocessing.queues.SimpleQueue) -> None:
    """A forked worker: its notes (what it warned of) and any error go to the parent
    through ``messages``, as ("note" | "input" | "bug", text)."""
    try:
        with storage_errors(ref):
            for note in _work(study_file, ref, budget, index, parent_pid, progress=False):
                messages.put(("note", note))
    except RldseError as exc:
        messages.put(("input", str(exc)))
        os._exit(2)
    except KeyboardInterrupt:  # Ctrl-C reached the whole group; the parent reports it
        os._exit(130)
    except BaseException:  # a bug: hand the traceback to the parent
        messages.put(("bug", traceback.format_exc()))
        os._exit(1)
    os._exit(0)


def _fork_workers(study_file: StudyFile, ref: StorageRef, budget: int, workers: int,
                  progress: bool, study: optuna.Study) -> list[str]:
    """Run the workers; their notes, and the notes on any killed by a signal, whose
    trials are then failed, queued again and run here up to the budget."""
    ctx = multiprocessing.get_context("fork")
    messages = ctx.SimpleQueue()
    procs = [ctx.Process(target=_worker_main, name=f"rldse-search-{i}",
                         args=(study_file, ref, budget, i + 1, os.getpid(), messages))
             for i in range(workers)]
    for p in procs:
        p.start()
    bar = _bar(study, budget) if progress else None
    try:
        while any(p.is_alive() for p in procs):
            time.sleep(0.5)
            if bar is not None:
                bar.n = min(_finished(study), budget)
                bar.refresh()
    except BaseException:
        for p in procs:
            p.terminate()
        raise
    finally:
        for p in procs:
            p.join()
        if bar is not None:
            bar.close()
    notes = []
    while not messages.empty():
        kind, text = messages.get()
        if kind == "input":
            raise RldseError(text)
        if kind == "bug":
            raise RuntimeError(f"a search worker failed:\n{text}")
        notes.append(text)
    killed = [f"{p.name} (pid {p.pid}) was killed by signal {-p.exitcode}"
              for p in procs if p.exitcode is not None and p.exitcode < 0]
    if not killed:
        return notes
    for text in killed:
        _warn(text)
    requeued = requeue_stale(study, ref)  # embedded: every worker is gone, none owns them
    # the requeued trials run even where the others overshot the budget (workers finishing
    # trials they started as it was reached): a trial queued again is never left waiting
    taken = _work(study_file, ref, max(budget, _finished(study) + requeued), workers + 1,
                  None, progress)
    note = (f"{'; '.join(killed)}: {requeued} trial(s) it left running were failed and "
            "queued again, and this process ran the rest of the budget")
    return [*notes, note, *taken]


def _bar(study: optuna.Study, budget: int):
    from tqdm import tqdm

    return tqdm(total=budget, initial=min(_finished(study), budget), desc=study.study_name,
                unit="trial", dynamic_ncols=True, disable=None, mininterval=0.5)
