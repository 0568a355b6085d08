"""Helpers shared by the command modules: progress bars, `--set` pairs, `--presets`."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rldse.errors import RldseError


def progress_bar(total: int | None, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr,
                disable=None, dynamic_ncols=True, mininterval=0.5)


def parse_set(pairs: Sequence[str]) -> dict:
    """`--set key=value` pairs; values parsed as YAML scalars (numbers, bools, lists)."""
    import yaml

    out = {}
    for pair in pairs:
        key, sep, raw = pair.partition("=")
        if not sep or not key:
            raise RldseError(f"--set {pair!r}: expected key=value")
        try:
            out[key] = yaml.safe_load(raw)
        except yaml.YAMLError:
            raise RldseError(f"--set {pair!r}: the value is not a valid YAML scalar or list") \
                from None
    return out


def presets_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--presets", action="append", default=[], metavar="DIR",
                   help="user preset directory whose *.yaml files add presets (repeatable; "
                        "also RLDSE_PRESETS, os.pathsep-separated)")


