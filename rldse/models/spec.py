"""What every part spec shares: units on fields, provenance of numbers, one-line errors.

A part spec is a frozen pydantic model whose numeric fields carry their unit twice: in
the field name (``clock_mhz``) and in the field's metadata (``quantity("MHz", ...)``),
so the registry can check each preset number's declared unit against the field it
fills (ArchGym's implicit units once caused a 1,000x latency bug). Field constraints
(``gt``, ``ge``, ``le``) are the allowed ranges an error message quotes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import annotated_types as at
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator

from rldse.errors import RldseError, did_you_mean
from rldse.strict import UserModel

S = TypeVar("S", bound="PartSpec")


class PartSpec(UserModel):
    """Base of every part spec: no unknown fields, no NaN or infinity, immutable."""

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    name: str = Field(default="custom", description="preset the spec came from, or 'custom'")


def quantity(unit: str, description: str, **constraints: Any) -> Any:
    """A spec field with its unit in metadata; ``constraints`` are pydantic's gt/ge/lt/le."""
    return Field(description=description, json_schema_extra={"unit": unit}, **constraints)


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


def validation_message(exc: ValidationError, model: type[BaseModel], where: str,
                       index: int = 0) -> RldseError:
    """One error (the first by default) of a pydantic ValidationError as one RldseError
    whose path is the field's; the message quotes the field's unit-aware bounds."""
    err = exc.errors()[index]
    loc = [str(p) for p in err["loc"] if p != "[key]"]  # a bad mapping key: name the key
    path = ".".join([where, *loc]) if loc else where
    kind, value = err["type"], err.get("input")
    field = loc[0] if loc else ""
    if kind == "extra_forbidden":
        allowed = [f for f in model.model_fields if f != "name"]
        return RldseError(f"unknown field{close_names(field, allowed)} "
                          f"(allowed: {', '.join(allowed)})", where=path)
    if kind == "missing":
        return RldseError("required field is missing", where=path)
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal",
                "finite_number"):
        what = "is out of range" if kind != "finite_number" else "is not a finite number"
        # a top-level field quotes all its bounds; an entry of a mapping field, the one broken
        bounds = model.model_fields[field].metadata if len(loc) == 1 else []
        rng = _range_text(loc[-1], [*bounds, *_ctx_bounds(err.get("ctx"))])
        return RldseError(f"{value!r} {what} (allowed: {rng})", where=path)
    if kind == "value_error":  # our own cross-field checks: the message says it all
        return RldseError(f"{str(err['ctx']['error'])} (got {value!r})", where=path)
    return RldseError(f"{err['msg']} (got {value!r})", where=path)


def build(model: type[S], values: Mapping[str, Any], where: str) -> S:
    """Validate ``values`` into ``model``; every problem at once becomes a one-line
    RldseError (one field's error keeps its path as ``where``)."""
    try:
        return model.model_validate(dict(values))
    except ValidationError as exc:
        errors = [validation_message(exc, model, where, i) for i in range(exc.error_count())]
        if len(errors) == 1:
            raise errors[0] from None
        raise RldseError("; ".join(map(str, errors))) from None


def idle_at_most(idle: str, active: str) -> Any:
    """A field validator for ``idle``: a part's idle power cannot exceed its full-load
    power ``active`` (a field declared before it). Every spec with both uses this one."""

    def check(value: float, info: ValidationInfo) -> float:
        top = info.data.get(active)
        if top is not None and value > top:
            raise ValueError(f"{idle} must not exceed {active} ({top:g} W)")
        return value

    return field_validator(idle)(check)
