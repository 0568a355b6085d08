"""Running studies: outputs, cache, constraints kept and marked, invalid points, resume
rules, local worker processes."""

from __future__ import annotations

import json
from collections import Counter

import optuna
import pandas as pd
import pytest
from optuna.trial import TrialState

from rldse.errors import RldseError
from rldse.search import load_study_file, run_study
from rldse.search.run import CACHE_FILE
from rldse.search.storage import open_storage, storage_ref
from rldse.search.trial import trial_attrs
from rldse.sim import simulate
from rldse.system import load_spec


def _study(path) -> optuna.Study:
    sf = load_study_file(path)
    st = open_storage(storage_ref(sf.out_dir, None, None, ""))
    return optuna.load_study(study_name=sf.study_name, storage=st)


def test_outputs_table_figures_and_best_spec(write_study):
    path = write_study(constraints=["avg_power_w <= 1500", "cost_usd <= 40000", "gpu_memory_ok"],
                       trials=14, figures=True)
    report = run_study(path, progress=False)
    out = path.parent / "out"
    table = pd.read_parquet(out / "trials.parquet")
    assert len(table) == 14 and table["number"].tolist() == list(range(14))
    for col in ["workload.actors", "workload.cores", "gpu.count", "steps_per_joule",
                "constraint: avg_power_w <= 1500", "constraint: cost_usd <= 40000",
                "constraint: gpu_memory_ok", "feasible", "source", "estimate.steps_per_joule"]:
        assert col in table.columns, col
    assert pd.read_csv(out / "trials.csv").shape == table.shape
    for name in ["history", "importance", "slice workload.actors", "slice gpu.count"]:
        assert report.files[name].endswith(".png"), name
    assert report.simulated + report.simulations_saved + report.invalid == 14
    assert report.finished_now == 14 and report.states["COMPLETE"] + report.states["PRUNED"] == 14
    # the best configuration is a SystemSpec that simulates to the reported value
    (best,) = report.best
    spec = load_spec(best["file"])
    sf = load_study_file(path)
    assert simulate(sf.loaded_trace, spec, seed=sf.seed).steps_per_joule == pytest.approx(
        best["values"]["steps_per_joule"])
    assert "trial" in report.summary() and "saved" in report.summary()


def test_repeated_point_costs_nothing(write_study):
    path = write_study(space={"workload.actors": {"choices": [16]}}, trials=4)
    report = run_study(path, progress=False)
    assert (report.simulated, report.cache_hits) == (1, 3)
    study = _study(path)
    assert [trial_attrs(t)["source"] for t in study.trials] == ["simulated"] + ["cache"] * 3
    # a later study over the same cache simulates nothing
    report = run_study(path, trials=6, resume=True, progress=False)
    assert report.simulated == 1 and report.cache_hits == 5
    assert (path.parent / "out" / CACHE_FILE).is_file()


def test_infeasible_points_are_kept_and_marked(write_study):
    path = write_study(constraints=["avg_power_w <= 350"], trials=12,
                       estimate={"prune": False}, sampler="random")
    run_study(path, progress=False)
    study = _study(path)
    done = study.get_trials(states=(TrialState.COMPLETE,))
    assert len(done) == 12
    power = [trial_attrs(t)["metrics"]["avg_power_w"] for t in done]
    violation = [t.constraints["0"] for t in done]  # Optuna's list form: the file's order
    assert any(p > 350 for p in power) and any(p <= 350 for p in power)
    for p, v in zip(power, violation, strict=True):
        assert (v > 0) == (p > 350) and v == pytest.approx((p - 350) / 350)
    assert all(t.constraints["0"] <= 0 for t in study.best_trials)


def test_estimate_prunes_only_losers_and_records_why(write_study):
    path = write_study(trials=30, constraints=["cost_usd <= 30000"])
    report = run_study(path, progress=False)
    study = _study(path)
    pruned = [t for t in study.trials if trial_attrs(t).get("source") == "pruned"]
    assert report.pruned_by_estimate == len(pruned) > 0
    best = study.best_value
    sf = load_study_file(path)
    for t in pruned:
        assert trial_attrs(t)["note"].startswith(("dominated by estimate", "infeasible by estimate"))
        spec = sf.search_space.spec(t.params, "t")
        result = simulate(sf.loaded_trace, spec, seed=sf.seed)
        assert result.steps_per_joule <= best or result.cost_usd > 30000


