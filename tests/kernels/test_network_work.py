"""network_work: one description of a network's work, from layer sizes, for the Nature-CNN
and from an nn.Module, checked against closed forms and FlopCounterMode."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.kernels import nature_cnn
from rldse.kernels.mlp import network
from rldse.kernels.network_work import gemm
from rldse.kernels.trace_network import from_info

ROOT = Path(__file__).resolve().parents[2]


def _mlp_closed_form(sizes: list[int], b: int, tanh: bool, input_grad: bool):
    """mlp.py's docstring formulas, written out: (forward, backward) flops, bytes, calls
    and GEMMs."""
    last = len(sizes) - 2
    ff = fb = fc = bf = bb = bc = 0
    fg, bg = [], []
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        ff += 2 * b * i * o + b * o
        fb += 4 * (b * i + i * o + b * o) + 4 * (2 * b * o + o)
        fc += 2
        fg.append(("fwd", b, i, o))
        if k < last or tanh:
            ff, fb, fc = ff + b * o, fb + 8 * b * o, fc + 1
        bf += 2 * b * i * o + b * o
        bb += 4 * (b * i + i * o + b * o) + 4 * (b * o + o)
        bc += 2
        bg.append(("dw", b, i, o))
        if k > 0 or input_grad:
            bf, bb, bc = bf + 2 * b * i * o, bb + 4 * (b * i + i * o + b * o), bc + 1
            bg.append(("dx", b, i, o))
        if k > 0:
            bf, bb, bc = bf + 2 * b * i, bb + 14 * b * i, bc + 2
    if tanh:
        bf, bb, bc = bf + 3 * b * sizes[-1], bb + 28 * b * sizes[-1], bc + 3
    return (ff, fb, fc, fg), (bf, bb, bc, bg)


@pytest.mark.parametrize("sizes,tanh,input_grad", [([4, 64, 64, 2], False, False),
                                                   ([3, 256, 1], True, False),
                                                   ([4, 32, 32, 16, 1], False, True)])
def test_mlp_network_gives_the_mlp_formulas(sizes, tanh, input_grad):
    net = network(sizes, tanh)
    (ff, fb, fc, fg), (bf, bb, bc, bg) = _mlp_closed_form(sizes, 64, tanh, input_grad)
    fwd, bwd = net.forward(64), net.backward(64, input_grad)
    assert (fwd.flops, fwd.bytes, fwd.calls, list(fwd.gemms)) == (ff, fb, fc, fg)
    assert (bwd.flops, bwd.bytes, bwd.calls, list(bwd.gemms)) == (bf, bb, bc, bg)
    params = sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:], strict=True))
    assert net.n_params == params and net.param_bytes == 4 * params
    assert net.activation_bytes == 4 * sum(sizes[1:])
    assert net.n_tensors == 2 * (len(sizes) - 1)


def test_nature_cnn_per_sample_numbers():
    """Mnih et al.'s layers by hand: 84 → 20 → 9 → 7 pixels, then 3,136 → 512 → heads."""
    net = nature_cnn.network((6, 1))
    convs = [(400, 4 * 64, 32), (81, 32 * 16, 64), (49, 64 * 9, 64)]
    fc = [(3136, 512), (512, 6), (512, 1)]
    fwd = sum(2 * r * i * o for r, i, o in convs) + sum(2 * i * o for i, o in fc)
    assert net.forward_flops == fwd
    # no input gradient for the first conv: its backward is the weight gradient only
    assert net.backward_flops == 2 * fwd - 2 * 400 * 256 * 32
    assert net.n_params == nature_cnn.n_params((6, 1)) == 1_687_719
    gemm_work = gemm("fwd", 32 * 400, 256, 32)
    assert net.forward(32).gemms[0] == gemm_work.gemms[0]


def test_from_info_round_trip_and_legacy():
    net = nature_cnn.network((6, 1))
    assert from_info({"network": net.info()}) == net
    assert from_info({"network": {"kind": "nature_cnn", "heads": [6, 1]}}) == net
    assert from_info({"layer_sizes": [4, 64, 2]}) is None


@pytest.mark.parametrize("bad,field", [({"kind": "module", "obs_shape": [4]}, "layers"),
                                       ({**nature_cnn.network((2,)).info(), "obs_dtype": "int3"},
                                        "obs_dtype")])
def test_from_info_refuses_bad_descriptions_in_one_line(bad, field):
    with pytest.raises(RldseError, match=f"workload_info.network.{field}") as exc:
        from_info({"network": bad})
    assert "\n" not in str(exc.value)


def test_pong_actors_what_if_rescales_with_the_cnn():
    """traces/pong_ppo.parquet: central inference batches of 1-4 actors cost the
    Nature-CNN's forward at that batch (not the MLP stand-in), and hidden is refused."""
    from rldse.sim.machine import Machine
    from rldse.system import parse_spec, resolve
    from rldse.trace import load_trace
    from rldse.workloads.actor_learner.program.networks import act_work, networks
    from rldse.workloads.actor_learner.program.unit_costs import unit_costs

    trace = load_trace(ROOT / "traces" / "pong_ppo.parquet")
    spec = parse_spec({"cpu": {"preset": "xeon-silver-4215", "sockets": 2},
                       "gpu": {"preset": "v100-sxm2", "count": 1},
                       "placement": {"act": "cpu", "learn": "gpu"},
                       "workload": {"actors": 4, "inference": "central"}})
    m = Machine(trace, resolve(spec, trace), seed=0)
    t_nets, nets = networks(m, 7056)
    assert nets.all == (nature_cnn.network((6, 1)),) and t_nets == nets
    cnn = nature_cnn.forward_work(16, (6, 1))
    assert act_work(nets, 16) == cnn  # 4 actors × 4 envs in one batch
    assert unit_costs(m).act_s[4] > unit_costs(m).act_s[1] > 0
    spec = parse_spec({"cpu": {"preset": "xeon-silver-4215"}, "workload": {"hidden": [64]}})
    with pytest.raises(RldseError, match="workload.hidden"):
        networks(Machine(trace, resolve(spec, trace), seed=0), 7056)
