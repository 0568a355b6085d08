"""Nodes, fabric and network in the system file: one-line refusals naming the field, and
one-node specs keeping their digests."""

from __future__ import annotations

from pathlib import Path

import pytest

from rldse.cli import main
from rldse.system import load_spec, parse_spec

ROOT = Path(__file__).resolve().parents[1]
PPO = str(ROOT / "traces" / "actor_learner_cartpole_2.parquet")
TAXI = str(ROOT / "traces" / "tabular_taxi.parquet")
DGX1 = str(ROOT / "examples" / "dgx1_like.yaml")


@pytest.mark.parametrize(("sets", "field"), [
    (["nodes=0"], "nodes"),
    (["network.preset=ib-hdr"], "network"),  # one node: nothing would use it
    (["workload.learner_gpus=16"], "workload.learner_gpus"),  # 8 GPUs present
    (["nodes=2"], "nodes"),  # no network: no path between the nodes' GPUs
    (["nodes=2", "network.preset=ib-hdr", "network.nics_per_node=0"], "nics_per_node"),
    (["nodes=2", "network.preset=ib-hdr", "workload.learner_gpus=12"],
     "workload.learner_gpus"),  # not whole nodes
    (["fabric.gpus=4"], "fabric"),  # 8 GPUs on a 4-GPU fabric
])
def test_bad_cluster_input_is_one_line_naming_the_field(capsys, sets, field):
    args = ["simulate", PPO, "--system", DGX1]
    for s in sets:
        args += ["--set", s]
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and field in err


def test_a_family_on_one_node_refuses_nodes(capsys):
    spec = ROOT / "examples" / "cpu_only.yaml"
    assert main(["simulate", TAXI, "--system", str(spec), "--set", "nodes=2",
                 "--set", "network.preset=ib-hdr"]) == 2
    assert "nodes" in capsys.readouterr().err


def test_one_node_specs_keep_their_digest_and_yaml():
    spec = load_spec(ROOT / "examples" / "dgx1_like.yaml")
    raw = spec.model_dump(mode="json", exclude_none=True)
    assert parse_spec({**raw, "nodes": 1}).digest == spec.digest
    assert "nodes" not in spec.to_yaml()
    assert parse_spec({**raw, "nodes": 2, "network": {"preset": "ib-hdr"}}).digest \
        != spec.digest
