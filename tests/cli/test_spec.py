"""`rldse spec schema`: JSON Schemas generated from the models that read the files."""

from __future__ import annotations

import json

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
