"""`rldse spec schema [--study]`: the JSON Schema of a SystemSpec file, or of a study
file, generated from the pydantic models that read them (so it cannot drift from them).
`rldse spec knobs [--family NAME]`: every path a system file or `--set` may set, with its
unit, default and allowed range: each workload family's knobs (`workload.NAME`), then the
system's own fields and every part kind's fields (the same for every family)."""

from __future__ import annotations

import argparse
import json
import types
from typing import Any, Literal, Union, get_args, get_origin

#: the dialect pydantic generates
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema(study: bool) -> dict:
    if study:
        from rldse.search.study_file import StudyFile as model
    else:
        from rldse.system import SystemSpec as model
    return {"$schema": DIALECT, **model.model_json_schema()}


def _type_text(annotation: Any) -> str:
    """'count', 'yes/no', 'sync|async', 'list of count' for a knob's type (None dropped)."""
    origin = get_origin(annotation)
    if origin in (Union, types.UnionType):
        return "|".join(_type_text(a) for a in get_args(annotation) if a is not type(None))
    if origin is Literal:
        return "|".join(str(a) for a in get_args(annotation))
    if origin is list:
        return f"list of {_type_text(get_args(annotation)[0])}"
    return {int: "count", float: "number", bool: "yes/no", str: "text"}.get(annotation,
                                                                           "mapping")


def _default_text(info: Any, unset: str) -> str:
    if info.is_required():
        return "required"
    value = info.get_default(call_default_factory=True)
    return unset if value is None or value == {} else str(value)


def knob_rows(family: str | None = None) -> list[tuple[str, tuple[str, ...], list[tuple]]]:
    """(section title, header, rows) for `rldse spec knobs`: each family's knobs, the
    system's fields, then each part kind's (unit, plausible range, allowed range)."""
    from rldse.models.kinds import PART_KINDS
    from rldse.models.platform import CostKnobs
    from rldse.models.spec import _range_text, plausible_range, spec_fields, unit_of
    from rldse.system import system_spec
    from rldse.workloads import WORKLOADS

    names = list(WORKLOADS)
    if family is not None and family not in names:
        from rldse.errors import RldseError, did_you_mean

        raise RldseError(f"unknown workload family '{family}'{did_you_mean(family, names)} "
                         f"(families: {', '.join(names)})", where="--family")
    head = ("path", "unit", "default", "allowed", "what it sets")
    out = []
    for name in [family] if family else names:
        knobs = WORKLOADS.lookup(name, "workload").knobs
        rows = [(f"workload.{k}", _type_text(f.annotation), _default_text(f, "the trace's"),
                 _range_text(k, f.metadata).replace("a finite number", ""),
                 f.description or "") for k, f in knobs.model_fields.items()]
        out.append((f"family {name}: workload knobs (unset: as in the trace)", head, rows))
    spec = system_spec()
    rows = [(k, _type_text(f.annotation), _default_text(f, "none"), "",
             f.description or "") for k, f in spec.model_fields.items()
            if k in ("name", "price_usd_per_hour", "runs_per_machine")]
    rows += [(f"cost.{k}", _type_text(f.annotation), _default_text(f, "none"), "",
              f.description or "") for k, f in CostKnobs.model_fields.items()]
    placement = spec.model_fields["placement"].annotation
    rows += [(f"placement.{role}", "text" if role == "protocol" else "part kind", str(f.default),
              "", f.description or "")
             for role, f in placement.model_fields.items()]
    out.append(("the system (every family)", head, rows))
    part_head = ("path", "unit", "plausible", "allowed", "what it sets (default: the preset's)")
    for kind in PART_KINDS.values():
        if not kind.in_system and not kind.presets:
            continue
        model, at = kind.spec, kind.name if kind.in_system else f"(a {kind.name} preset)"
        rows = [(f"{at}.preset", "text", "", "", f"the {kind.name} preset (`rldse parts`)")]
        if kind.countable:
            rows.append((f"{at}.count", "count", "", "0 ≤ count ≤ 64", "instances of this part"))
        for field in spec_fields(model):
            info = model.model_fields[field]
            bounds = plausible_range(model, field)
            rows.append((f"{at}.{field}", unit_of(model, field) or _type_text(info.annotation),
                         f"{bounds[0]:g} to {bounds[1]:g}" if bounds else "",
                         _range_text(field, info.metadata).replace("a finite number", ""),
                         info.description or ""))
        out.append((f"part {kind.name}: {kind.description}", part_head, rows))
    return out


def cmd_spec(args: argparse.Namespace) -> None:
    if args.action == "schema":
        print(json.dumps(schema(args.study), indent=1))
        return
    from rldse.models.presets import text_table

    sections = knob_rows(args.family)
    print("\n\n".join(f"{title}\n{text_table(head, [tuple(map(str, r)) for r in rows])}"
                      for title, head, rows in sections))


def add_parser(sub) -> None:
    sp = sub.add_parser("spec", help="the formats rldse reads: `rldse spec schema` prints "
                        "the SystemSpec JSON Schema (--study: the study file's); `rldse spec "
                        "knobs` every path a system file or --set sets, with unit and default")
    sp.add_argument("action", choices=["schema", "knobs"])
    sp.add_argument("--study", action="store_true",
                    help="the schema of a study file (rldse search / study) instead")
    sp.add_argument("--family", default=None, metavar="NAME",
                    help="knobs: only this workload family's knobs (default: every family's)")
    sp.set_defaults(func=cmd_spec)
