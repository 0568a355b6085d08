"""Presets by name: load, validate, list and show the parts in ``presets/*.yaml``.

Each kind of part has one YAML file (``presets/<kind>.yaml``): ``defaults`` shared by its
presets, then ``presets`` by name. Every number is ``{value, unit, source, range?}``; the
unit must equal the unit its spec field declares, and a ``range`` marks an uncertain
number (UNVERIFIED or assumed) that a study may sweep. Adding a part is adding an entry.
The CPU preset ``host`` is built from a trace's host fingerprint instead.

The engine's entry points: ``load_part(kind, name, **overrides)`` for a validated spec,
``make_model(spec)`` for its cost model. The CLI's: ``list_presets()``, ``show_preset()``.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources
from typing import Any, cast

import pandas as pd
import yaml

from rldse.errors import RldseError
from rldse.host import HostFingerprint, measure
from rldse.models.cpu import CpuSpec, host_params
from rldse.models.kinds import PART_KINDS, ModelContext
from rldse.models.spec import Param, PartSpec, build, close_names, unit_of

HOST = "host"
_HOST_DESCRIPTION = "the capture host, built from a trace's host fingerprint"
_PARAM_KEYS = {"value", "unit", "source", "range"}


@dataclass(frozen=True)
class Preset:
    """A named part: every number of its spec with unit, source and optional range."""

    kind: str
    name: str
    description: str
    params: dict[str, Param]

    def spec(self, where: str | None = None, **overrides: Any) -> PartSpec:
        """The validated spec, with ``overrides`` (field → value) applied."""
        where = where or self.kind
        model = PART_KINDS[self.kind].spec
        fields = [f for f in model.model_fields if f != "name"]
        for key in overrides:
            if key not in fields:
                raise RldseError(f"unknown field{close_names(key, fields)} "
                                 f"(allowed: {', '.join(fields)})", where=f"{where}.{key}")
        values: dict[str, Any] = {k: p.value for k, p in self.params.items()}
        for key, new in overrides.items():
            old = values.get(key)
            values[key] = {**old, **new} if isinstance(old, dict) and isinstance(new, dict) else new
        spec = build(model, {**values, "name": self.name}, where)
        for field, kind in PART_KINDS[self.kind].preset_refs.items():
            named, presets = getattr(spec, field), _presets_of(kind)
            if named not in presets:
                raise RldseError(f"unknown {kind} preset '{named}'"
                                 f"{close_names(named, list(presets))} "
                                 f"(allowed: {', '.join(presets)})", where=f"{where}.{field}")
        return spec

    def ranges(self) -> dict[str, tuple[float, float]]:
        """Field → (low, high) for every uncertain number: what a study may sweep."""
        return {k: p.range for k, p in self.params.items() if p.range is not None}


def load_part(kind: str, name: str, /, *, host: HostFingerprint | None = None,
              where: str | None = None, **overrides: Any) -> PartSpec:
    """The spec of preset ``name`` of ``kind`` with ``overrides`` applied.

    ``host`` is the trace's fingerprint, needed for the CPU preset 'host'; ``where`` is the
    path errors name (default: the kind, e.g. 'gpu.mem_bw_gbs').
    """
    return get_preset(kind, name, host=host).spec(where, **overrides)


def cpu_from_host(fp: HostFingerprint, **overrides: Any) -> CpuSpec:
    """The 'host' CPU: replaying a trace on it reproduces the measured times."""
    return cast(CpuSpec, load_part("cpu", HOST, host=fp, **overrides))


def get_preset(kind: str, name: str, *, host: HostFingerprint | None = None) -> Preset:
    """The preset ``name`` of ``kind``; unknown names fail with the closest ones."""
    PART_KINDS.lookup(kind, "")
    if kind == "cpu" and name == HOST:
        if host is None:
            raise RldseError("cpu preset 'host' is built from a trace's host fingerprint: "
                             "pass host=trace.meta.host")
        defaults = _read_kind("cpu")[0]
        return Preset("cpu", HOST, _HOST_DESCRIPTION, {**defaults, **host_params(host)})
    presets = _presets_of(kind)
    if name in presets:
        return presets[name]
    for other in _preset_kinds():
        if name in _presets_of(other):
            raise RldseError(f"'{name}' is a {other} preset, not a {kind} preset")
    names = [*presets, HOST] if kind == "cpu" else list(presets)
    raise RldseError(f"unknown {kind} preset '{name}'{close_names(name, names)} "
                     f"(presets: {', '.join(names)})")


def make_model(spec: PartSpec, *, host: HostFingerprint | CpuSpec | None = None) -> Any:
    """The cost model of a spec, built by its registered kind. A CPU needs the capture
    host (fingerprint or spec) it scales measured times from."""
    kind = next((k for k in PART_KINDS.values() if type(spec) is k.spec), None)
    if kind is None:
        raise TypeError(f"{type(spec).__name__} is not the spec of a registered part kind")
    host_spec = cpu_from_host(host) if isinstance(host, HostFingerprint) else host
    context = ModelContext(host=host_spec, load=lambda k, n, where: load_part(k, n, where=where))
    return kind.model(spec, context)


def list_presets() -> pd.DataFrame:
    """Every preset: kind, name, description and price in USD (NaN where none)."""
    rows = []
    for kind in _preset_kinds():
        for preset in _presets_of(kind).values():
            price = getattr(preset.spec(), "price_usd", float("nan"))
            rows.append((kind, preset.name, preset.description, price))
        if kind == "cpu":
            rows.append(("cpu", HOST, _HOST_DESCRIPTION, float("nan")))
    return pd.DataFrame(rows, columns=["kind", "name", "description", "price_usd"])


def show_preset(name: str, host: HostFingerprint | None = None) -> str:
    """Every number of preset ``name``: value, unit, sweep range and source, as a table.

    'host' is shown for ``host`` (a trace's fingerprint), or else for this machine,
    measured now (about 1 s).
    """
    if name == HOST:
        note = "" if host is not None else " (this machine, measured now)"
        preset = get_preset("cpu", HOST, host=host or measure())
    else:
        kind = next((k for k in _preset_kinds() if name in _presets_of(k)), None)
        if kind is None:
            everything = [n for k in _preset_kinds() for n in _presets_of(k)] + [HOST]
            raise RldseError(f"unknown preset '{name}'{close_names(name, everything)} "
                             f"(see `rldse parts`)")
        preset, note = get_preset(kind, name), ""
    spec = preset.spec()
    rows = [(field, _fmt(p.value), p.unit, _fmt_range(p.range), p.source)
            for field in type(spec).model_fields if (p := preset.params.get(field))]
    price = getattr(spec, "price_usd", None)
    if price is not None and "price_usd" not in preset.params:
        rows.append(("price_usd (total)", _fmt(price), "USD", "", "derived: unit price × count"))
    return f"{preset.name} ({preset.kind}): {preset.description}{note}\n{_table(rows)}"


# ---- loading ---------------------------------------------------------------------------

@cache
def _read_kind(kind: str) -> tuple[dict[str, Param], dict[str, Preset]]:
    """(defaults, presets by name) of one kind; each preset is validated here, once."""
    where = f"presets/{kind}.yaml"
    text = resources.files("rldse.models").joinpath(where).read_text(encoding="utf-8")
    doc = yaml.safe_load(text)
    model = PART_KINDS[kind].spec
    defaults = {f: _param(model, f, raw, f"{where}: defaults.{f}")
                for f, raw in (doc.get("defaults") or {}).items()}
    presets: dict[str, Preset] = {}
    for name, entry in doc["presets"].items():
        entry = dict(entry)
        description = str(entry.pop("description", ""))
        params = {f: _param(model, f, raw, f"{where}: {name}.{f}") for f, raw in entry.items()}
        preset = Preset(kind, name, description, {**defaults, **params})
        preset.spec(where=f"{where}: {name}")
        presets[name] = preset
    return defaults, presets


def _presets_of(kind: str) -> dict[str, Preset]:
    return _read_kind(kind)[1] if PART_KINDS[kind].presets else {}


def _preset_kinds() -> list[str]:
    return [k.name for k in PART_KINDS.values() if k.presets]


def _param(model: type[PartSpec], field: str, raw: Any, where: str) -> Param:
    if field not in model.model_fields or field == "name":
        raise RldseError(f"{where}: unknown field{close_names(field, list(model.model_fields))}")
    if not isinstance(raw, dict) or not {"value", "unit", "source"} <= raw.keys() \
            or not raw.keys() <= _PARAM_KEYS:
        raise RldseError(f"{where}: expected {{value, unit, source, range?}}")
    if raw["unit"] != unit_of(model, field):
        raise RldseError(f"{where}: unit '{raw['unit']}' differs from the field's unit "
                         f"'{unit_of(model, field)}'")
    rng = raw.get("range")
    if rng is not None:
        lo, hi = (float(x) for x in rng)
        if not lo <= float(raw["value"]) <= hi:
            raise RldseError(f"{where}: value {raw['value']} lies outside its range [{lo}, {hi}]")
        rng = (lo, hi)
    return Param(raw["value"], raw["unit"], str(raw["source"]), rng)


# ---- formatting ------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, int) and abs(value) >= 100_000:
        return f"{value:,}"
    return f"{value:.6g}"


def _fmt_range(rng: tuple[float, float] | None) -> str:
    return f"{_fmt(rng[0])} – {_fmt(rng[1])}" if rng else ""


#: Values longer than this (texts, per-phase tables) overflow their column, not widen it.
_MAX_WIDTH = 24


def _table(rows: list[tuple[str, ...]]) -> str:
    header = ("field", "value", "unit", "sweep range", "source")
    widths = [max(len(r[i]) for r in [header, *rows] if len(r[i]) <= _MAX_WIDTH)
              for i in range(4)]
    lines = []
    for r in [header, *rows]:
        lines.append("  ".join(c.ljust(w) for c, w in zip(r[:4], widths, strict=True))
                     + "  " + r[4])
    return "\n".join(lines)

