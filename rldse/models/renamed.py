"""Old names that system and study files may still use: read as the new ones, each with a
one-line deprecation note on stderr (once per file and name).

The TCAM part kind was called ``am`` (associative memory) until it was named for what it
is; a file that says ``am`` as a section, a placement, a space path or a check
(``am_capacity``) still reads. Remove an entry when no file in use says it any more.
"""

from __future__ import annotations

import sys
from functools import cache
from typing import Any

from rldse.errors import RldseError

#: Old part-kind names -> current ones.
KINDS: dict[str, str] = {"am": "tcam"}
#: Old feasibility-check names -> current ones.
CHECKS: dict[str, str] = {"am_capacity": "tcam_capacity"}


@cache
def _note(old: str, new: str, where: str) -> None:
    print(f"rldse: warning: {where}: '{old}' is deprecated; read as '{new}' (write '{new}')",
          file=sys.stderr)


def _new(name: Any, table: dict[str, str], where: str) -> Any:
    if isinstance(name, str) and name in table:
        _note(name, table[name], where)
        return table[name]
    return name


def keys(raw: Any, table: dict[str, str], where: str) -> Any:
    """A mapping with its old keys (``table``: old -> new) renamed, each with the note;
    both an old key and its new one is one line."""
    if not isinstance(raw, dict) or not set(raw) & set(table):
        return raw
    out = {}
    for key, value in raw.items():
        new = _new(key, table, where)
        if new != key and new in raw:
            raise RldseError(f"both '{key}' and '{new}' (the same field; keep '{new}')",
                             where=where)
        out[new] = value
    return out


def kind(name: Any, where: str) -> Any:
    """A part-kind name (a preset file's ``kind:``) with an old name renamed."""
    return _new(name, KINDS, where)


def metric(name: str, where: str) -> str:
    """A metric that names an old check (``checks.am_capacity``, ``am_capacity_ok``) as the
    new check's."""
    for old, new in CHECKS.items():
        if name in (f"checks.{old}", f"{old}_ok"):
            _note(name, f"checks.{new}", where)
            return f"checks.{new}"
    return name


def path(dotted: str, where: str) -> str:
    """A dotted spec path (``am.arrays``) with an old kind name in front renamed."""
    head, dot, rest = dotted.partition(".")
    return _new(head, KINDS, where) + dot + rest


def spec(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A raw SystemSpec mapping with old kind names (sections, placement values) renamed;
    ``raw`` itself is left as it was."""
    if not isinstance(raw, dict) or not (set(raw) & set(KINDS) or _old_placement(raw)):
        return raw
    out = {}
    for key, value in raw.items():
        new = _new(key, KINDS, where or "system")
        if new != key and new in raw:
            raise RldseError(f"both '{key}' and '{new}' (the same part kind; keep '{new}')",
                             where=where)
        out[new] = value
    placement = out.get("placement")
    if isinstance(placement, dict):
        out["placement"] = {role: _new(kind, KINDS, f"{where or 'system'}.placement.{role}")
                            for role, kind in placement.items()}
    return out


def _old_placement(raw: dict[str, Any]) -> bool:
    placement = raw.get("placement")
    return isinstance(placement, dict) and any(
        isinstance(v, str) and v in KINDS for v in placement.values())


def study(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A raw study-file mapping with old names renamed: the inline base spec, the space's
    paths and its placement choices and conditions, and ``skip_checks``."""
    out = dict(raw)
    if isinstance(out.get("base"), dict):
        out["base"] = spec(out["base"], f"{where}: base")
    if isinstance(out.get("space"), dict):
        out["space"] = {path(key, f"{where}: space.{key}"): _range(key, rng, f"{where}: space")
                        for key, rng in out["space"].items()}
    if isinstance(out.get("skip_checks"), list):
        out["skip_checks"] = [_new(c, CHECKS, f"{where}: skip_checks")
                              for c in out["skip_checks"]]
    return out


def _range(key: str, rng: Any, where: str) -> Any:
    """A space range with old kind names renamed where they are values of a placement."""
    if not isinstance(rng, dict):
        return rng
    out = dict(rng)
    if key.startswith("placement.") and isinstance(out.get("choices"), list):
        out["choices"] = [_new(c, KINDS, f"{where}.{key}.choices") for c in out["choices"]]
    if isinstance(out.get("when"), dict):
        out["when"] = {path(p, f"{where}.{key}.when"): _when_value(p, v, f"{where}.{key}.when")
                       for p, v in out["when"].items()}
    return out


def _when_value(p: str, value: Any, where: str) -> Any:
    if not p.startswith("placement."):
        return value
    if isinstance(value, list):
        return [_new(v, KINDS, where) for v in value]
    return _new(value, KINDS, where)
