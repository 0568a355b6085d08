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
