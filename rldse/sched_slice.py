"""A longer scheduler time slice for the capturing thread, where the kernel grants one.

A thread switched back in after other processes ran on its CPU pays a warm-up (caches,
TLBs refilled: rldse.cpu_clock), so on a busy host its operations cost more CPU time the
more often it is switched in. Linux 6.12+ (EEVDF) lets any thread ask for its own slice,
0.1-100 ms, with ``sched_setattr`` (``sched_runtime`` of a SCHED_OTHER or SCHED_BATCH
thread; no privilege needed): a longer one gives it later virtual deadlines and so fewer,
longer turns beside equal-weight neighbours, at the same share of the CPU
(benchmarks/contended_capture.py measures what it buys). Python has no binding, so this
goes through ``syscall`` with the kernel's ``struct sched_attr``.

``longer_slice`` asks for it around a capture and puts the old slice back after; the
attribute is per thread and inherited by threads and processes started inside (actor
workers). It never fails: on another OS, an older kernel (which accepts and ignores
``sched_runtime``; reading it back tells) or a refused call it does nothing and says why
in the ``SchedSlice`` it returns, which the trace's fingerprint keeps (rldse.host).
"""

from __future__ import annotations

import ctypes
import os
import platform
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager, suppress

from pydantic import BaseModel, ConfigDict, Field

#: The slice a capture asks for, ns: the kernel's largest (it clamps to 0.1-100 ms).
CAPTURE_SLICE_NS = 100_000_000

#: (sched_setattr, sched_getattr) system call numbers by machine (include/uapi/asm-generic
#: unistd.h and arch/x86/entry/syscalls/syscall_64.tbl).
_SYSCALLS = {"x86_64": (314, 315), "aarch64": (274, 275), "arm64": (274, 275)}
#: struct sched_attr up to sched_period (SCHED_ATTR_SIZE_VER0, 48 bytes): size, policy,
#: flags, nice, priority, runtime, deadline, period.
_ATTR = struct.Struct("IIQiIQQQ")
#: Policies whose slice sched_runtime sets (SCHED_OTHER, SCHED_BATCH).
_FAIR_POLICIES = {0: "SCHED_OTHER", 3: "SCHED_BATCH"}
#: sched_flags bit: threads and processes started by this one get the default slice.
_RESET_ON_FORK = 0x01


class SchedSlice(BaseModel):
    """The scheduler slice a capture's thread asked for and what it got."""

    model_config = ConfigDict(extra="forbid")

    asked_ns: int = Field(ge=0, description="the slice asked for, ns (0: none asked)")
    got_ns: int | None = Field(
        default=None, ge=0, description="the thread's slice read back after asking, ns; "
        "None where the kernel has no per-thread slice or refused")
    note: str = Field(default="", description="why the slice is not the one asked for, if so")

    def describe(self) -> str:
        """In a few words, for ``rldse trace info``."""
        asked = f"asked {self.asked_ns / 1e6:g} ms"
        if self.got_ns is None:
            return f"{asked}, not granted ({self.note})"
        return f"{asked}, got {self.got_ns / 1e6:g} ms" + (f" ({self.note})" if self.note else "")


class _Syscalls:
    """The two system calls on this machine; ``available`` is False elsewhere."""

    def __init__(self) -> None:
        numbers = _SYSCALLS.get(platform.machine()) if os.name == "posix" else None
        self.libc = ctypes.CDLL(None, use_errno=True) if numbers else None
        self.numbers = numbers

    @property
    def available(self) -> bool:
        return self.libc is not None

    def get(self) -> tuple[int, ...]:
        """This thread's sched_attr (size .. period), or OSError."""
        buf = ctypes.create_string_buffer(_ATTR.size)
        if self.libc.syscall(self.numbers[1], 0, buf, _ATTR.size, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))
        return _ATTR.unpack(buf.raw)

    def set(self, attr: tuple[int, ...]) -> None:
        """Set this thread's sched_attr, or OSError."""
        buf = ctypes.create_string_buffer(_ATTR.pack(*attr))
        if self.libc.syscall(self.numbers[0], 0, buf, 0) != 0:
            err = ctypes.get_errno()
            raise OSError(err, os.strerror(err))


_syscalls = _Syscalls()


def request_slice(slice_ns: int) -> tuple[SchedSlice, tuple[int, ...] | None]:
    """Ask for ``slice_ns`` for the calling thread, keeping its policy and nice: (what it
    got, its attributes before, to restore; None where nothing was changed)."""
    if not _syscalls.available:
        return SchedSlice(asked_ns=slice_ns, note=f"no sched_setattr on {platform.system()} "
                          f"{platform.machine()}"), None
    try:
        before = _syscalls.get()
        policy = before[1]
        if policy not in _FAIR_POLICIES:
            return SchedSlice(asked_ns=slice_ns, note=f"scheduling policy {policy} has no "
                              "slice"), None
        _syscalls.set((_ATTR.size, policy, _RESET_ON_FORK, before[3], 0, slice_ns, 0, 0))
        got = _syscalls.get()[5]
    except OSError as exc:
        return SchedSlice(asked_ns=slice_ns, note=f"sched_setattr: {exc.strerror}"), None
    if got == 0:  # kernels before 6.12 accept sched_runtime here, ignore it, read back 0
        return SchedSlice(asked_ns=slice_ns, note="the kernel has no per-thread slice "
                          "(Linux 6.12+ has)"), None
    note = "" if got == slice_ns else "the kernel clamped it"
    return SchedSlice(asked_ns=slice_ns, got_ns=got, note=note), before


def restore_slice(before: tuple[int, ...] | None) -> None:
    """Put back the kernel's default slice (sched_runtime 0) with the policy and nice
    ``request_slice`` found; nothing where it changed nothing. (A slice the thread had
    asked for itself before reads back like the default, so it is not restored.)"""
    if before is None:
        return
    with suppress(OSError):  # the capture is done; a slice left longer harms nothing
        _syscalls.set((_ATTR.size, before[1], before[2] & _RESET_ON_FORK, before[3], 0, 0, 0,
                       0))


_active = threading.local()  # .grant: the SchedSlice of this thread's outermost request


class SliceRequest:
    """The capture's slice for one thread: ``start`` asks for it (inside another request
    of the same thread it changes nothing and returns that one's grant), ``stop`` puts the
    default back; call both in the capturing thread."""

    def __init__(self, slice_ns: int = CAPTURE_SLICE_NS) -> None:
        self.slice_ns = slice_ns
        self.before: tuple[int, ...] | None = None
        self.owner = False

    def start(self) -> SchedSlice:
        outer = active_slice()
        if outer is not None:
            return outer
        got, self.before = request_slice(self.slice_ns)
        _active.grant, self.owner = got, True
        return got

    def stop(self) -> None:
        if self.owner:
            restore_slice(self.before)
            _active.grant, self.owner, self.before = None, False, None


def active_slice() -> SchedSlice | None:
    """What the calling thread's capture asked for and got; None outside one."""
    return getattr(_active, "grant", None)


@contextmanager
def longer_slice(slice_ns: int = CAPTURE_SLICE_NS) -> Iterator[SchedSlice]:
    """The calling thread (and what it starts) runs with ``slice_ns`` inside; yields what
    the kernel granted."""
    request = SliceRequest(slice_ns)
    try:
        yield request.start()
    finally:
        request.stop()
