"""A learning run's price (rldse.sim.run_cost): a probe of its first steps past the
warm-up, then that rate for the rest; on fake clocks, so nothing here is timed."""

from __future__ import annotations

import pytest

import rldse.sim.run_cost as run_cost
from rldse.sim.run_cost import PROBE_CPU_S, Probe, Watch
from rldse.workloads.common.base import CaptureConfig


class FakeRun:
    """A run of ``steps`` steps on a fake CPU clock: ``warm_s`` per step for the first
    ``warm`` steps, ``steady_s`` per step after, progress every ``chunk`` steps; the wall
    clock runs at twice the CPU clock."""

    def __init__(self, warm: int, warm_s: float, steady_s: float, chunk: int = 100) -> None:
        self.warm, self.warm_s, self.steady_s, self.chunk = warm, warm_s, steady_s, chunk
        self.cpu_s = 0.0
        self.steps_run = 0

    def cpu(self) -> float:
        return self.cpu_s

    def wall(self) -> float:
        return 2 * self.cpu_s

    def __call__(self, steps: int, progress) -> None:
        for start in range(0, steps, self.chunk):
            n = min(self.chunk, steps - start)
            warm = max(0, min(n, self.warm - start))
            self.cpu_s += warm * self.warm_s + (n - warm) * self.steady_s
            self.steps_run += n
            progress(n)


@pytest.fixture
def loaded(monkeypatch):
    """A host whose load average lets the timings' own wall/CPU ratio (2) stand."""
    import rldse.host

    monkeypatch.setattr(rldse.host.os, "getloadavg", lambda: (7.0, 7.0, 7.0))


def _probe(run: FakeRun, steps: int, warm: int) -> Probe:
    probes = []

    def stop(p: Probe) -> None:
        probes.append(p)
        raise StopIteration

    watch = Watch(steps, warm, stop, cpu_clock=run.cpu, wall_clock=run.wall)
    try:
        run(steps, watch)
    except StopIteration:
        return probes[0]
    return watch.probe(whole=True)


def test_the_rest_of_a_run_is_priced_at_the_rate_past_its_warm_up(loaded):
    run = FakeRun(warm=1_000, warm_s=1e-4, steady_s=1e-3)
    probe = _probe(run, 10**9, 1_000)
    assert not probe.whole and run.steps_run < 10_000  # stopped early
    assert probe.steady_steps == 1_000 and probe.steady_cpu_s == pytest.approx(0.1)
    assert probe.cpu_s_per_step == pytest.approx(1e-3)
    assert probe.cpu_s - probe.steady_cpu_s >= PROBE_CPU_S
    cost = probe.cost(10**6)
    assert cost.cpu_s == pytest.approx(0.1 + 1e-3 * (10**6 - 1_000))
    assert cost.wall_s == pytest.approx(2 * cost.cpu_s)  # the probe's own wall/CPU


def test_a_probe_that_reaches_the_runs_steps_is_the_run():
    run = FakeRun(warm=1_000, warm_s=1e-4, steady_s=1e-4)
    probe = _probe(run, 5_000, 1_000)
    assert probe.whole and run.steps_run == 5_000
    assert probe.cost(5_000).cpu_s == pytest.approx(run.cpu_s)


def test_a_capture_request_is_probed_once_for_all_its_seeds(monkeypatch, loaded):
    """learning_run probes the request itself (steps cut to warm-up + PROBE_MAX_STEPS,
    seed 0) once, and prices each run's own steps; the warm-up is the loop's
    learning_starts."""
    monkeypatch.setattr(run_cost, "_PROBES", {})
    probed = []
    fake = FakeRun(warm=1_000, warm_s=1e-4, steady_s=2e-3)

    def capture(request, progress):
        probed.append(request)
        fake(request.steps, progress)

    monkeypatch.setattr(run_cost, "capture", capture)
    monkeypatch.setattr(run_cost, "tree_cpu_s", fake.cpu)
    monkeypatch.setattr(run_cost.time, "perf_counter", fake.wall)
    costs = [run_cost.learning_run(CaptureConfig(workload="dqn", env_id="CartPole-v1",
                                                 steps=10**6, seed=seed))
             for seed in (0, 1, 2)]
    assert len(probed) == 1 and probed[0].seed == 0
    assert probed[0].steps == 1_000 + run_cost.PROBE_MAX_STEPS
    assert costs[0] == costs[2] and costs[0].steps == 10**6
    assert costs[0].cpu_s == pytest.approx(0.1 + 2e-3 * (10**6 - 1_000))
