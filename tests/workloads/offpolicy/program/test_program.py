"""The off-policy program (DQN/DDPG twin) on small synthetic traces.

PEARL check: with PEARL's own latency table as table-driven parts, the
steady-state iteration time equals PEARL's analytical model
T_sample(RM) + max(T_update(RM) + T_insert(RM), T_learn(L)) within 1 % for every
replay-manager/learner pair, co-located pairs (RPLN- latencies) included.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest

from rldse.errors import RldseError
from rldse.kernels.mlp import Work
from rldse.sim import Machine, simulate
from rldse.system import parse_spec
from rldse.workloads.offpolicy.program import program as run_program
from rldse.workloads.offpolicy.program.costs import Shape

# PEARL's PT.csv (CatherineMeng/HeteroRL, SysConfig/), latencies in ms
PEARL_PT = """,RP-update,RP-insert,RP-sample,LN,RPLN-RP-update,RPLN-RP-insert,RPLN-RP-sample,RPLN-LN
CPU,0.002,0.0013,0.03,0.6,0.002,0.0001,0.3,0.6
GPU1,0.001,0.0006,0.5,0.2,0.002,0.0006,0.6,0.6
GPU2,0.001,0.0008,0.4,0.3,0.001,0.0012,0.53,0.53
FPGA,0.0015,0.00102,0.1,0.5,0.0015,0.0013,0.2,0.5
"""
DEVICES = ["CPU", "GPU1", "GPU2", "FPGA"]


def _table(text: str) -> dict[str, dict[str, float]]:
    lines = text.strip().splitlines()
    cols = lines[0].split(",")[1:]
    return {row.split(",")[0]: dict(zip(cols, map(float, row.split(",")[1:]), strict=True))
            for row in lines[1:]}


def _shape(**kw) -> Shape:
    base = dict(batch=64, learn_every=1, capacity=10_000, transition_bytes=41, obs_bytes=16,
                act_layers=3, learn_layers=3, act_params=4610,
                learn_params=4610, target_sync_steps=100, prioritized=True, learning_starts=0,
                learn_work=lambda b: Work(1000 * b, 100 * b))
    return Shape(**(base | kw))


def _run(trace, raw, shape, seed=0):
    m = Machine(trace, parse_spec(raw), seed=seed)
    return m.result(run_program(m, shape))


@pytest.fixture
def pt_csv(tmp_path):
    path = tmp_path / "PT.csv"
    path.write_text(PEARL_PT)
    return path


@pytest.mark.parametrize("rm,learner", list(itertools.product(DEVICES, DEVICES)))
def test_pearl_iteration_time(small_trace, pt_csv, rm, learner):
    pt = _table(PEARL_PT)
    pre = "RPLN-" if rm == learner else ""
    expected_ms = pt[rm][pre + "RP-sample"] + max(
        pt[rm][pre + "RP-update"] + pt[rm][pre + "RP-insert"], pt[learner][pre + "LN"])
    raw = {"table": {"latency_csv": str(pt_csv), "replay": rm, "learn": learner},
           "placement": {"replay": "table", "learn": "table"},
           "workload": {"env_steps": 4000, "learner": "async"}}
    result = _run(small_trace, raw, _shape())
    assert result.updates == 4000
    iteration_ms = result.sim_time_s / result.updates * 1e3
    assert iteration_ms == pytest.approx(expected_ms, rel=0.01)


def test_host_replay_sync_is_sum_of_phases(small_trace):
    """Sync learner on one core: time = every actor op + every learner op, nothing overlaps."""
    result = _run(small_trace, {"workload": {"env_steps": 500}}, _shape(prioritized=False))
    busy = sum(p.time_s for p in result.phases if not p.phase.startswith("wait:"))
    assert result.sim_time_s == pytest.approx(busy, rel=1e-9)
    assert result.updates == 500


def test_more_actors_async_never_slower(small_trace):
    raw = {"cpu": {"preset": "xeon-gold-6326"},
           "workload": {"env_steps": 3000, "learner": "async", "actors": 1}}
    one = _run(small_trace, raw, _shape())
    raw["workload"]["actors"] = 8
    eight = _run(small_trace, raw, _shape())
    assert eight.env_steps_per_s >= one.env_steps_per_s


def test_gpu_and_am_placements_run_and_account_energy(small_trace):
    raw = {"cpu": {"preset": "xeon-gold-6326"}, "gpu": {"preset": "a100-40g"},
           "tcam": {"preset": "fefet-tcam-64", "arrays": 256},
           "placement": {"learn": "gpu", "replay": "tcam"}, "workload": {"env_steps": 2000}}
    result = _run(small_trace, raw, _shape())
    am = next(d for d in result.devices if d.name == "tcam")
    assert am.action_j["search"] > 0 and am.action_j["write"] > 0
    assert result.energy_j == pytest.approx(sum(d.energy_j for d in result.devices))
    for d in result.devices:  # energy at least idle power over the run
        assert d.energy_j >= d.background_j - 1e-12


def test_gpu_replay_out_of_memory_and_swap(small_trace):
    raw = {"gpu": {"preset": "a100-40g"}, "placement": {"learn": "gpu", "replay": "gpu"},
           "workload": {"env_steps": 1000, "replay_capacity": 2**31}}
    big = _shape(transition_bytes=4096)
    oom = _run(small_trace, raw, big)
    assert not oom.checks["gpu_memory"] and oom.gpu_memory_peak_bytes > 40 * 2**30
    raw["workload"]["gpu_swap"] = True
    swapped = _run(small_trace, raw, big)
    assert swapped.checks["gpu_memory"] and swapped.swapped_bytes > 0
    assert swapped.sim_time_s > oom.sim_time_s


def test_same_seed_same_json(small_trace):
    raw = {"cpu": {"preset": "epyc-7742"}, "workload": {"env_steps": 2000, "actors": 4,
                                                         "learner": "async"}}
    assert _run(small_trace, raw, _shape(), seed=3).to_json() == \
        _run(small_trace, raw, _shape(), seed=3).to_json()


def test_central_inference_is_refused(small_trace):
    with pytest.raises(RldseError, match="workload.inference"):
        _run(small_trace, {"workload": {"inference": "central"}}, _shape())


# ---- GPU dispatch vs kernels (issue: device models a reviewer accepts) ------------------

def _dgx1(gpu: str = "v100-sxm2"):
    from pathlib import Path

    from rldse.system import load_spec
    root = Path(__file__).resolve().parents[4]
    return load_spec(root / "examples/dgx1_like.yaml",
                     {"workload.env_steps": 20000, "gpu.preset": gpu})


@pytest.fixture(scope="module")
def uniform_trace():
    from pathlib import Path

    from rldse.trace import load_trace
    return load_trace(Path(__file__).resolve().parents[4] / "traces/dqn_cartpole_uniform.parquet")


def test_launch_bound_learner_keeps_a_core_busy_not_the_gpu(uniform_trace):
    """DQN CartPole with the learner on a V100: the framework's dispatch on the learner's
    core paces it; the GPU runs 3 µs kernels, so its average power stays far below TDP."""
    r = simulate(uniform_trace, _dgx1())
    gpu = next(d for d in r.devices if d.kind == "gpu")
    assert gpu.avg_power_w <= 0.6 * 300
    assert "dispatch" in r.bottleneck and "cpu" in r.bottleneck
    dispatch = next(p for p in r.phases if p.worker == "learner" and p.phase == "dispatch")
    learn = next(p for p in r.phases if p.worker == "learner" and p.phase == "learn")
    assert dispatch.time_s > 10 * learn.time_s


def test_faster_gpu_changes_energy_only_through_its_power(uniform_trace):
    """V100 → H100 on a dispatch-bound learner: the same time; the energy difference is the
    boards' idle and kernel power, not a halving of steps/J."""
    runs = {}
    for g in ("v100-sxm2", "h100-sxm"):
        runs[g] = simulate(uniform_trace, _dgx1(g))
    v, h = runs["v100-sxm2"], runs["h100-sxm"]
    assert h.sim_time_s == pytest.approx(v.sim_time_s, rel=0.01)
    gv, gh = (next(d for d in r.devices if d.kind == "gpu") for r in (v, h))
    assert gh.busy_s < gv.busy_s  # same kernels, each a little shorter
    cpu_j = [next(d for d in r.devices if d.kind == "cpu").energy_j for r in (v, h)]
    assert cpu_j[0] == pytest.approx(cpu_j[1], rel=0.01)
    assert h.steps_per_joule > 0.5 * v.steps_per_joule



