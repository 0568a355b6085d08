"""`rldse parts [list|show NAME]`."""

from __future__ import annotations

import argparse

from rldse.cli.common import presets_option


def cmd_parts(args: argparse.Namespace) -> None:
    from rldse.models.registry import PRESET_COLUMNS, preset_rows, show_preset, text_table

    if args.name:
        print(show_preset(args.name))
        return
    rows = [(kind, name, description, "-" if price != price else f"{price:.2f}", file)
            for kind, name, description, price, file in preset_rows()]  # NaN: no price
    print(text_table(PRESET_COLUMNS, rows))


def add_parser(sub) -> None:
    pa = sub.add_parser("parts", help="list part presets, or show one with sources")
    pa.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    pa.add_argument("name", nargs="?", help="preset name (with 'show')")
    presets_option(pa)
    pa.set_defaults(func=cmd_parts)
