"""The TimeRL study, run on a copy with fewer band draws: the published out-of-memory
pattern, swapping that completes within TimeRL's 384 GiB host, Monte-Carlo against TD
from the part models alone (no published time enters), each configuration's event run
agreeing with the closed form, bit-identical for one seed."""

from __future__ import annotations

import shutil
from pathlib import Path

import pandas as pd
import yaml

from rldse.studies import run_study

ROOT = Path(__file__).resolve().parents[3]


def _copy(tmp_path: Path, draws: int) -> Path:
    dst = tmp_path / "studies" / "timerl_memory"
    shutil.copytree(ROOT / "studies" / "timerl_memory", dst, ignore=shutil.ignore_patterns("out"))
    shutil.copytree(ROOT / "traces", tmp_path / "traces", dirs_exist_ok=True)
    params = yaml.safe_load((dst / "study.yaml").read_text())
    params["bands"] = draws
    (dst / "study.yaml").write_text(yaml.safe_dump(params))
    return tmp_path / "studies"


def test_timerl_study_oom_pattern_swap_and_td_vs_mc(tmp_path):
    report = run_study("timerl_memory", root=_copy(tmp_path, 8), progress=False)
    out = report.parent
    claims = pd.read_csv(out / "claims.csv").set_index("claim")

    def row(prefix: str) -> pd.Series:
        found = claims[claims.index.str.startswith(prefix)]
        assert len(found) == 1, prefix
        return found.iloc[0]

    assert row("rollout observations").kind == "consistency"
    for side in (64, 128, 256):
        assert row(f"PPO 3×{side}×{side}: the baselines run out").verdict == "reproduced"
    assert row("with swapping to host memory").verdict == "reproduced"
    assert row("REINFORCE 3×256×256: Monte-Carlo must keep").verdict == "reproduced"
    ratio = row("iteration time, Monte-Carlo / n-step TD")
    assert ratio.p5 <= ratio.p50 <= ratio.p95 and ratio.p50 > 1
    gap = row("Monte-Carlo's extra time")
    # 2 × 201 GB over PCIe 4 (31.5 GB/s) at copy_efficiency's 60-92 % of line rate, less
    # what overlaps the step's kernels: within the copies' own closed-form range
    assert gap.p5 <= gap.p50 <= gap.p95
    assert 402 / (31.5 * 0.92) <= gap.p50 <= 402 / (31.5 * 0.6)

    results = pd.read_csv(out / "results.csv")
    ppo = results[(results.part == "ppo") & ~results.swap].set_index("side")
    assert list(ppo.baseline_fits) == [True, False, False]
    swapped = results[(results.part == "ppo") & results.swap].set_index("side")
    assert swapped.fits.all() and swapped.host_ok.all()
    assert swapped.loc[256, "host_gb"] < swapped.loc[256, "host_capacity_gb"] == 412.316860416
    rl = results[(results.part == "reinforce") & ~results.swap].set_index("objective")
    assert not rl.loc["Monte-Carlo", "ok"] and rl.drop("Monte-Carlo").ok.all()
    assert rl.loc["TD 1-step", "need_gb"] < rl.loc["TD 8-step", "need_gb"] \
        < rl.loc["TD 64-step", "need_gb"] < rl.loc["Monte-Carlo", "need_gb"]
    events = pd.read_csv(out / "events.csv")  # each configuration booked on a Machine
    assert len(events) == 3 + 4 and (events.relative_difference.abs() < 1e-9).all()
    assert list(events.swap) == [False, False, True, True, False, False, False]
    assert (events.energy_j > events.gpu_j).all() and (events.gpu_j > 0).all()
    md = report.read_text()
    assert "one TD time step" in md and "| step (rldse: 15 jitted calls" in md
    for name in ("memory_need.png", "td_vs_mc.png"):
        assert (out / name).stat().st_size > 10_000

    again = run_study("timerl_memory", root=_copy(tmp_path / "again", 8), progress=False)
    assert (again.parent / "claims.csv").read_bytes() == (out / "claims.csv").read_bytes()
