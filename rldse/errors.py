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


def validation_error(exc: Any, where: str, fields: list[str] | None = None) -> RldseError:
    """The first problem of a pydantic ValidationError as one RldseError whose path is
    ``where`` plus the field's location; ``fields`` are the allowed names an unknown
    field is matched against."""
    err = exc.errors()[0]
    loc = [str(p) for p in err["loc"] if p != "[key]" and not str(p).startswith("function-")]
    path = ".".join([where, *loc]) if where and loc else where or ".".join(loc)
    kind = err["type"]
    if kind == "extra_forbidden":
        allowed = fields or []
        hint = did_you_mean(loc[-1], allowed) if loc else ""
        more = f" (allowed: {', '.join(allowed)})" if allowed else ""
        return RldseError(f"unknown field{hint}{more}", where=path)
    if kind == "missing":
        return RldseError("required field is missing", where=path)
    msg = str(err["msg"]).removeprefix("Value error, ")
    if kind in _NOT_A_MAPPING:  # pydantic names the model class ('GpuRef'): users wrote none
        msg = "expected a mapping of fields"
    ctx = err.get("ctx") or {}
    bounds = ", ".join(f"{k} {v}" for k, v in ctx.items() if k in ("ge", "le", "gt", "lt"))
    if bounds:
        msg += f" (allowed: {bounds})"
    if "input" in err and kind != "value_error" and not isinstance(err["input"], dict):
        msg += f" (got {err['input']!r})"
    return RldseError(msg, where=path)


_SECRET_QUERY = re.compile(r"(?i)((?:^|[?&;])(?:password|passwd|pwd|sslpassword)=)[^&;#]*")


def redact_url(url: str) -> str:
    """`url` with every password hidden: the user-info form (`user:pw@host`, with or
    without a scheme, an empty user, or an unencoded '@' in the password: everything up
    to the host's last '@' goes) and the query form (`?password=pw`)."""
    head, sep, query = url.partition("?")
    scheme, slashes, rest = head.rpartition("://")
    prefix = f"{scheme}{slashes}"
    if "@" in rest:
        userinfo, host = rest.rsplit("@", 1)
        user, colon, _ = userinfo.partition(":")
        # a user with an '@' of its own is ambiguous with a password holding one: hide it all
        kept = f"{user}{colon}{'***' if colon else ''}"
        rest = f"{'***' if '@' in user else kept}@{host}"
    return prefix + rest + sep + _SECRET_QUERY.sub(r"\1***", query)


def redact_text(text: str, url: str) -> str:
    """`text` (a driver's message about `url`) with `url` redacted and every password of
    `url` replaced by '***' wherever it appears."""
    text = text.replace(url, redact_url(url))
    for secret in _secrets(url):
        text = text.replace(secret, "***")
    return text


def _secrets(url: str) -> list[str]:
    head, _, query = url.partition("?")
    rest = head.rpartition("://")[2]
    found = [m.group(0).split("=", 1)[1] for m in _SECRET_QUERY.finditer(query)]
    if "@" in rest:
        userinfo = rest.rsplit("@", 1)[0]
        found.append(userinfo.partition(":")[2])
        # a driver that splits at the first '@' shows the rest of the password as the host
        found += [userinfo.split("@", k)[k] for k in range(1, userinfo.count("@") + 1)]
    return sorted({s for s in found if s}, key=len, reverse=True)
