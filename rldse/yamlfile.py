"""Reading the YAML files users write (system specs, study files, study parameters), with
the one-line errors rldse promises: the file, the line, and what was expected.

Three rules beyond YAML's own: a key may appear once per mapping (PyYAML keeps the last
silently; YAML 1.2 requires unique keys), nesting is capped at `MAX_DEPTH` levels (libyaml's
composer recurses in C and crashes the interpreter on a file nested 50,000 deep, checked
first on the flat event stream, which is iterative), and plain scalars resolve by YAML
1.2's core schema (YAML 1.2.2, section 10.3), not PyYAML's YAML 1.1 rules:

- null ``~``, ``null``, empty; booleans ``true``/``false`` (also ``True``, ``TRUE``, ...);
  integers ``12``, ``-3``, ``0o17`` (octal), ``0x1F`` (hex); floats ``2.5``, ``.5``,
  ``1e10`` (a number, where YAML 1.1 makes it a string), ``.inf``, ``.nan``; anything else
  (dates included) is a string.
- A plain scalar YAML 1.1 reads as another value than 1.2 does is refused in one line
  naming its key and value (``YAML_11_FORMS``), never read either way unseen: ``yes``,
  ``no``, ``on``, ``off`` (booleans in 1.1, text in 1.2), ``010`` (octal 8 in 1.1, 10 in
  1.2), ``0b101``, ``1:30`` (base 60: 90 in 1.1), ``1_000`` (digit separators), ``-0x10``.
  Quoted, each is text.

The merge key ``<<`` (a YAML 1.1 type rldse's files may use) is kept.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import yaml
from yaml.constructor import ConstructorError

from rldse.errors import RldseError

#: libyaml's parser where PyYAML was built with it (about 10x faster on the presets), else
#: the pure-Python one; both build the same safe types and mark errors with their line.
_BASE: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

#: Deepest nesting of mappings and sequences a file may have (rldse's files use under 10).
MAX_DEPTH = 64

#: Plain scalars YAML 1.1 reads as a boolean or number and YAML 1.2's core schema as
#: another value or text, by form: refused (module docstring).
YAML_11_FORMS = (
    ("is a YAML 1.1 boolean", r"yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF"),
    ("has a leading zero", r"[-+]?0[0-9_]*[1-9_][0-9_]*"),
    ("is a YAML 1.1 binary number", r"[-+]?0b[0-1_]+"),
    ("is a YAML 1.1 base-60 number", r"[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?"),
    ("is a YAML 1.1 number with digit separators",
     r"[-+]?\.?[0-9][0-9_.]*_[0-9_.]*(?:[eE][-+]?[0-9]+)?|[-+]?0x[0-9a-fA-F_]*_[0-9a-fA-F_]*"),
    ("is a YAML 1.1 signed hexadecimal", r"[-+]0x[0-9a-fA-F]+"),
)
_YAML_11_PATTERN = re.compile("^(?:" + "|".join(p for _, p in YAML_11_FORMS) + ")$")
#: YAML 1.2's core schema (YAML 1.2.2, section 10.3.2): tag, pattern, first characters.
_CORE = (
    ("null", r"^(?:~|null|Null|NULL|)$", ["~", "n", "N", ""]),
    ("bool", r"^(?:true|True|TRUE|false|False|FALSE)$", list("tTfF")),
    ("int", r"^(?:[-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$", list("-+0123456789")),
    ("float", r"^(?:[-+]?(?:\.[0-9]+|[0-9]+(?:\.[0-9]*)?)(?:[eE][-+]?[0-9]+)?"
     r"|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$", list("-+0123456789.")),
)
_YAML_11 = "tag:rldse,2026:yaml-1.1-form"
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class Yaml11Form(yaml.MarkedYAMLError):
    """A plain scalar YAML 1.1 and 1.2 read differently (``YAML_11_FORMS``)."""


def _yaml_11_problem(value: str, key: Any = None) -> str:
    """The refusal: the key, the value, its form, both readings and what to write."""
    form = next(f for f, p in YAML_11_FORMS if re.fullmatch(p, value))
    old = yaml.load(value, Loader=yaml.SafeLoader)  # noqa: S506 (the safe 1.1 loader)
    if isinstance(old, bool):
        old_s = str(old).lower()
    else:
        old_s = str(old) if isinstance(old, (int, float)) else "text"
    new = str(int(value.replace("_", ""), 10)) if form.startswith("has a leading") else "text"
    write = " or ".join(dict.fromkeys(w for w in (old_s, new) if w != "text"))
    field = "" if key is None else f"{key}: "
    return (f"{field}{value} {form} (YAML 1.1 reads {old_s}, YAML 1.2 {new}): write "
            f"{write}, or quote it for text")


class StrictLoader(_BASE):  # type: ignore[misc, valid-type]
    """The safe loader with unique keys and YAML 1.2's core schema (module docstring)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        seen: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            if value_node.tag == _YAML_11:
                raise Yaml11Form(problem=_yaml_11_problem(value_node.value, key),
                                 problem_mark=value_node.start_mark)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeConstructor reports it
                continue
            if first is not key_node:
                raise ConstructorError(None, None, f"duplicate key {key!r} (first on line "
                                       f"{first.start_mark.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


def _refuse_yaml_11(loader: StrictLoader, node: Any) -> Any:
    raise Yaml11Form(problem=_yaml_11_problem(node.value), problem_mark=node.start_mark)


def _core_int(loader: StrictLoader, node: Any) -> int:
    return int(node.value, 0)  # 12, -3, 0o17, 0x1F (leading zeros are refused first)


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)
StrictLoader.add_constructor("tag:yaml.org,2002:int", _core_int)
StrictLoader.add_constructor(_YAML_11, _refuse_yaml_11)
# the core schema in place of YAML 1.1's resolvers; the merge key stays
StrictLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag == "tag:yaml.org,2002:merge"]
    for first, resolvers in _BASE.yaml_implicit_resolvers.items()}
