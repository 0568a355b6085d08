"""`rldse spec schema`: JSON Schemas generated from the models that read the files."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from rldse.cli import main
from rldse.models import PART_KINDS, ROLES


def test_system_schema_lists_every_section_and_role(capsys):
    assert main(["spec", "schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    sections = {k.name for k in PART_KINDS.values() if k.in_system}
    assert sections | {"placement", "workload", "name"} <= set(schema["properties"])
    assert schema["additionalProperties"] is False
    placement = schema["$defs"]["Placement"]["properties"]
    assert set(placement) == {*ROLES, "protocol"}


def test_study_schema(capsys):
    from rldse.search.study_file import StudyFile

    assert main(["spec", "schema", "--study"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert set(schema["properties"]) == set(StudyFile.model_fields)
    assert "trace" in schema["required"]


ROOT = Path(__file__).resolve().parents[2]
#: every shipped study file (rldse search / study's `search:`) and system spec
STUDY_FILES = sorted([*ROOT.glob("studies/*/search.yaml"), *ROOT.glob("studies/examples/*.yaml")])
SYSTEM_FILES = sorted(ROOT.glob("examples/*.yaml"))


def _validator(capsys, *flags: str) -> jsonschema.Draft202012Validator:
    assert main(["spec", "schema", *flags]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("flags, files", [(["--study"], STUDY_FILES), ([], SYSTEM_FILES)],
                         ids=["study", "system"])
def test_schema_accepts_every_shipped_file(capsys, flags, files):
    assert len(files) >= 2
    validator = _validator(capsys, *flags)
    for path in files:
        errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
        assert not errors, f"{path.relative_to(ROOT)}: {errors}"


@pytest.mark.parametrize("change", [
    {"objectives": [{"maximise": "steps_per_joule"}]},
    {"objectives": [{"maximize": "steps_per_joule", "minimize": "cost_usd"}]},
    {"sampler": 3},
    {"space": {}},
])
def test_study_schema_refuses_what_the_loader_refuses(capsys, change):
    validator = _validator(capsys, "--study")
    study = {**yaml.safe_load(STUDY_FILES[0].read_text()), **change}
    assert not validator.is_valid(study)


# ---- rldse spec knobs --------------------------------------------------------------------

def test_knobs_lists_every_familys_knobs_and_every_part_field_with_its_unit(capsys):
    from rldse.models.spec import spec_fields, unit_of
    from rldse.workloads import WORKLOADS

    assert main(["spec", "knobs"]) == 0
    rows = {line.split()[0]: line for line in capsys.readouterr().out.splitlines() if line}
    for name in WORKLOADS:
        for knob in WORKLOADS.lookup(name, "workload").knobs.model_fields:
            assert f"workload.{knob}" in rows, (name, knob)
    for kind in PART_KINDS.values():
        if not kind.in_system:
            continue
        for field in spec_fields(kind.spec):
            unit = unit_of(kind.spec, field)
            assert f"{kind.name}.{field}" in rows, (kind.name, field)
            if unit:
                assert f" {unit} " in rows[f"{kind.name}.{field}"], (kind.name, field)
    assert "300 to 7000" in rows["cpu.clock_mhz"]  # the plausible range a slip is held to
    assert "placement.learn" in rows and "price_usd_per_hour" in rows


def test_knobs_of_one_family_and_an_unknown_one(capsys):
    assert main(["spec", "knobs", "--family", "tabular"]) == 0
    out = capsys.readouterr().out
    assert "workload.passes" in out and "workload.replay_capacity" not in out
    assert main(["spec", "knobs", "--family", "dqm"]) == 2
    err = capsys.readouterr().err
    assert "--family" in err and "'dqn'" in err and "\n" not in err.strip()
