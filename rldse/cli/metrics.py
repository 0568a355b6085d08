"""`rldse metrics`: every metric a Result reports (what objectives and constraints name),
with its unit and meaning, read from the Result model's field descriptions."""

from __future__ import annotations

import argparse
import json

#: unit of a metric by its name's ending (rldse names carry their units), longest first
UNITS = (("_per_usd_hour", "1/USD (rented)"), ("_usd_per_hour", "USD/h"),
         ("_per_usd", "1/USD (owned)"), ("_per_machine", "count"),
         ("_per_s", "1/s"), ("_per_joule", "1/J"), ("_bytes", "bytes"), ("_usd", "USD"),
         ("_return", "return"), ("_episodes", "episodes"),
         ("_updates", "updates"), ("_share", "fraction"), ("_s", "s"), ("_j", "J"),
         ("_w", "W"))


def unit_of(name: str) -> str:
    return next((unit for end, unit in UNITS if name.endswith(end)), "count")


def metric_rows() -> list[dict[str, str]]:
    """(name, unit, meaning) of every fixed metric, check and per-device/program family."""
    from rldse.models import all_checks
    from rldse.search.metrics import FIXED
    from rldse.sim.result import CHECK_PREFIX, Result

    rows = [{"name": n, "unit": unit_of(n), "meaning": Result.model_fields[n].description or ""}
            for n in FIXED]
    rows += [{"name": f"{CHECK_PREFIX}{c.name}", "unit": "bool",
              "meaning": f"feasible: {c.description}"} for c in all_checks().values()]
    rows += [{"name": "util.<device>", "unit": "fraction",
              "meaning": "a device's busy lane-seconds / (lanes x sim_time_s)"},
             {"name": "breakdown.<key>", "unit": "s",
              "meaning": Result.model_fields["breakdown_s"].description or ""}]
    return rows


def cmd_metrics(args: argparse.Namespace) -> None:
    rows = metric_rows()
    if args.json:
        print(json.dumps(rows, indent=1))
        return
    width = max(len(r["name"]) for r in rows)
    unit_width = max(len(r["unit"]) for r in rows)
    for r in rows:
        print(f"{r['name']:<{width}}  {r['unit']:<{unit_width}}  {r['meaning']}")


def add_parser(sub) -> None:
    me = sub.add_parser("metrics", help="list every Result metric with its unit and meaning "
                        "(what study objectives and constraints name)")
    me.add_argument("--json", action="store_true", help="as a JSON list")
    me.set_defaults(func=cmd_metrics)
