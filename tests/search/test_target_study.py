"""A study that minimises time to a target return under a power cap, on the embedded
(journal) storage, and the study file's target checks."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rldse.errors import RldseError
from rldse.search.run import run_study
from rldse.search.study_file import load_study_file
from rldse.sim.target import Target, steps_to_target
from rldse.trace import load_trace

PPO = Path(__file__).parents[2] / "traces" / "actor_learner_cartpole_2.parquet"
STUDY = {
    "trace": str(PPO),
    "target": {"return": 195, "smoothing_episodes": 10},
    "base": {"name": "ppo", "cpu": {"preset": "epyc-7742"}, "gpu": {"preset": "a100-40g"},
             "placement": {"act": "cpu", "learn": "gpu"}, "price_usd_per_hour": 4.0},
    "space": {"workload.cores": {"int": [2, 8]},
              "workload.inference": {"choices": ["local", "central"]},
              "gpu.preset": {"choices": ["a100-40g", "v100-sxm2"]}},
    "objectives": [{"minimize": "time_to_target_s"}],
    "constraints": ["avg_power_w <= 450"],
    "sampler": {"name": "random"},
    "trials": 6,
    "figures": False,  # drawn and checked in test_figures
}


def _write(tmp_path: Path, **changes) -> Path:
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump({**STUDY, **changes}))
    return path


def test_search_minimises_time_to_target_under_a_power_cap(tmp_path):
    report = run_study(_write(tmp_path), progress=False)
    assert report.storage.endswith("journal.log")
    assert report.best and "time_to_target_s" in report.best[0]["values"]
    text = report.summary()
    # where the two actors' episodes land in env steps depends on the capture's timing
    steps = steps_to_target(load_trace(PPO), Target(195.0, smoothing_episodes=10))
    assert f"reached at {steps:,} env steps" in text and "soonest: trial" in text
    import pandas as pd

    frame = pd.read_csv(Path(report.out_dir) / "trials.csv")
    done = frame[frame["state"] == "COMPLETE"]
    assert (done["steps_to_target"] == steps).all()
    assert list(done["cost_to_target_usd"]) == pytest.approx(list(done["time_to_target_s"] * 4.0 / 3600))
    best = done.loc[done["time_to_target_s"].idxmin()]
    assert best["avg_power_w"] <= 450


def test_target_metric_without_a_target_is_one_line(tmp_path):
    study = {k: v for k, v in STUDY.items() if k != "target"}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(RldseError, match="'time_to_target_s' needs a target return"):
        load_study_file(path)


def test_unreached_target_fails_before_any_trial(tmp_path):
    with pytest.raises(RldseError, match=r"target\.return: 600 is never reached"):
        load_study_file(_write(tmp_path, target={"return": 600}))


def test_env_steps_in_the_space_is_refused_with_a_target(tmp_path):
    space = {**STUDY["space"], "workload.env_steps": {"int": [1000, 2000]}}
    with pytest.raises(RldseError, match="workload.env_steps: a target return sets"):
        load_study_file(_write(tmp_path, space=space))


@pytest.mark.parametrize("knob, dim", [("actors", {"int": [1, 8]}),
                                       ("learner", {"choices": ["sync", "async"]}),
                                       ("epochs", {"int": [1, 8]})])
def test_a_learning_knob_in_the_space_is_refused_with_a_target(tmp_path, knob, dim):
    """More actors or epochs, or an async learner, change the learning curve: the trace's
    steps to target are not those designs' (sim.target.check_same_learning)."""
    space = {**STUDY["space"], f"workload.{knob}": dim}
    with pytest.raises(RldseError, match=f"space.workload.{knob}: changes what each learner"):
        load_study_file(_write(tmp_path, space=space))


def test_a_learning_knob_in_the_base_is_refused_unless_it_is_the_captured_one(tmp_path):
    base = {**STUDY["base"], "workload": {"actors": 2}}  # the capture's: kept
    load_study_file(_write(tmp_path, base=base))
    base = {**STUDY["base"], "workload": {"actors": 32}}
    with pytest.raises(RldseError, match="base.workload.actors: 32 changes what"):
        load_study_file(_write(tmp_path, base=base))


def test_hourly_price_without_a_target_is_an_objective(tmp_path):
    """price_usd_per_hour without a target prices the rate: steps_per_usd_hour."""
    study = {k: v for k, v in STUDY.items() if k != "target"}
    study["objectives"] = [{"maximize": "steps_per_usd_hour"}]
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    assert [o.metric for o in load_study_file(path).objectives] == ["steps_per_usd_hour"]


def test_a_design_estimated_over_the_limit_is_an_invalid_trial_not_a_run(tmp_path,
                                                                         monkeypatch):
    """env_steps 1e10 in the base: the whole search is refused before it starts, in one
    line; and where the search was priced already (a study's plan: ``priced``), each
    trial is refused by rldse.sim.budget's estimate (one line, in trials.csv's note)
    instead of running for hours."""
    import pandas as pd

    from rldse.sim import budget

    # a one-minute limit, far under this run's estimate on any host (12-19 min on a busy
    # one): at the default 10 min a fast host's estimate could let the run go ahead
    limits = budget.Limits.__init__.__defaults__
    monkeypatch.setattr(budget.Limits.__init__, "__defaults__", (60.0, *limits[1:]))
    study = {"trace": str(PPO), "base": {"name": "big", "cpu": {"preset": "epyc-7742"},
                                         "workload": {"env_steps": 10**10}},
             "space": {"workload.cores": {"int": [1, 4]}},
             "objectives": [{"maximize": "env_steps_per_s"}], "sampler": {"name": "random"},
             "trials": 1}
    path = tmp_path / "study.yaml"
    path.write_text(yaml.safe_dump(study))
    with pytest.raises(RldseError, match="over the 60 s limit"):
        run_study(path, progress=False)
    assert not (tmp_path / "out").exists()
    report = run_study(path, progress=False, priced=True)
    frame = pd.read_csv(Path(report.out_dir) / "trials.csv")
    assert (frame["state"] == "COMPLETE").sum() == 0
    assert "over the 60 s limit; give --allow-long" in frame["note"].iloc[0]
