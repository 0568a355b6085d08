"""Atari: preprocessing, the Nature-CNN's counted work against torch's counter, and the
shipped Pong trace's env steps against CartPole's."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.kernels import nature_cnn
from rldse.trace import load_trace
from rldse.workloads.common import atari

TRACES = Path(__file__).resolve().parents[3] / "traces"


def _median_env_step_per_env_s(path: Path) -> float:
    ops = load_trace(path).ops
    steps = ops[ops["phase"] == "env_step"]
    return float((steps["dur_s"] / steps["items"]).median())


def test_pong_env_step_is_at_least_10x_cartpole():
    pong = _median_env_step_per_env_s(TRACES / "pong_ppo.parquet")
    cartpole = _median_env_step_per_env_s(TRACES / "actor_learner_cartpole_2.parquet")
    assert pong >= 10 * cartpole


def test_shipped_pong_trace_is_small_and_names_its_network():
    path = TRACES / "pong_ppo.parquet"
    assert path.stat().st_size < 5 * 2**20
    meta = load_trace(path).meta
    assert meta.env_id == "ALE/Pong-v5" and meta.workload == "actor_learner"
    assert meta.workload_info["network"]["kind"] == "nature_cnn"
    assert meta.workload_info["n_params"] == nature_cnn.n_params((6, 1))


def test_nature_cnn_parameters_by_hand():
    # Mnih et al. 2015: 8·8·4·32 + 32, 4·4·32·64 + 64, 3·3·64·64 + 64, 3136·512 + 512
    assert nature_cnn.n_params(()) == 8224 + 32832 + 36928 + 1606144


def test_counted_flops_equal_torchs_counter():
    torch = pytest.importorskip("torch", reason="the 'torch' extra")
    from torch.utils.flop_counter import FlopCounterMode

    net = atari.torch_network((6, 1))
    x = torch.zeros((5, *nature_cnn.OBS_SHAPE), dtype=torch.uint8)
    with FlopCounterMode(display=False) as fwd:
        net(x)
    with FlopCounterMode(display=False) as both:
        out = net(x)
        (out[0].sum() + out[1].sum()).backward()
    assert nature_cnn.forward_work(5, (6, 1)).gemm_flops == fwd.get_total_flops()
    total = nature_cnn.forward_work(5, (6, 1)) + nature_cnn.backward_work(5, (6, 1))
    assert total.gemm_flops == both.get_total_flops()
    assert sum(p.numel() for p in net.parameters()) == nature_cnn.n_params((6, 1))


def test_preprocessing_gives_stacked_84x84_grey_frames():
    pytest.importorskip("ale_py", reason="the 'atari' extra")
    env = atari.make_env("ALE/Pong-v5")
    obs, _ = env.reset(seed=0)
    assert obs.shape == (4, 84, 84) and str(obs.dtype) == "uint8"
    env.close()


def test_without_the_extra_the_error_names_it(monkeypatch):
    monkeypatch.setitem(sys.modules, "ale_py", None)
    with pytest.raises(RldseError, match=r"rldse\[atari\]"):
        atari.make_env("ALE/Pong-v5")


def test_hidden_is_refused_on_atari():
    from rldse.workloads.actor_learner.ppo import config_for
    from rldse.workloads.common.base import CaptureConfig

    with pytest.raises(RldseError, match="Nature-CNN"):
        config_for(CaptureConfig(workload="actor_learner", env_id="ALE/Pong-v5",
                                 options={"hidden": [32]}))


@pytest.mark.slow
def test_dqn_pong_capture_simulates(tmp_path):
    pytest.importorskip("ale_py", reason="the 'atari' extra")
    pytest.importorskip("torch", reason="the 'torch' extra")
    from rldse.cli import main

    out = tmp_path / "pong_dqn.parquet"
    assert main(["capture", "dqn", "--env", "ALE/Pong-v5", "--steps", "300", "--set",
                 "learning_starts=200", "-o", str(out)]) == 0
    trace = load_trace(out)
    learn = trace.ops[trace.ops["phase"] == "learn"]
    assert len(learn) == 25 and (learn["items"] == 32).all()
    assert main(["simulate", str(out), "--system", str(TRACES.parent / "examples" /
                 "dgx1_like.yaml"), "--set", "workload.learner=sync"]) == 0


@pytest.mark.parametrize(("workload", "config_for"), [
    ("dqn", "rldse.workloads.offpolicy.dqn"), ("actor_learner", "rldse.workloads.actor_learner.ppo")])
def test_both_families_refuse_hidden_widths_on_atari(workload, config_for):
    from importlib import import_module

    from rldse.workloads.common.base import CaptureConfig

    cfg = CaptureConfig(workload=workload, env_id="ALE/Pong-v5", options={"hidden": [32]})
    with pytest.raises(RldseError, match=f"^{workload} option 'hidden': .*Nature-CNN"):
        import_module(config_for).config_for(cfg)
