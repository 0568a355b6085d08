"""Reading the YAML files users write (system specs, study files, study parameters), with
the one-line errors rldse promises: the file, the line, and what was expected."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from rldse.errors import RldseError

#: libyaml's loader where PyYAML was built with it (about 10x faster on the presets), else
#: the pure-Python one; both build the same safe types and mark errors with their line.
SAFE_LOADER: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def load_yaml(text: str) -> Any:
    """``yaml.safe_load`` with the fastest safe loader available."""
    return yaml.load(text, Loader=SAFE_LOADER)  # noqa: S506 (a safe loader)


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
        mark = getattr(exc, "problem_mark", None)
        line = f"line {mark.line + 1}: " if mark else ""
        raise RldseError(f"{path}: {line}not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise RldseError(f"{path}: expected a mapping ({expected})")
    return raw
