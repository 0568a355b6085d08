"""The fast engine against the reference engine (rldse.sim.agreement) where nothing
contends: on every UNCONTENDED configuration of the three program families, makespan,
throughput, energy, every device's busy time and its busy time per phase agree to 1e-9
relative, so any cost term a fast path drops or adds (a copy, a drive, an insert) shows.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.sim.agreement import CONFIGS, EXACT_TOLERANCE, UNCONTENDED, run

TRACES = Path(__file__).resolve().parents[2] / "traces"


@pytest.mark.parametrize("name", list(UNCONTENDED))
def test_fast_paths_equal_the_reference_where_nothing_contends(name):
    a = run(name, TRACES)
    assert set(a.fast) == set(a.reference)
    assert any(k.count(":") == 2 for k in a.errors)  # per-phase busy seconds compared
    bad = {k: e for k, e in a.errors.items() if abs(e) > EXACT_TOLERANCE}
    assert not bad, f"{name}: fast/reference - 1 = {bad}"


def test_the_uncontended_configurations_cover_the_three_families():
    traces = {trace for trace, _, _ in UNCONTENDED.values()}
    assert {"dqn_cartpole_uniform", "dqn_cartpole_per", "ddpg_pendulum"} <= traces
    assert "actor_learner_cartpole_2" in traces
    assert any(t.startswith("tabular") for t in traces)
    assert not set(UNCONTENDED) & set(CONFIGS)
