"""Atomic output files: every file rldse writes goes through here.

A write goes to a hidden temporary file in the target's own folder (same filesystem), is
flushed and fsynced, then renamed over the target with ``os.replace``: a reader, or a run
killed at any instant, sees the old file or the new one, never a torn one. Temporary names
are ``.NAME.rldse-PID.tmp`` (NAME cut short, with a hash, where that would be over the
255 bytes a file name may take): every write of NAME first removes those a killed writer of it
left (its PID no longer runs), so the next run of a command cleans up after a killed one;
``clean_stale_temporaries`` does it for a whole folder.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import glob
import hashlib
import os
import shutil
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from pathlib import Path

_TMP_SUFFIX = ".tmp"
_TMP_MARK = ".rldse-"
#: what an OSError's errno means for a file rldse writes, said to the user
_CAUSES = {
    errno.ENOSPC: "the disk is full",
    errno.EDQUOT: "the disk quota is used up",
    errno.EROFS: "the file system is read-only",
    errno.EACCES: "permission denied",
    errno.EPERM: "permission denied",
    errno.EISDIR: "it is a folder, not a file",
    errno.ENOTDIR: "a folder on its path is a file",
    errno.ENAMETOOLONG: "the name is too long",
}


def write_error(path: str | Path, exc: OSError):
    """The one-line RldseError for ``exc`` raised while writing ``path``: the path, and
    the cause in words (disk full, read-only, ...)."""
    from rldse.errors import RldseError

    cause = _CAUSES.get(exc.errno) or exc.strerror or type(exc).__name__
    return RldseError(f"{path}: cannot write: {cause}")


#: the errnos of a write the disk refused whatever is written: full, out of quota, read-only
DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT, errno.EROFS)


def disk_error(exc: BaseException | None) -> OSError | None:
    """The OSError of a refused write (DISK_ERRNOS) that ``exc`` is or was raised while
    handling (along its causes and contexts: Optuna wraps a failed journal write), else
    None."""
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen:
        seen.add(id(exc))
        if isinstance(exc, OSError) and exc.errno in DISK_ERRNOS:
            return exc
        exc = exc.__cause__ or exc.__context__
    return None


#: the longest file name in bytes (Linux's NAME_MAX: ext4, xfs, btrfs, tmpfs)
NAME_MAX = 255
#: the longest PID (digits) a temporary's name holds: Linux's pid_max is at most 2**22
_PID_DIGITS = 7


def _temporary_stem(path: Path) -> str:
    """What a temporary of ``path`` is named after: its name, or where ``.NAME.rldse-PID
    .tmp`` would be over NAME_MAX (a name of 250 bytes), the name cut short and a hash of
    it whole, so the user's own name never has to be shortened."""
    name = os.fsencode(path.name)
    room = NAME_MAX - len(f".{_TMP_MARK}{'9' * _PID_DIGITS}{_TMP_SUFFIX}")
    if len(name) <= room:
        return path.name
    digest = hashlib.sha256(name).hexdigest()[:12]
    # cut on a character: a half character would make the name not UTF-8 (check_utf8)
    return name[:room - len(digest) - 1].decode("utf-8", "ignore") + "~" + digest


def temporary_for(path: Path) -> Path:
    """The hidden temporary path this process writes ``path`` through."""
    return path.with_name(f".{_temporary_stem(path)}{_TMP_MARK}{os.getpid()}{_TMP_SUFFIX}")


