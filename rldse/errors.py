"""The one error type users see: a single line naming the file, field or line at fault.

Library code raises `RldseError` for anything caused by user input; the CLI prints it
as one line and exits with status 2. Anything else is a bug and keeps its traceback.

An error carries its path apart from its message (``where``: a file, a dotted field
path, a line), so a caller that knows more of the path prefixes it (`within`) instead
of re-parsing text, and every message is formatted once, here.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable
from typing import Any


class RldseError(Exception):
    """Bad user input, described in one line (what was wrong, where, and what was expected)."""

    exit_code = 2

    def __init__(self, message: str, *, where: str = "") -> None:
        self.message, self.where = message, where
        super().__init__(f"{where}: {message}" if where else message)

    def within(self, outer: str, sep: str = ": ") -> RldseError:
        """The same error with ``outer`` (a file: sep ': '; a section: sep '.') before its
        path."""
        if not outer:
            return self
        return RldseError(self.message, where=f"{outer}{sep}{self.where}" if self.where else outer)


def did_you_mean(name: str, names: list[str]) -> str:
    """'; did you mean 'x'?' when something close exists, else ''."""
    match = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
    return f"; did you mean {', '.join(repr(m) for m in match)}?" if match else ""


#: pydantic error types that mean "a section was expected here, not a value".
_NOT_A_MAPPING = ("model_type", "model_attributes_type", "dataclass_type", "dict_type")
#: pydantic error types of a number outside its field's bounds (or not finite).
_OUT_OF_RANGE = ("greater_than", "greater_than_equal", "less_than", "less_than_equal",
                 "finite_number")


def error_location(exc: Any, index: int = 0) -> list[str | int]:
    """Where the ``index``-th problem of a pydantic ValidationError is, as the user wrote
    it: field names and list positions, without pydantic's own steps (a validator
    function, a union member's type, the '[key]' of a bad mapping key)."""
    return [p for p in exc.errors()[index]["loc"]
            if isinstance(p, int) or not (p in ("[key]", "str")
                                          or p.startswith(("function-", "dict[")))]


def _dotted(where: str, loc: list[str | int]) -> str:
    path = where
    for part in loc:
        path += f"[{part}]" if isinstance(part, int) else f".{part}" if path else str(part)
    return path


def validation_error(exc: Any, where: str, fields: list[str] | None = None, *,
                     index: int = 0,
                     range_text: Callable[[list[str | int], dict], str] | None = None
                     ) -> RldseError:
    """The ``index``-th problem of a pydantic ValidationError as one RldseError whose path
    is ``where`` plus the field's location (list positions as ``[i]``). This is the one
    place rldse turns pydantic's errors into words. ``fields``: the allowed names an
    unknown field is matched against; ``range_text(location, ctx)``: a number out of
    range quotes its allowed range so (a spec's unit-aware bounds), else pydantic's."""
    err = exc.errors()[index]
    loc = error_location(exc, index)
    path = _dotted(where, loc)
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "extra_forbidden":
        allowed = fields or []
        hint = did_you_mean(str(loc[-1]), allowed) if loc else ""
        more = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return RldseError(f"unknown field{hint}{more}", where=path)
    if kind == "missing":
        return RldseError("required field is missing", where=path)
    if kind in _OUT_OF_RANGE and range_text is not None:
        what = "is out of range" if kind != "finite_number" else "is not a finite number"
        return RldseError(f"{err.get('input')!r} {what} (allowed: {range_text(loc, ctx)})",
                          where=path)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind == "implausible":  # rldse's own: the plausible range and the likely slip
        return RldseError(msg, where=path)
    if kind in _NOT_A_MAPPING:  # pydantic names the model class ('GpuRef'): users wrote none
        msg = "expected a mapping of fields"
    bounds = ", ".join(f"{k} {v}" for k, v in ctx.items() if k in ("ge", "le", "gt", "lt"))
    if bounds:
        msg += f" (allowed: {bounds})"
    if "input" in err and not isinstance(err["input"], dict):
        msg += f" (got {err['input']!r})"
    return RldseError(msg, where=path)


def validation_errors(exc: Any, where: str, **how: Any) -> RldseError:
    """Every problem of a pydantic ValidationError in one line ('; ' between them), each
    as `validation_error` words it (``how``: its keywords); one problem keeps its path
    as ``where``."""
    errors = [validation_error(exc, where, index=i, **how) for i in range(exc.error_count())]
    return errors[0] if len(errors) == 1 else RldseError("; ".join(map(str, errors)))


_SECRET_QUERY = re.compile(r"(?i)((?:^|[?&;])(?:password|passwd|pwd|sslpassword)=)([^&;]*)")
MASK = "***"


def ambiguous_url(url: str) -> bool:
    """Whether `url` cannot be split where a driver splits it: a '#', or an '@' that is
    not the one ending the user-info (two of them, or one past the first '/' or '?'
    after the scheme). Only an unencoded password makes one; then nothing past the
    scheme can be shown, and no driver should be given it (it would send part of the
    password as a host name)."""
    rest = url.partition("://")[2] or url
    authority = re.split(r"[/?]", rest, maxsplit=1)[0]
    return "#" in url or rest.count("@") > 1 or ("@" in rest and "@" not in authority)


def redact_url(url: str) -> str:
    """`url` with every password hidden, by splitting it as a URL: the user-info form
    (`user:pw@host`, with or without a scheme, an empty user) and the query form
    (`?password=pw`). An ambiguous URL (`ambiguous_url`) keeps only its scheme."""
    scheme, sep, rest = url.rpartition("://") if "://" in url else ("", "", url)
    prefix = f"{scheme}{sep}"
    if ambiguous_url(url):
        return f"{prefix}{MASK}"
    cut = re.search(r"[/?]", rest)
    authority, tail = (rest[:cut.start()], rest[cut.start():]) if cut else (rest, "")
    if "@" in authority:
        userinfo, host = authority.split("@")
        user, colon, _ = userinfo.partition(":")
        authority = f"{user}{colon}{MASK if colon else ''}@{host}"
    path, qmark, query = tail.partition("?")
    return prefix + authority + path + qmark + _SECRET_QUERY.sub(rf"\g<1>{MASK}", query)


def url_secrets(url: str) -> list[str]:
    """The passwords `url` holds, as written and percent-decoded, longest first (for an
    ambiguous URL, which no driver is given: everything past its scheme)."""
    from urllib.parse import unquote

    rest = url.partition("://")[2] or url
    if ambiguous_url(url):
        found = [rest]
    else:
        cut = re.search(r"[/?]", rest)
        authority = rest[:cut.start()] if cut else rest
        found = [m.group(2) for m in _SECRET_QUERY.finditer(rest.partition("?")[2])]
        if "@" in authority:
            found.append(authority.split("@")[0].partition(":")[2])
    return sorted({v for s in found if s for v in (s, unquote(s))}, key=len, reverse=True)


def redact_text(text: str, url: str) -> str:
    """`text` (a driver's message about `url`) with `url` redacted and every password of
    `url` replaced by '***' where it stands as a word of its own (a password 'p' leaves
    'password' whole)."""
    text = text.replace(url, redact_url(url))
    for secret in url_secrets(url):
        text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(secret)}(?![A-Za-z0-9])", MASK, text)
    return text
