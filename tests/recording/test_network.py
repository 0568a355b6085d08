"""rldse.recording.network: any nn.Module, CNNs included, described per layer from
FlopCounterMode, stored in the trace, and used by the simulated program for what-ifs."""

from __future__ import annotations

import pytest

import rldse
from rldse.errors import RldseError
from rldse.kernels import nature_cnn
from rldse.kernels.trace_network import from_info
from rldse.recording.network import Network
from rldse.trace import load_trace
from rldse.workloads.common import atari

torch = pytest.importorskip("torch", reason="needs the 'torch' extra (pip install rldse[torch])")
from torch.utils.flop_counter import FlopCounterMode  # noqa: E402

OBS = (4, 84, 84)


def small_cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(4, 16, 8, stride=4), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 4, stride=2), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(32 * 9 * 9, 6))


def counted(module, batch: int) -> tuple[int, int]:
    """FlopCounterMode's (forward, backward) FLOPs on the real module at ``batch``."""
    x = torch.zeros((batch, *OBS))
    with FlopCounterMode(display=False) as f:
        out = module(x)
    with FlopCounterMode(display=False) as b:
        out.sum().backward()
    module.zero_grad(set_to_none=True)
    return f.get_total_flops(), b.get_total_flops()


def test_nature_cnn_module_matches_atari_description():
    """The torch Nature-CNN counted from its module has nature_cnn.network's layers: GEMM
    shapes, FLOPs, parameters and activations per sample."""
    got = Network(atari.torch_network((6, 1)), OBS).network_work()
    want = nature_cnn.network((6, 1))
    gemms = [layer for layer in got.layers if layer.kind != "other"]
    assert [(g.kind, g.rows, g.inputs, g.outputs, g.forward_flops, g.backward_flops,
             g.params) for g in gemms] == \
        [(w.kind, w.rows, w.inputs, w.outputs, w.forward_flops, w.backward_flops, w.params)
         for w in want.layers]
    assert (got.n_params, got.activation_bytes) == (want.n_params, want.activation_bytes)


def test_per_sample_description_predicts_another_batch():
    """Counted at batch 1 and 2 on a meta copy, the description gives FlopCounterMode's
    totals at batch 128 on the real module."""
    cnn = small_cnn()
    net = Network(cnn, OBS).network_work()
    fwd, bwd = counted(cnn, 128)
    assert net.forward(128).gemm_flops == fwd == 128 * net.forward_flops
    assert net.backward(128).gemm_flops == bwd == 128 * net.backward_flops
    relu = next(layer for layer in net.layers if layer.name == "1")
    assert relu.forward_kernels.bytes_per_sample == 2 * 4 * 16 * 20 * 20  # read + write


def record(path, cnn, batch: int = 32, learns: int = 4) -> None:
    """A DQN-shaped loop with the CNN (no env: the network's phases are what matter)."""
    opt = torch.optim.Adam(cnn.parameters(), lr=1e-4)
    with rldse.recording(path, loop="off_policy", env_id="ALE/Pong-v5", network=cnn,
                         obs_shape=OBS, batch_size=batch, replay_capacity=1000,
                         learning_starts=2, learn_every=1, target_sync=100) as rec:
        with rec.phase("env_reset"):
            pass
        for step in range(learns + 2):
            with rec.phase("act"), torch.no_grad():
                cnn(torch.zeros((1, *OBS)))
            with rec.phase("env_step"):
                pass
            with rec.phase("replay_add"):
                pass
            if step >= 2:
                with rec.phase("replay_sample"):
                    x = torch.rand((batch, *OBS))
                with rec.phase("learn"):
                    opt.zero_grad()
                    cnn(x).square().mean().backward()
                    opt.step()
        rec.episode(0.0)
        with rec.phase("env_reset"):
            pass


def test_recorded_cnn_trace_simulates_a_batch_what_if(tmp_path):
    from rldse.sim import simulate
    from rldse.sim.check_replay import host_spec_for
    from rldse.system import parse_spec
    from rldse.workloads.offpolicy.dqn import net_learn_work

    cnn = small_cnn()
    record(tmp_path / "cnn.parquet", cnn)
    trace = load_trace(tmp_path / "cnn.parquet")
    net = from_info(trace.meta.workload_info)
    assert net is not None and net.kind == "module"
    fwd, bwd = counted(cnn, 128)
    assert net_learn_work(net, 128, False).gemm_flops == 2 * fwd + bwd  # s, s', backward
    raw = host_spec_for(trace).model_dump(mode="json")
    at = {}
    for batch in (32, 128):
        raw["workload"] = {"batch_size": batch}
        at[batch] = simulate(trace, parse_spec(raw), seed=0)
    assert at[128].sim_time_s > at[32].sim_time_s
    raw["workload"] = {"hidden": [64]}
    with pytest.raises(RldseError, match="workload.hidden"):
        simulate(trace, parse_spec(raw), seed=0)
