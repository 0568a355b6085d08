"""`rldse spec schema [--study]`: the JSON Schema of a SystemSpec file, or of a study
file, generated from the pydantic models that read them (so it cannot drift from them)."""

from __future__ import annotations

import argparse
import json

#: the dialect pydantic generates
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema(study: bool) -> dict:
    if study:
        from rldse.search.study_file import StudyFile as model
    else:
        from rldse.system import SystemSpec as model
    return {"$schema": DIALECT, **model.model_json_schema()}


def cmd_spec(args: argparse.Namespace) -> None:
    print(json.dumps(schema(args.study), indent=1))


def add_parser(sub) -> None:
    sp = sub.add_parser("spec", help="the formats rldse reads: `rldse spec schema` prints "
                        "the SystemSpec JSON Schema (--study: the study file's)")
    sp.add_argument("action", choices=["schema"])
    sp.add_argument("--study", action="store_true",
                    help="the schema of a study file (rldse search / study) instead")
    sp.set_defaults(func=cmd_spec)
