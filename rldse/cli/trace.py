"""`rldse trace info|import|export`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rldse.cli.common import check_output_file, progress_bar, progress_option
from rldse.errors import RldseError


def cmd_trace_info(args: argparse.Namespace) -> None:
    from rldse.host import contention
    from rldse.trace import load_trace

    trace = load_trace(args.file)
    meta = trace.meta
    if args.json:
        print(json.dumps({"digest": trace.digest, "rows": len(trace.ops),
                          "meta": meta.model_dump(mode="json")}, indent=2))
        return
    returns = meta.episode_returns
    print(f"{args.file}  digest {trace.digest}  schema v{meta.schema_version}")
    print(f"  workload {meta.workload} / {meta.algorithm} on {meta.env_id}, seed {meta.seed}")
    print(f"  {len(trace.ops)} ops, wall time {meta.wall_time_s:.3f} s, "
          f"recorder bias {meta.recorder_overhead_ns:.0f} ns/op removed")
    if returns:
        tail = returns[-20:]
        print(f"  {len(returns)} episodes, mean return of last {len(tail)}: "
              f"{sum(tail) / len(tail):.2f}")
    if meta.seed_curves:
        seeds = ", ".join(str(c.seed) for c in meta.seed_curves)
        print(f"  learning curves of {len(meta.seed_curves)} more seeds ({seeds}): a target "
              "return gets the range over seeds")
    h = meta.host
    print(f"  host: {h.cpu_model}, {h.cores} cores @ {h.clock_mhz:.0f} MHz, "
          f"matmul {h.matmul_gflops:.1f} GFLOP/s, copy {h.copy_gbs:.1f} GB/s, "
          f"random access {h.random_access_ns:.1f} ns, call {h.py_call_ns:.0f} ns")
    if h.load is not None:
        ratio = h.load.compute_wall_per_cpu
        print(f"  load: 1-min average {h.load.loadavg_1m_start:.2f} -> "
              f"{h.load.loadavg_1m_end:.2f}, other runnable {h.load.runnable_others_start} -> "
              f"{h.load.runnable_others_end}, compute wall/CPU "
              + ("unknown" if ratio is None else f"{ratio:.3f}")
              + ("" if h.load.torch_threads is None else
                 f", torch threads {h.load.torch_threads} (set by "
                 f"{h.load.torch_threads_set_by})"))
    if trace.ops["cpu_s"].isna().all():
        print("  CPU time: unknown (a trace from before it); the simulator costs every op "
              "from its wall time, contention included")
    for note in _workload_notes(trace):
        print(f"  {note}")
    reason = contention(h.load, h.cores)
    if reason:
        print(f"  warning: captured on a contended host ({reason}); wall times include "
              "other processes' time, the simulator costs compute ops from CPU time")
    if trace.transitions is not None:
        print(f"  transitions: {len(trace.transitions)} rows "
              f"({', '.join(trace.transitions.columns)})")
    print(f"  hyperparameters: {json.dumps(meta.hyperparameters, sort_keys=True)}")
    shown = _without_cpu_info(trace).meta.workload_info  # the notes above summarise those
    print(f"  workload info: {json.dumps(shown, sort_keys=True)}")
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(trace.phase_summary().to_string(float_format=lambda x: f"{x:.4g}"))
    for line in operator_lines(meta.operators):
        print(line)


def operator_lines(operators) -> list[str]:
    """The recorded operators of each network operation (phase, items): one line each."""
    out, last = [], None
    for o in operators:
        if (o.phase, o.items, o.flops) != last:
            last = (o.phase, o.items, o.flops)
            out.append(f"  operators of one {o.phase} at {o.items} items ({o.flops:,} flops):")
        out.append(f"    {o.op} {','.join(map(str, o.shape))} x{o.count}")
    return out


def _without_cpu_info(trace):
    """``trace`` without its family's per-span CPU entries (``Workload.cpu_info``)."""
    from rldse.workloads import WORKLOADS

    workload = WORKLOADS.get(trace.meta.workload)
    return trace if workload is None else workload.without_cpu_time(trace, rows=False)


def _workload_notes(trace) -> list[str]:
    """The trace's family's notes on what it lacks (``Info.notes``), or why its
    workload_info cannot be read."""
    from rldse.workloads import workload_of

    try:
        return workload_of(trace).read_info(trace).notes()
    except RldseError as exc:
        return [f"workload info unreadable: {exc}"]


#: Options of one import format only: (format, default).
_FORMAT_OPTIONS = {"algorithm": ("swiftrl", "q_learning"), "agents": ("swiftrl", 1),
                   "passes": ("swiftrl", 1), "dtype": ("swiftrl", "fp32"),
                   "workers": ("swiftrl", 1), "loop": ("torch-profiler", "off_policy"),
                   "layers": ("torch-profiler", None), "set": ("torch-profiler", None),
                   "allow_long": ("swiftrl", False)}