def check_utf8(path: str | Path, flag: str = "") -> None:
    """Refuse a path whose name is not UTF-8 (bytes the file system holds but no text
    decodes): pyarrow, which writes traces and tables, takes UTF-8 paths only."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        from rldse.errors import RldseError

        named = f"{flag} {path}" if flag else str(path)
        raise RldseError(f"{named}: the path is not UTF-8 text, which the Parquet files "
                         "rldse writes need: rename the folder or file") from None


def open_temporary(path: str | Path) -> Path:
    """Create (empty, readable as a plain ``open`` makes files) the temporary that this
    process writes ``path`` through, after removing those killed writers of ``path`` left;
    for a writer that streams into it and then ``os.replace``s it over ``path`` (a
    timeline) rather than use `atomic_path`. An OSError is one line naming ``path``."""
    target = Path(path)
    tmp = temporary_for(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries_of(target)
        os.close(os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o666))
    except OSError as exc:
        raise write_error(target, exc) from None
    return tmp


@contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path to write; on success it replaces ``path`` atomically, on any
    error it is removed and ``path`` is left as it was. An OSError (full disk, read-only
    folder) is raised as one line naming ``path`` and its cause (`write_error`)."""
    target = Path(path)
    tmp = temporary_for(target)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        remove_stale_temporaries_of(target)
        yield tmp
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except OSError as exc:
        raise write_error(target, exc) from None
    except UnicodeEncodeError:  # pyarrow given a path that is not UTF-8
        check_utf8(target)
        raise
    finally:
        with suppress(OSError):
            tmp.unlink(missing_ok=True)


def atomic_write(path: str | Path, write: Callable[[Path], object]) -> Path:
    """``write(tmp)`` fills a temporary file that then replaces ``path`` atomically."""
    with atomic_path(path) as tmp:
        write(tmp)
    return Path(path)


def atomic_write_text(path: str | Path, text: str) -> Path:
    return atomic_write(path, lambda tmp: tmp.write_text(text))


def clean_stale_temporaries(folder: str | Path) -> list[Path]:
    """Remove temporaries under ``folder`` left by writers that no longer run (killed
    mid-write); those of live processes are kept. Returns what was removed."""
    root = Path(folder)
    if not root.is_dir():
        return []
    return _remove_dead(root.rglob(f".*{_TMP_MARK}*{_TMP_SUFFIX}"))


def remove_stale_temporaries_of(path: str | Path) -> list[Path]:
    """Remove the temporaries of ``path`` (``.NAME.rldse-PID.tmp`` beside it) whose writer
    no longer runs; returns what was removed."""
    target = Path(path)
    return _remove_dead(target.parent.glob(
        f".{glob.escape(_temporary_stem(target))}{_TMP_MARK}*{_TMP_SUFFIX}"))


