"""The CPU/GPU-ratio study's runs: the provisioned sweep over both captures, its search,
and the parameters it refuses before running."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rldse.errors import RldseError
from rldse.search.report import StudyReport
from rldse.studies import run_study


def test_cpu_gpu_ratio_sweep_is_provisioned_per_ratio(ratio_out):
    sweep = pd.read_csv(ratio_out / "results.csv")
    # energy per env step by device adds up to the machine's
    assert ((sweep.cpu_mj_per_step + sweep.gpu_mj_per_step).to_numpy() * 1e-3
            == pytest.approx(1 / sweep.steps_per_joule.to_numpy(), rel=1e-9))
    assert len(sweep) == 8 and (sweep.cores_per_gpu == sweep.actors_per_gpu + 1).all()
    # the DGX-1's part, never stretched: at most its 20 cores per socket and two sockets
    assert (sweep.provisioned_cores >= sweep.cores_per_gpu).all()
    assert (sweep.provisioned_cores <= 20 * sweep.sockets).all() and sweep.sockets.max() == 2
    assert (sweep[sweep.cores_per_gpu <= 20].sockets == 1).all()
    pong_rows = sweep[sweep.environment == "ALE/Pong-v5"].set_index("actors_per_gpu")
    cart = sweep[sweep.environment == "CartPole-v1"].set_index("actors_per_gpu")
    # a Pong step costs ~60x a CartPole one: one actor produces far less
    assert pong_rows.env_steps_per_s.loc[1] < cart.env_steps_per_s.loc[1] / 5
    # provisioned: past the learner's plateau every extra actor's core costs energy
    assert cart.steps_per_joule.loc[32] < cart.steps_per_joule.max()


def test_cpu_gpu_ratio_search_runs_in_the_new_out(ratio_out):
    assert len(pd.read_csv(ratio_out / "search" / "trials.csv")) == 4
    # built beside out/ and swapped in: the search's report names where its files are now
    summary = StudyReport.model_validate_json((ratio_out / "search" / "summary.json")
                                              .read_text())
    assert summary.out_dir == str(ratio_out / "search")
    assert all(Path(f).exists() for f in summary.files.values())
    assert not list(ratio_out.parent.glob(".out.*"))


def test_cpu_gpu_ratio_study_refuses_more_cores_than_the_dgx1_host(small_copy):
    with pytest.raises(RldseError, match="ratios: 40 actors and the learner's core need 41 "
                                         "cores; the xeon-e5-2698-v4 host has 2 × 20"):
        run_study("cpu_gpu_ratio", root=small_copy(ratios=[1, 4, 40]), progress=False)


def test_cpu_gpu_ratio_study_refuses_an_unknown_atari_environment(small_copy):
    with pytest.raises(RldseError, match="atari: 'Breakout' is not one of environments"):
        run_study("cpu_gpu_ratio", root=small_copy(atari="Breakout"), progress=False)


def test_a_second_concurrent_run_is_refused_in_one_line(small_copy):
    from rldse.files import folder_lock

    root = small_copy()
    with folder_lock(root / "cpu_gpu_ratio", "held"), \
            pytest.raises(RldseError, match="being run by another process"):
        run_study("cpu_gpu_ratio", root=root, progress=False)


def test_out_linked_outside_the_study_is_refused_and_left_alone(small_copy, tmp_path):
    root = small_copy()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    (root / "cpu_gpu_ratio" / "out").symlink_to(elsewhere)
    with pytest.raises(RldseError, match="outside the study folder"):
        run_study("cpu_gpu_ratio", root=root, progress=False)
    assert (elsewhere / "keep.txt").read_text() == "x"
