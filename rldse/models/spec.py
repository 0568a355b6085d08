"""What every part spec shares: units on fields, provenance of numbers, one-line errors.

A part spec is a frozen pydantic model whose numeric fields carry their unit twice: in
the field name (``clock_mhz``) and in the field's metadata (``quantity("MHz", ...)``),
so the registry can check each preset number's declared unit against the field it
fills (ArchGym's implicit units once caused a 1,000x latency bug). Field constraints
(``gt``, ``ge``, ``le``) are the allowed ranges an error message quotes.

A number field also has a *plausible* range for its unit (``quantity(..., plausible=(lo,
hi))``): what a real part of its kind can have, wider than the spread of the shipped
presets (the test of the presets checks every value and every sweep range lies inside).
A value outside it is refused with the unit slip that would explain it ("clock_mhz 3.4:
did you mean 3400 (3.4 GHz)?"); a zero passes wherever the field's bounds allow one (it
means "none", never a slip). A spec with ``hypothetical: true`` is a part that does not
exist: its numbers need only be allowed, not plausible, and may exceed its preset's SKU
(``SKU_LIMITS``, checked where presets are loaded).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar, TypeVar

import annotated_types as at
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError

from rldse.errors import did_you_mean, validation_errors
from rldse.strict import UserModel

S = TypeVar("S", bound="PartSpec")


class PartSpec(UserModel):
    """Base of every part spec: no unknown fields, no NaN or infinity, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(default="custom", description="preset the spec came from, or 'custom'")
    hypothetical: bool = Field(
        default=False,
        description="a part that does not exist: accept numbers outside the plausible "
        "ranges and beyond the preset's SKU (more cores than it has)")
    #: fields whose preset value is the most the named SKU has (a smaller SKU of the same
    #: part may have fewer; more needs ``hypothetical: true``)
    SKU_LIMITS: ClassVar[tuple[str, ...]] = ()

    @field_validator("*", mode="after")
    @classmethod
    def _plausible(cls, value: Any, info: ValidationInfo) -> Any:
        if info.data.get("hypothetical") or info.field_name not in cls.model_fields:
            return value
        field = info.field_name
        bounds = plausible_range(cls, field)
        if bounds is None or isinstance(value, bool) or not isinstance(value, int | float):
            return value
        lo, hi = bounds
        if lo <= value <= hi or value == 0 and _allows_zero(cls, field):
            return value
        unit = unit_of(cls, field)
        raise PydanticCustomError("implausible", implausible_message(value, unit, lo, hi))


def quantity(unit: str, description: str, plausible: tuple[float, float] | None = None,
             **constraints: Any) -> Any:
    """A spec field with its unit in metadata; ``plausible`` is (low, high), what a real
    part can have (a value outside is refused as a likely unit slip); ``constraints`` are
    pydantic's gt/ge/lt/le, what the model can compute with."""
    extra: dict[str, Any] = {"unit": unit}
    if plausible is not None:
        extra["plausible"] = [float(plausible[0]), float(plausible[1])]
    return Field(description=description, json_schema_extra=extra, **constraints)


def spec_fields(model: type[BaseModel]) -> list[str]:
    """The fields a user may set on a part: its numbers and texts in order, then the
    ``hypothetical`` flag (what an 'allowed:' list quotes)."""
    return [f for f in model.model_fields if f not in ("name", "hypothetical")] + \
        (["hypothetical"] if "hypothetical" in model.model_fields else [])


def plausible_range(model: type[BaseModel], field: str) -> tuple[float, float] | None:
    """A field's plausible (low, high), None where it declares none."""
    extra = model.model_fields[field].json_schema_extra
    rng = extra.get("plausible") if isinstance(extra, dict) else None
    return (float(rng[0]), float(rng[1])) if isinstance(rng, list) else None


def _allows_zero(model: type[BaseModel], field: str) -> bool:
    bounds = model.model_fields[field].metadata
    return not any(isinstance(b, at.Gt) and b.gt >= 0 or isinstance(b, at.Ge) and b.ge > 0
                   for b in bounds)


