"""The family through rldse.simulate: protocols, memory, knob errors, the shipped examples."""

from pathlib import Path

import pytest

from rldse import simulate
from rldse.errors import RldseError
from rldse.system import load_spec, parse_spec
from rldse.workloads import open_trace

ROOT = Path(__file__).resolve().parents[3]
TRACE = ROOT / "traces" / "llm_rl_grpo.parquet"


@pytest.fixture(scope="module")
def trace():
    return open_trace(TRACE)


def _spec(protocol="colocated", **workload):
    base = {"model": "qwen2.5-7b", "prompts_per_step": 32, "responses_per_prompt": 8,
            "train_batch": 8, "prompt_tokens": 128,
            "response_tokens": {"mean": 400, "max": 2048}, "rollout_tp": 2, "steps": 1}
    return parse_spec({"gpu": {"preset": "h100-sxm", "count": 8}, "nodes": 2,
                       "fabric": {"preset": "dgx-h100"}, "network": {"preset": "ib-ndr"},
                       "placement": {"act": "gpu", "learn": "gpu", "protocol": protocol},
                       "workload": {**base, **workload}}, where="")


def _step(trace, **workload):
    r = simulate(trace, _spec(**workload))
    return r, r.breakdown_s["step_s"]


def test_colocated_step_is_the_sum_of_its_phases(trace):
    r, step = _step(trace, protocol="colocated")
    parts = sum(v for k, v in r.breakdown_s.items() if k != "step_s")
    assert step == pytest.approx(parts)
    assert r.sim_time_s == pytest.approx(step) and r.checks["gpu_memory"]


def test_overlap_orders_the_protocols(trace):
    _, dis = _step(trace, protocol="disaggregated", rollout_gpus=8)
    _, off = _step(trace, protocol="one_step_off", rollout_gpus=8)
    _, sync_stream = _step(trace, protocol="async", rollout_gpus=8, require_batches=1,
                           trigger_parameter_sync_step=4, old_logprob=False)
    r, stale = _step(trace, protocol="async", rollout_gpus=8, require_batches=1,
                     trigger_parameter_sync_step=4, old_logprob=False,
                     staleness_threshold=0.5, partial_rollout=True)
    assert off < dis and stale <= sync_stream
    assert r.staleness_mean_updates is not None and r.staleness_mean_updates > 0


def test_steps_repeat_the_step(trace):
    _, one = _step(trace, protocol="colocated")
    r = simulate(trace, _spec(protocol="colocated", steps=3))
    assert r.sim_time_s == pytest.approx(3 * one)


@pytest.mark.parametrize(("knobs", "where"), [
    ({"protocol": "colocated", "rollout_gpus": 4}, "workload.rollout_gpus"),
    ({"train_batch": 5}, "workload.train_batch"),
    ({"model": "qwen3-30b-a3b"}, "workload.model"),
    ({"rollout_tp": 3}, "workload.rollout_tp"),
])
def test_bad_knobs_are_one_line_naming_the_knob(trace, knobs, where):
    with pytest.raises(RldseError) as exc:
        simulate(trace, _spec(**knobs))
    assert exc.value.where == where and "\n" not in str(exc.value)


def test_an_unknown_protocol_is_one_line_naming_placement_protocol(trace):
    with pytest.raises(RldseError) as exc:
        simulate(trace, _spec(protocol="asynch"))
    assert exc.value.where == "placement.protocol" and "'async'" in str(exc.value)


def test_engines_and_trainer_book_their_own_gpus_on_every_node(trace):
    r = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=4))
    busy = {d.name: d.phase_busy_s for d in r.devices if d.kind == "gpu"}
    assert len(busy) == 16
    assert set(busy["gpu0"]) == {"act"} and set(busy["node1/gpu7"]) == {"learn"}


def test_rollout_gpu_prices_the_engines_on_their_own_gpu(trace):
    same = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=8))
    h20 = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=8, rollout_gpu="h20"))
    assert h20.breakdown_s["train_s"] == pytest.approx(same.breakdown_s["train_s"])
    assert h20.breakdown_s["generate_s"] != same.breakdown_s["generate_s"]
    with pytest.raises(RldseError) as exc:
        simulate(trace, _spec(protocol="colocated", rollout_gpu="h20"))
    assert exc.value.where == "workload.rollout_gpu"


def test_rollout_gpus_draw_and_cost_as_their_own_preset(trace):
    """8 of 16 H100 SXM (30,000 USD, 85 W idle, 700 W TDP) rebuilt as H20 (13,000 USD,
    70 W, 400 W; presets/gpu.yaml): the engines' devices carry the H20's price and power,
    the trainer's the H100's, and the run costs 8 × 17,000 USD less."""
    same = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=8))
    h20 = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=8, rollout_gpu="h20"))
    gpus = [d for d in h20.devices if d.kind == "gpu"]
    assert [d.preset for d in gpus] == ["h20"] * 8 + ["h100-sxm"] * 8
    assert sum(d.cost_usd for d in gpus) == 8 * 13_000 + 8 * 30_000
    assert same.cost_usd - h20.cost_usd == pytest.approx(8 * 17_000)
    t = h20.sim_time_s
    for d, (idle_w, max_w) in zip((gpus[0], gpus[-1]), ((70, 400), (85, 700)), strict=True):
        # the utilisation model at full dynamic share: idle × T + (max − idle) × busy / lanes
        assert d.energy_j == pytest.approx(idle_w * t + (max_w - idle_w) * d.busy_s / d.lanes)
    assert h20.energy_j == pytest.approx(sum(d.energy_j for d in h20.devices))


def test_70b_on_8_x_24gb_is_infeasible_and_on_64_x_80gb_fits(trace):
    small = simulate(trace, load_spec(ROOT / "examples" / "llm_rl_70b_8x24gb.yaml"))
    assert not small.checks["gpu_memory"]
    assert any("infeasible: the trainer needs" in w for w in small.warnings)
    big = simulate(trace, load_spec(ROOT / "examples" / "llm_rl_70b_64x80gb.yaml"))
    assert big.checks["gpu_memory"] and big.breakdown_s["step_s"] > 0


def test_the_bill_lists_each_roles_gpu_and_sums_to_the_price(trace):
    """2 nodes of 8 GPUs, 8 rollout H20 (13,000 USD) and 8 trainer H100 SXM (30,000 USD):
    a node's bill holds 4 of each on average, and its 2 nodes price the whole machine."""
    r = simulate(trace, _spec(protocol="disaggregated", rollout_gpus=8, rollout_gpu="h20"))
    gpus = {i.preset: (i.count, i.unit_usd) for i in r.node_cost if i.item == "gpu"}
    assert gpus == {"h20": (4, 13_000), "h100-sxm": (4, 30_000)}
    assert 2 * sum(i.usd for i in r.node_cost) == pytest.approx(r.machine_cost_usd)
    assert r.machine_cost_usd == pytest.approx(r.cost_usd)
    assert not any("node cost lists" in w for w in r.warnings)