StrictLoader.add_implicit_resolver(_YAML_11, _YAML_11_PATTERN, list("yYnNoO-+0123456789."))
for _tag, _pattern, _first in _CORE:
    StrictLoader.add_implicit_resolver(f"tag:yaml.org,2002:{_tag}", re.compile(_pattern),
                                       _first)


def _check_depth(text: str) -> None:
    """Refuse nesting deeper than MAX_DEPTH, stopping at the first event past it."""
    depth = 0
    for event in yaml.parse(text, Loader=_BASE):
        if isinstance(event, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                raise yaml.MarkedYAMLError(problem=f"nested deeper than {MAX_DEPTH} levels",
                                           problem_mark=event.start_mark)
        elif isinstance(event, _CLOSE):
            depth -= 1


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with the rules of the module docstring, on the fastest safe
    loader available."""
    _check_depth(text)
    return yaml.load(text, Loader=StrictLoader)  # noqa: S506 (a safe loader)


def read_mapping(path: str | Path, expected: str) -> dict[str, Any]:
    """The file's top-level mapping; `expected` names its keys for the error message."""
    path = Path(path)
    if not path.is_file():
        raise RldseError(f"{path}: no such file")
    try:
        raw = load_yaml(path.read_text(encoding="utf-8"))
    except UnicodeDecodeError as exc:
        raise RldseError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    except yaml.YAMLError as exc:
        raise RldseError(f"{path}: {describe(exc)}") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RldseError(f"{path}: expected a mapping ({expected})")
    return raw


def describe(exc: yaml.YAMLError) -> str:
    """A YAML error as 'line N: not valid YAML (problem)'."""
    if isinstance(exc, yaml.reader.ReaderError):  # its str spans two lines
        return (f"not valid YAML (character {exc.character!r} at position {exc.position}: "
                f"{exc.reason})")
    mark = getattr(exc, "problem_mark", None)
    line = f"line {mark.line + 1}: " if mark else ""
    problem = " ".join(str(getattr(exc, "problem", None) or exc).split())
    if isinstance(exc, Yaml11Form):
        return f"{line}{problem}"
    return f"{line}not valid YAML ({problem})"
