"""`rldse parts [list|show NAME]` and `rldse parts cost PART --op OP --shape DIMS`."""

from __future__ import annotations

import argparse

from rldse.cli.common import presets_option


def cmd_parts(args: argparse.Namespace) -> None:
    from rldse.models.presets import PRESET_COLUMNS, preset_rows, show_preset, text_table

    if args.action == "cost":
        print(part_cost(args.name, args.op, args.shape, args.dtype, as_json=args.json))
        return
    if args.name:
        print(show_preset(args.name))
        kind = next((k for k, n, *_ in preset_rows() if n == args.name), None)
        if kind is not None:  # 'host' is this machine, not a preset a data set names
            from rldse.external import checked_lines

            print("\n".join(checked_lines(f"{kind}/{args.name}")))
        return
    rows = [(kind, name, description, "-" if price != price else f"{price:.2f}", file)
            for kind, name, description, price, file in preset_rows()]  # NaN: no price
    print(text_table(PRESET_COLUMNS, rows))


def part_cost(part: str | None, op: str | None, shape: str | None, dtype: str,
              as_json: bool = False) -> str:
    """One operator on ``part`` ('KIND/PRESET'), priced by the part model's ``op_cost``
    (the code the simulator and ``rldse validate external`` use); RldseError naming the
    argument on bad input. A part kind prices operators if its model has ``op_cost``."""
    import dataclasses
    import json

    from rldse.errors import RldseError
    from rldse.models import PART_KINDS, load_part, make_model, renamed

    kind, _, name = (part or "").partition("/")
    kind = renamed.kind(kind, f"PART {part}")
    if kind not in PART_KINDS or not name:
        raise RldseError(f"PART {part}: expected KIND/PRESET, KIND one of "
                         f"{', '.join(sorted(PART_KINDS))} (e.g. gpu/v100-pcie-32g)")
    try:
        model = make_model(load_part(kind, name))
    except RldseError as e:
        raise RldseError(f"PART {part}: {e}") from None
    if not hasattr(model, "op_cost"):
        raise RldseError(f"PART {part}: {kind} parts do not price single operators")
    if op is None or shape is None:
        raise RldseError("--op and --shape: both are required with 'cost'")
    c = model.op_cost(op, shape, dtype)
    fields = {**dataclasses.asdict(c), "part": part, "call_s": c.call_s}
    if as_json:
        return json.dumps(fields)
    return (f"{part} {op} {','.join(map(str, c.shape))} {dtype}: host dispatch "
            f"{c.host_s * 1e6:.2f} µs, device {c.device_s * 1e6:.2f} µs, one eager call "
            f"{c.call_s * 1e6:.2f} µs, energy {c.energy_j * 1e3:.4f} mJ, bound by {c.bound}")


def add_parser(sub) -> None:
    pa = sub.add_parser("parts", help="list part presets, show one with sources, or price "
                        "one operator on one")
    pa.add_argument("action", nargs="?", choices=["list", "show", "cost"], default="list")
    pa.add_argument("name", nargs="?", help="preset name (with 'show'); KIND/PRESET (with "
                    "'cost')")
    pa.add_argument("--op", help="operator (cost): linear, bmm, add, mul, relu, tanh")
    pa.add_argument("--shape", help="comma-separated dims (cost): linear/bmm B,M,N,K; "
                    "element-wise B,H; leading dims may be left out")
    pa.add_argument("--dtype", default="fp32", help="fp32 (default), tf32, fp64, int32, int64")
    pa.add_argument("--json", action="store_true", help="one JSON object (cost)")
    presets_option(pa)
    pa.set_defaults(func=cmd_parts)
