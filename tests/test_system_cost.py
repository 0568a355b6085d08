"""The spec's buying fields (platform, runs_per_machine, cost) as system.py reads and
resolves them: refused in one line where they cannot hold, digested where they matter."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.cli import main
from rldse.system import load_spec, resolve
from rldse.trace import load_trace

ROOT = Path(__file__).resolve().parents[1]
DQN = str(ROOT / "traces" / "dqn_cartpole_uniform.parquet")
PPO = str(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
BOX = str(ROOT / "examples" / "4xl4.yaml")
DGX = str(ROOT / "examples" / "dgx1_like.yaml")


def test_a_spec_without_buying_fields_writes_and_digests_as_before():
    spec = load_spec(DGX)
    assert not {"platform", "runs_per_machine", "cost"} & set(spec.written())
    assert "runs_per_machine" not in spec.to_yaml()


def test_the_buying_terms_are_in_the_resolved_digest():
    trace = load_trace(DQN)
    base = resolve(load_spec(BOX), trace).digest
    for key, value in (("cost.usd_per_kwh", 0.3), ("cost.life_years", 3),
                       ("runs_per_machine", 2), ("platform.nic_usd", 900),
                       ("price_usd_per_hour", 5.0)):
        assert resolve(load_spec(BOX, {key: value}), trace).digest != base, key


@pytest.mark.parametrize("trace,sets,needle", [
    (DQN, ["platform.preset=aws-g6-12xlarge", "price_usd_per_hour=3"],
     "--set price_usd_per_hour: the rented platform aws-g6-12xlarge has its hourly price"),
    (DQN, ["platform.nic_usdd=3"], "--set platform.nic_usdd: unknown field; did you mean "
                                   "'nic_usd'"),
    (DQN, ["platform.preset=pcie-4gpu"], "pcie-4gpu"),
    (DQN, ["runs_per_machine=3"], "3 runs do not split 1 socket(s) of 32 cores"),
    (DQN, ["runs_per_machine=2", "gpu.count=3"], "2 runs, but the system has 3 gpu"),
    (DQN, ["runs_per_machine=0"], "runs_per_machine"),
    (DQN, ["cost.life_years=0"], "cost.life_years"),
    (PPO, ["nodes=2", "network.preset=ib-hdr", "runs_per_machine=2"],
     "2 runs on 2 nodes: runs share one node's parts"),
])
def test_buying_fields_that_cannot_hold_are_one_line(capsys, trace, sets, needle):
    argv = ["simulate", trace, "--system", BOX, "--set", "workload.env_steps=2000"]
    for s in sets:
        argv += ["--set", s]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and needle in err, err