def test_invalid_points_are_marked_not_fatal(write_study):
    # the learner is placed on the GPU, so gpu.count 0 is not a machine
    path = write_study(space={"gpu.count": {"int": [0, 2]}}, sampler="grid", trials=None)
    report = run_study(path, progress=False)
    assert report.invalid == 1 and report.states["PRUNED"] >= 1
    study = _study(path)
    (bad,) = [t for t in study.trials if trial_attrs(t)["source"] == "invalid"]
    assert bad.params == {"gpu.count": 0}
    assert "placement.learn: 'gpu' but the system has no gpu" in trial_attrs(bad)["note"]


def test_user_attributes_hold_spec_metrics_and_worker(write_study):
    path = write_study(trials=5, estimate={"prune": False})
    run_study(path, progress=False)
    t = _study(path).trials[0]
    assert list(t.user_attrs) == ["rldse"]  # one storage write for the whole record
    assert set(trial_attrs(t)) >= {"spec", "metrics", "estimate", "source", "bottleneck", "worker"}
    assert trial_attrs(t)["spec"]["workload"]["actors"] == t.params["workload.actors"]
    assert trial_attrs(t)["metrics"]["steps_per_joule"] == t.values[0]


def test_existing_study_needs_resume_and_the_same_definition(write_study):
    path = write_study(trials=3)
    run_study(path, progress=False)
    with pytest.raises(RldseError, match="already exists .* with 3 trials: pass --resume"):
        run_study(path, trials=5, progress=False)
    report = run_study(path, trials=5, resume=True, progress=False)
    assert report.finished_now == 2
    assert [t.number for t in _study(path).trials] == [0, 1, 2, 3, 4]
    write_study(trials=5, seed=1)  # same file, another seed: another study
    with pytest.raises(RldseError, match="was started from another trace, base, space"):
        run_study(path, resume=True, progress=False)


def test_two_local_workers_record_every_trial_once(write_study):
    path = write_study(trials=16, estimate={"prune": False})
    report = run_study(path, workers=2, progress=False)
    study = _study(path)
    numbers = [t.number for t in study.trials]
    assert numbers == list(range(len(numbers)))
    finished = study.get_trials(states=(TrialState.COMPLETE, TrialState.PRUNED))
    assert len(finished) == len(numbers)
    assert 16 <= len(numbers) <= 17  # two workers may start the last trial at once
    by_worker = Counter(trial_attrs(t)["worker"] for t in study.trials)
    assert len(by_worker) == 2 and sum(by_worker.values()) == len(numbers)
    assert report.workers == 2


def test_many_objectives_conditional_space_and_pareto_outputs(write_study):
    path = write_study(
        space={"placement.learn": {"choices": ["cpu", "gpu"]},
               "gpu.count": {"int": [1, 4], "when": {"placement.learn": "gpu"}},
               "workload.actors": {"int": [8, 64], "step": 8}},
        objectives=[{"maximize": "steps_per_joule"}, {"minimize": "cost_usd"}],
        sampler={"name": "nsga2", "options": {"population_size": 6}}, trials=18, figures=True)
    report = run_study(path, progress=False)
    assert report.files["pareto"].endswith("pareto.png")
    table = pd.read_parquet(report.files["trials.parquet"])
    on_cpu = table[table["placement.learn"] == "cpu"]
    assert not on_cpu.empty and on_cpu["gpu.count"].isna().all()  # not suggested there
    front = table[table["best"]]
    assert len(report.best) >= 1 and front["feasible"].all()
    for _, p in front.iterrows():  # nothing finished dominates a Pareto point
        done = table[table["state"] == "COMPLETE"]
        assert not ((done["steps_per_joule"] >= p["steps_per_joule"])
                    & (done["cost_usd"] <= p["cost_usd"])
                    & ((done["steps_per_joule"] > p["steps_per_joule"])
                       | (done["cost_usd"] < p["cost_usd"]))).any()
    for b in report.best:
        assert load_spec(b["file"]).placement.learn == b["params"]["placement.learn"]


