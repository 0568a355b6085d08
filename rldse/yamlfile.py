"""Reading the YAML files users write (system specs, study files, study parameters), with
the one-line errors rldse promises: the file, the line, and what was expected.

Three rules beyond YAML's own: a key may appear once per mapping (PyYAML keeps the last
silently; YAML 1.2 requires unique keys), nesting is capped at `MAX_DEPTH` levels (libyaml's
composer recurses in C and crashes the interpreter on a file nested 50,000 deep, checked
first on the flat event stream, which is iterative), and numbers in exponent notation
without a dot (``1e10``) are numbers, as in YAML 1.2, not the strings YAML 1.1 makes them.
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

_EXPONENT = re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$")
_OPEN = (yaml.MappingStartEvent, yaml.SequenceStartEvent)
_CLOSE = (yaml.MappingEndEvent, yaml.SequenceEndEvent)


class StrictLoader(_BASE):  # type: ignore[misc, valid-type]
    """The safe loader with unique keys and YAML 1.2 exponent floats (module docstring)."""

    def construct_mapping(self, node: Any, deep: bool = False) -> dict:
        seen: dict[Any, Any] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":
                continue
            key = self.construct_object(key_node, deep=True)
            try:
                first = seen.setdefault(key, key_node)
            except TypeError:  # an unhashable key: SafeConstructor reports it
                continue
            if first is not key_node:
                raise ConstructorError(None, None, f"duplicate key {key!r} (first on line "
                                       f"{first.start_mark.line + 1})", key_node.start_mark)
        return super().construct_mapping(node, deep=deep)


StrictLoader.add_constructor("tag:yaml.org,2002:map", StrictLoader.construct_yaml_map)
StrictLoader.add_implicit_resolver("tag:yaml.org,2002:float", _EXPONENT,
                                   list("-+0123456789"))


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
    return f"{line}not valid YAML ({problem})"
