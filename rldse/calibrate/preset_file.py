"""Writing a calibrated preset: one user preset file, ``DIR/NAME.yaml``.

The file has the form of a packaged kind file (rldse/models/presets/<kind>.yaml), so the
preset library (rldse.models.presets) reads it like any other (``--presets DIR`` or ``RLDSE_PRESETS``):

    kind: gpu
    provenance: {tool: rldse calibrate gpu, date: ..., device: ..., measurements: {...}}
    presets:
      NAME:
        description: "..."
        dispatch_s: {value: 4.1e-06, unit: s, source: "measured: rldse calibrate gpu, ..."}
        ...

Every number is written, measured or not, so the file says on its own what the preset
stands for; numbers kept from the base preset keep their source and range.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from rldse.errors import RldseError
from rldse.files import atomic_write_text
from rldse.models import presets
from rldse.models.spec import Param


def today() -> str:
    """The calibration date, ISO 8601 (UTC)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


def plain(value: Any) -> Any:
    """numpy scalars, str subclasses and tuples as plain YAML-safe values."""
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, str):
        return str(value)  # str subclasses (torch's version) are no YAML type
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def param_entry(p: Param) -> dict[str, Any]:
    out: dict[str, Any] = {"value": plain(p.value), "unit": p.unit, "source": p.source}
    if p.range is not None:
        out["range"] = [plain(p.range[0]), plain(p.range[1])]
    return out


def check_name_free(name: str, out_dir: str | Path) -> None:
    """Fail before measuring when NAME is not a usable new preset name (re-calibrating
    into the file that defines it, DIR/NAME.yaml, replaces that file)."""
    if not name or any(c in name for c in "/\\:") or name.startswith("."):
        raise RldseError(f"--name {name!r}: expected a preset name (letters, digits, - _ .)")
    taken = presets.preset_names()
    own = Path(out_dir) / f"{name}.yaml"
    if name in taken and not (own.is_file() and _defined_in(name, own)):
        raise RldseError(f"--name {name}: already a {taken[name]} preset "
                         "(presets never override each other: pick another name)")


def preset_document(kind: str, name: str, description: str, params: dict[str, Param],
                    provenance: dict[str, Any]) -> dict[str, Any]:
    """The file's mapping, checked the way rldse.models.presets will read it."""
    entry: dict[str, Any] = {"description": description}
    entry.update({f: param_entry(p) for f, p in params.items()})
    doc = {"kind": kind, "provenance": plain(provenance), "presets": {name: entry}}
    where = f"calibrated preset {name}"
    _, parsed = presets._parse_kind(kind, doc, where, presets._read_kind(kind)[0], "")
    parsed[name].spec(where)
    return doc


def write_preset_file(out_dir: str | Path, name: str, doc: dict[str, Any]) -> Path:
    """Write DIR/NAME.yaml atomically (rldse.files); the CLI refuses an existing one
    without --force before measuring."""
    out = Path(out_dir)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise RldseError(f"-o {out}: cannot create the directory ({exc.strerror})") from None
    path = out / f"{name}.yaml"
    text = "# written by rldse calibrate; load with --presets DIR or RLDSE_PRESETS=DIR\n" \
        + yaml.safe_dump(doc, sort_keys=False, allow_unicode=True, width=100,
                                     default_flow_style=None)
    return atomic_write_text(path, text)


def _defined_in(name: str, path: Path) -> bool:
    kind = presets.preset_names()[name]
    origin = presets.get_preset(kind, name).origin
    return bool(origin) and Path(origin).resolve() == path.resolve()
