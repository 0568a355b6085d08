"""Presets by name: load, validate, list and show the parts in ``presets/*.yaml``.

Each kind of part has one YAML file (``presets/<kind>.yaml``): ``defaults`` shared by its
presets, then ``presets`` by name. Every number is ``{value, unit, source, range?}``; the
unit must equal the unit its spec field declares, and a ``range`` marks an uncertain
number (UNVERIFIED or assumed) that a study may sweep. Adding a part is adding an entry.
The CPU preset ``host`` is built from a trace's host fingerprint instead.

User preset directories add to the packaged presets: every ``*.yaml`` file in them has the
same form as a packaged kind file (``kind:``, optional ``defaults:``, ``presets:`` by name,
and an optional free-form ``provenance:`` block, which ``rldse calibrate`` writes), and is
grouped by its ``kind``. A user preset starts from the packaged kind's defaults, or with
``base: NAME`` from another preset of its kind (packaged, or in any user file): then a
field it changes may be a plain value, in the base field's unit (``mem_bw_gbs: 4000``),
and ``rldse parts show`` says which values came from the base. Every bad or missing field
of a file is reported at once, each naming the file and the field. A name
that is already a preset (packaged or in another user file) is an error naming both
files, never an override. The directories are one explicit setting:
``use_preset_dirs([...])`` (the CLI's ``--presets``; a study file's ``presets:`` adds
to them) plus ``RLDSE_PRESETS``
(os.pathsep-separated); ``preset_dirs()`` says which are active.

The engine's entry points: ``load_part(kind, name, **overrides)`` for a validated spec,
``make_model(spec)`` for its cost model. The CLI's: ``list_presets()``, ``show_preset()``.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from rldse.errors import RldseError
from rldse.host import HostFingerprint, measure
from rldse.models import renamed
from rldse.models.cpu import CpuSpec
from rldse.models.cpu.host_preset import (
    DATASHEET_FIELDS,
    PRICE_FIELDS,
    TDP_FIELDS,
    datasheet_split,
    host_params,
)
from rldse.models.kinds import PART_KINDS, ModelContext
from rldse.models.spec import (
    Param,
    PartSpec,
    build,
    close_names,
    plausible_range,
    spec_fields,
    unit_of,
)
from rldse.yamlfile import load_yaml, read_mapping

if TYPE_CHECKING:
    import pandas as pd

HOST = "host"
_HOST_DESCRIPTION = "the capture host, built from a trace's host fingerprint"
_PARAM_KEYS = {"value", "unit", "source", "range"}
#: Environment variable naming user preset directories (os.pathsep-separated).
PRESETS_ENV = "RLDSE_PRESETS"
_FILE_KEYS = ("kind", "defaults", "presets", "provenance")
_NO = Param(False, "", "")  # an unset flag


@dataclass(frozen=True)
class Preset:
    """A named part: every number of its spec with unit, source and optional range."""

    kind: str
    name: str
    description: str
    params: dict[str, Param]
    origin: str = ""  # the file it was read from ("" for a packaged preset)
    provenance: dict[str, Any] | None = None  # a user file's `provenance:` block
    #: with a ``base:``, field -> the preset its value comes from ("base NAME"); fields
    #: the preset sets itself are absent. None: no base
    inherited: dict[str, str] | None = None

    def spec(self, where: str | None = None, **overrides: Any) -> PartSpec:
        """The validated spec, with ``overrides`` (field → value) applied."""
        return self._spec(where, overrides, _presets_of)

    def _spec(self, where: str | None, overrides: dict[str, Any],
              presets_of: Callable[[str], dict[str, Preset]]) -> PartSpec:
        """``spec``, with the presets a field may name looked up in ``presets_of(kind)``
        (while files are read: the presets read so far, not the registry's)."""
        where = where or self.kind
        model = PART_KINDS[self.kind].spec
        fields = spec_fields(model)
        for key in overrides:
            if key not in fields:
                raise RldseError(f"unknown field{close_names(key, fields)} "
                                 f"(allowed: {', '.join(fields)})", where=f"{where}.{key}")
        if not overrides.get("hypothetical", self.params.get("hypothetical", _NO).value):
            self._check_sku(model, overrides, where)
        values: dict[str, Any] = {k: p.value for k, p in self.params.items()}
        for key, new in overrides.items():
            old = values.get(key)
            values[key] = {**old, **new} if isinstance(old, dict) and isinstance(new, dict) else new
        spec = build(model, {**values, "name": self.name}, where)
        for field, kind in PART_KINDS[self.kind].preset_refs.items():
            named, presets = getattr(spec, field), presets_of(kind)
            if named not in presets:
                raise RldseError(f"unknown {kind} preset '{named}'"
                                 f"{close_names(named, list(presets))} "
                                 f"(allowed: {', '.join(presets)})", where=f"{where}.{field}")
        return spec

    def _check_sku(self, model: type[PartSpec], overrides: dict[str, Any], where: str) -> None:
        """Refuse more of a SKU-limited field (CpuSpec.SKU_LIMITS) than the preset's SKU
        has, naming the likely slip (the thread count, several sockets)."""
        if self.name == HOST:  # the capture host's logical CPUs name no SKU
            return
        for field in model.SKU_LIMITS:
            top, new = self.params.get(field), overrides.get(field)
            if top is None or not isinstance(new, int | float) or isinstance(new, bool) \
                    or not isinstance(top.value, int | float) or new <= top.value:
                continue
            msg = f"{new:g} exceeds the {top.value:g} {field} of {self.name}'s SKU"
            threads = self.params.get("threads_per_core")
            slips = []
            if field == "cores" and threads is not None and new == top.value * threads.value:
                slips.append(f"{new:g} is its hardware threads ({top.value:g} cores × "
                             f"{threads.value:g}; cores counts physical cores per socket)")
            if field == "cores" and new % top.value == 0 and new // top.value <= 8:
                slips.append(f"did you mean sockets: {new // top.value:g} "
                             f"({new // top.value:g} × {top.value:g} cores)?")
            hint = "; ".join(slips) or "a smaller SKU may have fewer, none has more"
            raise RldseError(f"{msg}: {hint} (hypothetical: true for a part that does not "
                             "exist)", where=f"{where}.{field}")

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


def make_model(spec: PartSpec, *, capture_host: HostFingerprint | CpuSpec | None = None,
               busy_cores: int | None = None) -> Any:
    """The cost model of a spec, built by its registered kind. A CPU needs the capture
    host (fingerprint or spec) it scales measured times from; its cores run at the clock
    ``busy_cores`` busy cores allow (None: the all-core clock)."""
    kind = next((k for k in PART_KINDS.values() if type(spec) is k.spec), None)
    if kind is None:
        raise TypeError(f"{type(spec).__name__} is not the spec of a registered part kind")
    host_spec = cpu_from_host(capture_host) if isinstance(capture_host, HostFingerprint) \
        else capture_host
    context = ModelContext(capture_host=host_spec,
                           load=lambda k, n, where: load_part(k, n, where=where),
                           busy_cores=busy_cores)
    return kind.model(spec, context)


#: The columns of ``preset_rows()`` and ``list_presets()``.
PRESET_COLUMNS = ("kind", "name", "description", "price_usd", "file")


def preset_rows() -> list[tuple[str, str, str, float, str]]:
    """Every preset: kind, name, description, price in USD (NaN where none) and the file
    a user preset came from ('' for packaged ones); plain tuples, so that `rldse parts`
    prints them without loading pandas."""
    rows = []
    for kind in _preset_kinds():
        for preset in _presets_of(kind).values():
            price = getattr(preset.spec(), "price_usd", float("nan"))
            rows.append((kind, preset.name, preset.description, price, preset.origin))
        if kind == "cpu":
            rows.append(("cpu", HOST, _HOST_DESCRIPTION, float("nan"), ""))
    return rows


def list_presets() -> pd.DataFrame:
    """``preset_rows()`` as a table."""
    import pandas as pd

    return pd.DataFrame(preset_rows(), columns=list(PRESET_COLUMNS))


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
    came = preset.inherited
    rows = [(field, _fmt(p.value), p.unit, _fmt_range(p.range),
             *((came.get(field, "this preset"),) if came is not None else ()), p.source)
            for field in type(spec).model_fields if (p := preset.params.get(field))]
    price = getattr(spec, "price_usd", None)
    if price is not None and "price_usd" not in preset.params:
        rows.append(("price_usd (total)", _fmt(price), "USD", "",
                     *(("derived",) if came is not None else ()), "derived: unit price × count"))
    head = f"{preset.name} ({preset.kind}): {preset.description}{note}"
    if preset.origin:
        head += f"\nfrom {preset.origin}"
    header = ("field", "value", "unit", "sweep range",
              *(("from",) if came is not None else ()), "source")
    return f"{head}\n{text_table(header, rows, _MAX_WIDTH)}"


# ---- loading ---------------------------------------------------------------------------

_explicit_dirs: tuple[Path, ...] = ()


def use_preset_dirs(dirs: Iterable[str | Path]) -> tuple[Path, ...]:
    """Make ``dirs`` the user preset directories (besides RLDSE_PRESETS's); returns the
    previous setting so a caller can restore it. The one switch that changes which
    presets exist: the CLI sets it from ``--presets`` for the length of a command."""
    global _explicit_dirs
    previous, _explicit_dirs = _explicit_dirs, tuple(Path(d) for d in dirs)
    return previous


def add_preset_dirs(dirs: Iterable[str | Path]) -> None:
    """Add ``dirs`` to the explicit user preset directories (a study file's ``presets:``);
    whoever set the current ones with use_preset_dirs restores them, these included."""
    use_preset_dirs([*_explicit_dirs, *(Path(d) for d in dirs)])


def preset_dirs() -> tuple[Path, ...]:
    """The active user preset directories: RLDSE_PRESETS's, then use_preset_dirs'."""
    env = [Path(p) for p in os.environ.get(PRESETS_ENV, "").split(os.pathsep) if p]
    return tuple(dict.fromkeys([*env, *_explicit_dirs]))


def packaged_file(kind: str) -> str:
    """Where a kind's packaged presets live (for messages)."""
    return str(resources.files("rldse.models").joinpath(f"presets/{kind}.yaml"))


@cache
def _read_kind(kind: str) -> tuple[dict[str, Param], dict[str, Preset]]:
    """(defaults, presets by name) of one kind's packaged file; validated here, once."""
    where = f"presets/{kind}.yaml"
    text = resources.files("rldse.models").joinpath(where).read_text(encoding="utf-8")
    defaults, presets = _parse_kind(kind, load_yaml(text), where, {}, "")
    for name, preset in presets.items():  # packaged presets name packaged presets only
        preset._spec(f"{where}: {name}", {}, lambda k: _read_kind(k)[1])
    return defaults, presets


def _parse_kind(kind: str, doc: dict[str, Any], where: str, base: dict[str, Param],
                origin: str, known: Callable[[str], Preset | None] = lambda name: None,
                problems: list[str] | None = None,
                ) -> tuple[dict[str, Param], dict[str, Preset]]:
    """(defaults, presets) of one kind file's mapping, each number checked, the specs not
    yet (the presets they name may come later); ``base`` are defaults the file's own
    extend (a user file: the packaged kind's); ``known(name)`` finds a ``base:`` preset
    outside this file. Every problem of the file is reported at once: raised, or added to
    ``problems`` (and the presets without one returned)."""
    model = PART_KINDS[kind].spec
    raw_defaults = doc.get("defaults") or {}
    if not isinstance(raw_defaults, dict):
        raise RldseError(f"{where}: defaults: expected a mapping of fields")
    collect = problems is not None
    problems = problems if problems is not None else []
    first = len(problems)
    defaults = {**base, **_params(model, raw_defaults, f"{where}: defaults", None, problems)}
    entries = doc.get("presets")
    if not isinstance(entries, dict) or not entries:
        raise RldseError(f"{where}: presets: expected a mapping of preset names to fields")
    provenance = doc.get("provenance")
    presets: dict[str, Preset] = {}
    for name, entry in entries.items():
        if not isinstance(name, str) or not name or name == HOST:
            problems.append(f"{where}: presets: {name!r} is not a usable preset name"
                            + (" ('host' is built from a trace)" if name == HOST else ""))
            continue
        if not isinstance(entry, dict):
            problems.append(f"{where}: {name}: expected a mapping of fields")
            continue
        entry = dict(entry)
        description = str(entry.pop("description", ""))
        parent_name = entry.pop("base", None)
        parent = None
        if parent_name is not None:
            parent = presets.get(str(parent_name)) or known(str(parent_name))
            if parent is None:
                problems.append(f"{where}: {name}.base: unknown {kind} preset "
                                f"'{parent_name}' (its base must be a {kind} preset)")
                continue
        sheet = {f: entry.pop(f) for f in DATASHEET_FIELDS if kind == "cpu" and f in entry}
        own = _params(model, entry, f"{where}: {name}", parent, problems)  # the good ones:
        # its spec is still checked, so a file's bad values show in the same message
        start = parent.params if parent is not None else defaults
        if sheet:
            own.update(_from_datasheet(sheet, own, start, f"{where}: {name}", parent, problems))
        came = None if parent is None else {  # the base's own inheritance carried along
            f: (parent.inherited or {}).get(f, f"base {parent_name}")
            for f in parent.params if f not in own}
        presets[name] = Preset(  # a base's description (and what it says was checked)
            kind, name, description or (f"a user preset based on {parent_name}, not "  # stays
                                        "checked itself" if parent is not None else ""),
            {**start, **own}, origin, provenance if isinstance(provenance, dict) else None,
            came)
    if len(problems) > first and not collect:
        raise RldseError("; ".join(problems[first:]))
    return defaults, presets


def _from_datasheet(sheet: dict[str, Any], own: dict[str, Param], start: dict[str, Param],
                    where: str, parent: Preset | None, problems: list[str]) -> dict[str, Param]:
    """A CPU preset's power and price fields from the ``tdp_w`` and ``list_price_usd`` it
    writes (rldse.models.cpu.host_preset.datasheet_split), at its cores (its own or its
    base's); a problem is added to ``problems``."""
    read: dict[str, Param] = {}
    for field, unit in DATASHEET_FIELDS.items():
        if field not in sheet:
            continue
        raw, at = sheet[field], f"{where}.{field}"
        if isinstance(raw, dict) and {"value", "unit", "source"} <= raw.keys() <= _PARAM_KEYS \
                or parent is not None:
            value = raw.get("value") if isinstance(raw, dict) else raw
            if isinstance(raw, dict) and raw.get("unit", unit) != unit:
                problems.append(f"{at}: unit '{raw['unit']}' differs from the field's unit "
                                f"'{unit}'")
                continue
            source = raw.get("source") if isinstance(raw, dict) else None
            if isinstance(value, bool) or not isinstance(value, int | float) or value <= 0:
                problems.append(f"{at}: expected a positive number (got {value!r})")
                continue
            read[field] = Param(value, unit, str(source or f"{where.split(': ')[0]}: set "
                                                 f"over base {getattr(parent, 'name', '')}"))
        else:
            problems.append(f"{at}: expected {{value, unit, source}} (or a plain value, "
                            "under a `base:` preset)")
    split = {"tdp_w": TDP_FIELDS, "list_price_usd": PRICE_FIELDS}
    both = [f for d in read for f in split[d] if f in own]
    if both:
        given = "tdp_w" if both[0] in TDP_FIELDS else "list_price_usd"
        problems.append(f"{where}: {both[0]}: write {given} or the fields it splits into, "
                        "not both")
        return {}
    cores = own.get("cores") or start.get("cores")
    if not read or cores is None or not isinstance(cores.value, int) or cores.value < 1:
        if read:
            problems.append(f"{where}: tdp_w and list_price_usd are split per core: set cores")
        return {}
    return datasheet_split(cores.value, read.get("tdp_w"), read.get("list_price_usd"))


def _params(model: type[PartSpec], raw: dict[str, Any], where: str, parent: Preset | None,
            problems: list[str]) -> dict[str, Param]:
    """The fields of one mapping as Params; a problem is added to ``problems``, not raised,
    so that a file's every problem is reported at once."""
    out = {}
    for field, value in raw.items():
        try:
            out[field] = _param(model, field, value, f"{where}.{field}", parent)
        except RldseError as exc:
            problems.append(str(exc))
    return out


def _user_presets() -> dict[str, dict[str, Preset]]:
    """User presets by kind, from every *.yaml file in the active directories (re-read
    when a file is added, removed or changed)."""
    dirs = preset_dirs()
    if not dirs:
        return {}
    files = []
    for d in dirs:
        if not d.is_dir():
            raise RldseError(f"preset directory {d}: no such directory "
                             f"(from --presets or {PRESETS_ENV})")
        files += sorted(p for p in d.iterdir() if p.suffix in (".yaml", ".yml") and p.is_file())
    # keyed by content, not mtime: two writes within a clock tick must not look alike
    stamp = tuple((str(p), hashlib.sha1(p.read_bytes()).hexdigest()) for p in files)
    return _read_user_files(stamp)


@lru_cache(maxsize=16)
def _read_user_files(stamp: tuple[tuple[str, str], ...]) -> dict[str, dict[str, Preset]]:
    kinds = _preset_kinds()
    seen: dict[str, str] = {n: packaged_file(k) for k in kinds for n in _read_kind(k)[1]}
    out: dict[str, dict[str, Preset]] = {}
    problems: list[str] = []  # every file's, reported together
    for path, _ in stamp:
        doc = read_mapping(path, "kind, defaults, presets, provenance")
        unknown = [k for k in doc if k not in _FILE_KEYS]
        if unknown:
            raise RldseError(f"{path}: {unknown[0]}: unknown key{close_names(str(unknown[0]), list(_FILE_KEYS))}"
                             f" (allowed: {', '.join(_FILE_KEYS)})")
        kind = renamed.kind(doc.get("kind"), f"{path}: kind")
        if kind not in kinds:
            got = "required" if kind is None else f"unknown part kind {kind!r}" \
                f"{close_names(str(kind), kinds)}"
            raise RldseError(f"{path}: kind: {got} (one of: {', '.join(kinds)})")
        def known(name: str, kind: str = kind) -> Preset | None:
            return {**_read_kind(kind)[1], **out.get(kind, {})}.get(name)

        _, presets = _parse_kind(kind, doc, path, _read_kind(kind)[0], path, known, problems)
        for name, preset in presets.items():
            if name in seen:
                raise RldseError(f"{path}: preset '{name}' is already defined in {seen[name]} "
                                 "(rename one: presets never override each other)")
            seen[name] = path
            out.setdefault(kind, {})[name] = preset
    for presets in out.values():
        for name, preset in presets.items():
            try:
                preset._spec(f"{preset.origin}: {name}", {},
                             lambda k: {**_read_kind(k)[1], **out.get(k, {})})
            except RldseError as exc:
                problems.append(str(exc))
    if problems:
        raise RldseError("; ".join(problems))
    return out


def _presets_of(kind: str) -> dict[str, Preset]:
    if not PART_KINDS[kind].presets:
        return {}
    user = _user_presets().get(kind)
    return {**_read_kind(kind)[1], **user} if user else _read_kind(kind)[1]


def preset_names() -> dict[str, str]:
    """Every preset name (packaged and user, plus 'host') and its kind."""
    out = {n: k for k in _preset_kinds() for n in _presets_of(k)}
    out[HOST] = "cpu"
    return out


def _preset_kinds() -> list[str]:
    return [k.name for k in PART_KINDS.values() if k.presets]


def _param(model: type[PartSpec], field: str, raw: Any, where: str,
           parent: Preset | None = None) -> Param:
    """One field: ``{value, unit, source, range?}``; under a ``base:`` also a plain value in
    the base field's unit, or ``{value, range?}`` (unit and source optional): a plain value
    keeps the base's range relative to its value (the base's 247-248 W around 248 W
    becomes 297-298 W around 298 W), ``range: [low, high]`` replaces it, ``range: null``
    drops it (a number the user knows)."""
    if field not in model.model_fields or field in ("name", "hypothetical"):
        raise RldseError(f"{where}: unknown field{close_names(field, spec_fields(model))}")
    written = isinstance(raw, dict) and "value" in raw and raw.keys() <= _PARAM_KEYS
    if parent is not None and (written or not isinstance(raw, dict)
                               or not raw.keys() & _PARAM_KEYS):  # a mapping value is plain
        inherited = parent.params.get(field)
        unit = inherited.unit if inherited is not None else unit_of(model, field)
        if written and raw.get("unit", unit) != unit:
            raise RldseError(f"{where}: unit '{raw['unit']}' differs from the field's unit "
                             f"'{unit}'")
        value = raw["value"] if written else raw
        source = str(raw.get("source", "")) if written else ""
        source = source or f"{where.split(': ')[0]}: set over base {parent.name}"
        if written and "range" in raw:
            rng = _range_of(raw["range"], value, where)
        else:
            rng = _relative_range(model, field, inherited, value)
            if rng is not None:
                source += f" (the base's range kept relative to its {inherited.value:g})"
        return Param(value, unit, source, rng)
    if not isinstance(raw, dict) or not {"value", "unit", "source"} <= raw.keys() \
            or not raw.keys() <= _PARAM_KEYS:
        hint = " (or a plain value, under a `base:` preset)" if parent is None else ""
        raise RldseError(f"{where}: expected {{value, unit, source, range?}}{hint}")
    if raw["unit"] != unit_of(model, field):
        raise RldseError(f"{where}: unit '{raw['unit']}' differs from the field's unit "
                         f"'{unit_of(model, field)}'")
    return Param(raw["value"], raw["unit"], str(raw["source"]),
                 _range_of(raw.get("range"), raw["value"], where))


def _range_of(rng: Any, value: Any, where: str) -> tuple[float, float] | None:
    """A written ``range: [low, high]`` around ``value`` (None: no range)."""
    if rng is None:
        return None
    try:
        lo, hi = (float(x) for x in rng)
        number = float(value)
    except (TypeError, ValueError):
        raise RldseError(f"{where}: range: expected [low, high] around a number") from None
    if not lo <= number <= hi:
        raise RldseError(f"{where}: value {value} lies outside its range [{lo}, {hi}]")
    return lo, hi


def _relative_range(model: type[PartSpec], field: str, inherited: Param | None,
                    value: Any) -> tuple[float, float] | None:
    """The base's range scaled to a new value (same ratios to the value), inside the
    field's plausible range; None where the base has none, or is not a nonzero number."""
    if inherited is None or inherited.range is None or isinstance(value, bool) \
            or not isinstance(value, int | float) or not isinstance(inherited.value, int | float) \
            or inherited.value == 0:
        return None
    lo, hi = (value * (r / inherited.value) for r in inherited.range)
    lo, hi = min(lo, hi, value), max(lo, hi, value)
    bounds = plausible_range(model, field)
    if bounds is not None:
        lo, hi = max(lo, min(bounds[0], value)), min(hi, max(bounds[1], value))
    return lo, hi


# ---- formatting ------------------------------------------------------------------------

def _fmt(value: Any) -> str:
    if value is None:
        return "none"
    if isinstance(value, bool | str):
        return str(value)
    if isinstance(value, dict):
        return ", ".join(f"{k}={_fmt(v)}" for k, v in value.items())
    if isinstance(value, list | tuple) and len(value) > 8:  # a measured curve: its size
        return f"{len(value)} points"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_fmt(v) for v in value) + "]"
    if isinstance(value, int) and abs(value) >= 100_000:
        return f"{value:,}"
    return f"{value:.6g}"


def _fmt_range(rng: tuple[float, float] | None) -> str:
    return f"{_fmt(rng[0])} – {_fmt(rng[1])}" if rng else ""


#: Values longer than this (texts, per-phase tables) overflow their column, not widen it.
_MAX_WIDTH = 24


def text_table(header: tuple[str, ...], rows: list[tuple[str, ...]],
               max_width: int | None = None) -> str:
    """Plain-text columns two spaces apart, left-aligned; the last column unpadded, and
    cells longer than ``max_width`` overflow their column rather than widen it."""
    widths = [max(len(r[i]) for r in [header, *rows]
                  if max_width is None or len(r[i]) <= max_width)
              for i in range(len(header) - 1)]
    return "\n".join(("  ".join(c.ljust(w) for c, w in zip(r[:-1], widths, strict=True))
                      + "  " + r[-1]).rstrip() for r in [header, *rows])