def cmd_trace_import(args: argparse.Namespace) -> None:
    from rldse.cli.capture import Bounded, checked_output, save_trace

    for name, (fmt, default) in _FORMAT_OPTIONS.items():
        value = getattr(args, name)
        if value is not None and fmt != args.format:
            flag = f"--{name.replace('_', '-')}"
            raise RldseError(f"{flag} does not apply to --format {args.format} (it is an "
                             f"option of --format {fmt})")
        if value is None:
            setattr(args, name, default)
    out = checked_output(args.output, args.force)
    if args.format == "torch-profiler":
        trace = _import_torch_profiler(args)
    else:
        from rldse.workloads.tabular.swiftrl_format import import_swiftrl

        updates = _lines(args.file) * max(args.passes, 1)  # transitions x passes
        with progress_bar(updates or None, f"import {Path(args.file).name}",
                          args.progress) as bar:
            trace = import_swiftrl(args.file, env_id=args.env, algorithm=args.algorithm,
                                   agents=args.agents, passes=args.passes, dtype=args.dtype,
                                   seed=args.seed, workers=args.workers,
                                   progress=Bounded(bar.update, updates or None,
                                                    args.allow_long))
    path = save_trace(trace, out)
    extra = f"{len(trace.transitions)} transitions, " if trace.transitions is not None else ""
    print(f"wrote {path} ({extra}{len(trace.ops)} ops, digest {trace.digest})")


def _import_torch_profiler(args: argparse.Namespace):
    from rldse.cli.common import parse_set
    from rldse.recording.torch_profiler import import_torch_profiler

    missing = [f"--{name} ({what})" for name, what in (
        ("env", "the env id it ran"), ("layers", "the network's layer sizes, e.g. 4,64,64,2"))
        if getattr(args, name) is None]
    if missing:
        raise RldseError(f"required with --format torch-profiler: {', '.join(missing)}")
    try:
        layers = [int(w) for w in args.layers.split(",")]
    except ValueError:
        raise RldseError(f"--layers {args.layers}: expected comma-separated layer sizes, "
                         "e.g. 4,64,64,2") from None
    if args.seed < 0:
        raise RldseError(f"--seed {args.seed}: expected 0 or more")
    return import_torch_profiler(args.file, loop=args.loop, env_id=args.env, layers=layers,
                                 hyperparameters=parse_set(args.set or []), seed=args.seed)


def _lines(path: str) -> int:
    """Lines of a SwiftRL file (one transition each); 0 if it cannot be read (the import
    then says why, in one line)."""
    try:
        with open(path, "rb") as fh:
            return sum(chunk.count(b"\n") for chunk in iter(lambda: fh.read(1 << 20), b""))
    except OSError:
        return 0


def cmd_trace_export(args: argparse.Namespace) -> None:
    from rldse.trace import load_trace
    from rldse.workloads.tabular.swiftrl_format import export_swiftrl

    check_output_file(args.output, "-o", None, force=args.force)
    trace = load_trace(args.file)
    export_swiftrl(trace, args.output)
    print(f"wrote {args.output} ({len(trace.transitions)} transitions)")


def add_parser(sub) -> None:
    t = sub.add_parser("trace", help="inspect, import and export traces")
    tsub = t.add_subparsers(dest="trace_command", required=True, metavar="ACTION")
    ti = tsub.add_parser("info", help="rows, time and work per phase, meta, digest")
    ti.add_argument("file")
    ti.add_argument("--json", action="store_true", help="meta and digest as JSON")
    ti.set_defaults(func=cmd_trace_info)
    tim = tsub.add_parser("import", help="import a SwiftRL dataset (trains offline on it) or "
                          "a PyTorch-profiler trace (phases from record_function scopes)")
    tim.add_argument("file")
    tim.add_argument("--format", choices=["swiftrl", "torch-profiler"], required=True)
    tim.add_argument("--env", help="env id (swiftrl: default inferred from the file name)")
    tim.add_argument("--algorithm", choices=["q_learning", "sarsa"], help="swiftrl")
    tim.add_argument("--agents", type=int, help="swiftrl (default 1)")
    tim.add_argument("--passes", type=int, help="swiftrl (default 1)")
    tim.add_argument("--dtype", choices=["fp32", "int32"], help="swiftrl (default fp32)")
    tim.add_argument("--workers", type=int, help="swiftrl: worker processes (default 1)")
    tim.add_argument("--loop", choices=["off_policy"], help="torch-profiler: the loop kind "
                     "whose program replays it (default off_policy)")
    tim.add_argument("--layers", help="torch-profiler: the network's layer sizes, e.g. 4,64,2")
    tim.add_argument("--set", action="append", metavar="KEY=VALUE",
                     help="torch-profiler: a schedule hyperparameter of the program's "
                          "workload_info, e.g. --set batch_size=64 (repeatable)")
    tim.add_argument("--seed", type=int, default=0)
    tim.add_argument("-o", "--output", required=True)
    tim.add_argument("--force", action="store_true", help="overwrite an existing output file")
    tim.add_argument("--allow-long", action="store_true", default=None, help="swiftrl: train "
                     "even when "
                     "the import is projected past the capture limit (rldse capture)")
    progress_option(tim)
    tim.set_defaults(func=cmd_trace_import)
    te = tsub.add_parser("export", help="write a trace's transitions as a dataset")
    te.add_argument("file")
    te.add_argument("--format", choices=["swiftrl"], required=True)
    te.add_argument("-o", "--output", required=True)
    te.add_argument("--force", action="store_true", help="overwrite an existing output file")
    te.set_defaults(func=cmd_trace_export)
