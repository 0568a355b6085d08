"""`rldse parts [list|show NAME]`."""

from __future__ import annotations

import argparse

from rldse.cli.common import presets_option


def cmd_parts(args: argparse.Namespace) -> None:
    from rldse.models.registry import list_presets, show_preset

    if args.name:
        print(show_preset(args.name))
        return
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_colwidth", 60,
                           "display.max_rows", 500):
        print(list_presets().to_string(index=False))


def add_parser(sub) -> None:
    pa = sub.add_parser("parts", help="list part presets, or show one with sources")
    pa.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    pa.add_argument("name", nargs="?", help="preset name (with 'show')")
    presets_option(pa)
    pa.set_defaults(func=cmd_parts)
