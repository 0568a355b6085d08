"""The CPU/GPU-ratio study runs end to end on a small copy of its sweep, bands and search:
provisioned cores per actor, the CartPole and ALE Pong captures, the optimal
ratio's band from paired Latin-hypercube draws, and claims.csv with every claim."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import pytest
import yaml

from rldse.errors import RldseError
from rldse.search import load_study_file
from rldse.search.report import StudyReport
from rldse.sim.bands import uncertain_params
from rldse.studies import run_study
from rldse.studies.cpu_gpu_ratio import Host, provisioned
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[2]


def _copy(tmp_path: Path, **changes) -> Path:
    dst = tmp_path / "studies" / "cpu_gpu_ratio"
    shutil.copytree(ROOT / "studies" / "cpu_gpu_ratio", dst, ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces", dirs_exist_ok=True)
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params.update({"ratios": [1, 4, 16, 32], "env_steps": 30_000, "bands": 3}, **changes)
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    search = yaml.safe_load((dst / "search.yaml").read_text())
    search["base"]["workload"]["env_steps"] = 30_000
    search["trials"] = 4
    (dst / "search.yaml").write_text(yaml.safe_dump(search, sort_keys=False))
    return tmp_path / "studies"


def test_cpu_gpu_ratio_study_provisioned_sweep_and_claims(tmp_path):
    report = run_study("cpu_gpu_ratio", root=_copy(tmp_path), progress=False)
    out = report.parent
    claims = pd.read_csv(out / "claims.csv").set_index("claim")
    assert set(claims.columns) >= {"kind", "published", "p5", "p50", "p95", "verdict", "reason"}
    pong = claims.loc["ALE/Pong-v5: steps per joule peaks near the analytic knee (consistency: "
                      "optimal actors per GPU against rldse's own knee)"]
    assert pong.p5 <= pong.p50 <= pong.p95
    rises = claims.loc["ALE/Pong-v5: throughput rises with actors until the GPU-side learner "
                       "saturates (consistency: rldse's bottleneck label)"]
    assert rises.verdict == "reproduced"
    # rldse against itself (its knee, its bottleneck label) is never called a reproduction;
    # rows with nothing published to compare with say so
    assert (claims[claims.index.str.contains("consistency")].kind == "consistency").all()
    assert pong.kind == rises.kind == "consistency"
    assert claims.kind.value_counts().to_dict() == {"consistency": 4, "prediction": 2,
                                                     "reproduction": 1}
    assert "abstract" in claims[claims.kind == "reproduction"].published.iloc[0]
    unread = claims[claims.verdict == "not comparable"]
    assert (unread.kind == "prediction").all() and unread.published.str.contains(
        "nothing published can be read").all()
    cores = claims[claims.index.str.startswith("optimal CPU cores per V100")].iloc[0]
    assert cores.p50 == pong.p50 + 1

    # the optimum's move is judged per paired draw (the same hypercube row for both
    # environments) against "grows": at least one step of the ratio grid (16 -> 32: 2x)
    grows = claims.loc["the optimal ratio grows with the env step's cost (CartPole-v1 → "
                       "ALE/Pong-v5)"]
    assert "optimum ≥ 2, one step of the ratio grid" in grows.published
    assert grows.p5 <= grows.p50 <= grows.p95
    assert (grows.verdict == "reproduced") == (grows.p50 >= 2)
    assert grows.tolerance.startswith("p50 ≥ 2x")
    # pairing holds: both captures vary the same ranged numbers, so draw i is one system
    sf = load_study_file(out.parent / "search.yaml")
    spec = sf.search_space.spec({"workload.actors": 4, "workload.cores": 4}, where="test")
    assert uncertain_params(spec, sf.loaded_trace) == uncertain_params(
        spec, load_trace(ROOT / "traces" / "pong_ppo.parquet"))

    sweep = pd.read_csv(out / "results.csv")
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
    assert (out / "ratio.png").stat().st_size > 10_000
    assert len(pd.read_csv(out / "search" / "trials.csv")) == 4
    # built beside out/ and swapped in: the search's report names where its files are now
    summary = StudyReport.model_validate_json((out / "search" / "summary.json").read_text())
    assert summary.out_dir == str(out / "search")
    assert all(Path(f).exists() for f in summary.files.values())
    assert not list(out.parent.glob(".out.*"))


def test_cpu_gpu_ratio_study_refuses_more_cores_than_the_dgx1_host(tmp_path):
    with pytest.raises(RldseError, match="ratios: 40 actors and the learner's core need 41 "
                                         "cores; the xeon-e5-2698-v4 host has 2 × 20"):
        run_study("cpu_gpu_ratio", root=_copy(tmp_path, ratios=[1, 4, 40]), progress=False)


def test_provisioned_cores_fill_the_fewest_sockets():
    host = Host("xeon-e5-2698-v4", 20, 2)
    assert provisioned(1, host) == (1, 1) and provisioned(20, host) == (20, 1)
    assert provisioned(21, host) == (11, 2) and provisioned(40, host) == (20, 2)
    with pytest.raises(RldseError, match="41 cores exceed"):
        provisioned(41, host)


def test_cpu_gpu_ratio_study_refuses_an_unknown_atari_environment(tmp_path):
    with pytest.raises(RldseError, match="atari: 'Breakout' is not one of environments"):
        run_study("cpu_gpu_ratio", root=_copy(tmp_path, atari="Breakout"), progress=False)


def test_a_second_concurrent_run_is_refused_in_one_line(tmp_path):
    from rldse.files import folder_lock

    root = _copy(tmp_path)
    with folder_lock(root / "cpu_gpu_ratio", "held"), \
            pytest.raises(RldseError, match="being run by another process"):
        run_study("cpu_gpu_ratio", root=root, progress=False)


def test_out_linked_outside_the_study_is_refused_and_left_alone(tmp_path):
    root = _copy(tmp_path)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("x")
    (root / "cpu_gpu_ratio" / "out").symlink_to(elsewhere)
    with pytest.raises(RldseError, match="outside the study folder"):
        run_study("cpu_gpu_ratio", root=root, progress=False)
    assert (elsewhere / "keep.txt").read_text() == "x"
