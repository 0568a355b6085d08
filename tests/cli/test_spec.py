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
    assert set(placement) == set(ROLES)


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
