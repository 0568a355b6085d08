"""A registry of named plug-ins (part kinds, workload families): the one way rldse adds
one, and the one way it looks one up, with a one-line error that names the closest
names when a user's name is unknown."""

from __future__ import annotations

from typing import TypeVar

from rldse.errors import RldseError, did_you_mean

T = TypeVar("T")


class Registry(dict[str, T]):
    """Plug-ins of one sort by name, in the order they were added."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what  # 'part kind', 'workload': what the error messages call one

    def add(self, name: str, item: T) -> T:
        """Add ``item``; a second one of the same name is a programming error."""
        if name in self:
            raise ValueError(f"{self.what} '{name}' is registered twice")
        self[name] = item
        return item

    def lookup(self, name: str, where: str) -> T:
        """The plug-in ``name``, or an RldseError at ``where`` naming the closest ones."""
        if name not in self:
            raise RldseError(f"unknown {self.what} '{name}'{did_you_mean(name, list(self))} "
                             f"({self.what}s: {', '.join(self)})", where=where)
        return self[name]