@pytest.mark.parametrize("learner,interval,lagged", [("sync", 1, False), ("async", 4, True),
                                                     ("sync", 4, True)])
def test_policy_lag_of_actors_running_ahead(uniform_trace, learner, interval, lagged):
    """Actors act with the parameters last sent to them: none behind when they get them
    after every update and wait for the learner; behind when the learner runs on (async)
    or sends only every sync_interval updates, and the Result then warns that
    time-to-target assumes the capture's sample efficiency."""
    spec = _dgx1()
    raw = spec.model_dump(mode="json")
    raw["workload"].update(learner=learner, sync_interval=interval)
    r = simulate(uniform_trace, parse_spec(raw))
    warned = any(w.startswith("policy lag") for w in r.warnings)
    if lagged:
        assert r.staleness_mean_updates > 0 and r.staleness_p95_updates >= 1 and warned
    else:
        assert (r.staleness_mean_updates, r.staleness_p95_updates) == (0.0, 0.0)
        assert not warned
    assert r.to_json() == simulate(uniform_trace, parse_spec(raw)).to_json()


def test_gpu_act_blocks_on_its_copies(uniform_trace):
    """Actors on a V100: the observation copy in and the action read-back are blocking
    copies, so each greedy act pays both copies' latency on top of its dispatch (with the
    copies overlapped, a launch-bound act hid them behind the host)."""
    from rldse.system import load_spec

    root = Path(__file__).resolve().parents[4]

    def act_s(copy_fixed_s: float) -> tuple[float, int]:
        spec = load_spec(root / "examples/dgx1_like.yaml",
                         {"workload.env_steps": 5000, "placement.act": "gpu",
                          "gpu.copy_fixed_s": copy_fixed_s})
        f = simulate(uniform_trace, spec).phases_frame()
        act = f[f["phase"] == "act"]
        host = f[(f["phase"] == "dispatch") & f["worker"].isin(act["worker"].unique())]
        return float(act["time_s"].sum() + host["time_s"].sum()), int(act["count"].sum())

    (low, acts), (high, _) = act_s(10e-6), act_s(30e-6)
    both_copies_s = 2 * 20e-6 * acts  # were every act greedy (exploring ones run no copy)
    assert 0.75 * both_copies_s < high - low <= both_copies_s * (1 + 1e-9)
