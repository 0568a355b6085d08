"""The base of every model that holds what a user writes (system specs, knobs, study
files, capture settings): a boolean is not a number.

Pydantic's lax mode takes YAML's `true` as 1 for an int or float field; strict mode would
also refuse `1e10` for an int (YAML reads it as a float), which users do write. So this
refuses exactly a bool given to a field whose type admits numbers but not booleans.
"""

from __future__ import annotations

import types
from typing import Annotated, Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel, ValidationInfo, field_validator


def _leaf_types(tp: Any) -> set[Any]:
    origin = get_origin(tp)
    if origin is Annotated:
        return _leaf_types(get_args(tp)[0])
    if origin in (Union, types.UnionType):
        return set().union(*(_leaf_types(a) for a in get_args(tp)))
    if origin is Literal:
        return {type(v) for v in get_args(tp)}
    return {tp}


def takes_number_not_bool(annotation: Any) -> bool:
    leaves = _leaf_types(annotation)
    return bool(leaves & {int, float}) and bool not in leaves and Any not in leaves


class UserModel(BaseModel):
    """A pydantic model of user input whose numeric fields refuse booleans."""

    @field_validator("*", mode="before")
    @classmethod
    def _no_bool_for_number(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, bool) and info.field_name in cls.model_fields \
                and takes_number_not_bool(cls.model_fields[info.field_name].annotation):
            raise ValueError(f"expected a number, not the boolean {str(value).lower()}")
        return value
