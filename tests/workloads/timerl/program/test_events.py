"""The closed form (the fast path) against the event run that books every operation on
the Machine: the same iteration time, phases, copy-engine seconds and peak GPU memory
on small shapes, in every regime of the swap pipelines; and what the Machine accounts
(busy time by device and phase, energy, the timeline's copy-engine lane)."""

from __future__ import annotations

import json

import pytest

from rldse.errors import RldseError
from rldse.sim.machine import Machine
from rldse.workloads.timerl.program import (
    TempoShape,
    closed_form,
    ppo_work,
    reinforce_work,
    run,
    stream,
)

REL = 1e-9
SMALL_GPU_BYTES = 10**5  # below every shape's need here: Monte-Carlo and PPO swap

#: (envs, steps, side, JAX dispatch per call): host-bound steps with small copies;
#: tiny dispatch with large observations (copy-bound); tiny dispatch, small observations
SHAPES = [(4, 6, 8, 60.7e-6), (16, 7, 128, 1e-9), (2, 5, 8, 1e-9)]
OBJECTIVES = ["td1", "td3", "mc", "ppo"]


def work(m: Machine, objective: str, shape: tuple, swap: bool = True):
    envs, steps, side, dispatch_s = shape
    g = stream(m)
    cap = int(g.spec.mem_bytes)
    if objective == "ppo":
        return ppo_work(g, TempoShape(envs, steps, side, value_head=True), swap, cap)
    n = {"td1": 1, "td3": 3, "mc": None}[objective]
    return reinforce_work(g, TempoShape(envs, steps, side), n, swap, cap, dispatch_s)


@pytest.mark.parametrize("gpu_bytes", [None, SMALL_GPU_BYTES], ids=["fits", "swaps"])
@pytest.mark.parametrize("objective", OBJECTIVES)
@pytest.mark.parametrize("shape", SHAPES, ids=["host-bound", "copy-bound", "small"])
def test_closed_form_agrees_with_the_event_run(machine, shape, objective, gpu_bytes):
    m = machine(gpu_bytes)
    w = work(m, objective, shape)
    assert w.swap == (gpu_bytes is not None and objective in ("mc", "ppo"))
    it = closed_form(w)
    out = run(m, w, iterations=2)  # the second starts where the first left its buffers
    times = m.iteration_times_s()
    assert m.env.now == pytest.approx(2 * it.iter_s, rel=REL)
    assert list(times) == pytest.approx([it.iter_s], rel=REL)
    parts = out.breakdown_s
    assert parts["act_s"] == pytest.approx(2 * it.act_s, rel=REL)
    assert parts["learn_s"] == pytest.approx(2 * it.learn_s, rel=REL)
    assert parts["copies_s"] == pytest.approx(2 * it.copies_s, rel=REL)
    assert out.gpu_memory_peak_bytes == it.resident_bytes
    assert out.swapped_bytes == it.swapped_bytes


def test_the_shapes_cover_every_regime_of_the_swap_pipelines(machine):
    """Acting copy-bound and step-bound (c against a step), learning copy-bound and
    backward-bound (c against a backward), so both branches of each max are exercised."""
    acting, learning = set(), set()
    for shape in SHAPES:
        for objective in ("mc", "ppo"):
            w = work(machine(SMALL_GPU_BYTES), objective, shape)
            acting.add(w.copy_s > max(w.step_host_s, w.step_device_s))
            learning.add(w.copy_s > w.learn_op_s)
    assert acting == learning == {True, False}


@pytest.mark.parametrize("objective", ["td3", "mc"])
def test_the_machine_accounts_every_booking(machine, objective):
    """Busy time by device and phase is the Work's operations summed; the GPU's energy
    is its idle power over the run and more; nothing else is on the devices."""
    m = machine(SMALL_GPU_BYTES)
    w = work(m, objective, SHAPES[1])
    t = w.steps
    r = m.result(run(m, w))
    gpu = next(d for d in r.devices if d.kind == "gpu")
    cpu = next(d for d in r.devices if d.kind == "cpu")
    expect = {"env_step": t * w.env_s, "act": t * w.act_s,
              "learn": t * w.step_learn_s + w.learn_ops * w.learn_op_s + w.tail_device_s}
    if w.swap:
        expect["swap"] = 2 * t * w.copy_s
    assert gpu.phase_busy_s == pytest.approx(expect, rel=REL)
    assert cpu.phase_busy_s == pytest.approx(
        {"dispatch": t * w.step_host_s + w.learn_host_s + w.tail_host_s}, rel=REL)
    idle_j = m.devices[gpu.name].idle_w * r.sim_time_s
    assert gpu.energy_j > idle_j and gpu.action_j == {}  # dynamic power while booked
    assert r.energy_j == pytest.approx(sum(d.energy_j for d in r.devices))
    assert r.env_steps == t * w.envs and r.updates == 1


def test_the_timeline_shows_swaps_on_a_lane_beside_the_stream(machine, tmp_path):
    path = tmp_path / "timeline.json"
    m = machine(SMALL_GPU_BYTES, timeline=path)
    w = work(m, "mc", SHAPES[0])
    run(m, w)
    m.timeline.close()
    every = json.loads(path.read_text())["traceEvents"]
    events = [e for e in every if e["ph"] == "X"]
    gpu_pid = next(e["pid"] for e in every
                   if e.get("name") == "process_name" and e["args"]["name"] == "gpu")
    on_gpu = [e for e in events if e["pid"] == gpu_pid]
    swaps = [e for e in on_gpu if e["name"] == "swap"]
    assert len(swaps) == 2 * w.steps and {e["tid"] for e in swaps} == {1}
    assert {e["tid"] for e in on_gpu if e["name"] != "swap"} == {0}


def test_a_td_horizon_of_the_whole_iteration_is_refused(machine):
    m = machine()
    with pytest.raises(RldseError):
        reinforce_work(stream(m), TempoShape(4, 6, 8), 6, True, 10**12)
    with pytest.raises(RldseError):
        run(m, work(m, "td1", SHAPES[0]), iterations=0)