def test_a_worker_killed_mid_trial_is_reported_and_its_trial_run_again(write_study,
                                                                      monkeypatch, capsys):
    import os
    import signal

    from tests.search import stand_in

    path = write_study(trials=9, estimate={"prune": False}, sampler="random")
    flag, parent, fast = path.parent / "killed-once", os.getpid(), stand_in.program

    def killed_once(machine):  # the first simulation in a worker process dies by SIGKILL
        if os.getpid() != parent:
            try:
                os.close(os.open(flag, os.O_CREAT | os.O_EXCL))
            except FileExistsError:
                return fast(machine)
            os.kill(os.getpid(), signal.SIGKILL)
        return fast(machine)

    monkeypatch.setattr(stand_in, "program", killed_once)
    # three workers on a 2-core host: over the cores, so allow_long (rldse.sim.budget)
    report = run_study(path, workers=3, progress=False, allow_long=True)
    assert flag.exists()
    err = capsys.readouterr().err
    assert "rldse: warning: rldse-search-" in err and "killed by signal 9" in err
    assert any("killed by signal 9" in n for n in report.notes)
    summary = json.loads((path.parent / "out" / "summary.json").read_text())
    assert summary["notes"] == report.notes  # what the run printed is in its summary
    trials = _study(path).trials
    (killed,) = [t for t in trials if t.state == TrialState.FAIL]
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == killed.number]
    assert len(retried) == 1 and retried[0].state == TrialState.COMPLETE
    assert retried[0].params == killed.params
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    assert len(trials) - 1 >= 9 and report.states["COMPLETE"] >= 9  # the budget is met


def test_a_vast_log_range_is_sampled_from_its_ends_never_enumerated(write_study, monkeypatch):
    """{int: [1000, 1e10], log: true} once materialised every value (8 GB at 1e8)."""
    from rldse.search.space import Dimension
    dim = Dimension("workload.cores", "int", 1000, 10**10, log=True)
    assert dim.extremes() == [1000, 10**10] and dim.count() == 10**10 - 999
    assert Dimension("x", "int", 8, 63, step=8).extremes() == [8, 56]
    with pytest.raises(RldseError, match="too many"):
        dim.grid_values()
    def enumerated(self):
        raise AssertionError(f"{self.path} enumerated")
    monkeypatch.setattr(Dimension, "grid_values", enumerated)
    path = write_study(space={"workload.cores": {"int": [8, 65536], "log": True}}, trials=2)
    report = run_study(path, progress=False)
    assert report.finished_now == 2


@pytest.mark.parametrize("sampler", ["qmc", "bruteforce"])
def test_experimental_samplers_warn_nothing(write_study, sampler, recwarn):
    from rldse.search.samplers import make_sampler
    make_sampler(sampler, {}, 0, lambda: {}, "s")
    assert not [w for w in recwarn if issubclass(w.category, optuna.exceptions.ExperimentalWarning)]


def test_more_workers_than_cores_are_refused_before_any_storage(write_study):
    import os

    path = write_study()
    with pytest.raises(RldseError, match=f"--workers 100,000: more than this host's "
                                         f"{os.cpu_count()} cores.*--allow-long"):
        run_study(path, workers=100_000, progress=False)
    assert not (path.parent / "out").exists()


def test_a_grid_too_large_to_list_is_refused_with_its_size_before_any_trial(write_study):
    path = write_study(space={"workload.actors": {"int": [1, 65536]},
                              "workload.cores": {"int": [1, 65536]}},
                       sampler={"name": "grid"}, trials=4)
    with pytest.raises(RldseError, match="the grid has 4,294,967,296 points"):
        run_study(path, progress=False)
    assert not (path.parent / "out").exists()


def test_a_search_that_fails_before_any_trial_leaves_no_study(write_study, monkeypatch):
    import rldse.search.run as run_module

    path = write_study(trials=2)
    work = run_module._work

    def broken(*args, **kwargs):
        raise RuntimeError("a worker could not start")

    monkeypatch.setattr(run_module, "_work", broken)
    with pytest.raises(RuntimeError):
        run_study(path, progress=False)
    sf = load_study_file(path)
    st = open_storage(storage_ref(sf.out_dir, None, None, ""))
    assert sf.study_name not in optuna.get_all_study_names(st)
    monkeypatch.setattr(run_module, "_work", work)
    assert run_study(path, progress=False).finished_now == 2  # no --resume asked for
