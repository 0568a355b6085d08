"""Helpers shared by the command modules: progress bars, `--set` pairs, `--presets`, and
the checks of flags several commands take (`--seed`, an output file's path)."""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from rldse.errors import RldseError

#: numpy's seeds are unsigned 32-bit words; a larger int is split into several, which is
#: fine, but a negative one is refused by numpy with a traceback.
MAX_SEED = 2**63 - 1


def progress_bar(total: int | None, desc: str, enabled: bool = True, unit: str = "step"):
    """A tqdm bar on stderr: off with ``enabled`` false (--no-progress) and whenever
    stderr is not a terminal (a pipe, a log file, the tests), so outputs stay the same."""
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit=unit, file=sys.stderr,
                disable=None if enabled else True, dynamic_ncols=True, mininterval=0.5)


def progress_option(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bar (there is none anyway when stderr is not a
    terminal)."""
    parser.add_argument("--no-progress", dest="progress", action="store_false",
                        help="no progress bar (none is drawn when stderr is not a terminal)")


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line, as every rldse error is (argparse
    prints the usage block first); the usage stays one `-h` away."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} -h)\n")


def parse_set(pairs: Sequence[str]) -> dict:
    """`--set key=value` pairs; values parsed as YAML (numbers, 1e10 included, bools,
    lists, mappings) by rldse's YAML rules (rldse.yamlfile)."""
    import yaml

    from rldse.yamlfile import Yaml11Form, describe, load_yaml

    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise RldseError(f"--set {pair!r}: expected key=value")
        if key in out:
            raise RldseError(f"--set {key}: given twice")
        try:
            out[key] = load_yaml(raw)
        except Yaml11Form as exc:
            raise RldseError(f"--set {key}: {exc.problem}") from None
        except yaml.YAMLError as exc:
            raise RldseError(f"--set {pair!r}: the value is {describe(exc)}") from None
    return out


def check_seed(seed: int, flag: str = "--seed") -> int:
    if not 0 <= seed <= MAX_SEED:
        raise RldseError(f"{flag} {seed}: expected an integer from 0 to {MAX_SEED}")
    return seed


def check_output_file(path: str, flag: str, suffix: str | None, *, force: bool) -> Path:
    """An output file's path, checked before any work: no name on it is over NAME_MAX
    bytes, a Parquet file's is UTF-8, it ends in ``suffix`` (None: any), is not a folder,
    exists only with ``force`` (--force), and its folder (or the nearest one that exists)
    takes new files. Every command that writes a file the user names
    checks it here: an existing one is never replaced unasked."""
    from rldse.files import NAME_MAX, check_utf8

    target = Path(path)
    longest = max(target.parts, key=lambda part: len(os.fsencode(part)), default="")
    if len(os.fsencode(longest)) > NAME_MAX:  # stat would fail on it (ENAMETOOLONG)
        raise RldseError(f"{flag} {path}: the name {longest[:24]!r}... is "
                         f"{len(os.fsencode(longest)):,} bytes long, over the {NAME_MAX} "
                         "bytes a file name may take")
    if suffix == ".parquet":  # before the work, not at the write (rldse.files.check_utf8)
        check_utf8(path, flag)
    if target.is_dir() or path.endswith(("/", "\\")):
        raise RldseError(f"{flag} {path}: is a folder; give a file"
                         + (f" ending in {suffix}" if suffix else ""))
    if suffix is not None and target.suffix != suffix:
        raise RldseError(f"{flag} {path}: expected a file name ending in {suffix}")
    if (target.exists() or target.is_symlink()) and not target.is_file():
        raise RldseError(f"{flag} {path}: exists and is not a regular file")
    if target.exists() and not force:
        raise RldseError(f"{flag} {path}: exists (add --force to overwrite it)")
    folder = target.parent
    while not folder.exists():
        folder = folder.parent
    if not folder.is_dir():
        raise RldseError(f"{flag} {path}: {folder} is a file, not a folder")
    try:
        with tempfile.TemporaryFile(dir=folder):
            pass
    except OSError as exc:
        raise RldseError(f"{flag} {path}: cannot write in {folder} ({exc.strerror})") from None
    return target


def presets_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--presets", action="append", default=[], metavar="DIR",
                   help="user preset directory whose *.yaml files add presets (repeatable; "
                        "also RLDSE_PRESETS, os.pathsep-separated)")
