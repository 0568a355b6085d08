"""`rldse simulate`, `rldse check-replay` and `rldse validate external`."""

from __future__ import annotations

import argparse
import json

from rldse.cli.common import (
    check_output_file,
    check_seed,
    parse_set,
    presets_option,
    progress_bar,
    progress_option,
)
from rldse.errors import RldseError

#: --smoothing-episodes' default: the trailing mean over this many episodes
SMOOTHING_EPISODES = 10


def _print_result(result, knobs) -> None:
    """``knobs``: the spec's CostKnobs (the life and energy price of the owned figures)."""
    import pandas as pd

    n = result.runs_per_machine
    print(f"simulated {result.sim_time_s:.6g} s: {result.env_steps} env steps "
          f"({result.env_steps_per_s:,.0f}/s), {result.updates} updates "
          f"({result.updates_per_s:,.1f}/s)" + (f", one of {n} runs on the machine"
                                                  if n > 1 else ""))
    print(f"energy {result.energy_j:,.1f} J, average power {result.avg_power_w:,.1f} W, "
          f"{result.steps_per_joule:,.2f} steps/J, parts cost ${result.cost_usd:,.0f}"
          + (f" (the run's share of ${result.machine_cost_usd:,.0f})"
             if n > 1 and result.machine_cost_usd is not None else ""))
    print(f"bottleneck: {result.bottleneck} ({result.critical_share:.0%} of its time)")
    for line in top_operators(result):
        print(line)
    if result.steps_to_target is not None:
        cost = ("" if result.cost_to_target_usd is None
                else f", ${result.cost_to_target_usd:,.4g} at the hourly price")
        print(f"target return {result.target_return:g} (trailing mean over "
              f"{result.target_smoothing_episodes} episodes) at {result.steps_to_target:,} env "
              f"steps: {result.time_to_target_s:.6g} s, {result.energy_to_target_j:,.1f} J{cost}")
        if result.target_seeds is not None:
            high = ("not reached by every seed" if result.steps_to_target_high is None else
                    f"{result.steps_to_target_high:,} ({result.time_to_target_s_high:.6g} s)")
            print(f"  median of {result.target_seeds} seeds ({result.target_seeds_reached} reach "
                  f"it); range {result.steps_to_target_low:,} "
                  f"({result.time_to_target_s_low:.6g} s) to {high}")
    for line in cost_lines(result, knobs):
        print(line)
    if result.staleness_mean_updates is not None:
        print(f"policy lag: {result.staleness_mean_updates:.3g} updates mean, "
              f"{result.staleness_p95_updates:.3g} p95")
    from rldse.models import all_checks

    declared = all_checks()
    for name, ok in result.checks.items():
        if not ok:
            print(f"INFEASIBLE ({name}): it is not true that {declared[name].description}")
    if not result.checks.get("gpu_memory", True):
        print(f"  the GPU would hold {result.gpu_memory_peak_bytes:,} bytes "
              "(set workload.gpu_swap: true to swap to host memory)")
    if not result.checks.get("host_memory", True):
        print(f"  host memory would hold {result.host_memory_peak_bytes:,} bytes "
              "(raise cpu.mem_bytes or cpu.sockets, or shrink buffers)")
    if result.swapped_bytes:
        print(f"swapped {result.swapped_bytes:,} bytes to host memory")
    for warning in result.warnings:
        print(f"note: {warning}")
    for key, value in result.breakdown_s.items():
        print(f"  {key}: {value:.6g} s")
    cols = ["name", "preset", "lanes", "utilisation", "energy_j", "avg_power_w", "estimator"]
    with pd.option_context("display.width", 200, "display.max_colwidth", 50):
        print(result.devices_frame()[cols].to_string(index=False, float_format=lambda x: f"{x:.4g}"))
        print(phase_table(result).to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print("  worker_s: the workers of a kind in that phase (wait:*: blocked); path_share: "
          "its share of their time, on the critical path for the pacing kind; device_busy_s: "
          "lane-seconds the device ran the phase, overlapped or not; count '-': accounted "
          "in bulk, not per operation")
    print(f"trace {result.trace_digest}, spec {result.spec_digest}, seed {result.seed}")


def cost_lines(result, knobs) -> list[str]:
    """The node's price item by item, then what a run and the machine cost per hour and
    their env steps per dollar, owned (over ``knobs``' life and energy price) and rented
    (rldse.models.platform)."""
    from rldse.models.platform import PLATFORM_ITEMS, RENTED_ITEM

    n = result.runs_per_machine
    lines = ["node cost, item by item (rldse parts show PRESET gives each price's source):"]
    for i in result.node_cost:
        count = f"{i.count:,.6g} ×" if i.count != 1 else ""
        lines.append(f"  {i.item:<26} {i.preset:<18} {count:>7} ${i.unit_usd:>10,.2f}"
                     f" = ${i.usd:>10,.2f}")
    node_usd = sum(i.usd for i in result.node_cost)
    if result.machine_cost_usd is not None:
        nodes = round(result.machine_cost_usd / node_usd) if node_usd > 0 else 1
        label = "the machine" + (f" ({nodes} such nodes)" if nodes > 1 else "")
        lines.append(f"  {label:<68}${result.machine_cost_usd:>10,.2f}")
    if not any(i.item in (*PLATFORM_ITEMS, RENTED_ITEM) for i in result.node_cost):
        lines.append("  (no platform: board, DRAM, NICs, chassis and supplies not priced; "
                     "add platform: {preset: ...})")
    rows = [("per run", 1), ("per machine", n)]
    lines.append(f"  {'':<12} {'env steps/s':>12} {'wall W':>8} {'owned $/h':>10} "
                 f"{'steps/$':>14} {'rented $/h':>11} {'steps/$ rented':>15}")

    def cell(value, scale, fmt):
        return "-" if value is None else format(value * scale, fmt)

    for label, k in rows:
        lines.append(
            f"  {label:<12} {result.env_steps_per_s * k:>12,.0f} "
            f"{cell(result.wall_power_w, k, ',.1f'):>8} "
            f"{cell(result.owned_usd_per_hour, k, ',.4f'):>10} "
            f"{cell(result.steps_per_usd, 1, ',.0f'):>14} "
            f"{cell(result.rental_usd_per_hour, k, ',.4f'):>11} "
            f"{cell(result.steps_per_usd_hour, 1, ',.0f'):>15}")
    if result.machine_cost_usd is not None:
        lines.append(f"  owned: ${result.machine_cost_usd:,.0f} over {knobs.life_years:g} years "
                     f"plus wall energy at ${knobs.usd_per_kwh:g}/kWh"
                     + (f"; {n} identical runs have 1/{n} of the machine each, so steps "
                        "per dollar are the same per run and per machine" if n > 1 else ""))
    return lines


#: Operators of the pacing worker's phases that ``rldse simulate`` prints.
TOP_OPERATORS = 5
#: Columns of ``--ops FILE.csv``, in order.
OPS_CSV_COLUMNS = ("phase", "op", "shape", "dtype", "part", "count", "host_s", "device_s",
                   "bound", "share")


def top_operators(result, n: int = TOP_OPERATORS) -> list[str]:
    """The operators that take most of the pacing worker's phases on a GPU: calls ×
    max(host, device) of one call, largest first."""
    pacing = result.bottleneck.partition(":")[0]
    phases = {p.phase for p in result.phases if p.worker == pacing}
    ops = sorted((o for o in result.operators if o.phase in phases and o.count > 0),
                 key=lambda o: -o.count * max(o.host_s, o.device_s))[:n]
    if not ops:
        return []
    lines = [f"top operators of the {pacing}'s phases (--ops FILE.csv lists all):"]
    for o in ops:
        lines.append(f"  {o.phase}: {o.op} {o.shape} {o.dtype} on {o.part}, {o.count:,.0f} calls, host "
                     f"{o.host_s * 1e6:.2f} µs, device {o.device_s * 1e6:.2f} µs each "
                     f"({o.bound}), {o.share:.0%} of {o.phase}")
    return lines


def write_ops(result, path) -> None:
    """``--ops FILE.csv``: one row per operator kind per phase (``OPS_CSV_COLUMNS``)."""
    import pandas as pd

    from rldse.files import atomic_write

    frame = pd.DataFrame([o.model_dump() for o in result.operators],
                         columns=list(OPS_CSV_COLUMNS))
    atomic_write(path, lambda p: frame.to_csv(p, index=False))


def phase_table(result):
    """Per worker kind and phase: the workers' time and its share of theirs (where the
    critical path goes), beside the busy time the device itself spent on the phase (a
    GPU's learn overlaps the host's dispatch, so the first can be far below the second)."""
    columns = ["worker", "phase", "device", "count", "worker_s", "path_share", "device_busy_s"]
    phases = result.phases_frame()
    if phases.empty:  # a program that keeps no worker clock (its devices' table still shows)
        return phases.reindex(columns=columns)
    busy: dict[tuple[str, str], float] = {}
    for d in result.devices:
        for phase, s in d.phase_busy_s.items():
            busy[(d.kind, phase)] = busy.get((d.kind, phase), 0.0) + s
    table = phases.rename(columns={"time_s": "worker_s", "share": "path_share"})
    table["device_busy_s"] = [f"{busy[key]:.4g}" if key in busy else "-"
                              for key in zip(phases["device"], phases["phase"], strict=True)]
    table["count"] = [str(c) if c else "-" for c in phases["count"]]
    return table[columns]


def _target(trace, args: argparse.Namespace):
    """(Target, TargetSteps) for --target-return, or None; the design is then run for
    exactly those env steps (rldse.sim.target)."""
    from rldse.sim.target import Target, target_steps

    if args.target_return is None:
        if args.smoothing_episodes is not None:
            raise RldseError("--smoothing-episodes: applies with --target-return (the trailing "
                             "mean that decides the target is reached)")
        return None
    try:
        target = Target(args.target_return, args.smoothing_episodes or SMOOTHING_EPISODES)
        return target, target_steps(trace, target)
    except RldseError as exc:
        raise exc.within("--target-return") from None


def cmd_simulate(args: argparse.Namespace) -> None:
    from rldse.system import load_spec, on_flag
    from rldse.workloads import open_trace as load_trace

    if args.bands is not None and args.bands < 1:
        raise RldseError(f"--bands {args.bands}: must be at least 1")
    if args.bands is not None and args.engine != "fast":
        raise RldseError("--engine reference checks one run; --bands samples many with the "
                         "fast engine: give one or the other")
    check_seed(args.seed)
    if args.timeline is not None:
        check_output_file(args.timeline, "--timeline", ".json", force=args.force)
    if args.ops is not None:
        check_output_file(args.ops, "--ops", ".csv", force=args.force)
    window = None
    if args.timeline_window is not None:
        from rldse.sim.timeline import parse_window

        if args.timeline is None:
            raise RldseError("--timeline-window selects events of a timeline: give "
                             "--timeline FILE.json too")
        window = parse_window(args.timeline_window)
    trace = load_trace(args.trace)
    sets = parse_set(args.set)
    spec = load_spec(args.system, sets)
    try:
        _run(args, trace, spec, window)
    except RldseError as exc:
        raise on_flag(exc, sets) or exc from None


def _run(args: argparse.Namespace, trace, spec, window: tuple[float, float] | None) -> None:
    from rldse.models.platform import CostKnobs
    from rldse.sim import Limits, simulate
    from rldse.sim.target import check_same_learning, to_target, with_target

    target = _target(trace, args)
    run_spec = spec if target is None else to_target(spec, target[1].steps)
    if target is not None:
        from rldse.system import resolve

        check_same_learning(trace, resolve(run_spec, trace))
    limits = Limits(allow_long=args.allow_long)
    band = None
    if args.bands is not None:  # first: its estimate refuses within seconds, not after a run
        from rldse.sim.bands import bands

        band = bands(trace, run_spec, args.bands, seed=args.seed, limits=limits)
    result = simulate(trace, run_spec, seed=args.seed, timeline=args.timeline,
                      limits=limits, timeline_window=window, engine=args.engine)
    if target is not None:
        result = with_target(result, target[1].steps, target[0],
                             spread=target[1])
    if args.ops is not None:
        if not result.operators:  # a flag that does not apply is refused, not ignored
            raise RldseError("--ops: no role of this system runs on a part that prices "
                             "operators (a GPU), so there is no operator to list")
        write_ops(result, args.ops)
    if args.json:
        if band is None:
            print(result.to_json())
            return
        out = result.model_dump(mode="json")
        b = band.to_dict()
        out["bands"] = b.pop("bands")
        out["bands_design"] = b
        print(json.dumps(out, indent=1))
        return
    _print_result(result, spec.cost or CostKnobs())
    if args.ops is not None:
        print(f"operators: {args.ops} ({len(result.operators)} rows)")
    if args.timeline:
        print(f"timeline: {args.timeline} (open in https://ui.perfetto.dev)")
    if band is not None:
        from rldse.sim.bands import numeric

        print(band.table(nominal=numeric(result.metrics())))


def cmd_check_replay(args: argparse.Namespace) -> None:
    """A trace replayed on its own capture host: the program's bookkeeping (rldse.sim.
    check_replay), not model accuracy (that is `cmd_validate`)."""
    from rldse.sim.check_replay import check_replay
    from rldse.trace import networks_on_gpu
    from rldse.workloads import open_trace as load_trace

    if args.gpu:
        from rldse.models.presets import get_preset

        get_preset("gpu", args.gpu)  # an unknown preset: one line, before any work
    check_seed(args.seed)
    trace = load_trace(args.trace)
    captured_on = trace.meta.workload_info["cuda"].get("device", "a GPU") \
        if networks_on_gpu(trace.meta) else None
    table, result = check_replay(trace, seed=args.seed, gpu=args.gpu)
    if args.gpu:
        anchor = ("their host side (dispatch) is the capture's own rows, so TOTAL checks the "
                  "device side and the bookkeeping, not dispatch" if captured_on else
                  "their host side is kernels x the preset's dispatch_s")
        print(f"{args.trace}: captured with its networks on {captured_on or 'the CPU'}; act "
              f"and learn run on gpu preset {args.gpu}: the GPU model PREDICTS their device "
              f"time from the counted work; {anchor}. Per-phase rows: a GPU phase's host "
              "time is booked as 'dispatch' on the CPU")
    else:
        print(f"{args.trace}: REPLAY CONSISTENCY on its capture host "
              f"({result.devices[0].preset}): event bookkeeping, not model accuracy")
        print("per-phase rows check the program's accounting (scale factor 1 on the capture "
              "host); TOTAL is the check of its structure: what it overlaps, merges or omits. "
              "Accuracy on other machines or configurations is not tested here "
              "(docs/validation.md)")
        if captured_on:
            print(f"note: this trace ran its networks on {captured_on}; --gpu PRESET predicts "
                  "those phases with the GPU model instead")
    print(table.to_string(float_format=lambda x: f"{x:.4g}"))


def cmd_validate(args: argparse.Namespace) -> None:
    """Every published measurement of a real machine predicted from presets (rldse.external)."""
    from rldse.external import checked, datasets, format_summary, predictions, summary

    if args.target != "external":
        raise RldseError(f"validate {args.target}: 'rldse validate external' checks the "
                         "predictions against real machines; a trace's replay bookkeeping "
                         f"on its capture host is 'rldse check-replay {args.target}'")
    for flag, value in (("--doc", args.doc), ("--checked", args.checked)):
        if value and args.dataset:
            raise RldseError(f"{flag}: writes the summary of every data set; drop --dataset")
    out = check_output_file(args.csv, "--csv", ".csv", force=args.force) if args.csv else None
    checked_out = (check_output_file(args.checked, "--checked", ".csv", force=args.force)
                   if args.checked else None)
    names = args.dataset or sorted(datasets())
    with progress_bar(len(names), "validate external", args.progress, unit="data set") as bar:
        rows = predictions(names, lambda name: bar.update(1))
    summed = summary(rows)
    table = format_summary(summed)
    print("AGAINST REAL MACHINES: rldse's predictions from presets against published "
          "measurements (error = predicted / measured - 1)")
    print(table)
    for name in names:
        check = datasets()[name].same_path
        if check is not None:
            print(check())
    if out is not None:
        from rldse.files import atomic_write

        atomic_write(out, lambda path: rows.to_csv(path, index=False))
        print(f"wrote {out} ({len(rows)} rows)")
    if checked_out is not None:
        from rldse.files import atomic_write

        per_part = checked(summed)
        atomic_write(checked_out, lambda path: per_part.to_csv(path, index=False))
        print(f"wrote {checked_out} ({len(per_part)} rows: what each part was checked against)")
    if args.doc:
        from rldse.external import TABLE_HEADER
        from rldse.files import replace_markdown_table

        print(f"wrote {replace_markdown_table(args.doc, TABLE_HEADER, table, '--doc')}")


def add_parser(sub) -> None:
    si = sub.add_parser("simulate", help="replay a trace on a system; print the Result")
    si.add_argument("trace")
    si.add_argument("--system", required=True, help="SystemSpec YAML file")
    si.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="override a spec field, e.g. --set gpu.count=2 (repeatable)")
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--timeline", metavar="FILE.json",
                    help="write a Chrome trace event file (Perfetto)")
    si.add_argument("--force", action="store_true",
                    help="overwrite an existing --timeline file")
    si.add_argument("--timeline-window", metavar="START:END",
                    help="write only the timeline events overlapping simulated seconds "
                         "START to END, so a long run's file stays openable")
    si.add_argument("--allow-long", action="store_true",
                    help="run even when the estimate (events, wall time, memory; measured "
                         "by short pilot runs first) is over 10 minutes or half of RAM")
    si.add_argument("--engine", choices=("fast", "reference"), default="fast",
                    help="fast (default): merged and closed-form paths where they apply; "
                         "reference: every operation its own event, for checking them (slow)")
    si.add_argument("--json", action="store_true", help="the Result as JSON")
    si.add_argument("--ops", metavar="FILE.csv",
                    help="write one row per operator kind per phase priced on a GPU: "
                         "phase, op, shape, dtype, part, count, host_s and device_s per call, "
                         "bound, share of the phase")
    si.add_argument("--target-return", type=float, metavar="R",
                    help="run until the trace's learning curve first reaches return R and "
                         "report steps_to_target, time_to_target_s, energy_to_target_j (and "
                         "cost_to_target_usd with an hourly price in the spec); assumes the "
                         "captured sample efficiency per env step")
    si.add_argument("--smoothing-episodes", type=int, metavar="K",
                    help="with --target-return: trailing mean over K episodes decides the "
                         f"target is reached (default {SMOOTHING_EPISODES}; 1: the raw curve)")
    si.add_argument("--bands", type=int, metavar="N",
                    help="also simulate N systems sampled over every assumed or UNVERIFIED "
                         "preset number's range (Latin hypercube seeded by --seed) and report "
                         "p5/p50/p95 of each metric")
    presets_option(si)
    si.set_defaults(func=cmd_simulate)

    cr = sub.add_parser("check-replay", help="TRACE: replay it on its own capture host and "
                        "compare measured with simulated time per phase: the event "
                        "bookkeeping, not model accuracy (that is 'rldse validate external')")
    cr.add_argument("trace")
    cr.add_argument("--seed", type=int, default=0, help="simulation seed")
    cr.add_argument("--gpu", metavar="PRESET", help="run act and learn on one GPU of this "
                    "preset: the GPU model predicts their device time (a GPU capture keeps "
                    "its own dispatch)")
    presets_option(cr)
    cr.set_defaults(func=cmd_check_replay)

    va = sub.add_parser("validate", help="external: predict published measurements of real "
                        "machines from presets and print the errors (a trace's replay "
                        "bookkeeping: 'rldse check-replay TRACE')")
    va.add_argument("target", metavar="external")
    va.add_argument("--dataset", action="append", default=[], metavar="NAME",
                    help="only this data set (repeatable; default all)")
    va.add_argument("--csv", metavar="FILE.csv", help="also write every row")
    va.add_argument("--checked", metavar="FILE.csv", help="also write the summary "
                    "per part, what 'rldse parts show' prints (shipped as "
                    "rldse/external/data/checked.csv)")
    va.add_argument("--doc", metavar="FILE.md", help="replace the 'Against real "
                    "machines' table in this page (docs/validation.md) with this run's")
    va.add_argument("--force", action="store_true",
                    help="overwrite an existing --csv or --checked file")
    presets_option(va)
    progress_option(va)
    va.set_defaults(func=cmd_validate)