#: unit -> (factor, what the user likely typed): value × factor is the number in the
#: field's unit had the user written it in that other unit (3.4 "GHz" × 1000 = 3400 MHz)
UNIT_SLIPS: dict[str, tuple[tuple[float, str], ...]] = {
    "MHz": ((1e3, "GHz"), (1e-3, "kHz"), (1e-6, "Hz")),
    "GB/s": ((1e3, "TB/s"), (1e-3, "MB/s"), (0.125, "Gb/s")),
    "Gb/s": ((1e-3, "Mb/s"), (8.0, "GB/s")),
    "W": ((1e-3, "mW"), (1e3, "kW")),
    "ns": ((1e3, "µs"), (1e-3, "ps"), (1e6, "ms")),
    "s": ((1e-6, "µs"), (1e-3, "ms"), (1e-9, "ns")),
    "B": ((2.0**30, "GiB"), (2.0**20, "MiB"), (2.0**40, "TiB"), (2.0**10, "KiB")),
    "KiB": ((2.0**-10, "B"), (2.0**10, "MiB")),
    "USD": ((1e3, "thousand USD"),),
    "TFLOP/s": ((1e-3, "GFLOP/s"), (1e3, "PFLOP/s")),
    "TOP/s": ((1e-3, "GOP/s"),),
    "pJ": ((1e3, "nJ"), (1e-3, "fJ")),
    "pJ/bit": ((1e3, "nJ/bit"),),
}


def implausible_message(value: float, unit: str, lo: float, hi: float) -> str:
    """'3.4 MHz is not plausible (300 to 7000 MHz): did you mean 3400 (3.4 GHz)?'"""
    rng = f"{lo:g} to {hi:g} {unit}".rstrip()
    msg = f"{value:g} {unit} is not plausible ({rng})".replace("  ", " ")
    for factor, typed in UNIT_SLIPS.get(unit, ()):
        meant = value * factor
        if lo <= meant <= hi:
            shown = f"{meant:.0f}" if float(meant).is_integer() else f"{meant:g}"
            return f"{msg}: did you mean {shown} ({value:g} {typed})?"
    return f"{msg}; set hypothetical: true for a part that does not exist"


def unit_of(model: type[BaseModel], field: str) -> str:
    """The unit a field declares ('' for text and flags)."""
    extra = model.model_fields[field].json_schema_extra
    return str(extra.get("unit", "")) if isinstance(extra, dict) else ""


@dataclass(frozen=True)
class Param:
    """One preset number with its provenance: the value, its unit, where it comes from,
    and, for uncertain values (UNVERIFIED or assumed), the low-high range a study sweeps."""

    value: Any
    unit: str
    source: str
    range: tuple[float, float] | None = None


def allowed_range(model: type[BaseModel], field: str) -> str:
    """'1 ≤ tasklets ≤ 24', from a field's constraints."""
    return _range_text(field, model.model_fields[field].metadata)


def _range_text(label: str, bounds: list[Any]) -> str:
    lo = hi = ""
    for b in bounds:
        if isinstance(b, at.Gt):
            lo = f"{b.gt:g} < "
        elif isinstance(b, at.Ge):
            lo = f"{b.ge:g} ≤ "
        elif isinstance(b, at.Lt):
            hi = f" < {b.lt:g}"
        elif isinstance(b, at.Le):
            hi = f" ≤ {b.le:g}"
    return f"{lo}{label}{hi}" if lo or hi else "a finite number"


def _ctx_bounds(ctx: Mapping[str, Any] | None) -> list[Any]:
    kinds = {"gt": at.Gt, "ge": at.Ge, "lt": at.Lt, "le": at.Le}
    return [kinds[k](v) for k, v in (ctx or {}).items() if k in kinds]


close_names = did_you_mean  # the one 'did you mean' (rldse.errors)


def _bounds_text(model: type[BaseModel]) -> Callable[[list[str | int], dict], str]:
    """A field's allowed range in words, for rldse.errors.validation_error: a top-level
    field quotes all its bounds; an entry of a mapping field, the one broken."""
    def text(loc: list[str | int], ctx: dict) -> str:
        bounds = model.model_fields[str(loc[0])].metadata if len(loc) == 1 else []
        return _range_text(str(loc[-1]) if loc else "", [*bounds, *_ctx_bounds(ctx)])
    return text


def build(model: type[S], values: Mapping[str, Any], where: str) -> S:
    """Validate ``values`` into ``model``; every problem at once becomes a one-line
    RldseError (one field's error keeps its path as ``where``)."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        raise validation_errors(exc, where, fields=spec_fields(model),
                                range_text=_bounds_text(model)) from None


def idle_at_most(idle: str, active: str) -> Any:
    """A field validator for ``idle``: a part's idle power cannot exceed its full-load
    power ``active`` (a field declared before it). Every spec with both uses this one."""

    def check(value: float, info: ValidationInfo) -> float:
        top = info.data.get(active)
        if top is not None and value > top:
            raise ValueError(f"{idle} must not exceed {active} ({top:g} W)")
        return value

    return field_validator(idle)(check)
