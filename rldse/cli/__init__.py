"""The `rldse` command: parses arguments, calls the API, prints. No logic of its own.

One module per command (capture, trace, simulate, calibrate, search, dashboard, study,
parts, spec, metrics); each adds its parser with `add_parser(sub)`. Errors caused by
input (RldseError) print as one line, `rldse: error: ...`, exit 2.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager

from rldse import __version__
from rldse.cli import (
    calibrate,
    capture,
    dashboard,
    metrics,
    parts,
    search,
    simulate,
    spec,
    study,
    trace,
)
from rldse.cli.common import OneLineParser
from rldse.errors import RldseError

COMMANDS = (capture, trace, simulate, calibrate, search, dashboard, study, parts, spec,
            metrics)


def build_parser() -> argparse.ArgumentParser:
    p = OneLineParser(prog="rldse", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"rldse {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return p


def one_line(text: str) -> str:
    """``text`` with every unprintable character (newlines, a control character in a
    misspelt key) escaped, so an error stays one line whatever the input held."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


@contextmanager
def _user_presets(args: argparse.Namespace) -> Iterator[None]:
    """The command's --presets directories are the registry's for its length, no longer."""
    if not hasattr(args, "presets"):
        yield
        return
    from rldse.models.presets import use_preset_dirs

    previous = use_preset_dirs(args.presets)
    try:
        yield
    finally:
        use_preset_dirs(previous)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "action", None) == "show" and not args.name:
        parser.error("parts show: a preset NAME is required")
    func: Callable[[argparse.Namespace], None] = args.func
    try:
        with _user_presets(args):
            func(args)
    except RldseError as exc:
        print(f"rldse: error: {one_line(str(exc))}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("rldse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rldse parts | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