def _remove_dead(temporaries: Iterator[Path]) -> list[Path]:
    removed = []
    for tmp in temporaries:
        pid_text = tmp.name.rsplit(_TMP_MARK, 1)[1][: -len(_TMP_SUFFIX)]
        if pid_text.isdigit() and not _alive(int(pid_text)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def replace_markdown_table(path: str | Path, header: str, table: str, flag: str) -> Path:
    """Replace the Markdown table in ``path`` whose first row starts with ``header`` (up to
    the first line that is not a table row) by ``table``, atomically; ``flag`` names the
    option in the one-line errors (a README the commands keep current)."""
    from rldse.errors import RldseError

    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as exc:
        raise RldseError(f"{flag} {path}: cannot read ({exc})") from None
    start = next((i for i, line in enumerate(lines) if line.startswith(header)), None)
    if start is None:
        raise RldseError(f"{flag} {path}: no table to replace (a row starting '{header}')")
    end = next((i for i in range(start, len(lines)) if not lines[i].startswith("|")),
               len(lines))
    return atomic_write_text(path, "\n".join([*lines[:start], table, *lines[end:]]) + "\n")


@contextmanager
def folder_lock(folder: Path, busy: str, name: str = ".lock") -> Iterator[None]:
    """Hold ``folder``'s exclusive run lock (``folder/name``, holding the holder's pid,
    released by the kernel when the holder dies, so a killed run never leaves it held);
    ``busy`` (with ``{pid}``) is the one line raised when another process holds it, and a
    folder that takes no writes (read-only) is one line naming the folder. The one lock
    of study runs and embedded searches."""
    from rldse.errors import RldseError

    try:
        fd = os.open(folder / name, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as exc:
        raise write_error(folder, exc) from None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "?"
            raise RldseError(busy.format(pid=holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        yield
    finally:
        os.close(fd)


def remove_tree_inside(path: Path, root: Path) -> None:
    """Remove the folder ``path``, which must lie inside ``root`` and not be reached
    through a symbolic link: a link is removed itself, never the folder it points to."""
    from rldse.errors import RldseError

    if path.is_symlink():
        path.unlink()
        return
    if not path.exists():
        return
    if not path.resolve().is_relative_to(root.resolve()):
        raise RldseError(f"{path}: resolves to {path.resolve()}, outside {root}; "
                         "refusing to delete it")
    shutil.rmtree(path)


# ---- a folder replaced as a whole -----------------------------------------------------
#
# A run that rewrites a whole folder (a study's out/) builds the new one beside it,
# ``.NAME.new``, and swaps it in at the end: the old folder stays whole until then. The
# swap exchanges the two names in one step where the filesystem can (Linux renameat2
# RENAME_EXCHANGE: ext4, xfs, btrfs, tmpfs); elsewhere the old folder is renamed aside to
# ``.NAME.old`` and the new one renamed in, a window in which NAME is missing but both
# are whole. What a kill leaves is finished or removed by the next run.

_NEW = ".{}.new"
_OLD = ".{}.old"


@contextmanager
def replaced_folder(target: Path, root: Path) -> Iterator[Path]:
    """Yield an empty folder beside ``target`` (inside ``root``) to build its new version
    in; on success it replaces ``target`` (whose old content is then removed), on any error
    it is removed and ``target`` is left as it was. First finishes or undoes what a killed
    run left (with a warning); the caller holds the folder's lock."""
    new = target.with_name(_NEW.format(target.name))
    try:
        _finish_interrupted_swap(target, new, root)
        new.mkdir()
    except OSError as exc:
        raise write_error(new, exc) from None
    try:
        yield new
    except BaseException:
        with suppress(OSError):
            remove_tree_inside(new, root)
        raise
    try:
        _swap(new, target, root)
    except OSError as exc:
        raise write_error(target, exc) from None


def _swap(new: Path, target: Path, root: Path) -> None:
    """``new`` in place of ``target``; the old content removed."""
    if not (target.exists() or target.is_symlink()):
        new.rename(target)
    elif _exchange(new, target):
        remove_tree_inside(new, root)  # now the old content
    else:
        old = target.with_name(_OLD.format(target.name))
        target.rename(old)
        new.rename(target)
        remove_tree_inside(old, root)


def _finish_interrupted_swap(target: Path, new: Path, root: Path) -> None:
    old = target.with_name(_OLD.format(target.name))
    if old.exists() or old.is_symlink():
        if target.exists() or target.is_symlink():
            remove_tree_inside(old, root)  # killed while removing the old content
        elif new.is_dir():  # killed between the two renames: new was already whole
            new.rename(target)
            remove_tree_inside(old, root)
            _warn(f"{target}: finished the swap a killed run left half done (its new "
                  "outputs are now in place)")
        else:
            old.rename(target)
            _warn(f"{target}: put back the outputs a killed run had moved aside")
    if new.exists() or new.is_symlink():
        # a killed run's unfinished outputs, or the old ones it had just swapped out
        remove_tree_inside(new, root)
        _warn(f"{new}: removed what a killed run left (its outputs were not swapped in)")


def _exchange(a: Path, b: Path) -> bool:
    """Swap the names ``a`` and ``b`` in one step (Linux renameat2 RENAME_EXCHANGE);
    False where this system or filesystem cannot."""
    renameat2 = getattr(ctypes.CDLL(None, use_errno=True), "renameat2", None)
    if renameat2 is None:
        return False
    at_fdcwd, rename_exchange = -100, 2
    if renameat2(at_fdcwd, os.fsencode(a), at_fdcwd, os.fsencode(b), rename_exchange) == 0:
        return True
    code = ctypes.get_errno()
    if code in (errno.EINVAL, errno.ENOSYS, errno.ENOTSUP):
        return False
    raise OSError(code, os.strerror(code), str(a), None, str(b))


def _warn(text: str) -> None:
    print(f"rldse: warning: {text}", file=sys.stderr)
