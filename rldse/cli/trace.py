"""`rldse trace info|import|export`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rldse.cli.common import progress_bar
from rldse.errors import RldseError


def cmd_trace_info(args: argparse.Namespace) -> None:
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
    h = meta.host
    print(f"  host: {h.cpu_model}, {h.cores} cores @ {h.clock_mhz:.0f} MHz, "
          f"matmul {h.matmul_gflops:.1f} GFLOP/s, copy {h.copy_gbs:.1f} GB/s, "
          f"random access {h.random_access_ns:.1f} ns, call {h.py_call_ns:.0f} ns")
    if trace.transitions is not None:
        print(f"  transitions: {len(trace.transitions)} rows "
              f"({', '.join(trace.transitions.columns)})")
    print(f"  hyperparameters: {json.dumps(meta.hyperparameters, sort_keys=True)}")
    print(f"  workload info: {json.dumps(meta.workload_info, sort_keys=True)}")
    import pandas as pd

    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(trace.phase_summary().to_string(float_format=lambda x: f"{x:.4g}"))


def cmd_trace_import(args: argparse.Namespace) -> None:
    from rldse.workloads.tabular.swiftrl_format import import_swiftrl

    with progress_bar(None, f"import {Path(args.file).name}") as bar:
        trace = import_swiftrl(args.file, env_id=args.env, algorithm=args.algorithm,
                               agents=args.agents, passes=args.passes, dtype=args.dtype,
                               seed=args.seed, workers=args.workers, progress=bar.update)
    path = trace.save(args.output)
    print(f"wrote {path} ({len(trace.transitions)} transitions, {len(trace.ops)} ops, "
          f"digest {trace.digest})")


def cmd_trace_export(args: argparse.Namespace) -> None:
    from rldse.trace import load_trace
    from rldse.workloads.tabular.swiftrl_format import write_swiftrl

    trace = load_trace(args.file)
    if trace.transitions is None:
        raise RldseError(f"{args.file}: trace holds no transitions to export "
                         "(captured by a workload that does not keep them)")
    write_swiftrl(trace.transitions, args.output)
    print(f"wrote {args.output} ({len(trace.transitions)} transitions)")


def add_parser(sub) -> None:
    t = sub.add_parser("trace", help="inspect, import and export traces")
    tsub = t.add_subparsers(dest="trace_command", required=True, metavar="ACTION")
    ti = tsub.add_parser("info", help="rows, time and work per phase, meta, digest")
    ti.add_argument("file")
    ti.add_argument("--json", action="store_true", help="meta and digest as JSON")
    ti.set_defaults(func=cmd_trace_info)
    tim = tsub.add_parser("import", help="train offline on an experience dataset")
    tim.add_argument("file")
    tim.add_argument("--format", choices=["swiftrl"], required=True)
    tim.add_argument("--env", help="env id (default: inferred from the file name)")
    tim.add_argument("--algorithm", choices=["q_learning", "sarsa"], default="q_learning")
    tim.add_argument("--agents", type=int, default=1)
    tim.add_argument("--passes", type=int, default=1)
    tim.add_argument("--dtype", choices=["fp32", "int32"], default="fp32")
    tim.add_argument("--workers", type=int, default=1, help="worker processes")
    tim.add_argument("--seed", type=int, default=0)
    tim.add_argument("-o", "--output", required=True)
    tim.set_defaults(func=cmd_trace_import)
    te = tsub.add_parser("export", help="write a trace's transitions as a dataset")
    te.add_argument("file")
    te.add_argument("--format", choices=["swiftrl"], required=True)
    te.add_argument("-o", "--output", required=True)
    te.set_defaults(func=cmd_trace_export)
