"""The `rldse` command: parses arguments, calls the API, prints. No logic of its own.

Errors caused by input (RldseError) print as one line, `rldse: error: ...`, exit 2.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

from rldse.errors import RldseError


def _progress_bar(total: int | None, desc: str):
    from tqdm import tqdm

    return tqdm(total=total, desc=desc, unit="step", file=sys.stderr,
                disable=None, dynamic_ncols=True, mininterval=0.5)


def _parse_set(pairs: Sequence[str]) -> dict:
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


# ---- capture ---------------------------------------------------------------------------

def cmd_capture(args: argparse.Namespace) -> None:
    from pydantic import ValidationError

    from rldse.workloads import capture
    from rldse.workloads.common.base import CaptureConfig

    if args.env is None and not args.dataset:
        raise RldseError("--env: required (a Gymnasium env id, e.g. CartPole-v1)")
    fields = dict(workload=args.workload, env_id=args.env or "auto", steps=args.steps, seed=args.seed,
                  actors=args.actors, replay=args.replay, algorithm=args.algorithm,
                  dataset=args.dataset, agents=args.agents, dtype=args.dtype,
                  options=_parse_set(args.set))
    try:
        cfg = CaptureConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RldseError(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    with _progress_bar(cfg.steps, f"capture {cfg.workload} {cfg.env_id}") as bar:
        trace = capture(cfg, bar.update)
    path = trace.save(args.output)
    print(f"wrote {path} ({len(trace.ops)} ops, digest {trace.digest})")


# ---- trace -----------------------------------------------------------------------------

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

    with _progress_bar(None, f"import {Path(args.file).name}") as bar:
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


# ---- simulate / validate --------------------------------------------------------------

def _print_result(result) -> None:
    import pandas as pd

    print(f"simulated {result.sim_time_s:.6g} s: {result.env_steps} env steps "
          f"({result.env_steps_per_s:,.0f}/s), {result.updates} updates "
          f"({result.updates_per_s:,.1f}/s)")
    print(f"energy {result.energy_j:,.1f} J, average power {result.avg_power_w:,.1f} W, "
          f"{result.steps_per_joule:,.2f} steps/J, parts cost ${result.cost_usd:,.0f}")
    print(f"bottleneck: {result.bottleneck} ({result.critical_share:.0%} of its time)")
    if result.steps_to_target is not None:
        cost = ("" if result.cost_to_target_usd is None
                else f", ${result.cost_to_target_usd:,.4g} at the hourly price")
        print(f"target return {result.target_return:g} (trailing mean over "
              f"{result.target_smoothing_episodes} episodes) at {result.steps_to_target:,} env "
              f"steps: {result.time_to_target_s:.6g} s, {result.energy_to_target_j:,.1f} J{cost}")
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
        phases = result.phases_frame()
        print(phases[["worker", "phase", "device", "count", "time_s", "share"]]
              .to_string(index=False, float_format=lambda x: f"{x:.4g}"))
    print(f"trace {result.trace_digest}, spec {result.spec_digest}, seed {result.seed}")


def _target(trace, args: argparse.Namespace):
    """(Target, steps_to_target) for --target-return, or None; the design is then run for
    exactly those env steps (rldse.sim.target)."""
    from rldse.sim.target import Target, steps_to_target

    if args.target_return is None:
        return None
    try:
        target = Target(args.target_return, args.smoothing_episodes)
        return target, steps_to_target(trace, target)
    except RldseError as exc:
        raise exc.within("--target-return") from None


def cmd_simulate(args: argparse.Namespace) -> None:
    from rldse.sim import simulate
    from rldse.sim.target import to_target, with_target
    from rldse.system import load_spec
    from rldse.trace import load_trace

    if args.bands is not None and args.bands < 1:
        raise RldseError(f"--bands {args.bands}: must be at least 1")
    trace = load_trace(args.trace)
    spec = load_spec(args.system, _parse_set(args.set))
    target = _target(trace, args)
    if target is None and spec.price_usd_per_hour is not None:
        raise RldseError("price_usd_per_hour prices the run to a target return "
                         "(cost_to_target_usd): give --target-return, or drop it")
    run_spec = spec if target is None else to_target(spec, target[1])
    result = simulate(trace, run_spec, seed=args.seed, timeline=args.timeline)
    if target is not None:
        result = with_target(result, target[1], target[0], spec.price_usd_per_hour)
    band = None
    if args.bands is not None:
        from rldse.sim.bands import bands

        band = bands(trace, run_spec, args.bands, seed=args.seed)
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
    _print_result(result)
    if args.timeline:
        print(f"timeline: {args.timeline} (open in https://ui.perfetto.dev)")
    if band is not None:
        print(band.table())


def cmd_validate(args: argparse.Namespace) -> None:
    from rldse.sim.validate import validate
    from rldse.trace import load_trace

    table, result = validate(load_trace(args.trace), seed=args.seed)
    print(f"{args.trace}: REPLAY CONSISTENCY on its capture host ({result.devices[0].preset}): "
          "event bookkeeping, not model accuracy")
    print("per-phase rows check the program's accounting (scale factor 1 on the capture "
          "host); TOTAL is the check of its structure: what it overlaps, merges or omits. "
          "Accuracy on other machines or configurations is not tested here "
          "(README: How close it comes)")
    print(table.to_string(float_format=lambda x: f"{x:.4g}"))


# ---- calibrate -------------------------------------------------------------------------

def cmd_calibrate(args: argparse.Namespace) -> None:
    from rldse.calibrate.preset_file import write_preset_file

    if args.target == "gpu":
        from rldse.calibrate.gpu import calibrate_gpu

        cal = calibrate_gpu(args.name, args.output, device=args.device, base=args.base,
                            quick=args.quick)
    else:
        from rldse.calibrate.cpu import calibrate_cpu

        cal = calibrate_cpu(args.name, args.output, quick=args.quick)
    path = write_preset_file(args.output, cal.name, cal.document)
    print("\n".join(cal.report))
    print(f"wrote {path} ({cal.kind} preset '{cal.name}'; use it with --presets {args.output} "
          f"--set {cal.kind}.preset={cal.name})")


# ---- search ---------------------------------------------------------------------------

def cmd_search(args: argparse.Namespace) -> None:
    from rldse.search import run_study

    report = run_study(args.study, trials=args.trials, workers=args.workers,
                       storage=args.storage, resume=args.resume)
    print(report.summary())


# ---- studies --------------------------------------------------------------------------

def cmd_study_run(args: argparse.Namespace) -> None:
    from rldse.studies import STUDIES, run_study

    names = list(STUDIES) if args.all else [args.name]
    if not names or names == [None]:
        raise RldseError("study run: name a study or pass --all "
                         f"(studies: {', '.join(STUDIES)})")
    for name in names:
        print(f"== study {name}", flush=True)
        report = run_study(name, root=args.root)
        print(f"wrote {report}")
        for path in sorted(report.parent.iterdir()):
            if path != report:
                print(f"wrote {path}")


# ---- parts -----------------------------------------------------------------------------

def cmd_parts(args: argparse.Namespace) -> None:
    from rldse.models.registry import list_presets, show_preset

    if args.name:
        print(show_preset(args.name))
        return
    import pandas as pd

    with pd.option_context("display.width", 200, "display.max_colwidth", 60,
                           "display.max_rows", 500):
        print(list_presets().to_string(index=False))


# ---- parser ----------------------------------------------------------------------------

def _presets_option(p: argparse.ArgumentParser) -> None:
    p.add_argument("--presets", action="append", default=[], metavar="DIR",
                   help="user preset directory whose *.yaml files add presets (repeatable; "
                        "also RLDSE_PRESETS, os.pathsep-separated)")


def build_parser() -> argparse.ArgumentParser:
    from rldse.workloads import WORKLOADS

    p = argparse.ArgumentParser(prog="rldse", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    c = sub.add_parser("capture", help="run real training and record it as a trace")
    c.add_argument("workload", choices=list(WORKLOADS))
    c.add_argument("--env", help="Gymnasium env id, e.g. CartPole-v1 ('auto' with --dataset: "
                   "from the file name)")
    c.add_argument("--steps", type=int, help="environment steps (default per workload)")
    c.add_argument("--actors", type=int, help="actor processes (actor_learner)")
    c.add_argument("--seed", type=int, default=0)
    c.add_argument("--replay", choices=["uniform", "per", "amper_k", "amper_fr"],
                   help="dqn replay: uniform, proportional PER, or AMPER-style TCAM sampling")
    c.add_argument("--algorithm", help="tabular: q_learning or sarsa")
    c.add_argument("--dataset", help="tabular offline: SwiftRL-format experience file")
    c.add_argument("--agents", type=int, help="tabular offline: agents (dataset chunks)")
    c.add_argument("--dtype", choices=["fp32", "int32"], help="tabular Q-value type")
    c.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="workload option, e.g. --set batch_size=128 (repeatable)")
    c.add_argument("-o", "--output", required=True, help="trace file to write (.parquet)")
    c.set_defaults(func=cmd_capture)

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

    si = sub.add_parser("simulate", help="replay a trace on a system; print the Result")
    si.add_argument("trace")
    si.add_argument("--system", required=True, help="SystemSpec YAML file")
    si.add_argument("--set", action="append", default=[], metavar="PATH=VALUE",
                    help="override a spec field, e.g. --set gpu.count=2 (repeatable)")
    si.add_argument("--seed", type=int, default=0)
    si.add_argument("--timeline", help="write a Chrome trace event file (Perfetto)")
    si.add_argument("--json", action="store_true", help="the Result as JSON")
    si.add_argument("--target-return", type=float, metavar="R",
                    help="run until the trace's learning curve first reaches return R and "
                         "report steps_to_target, time_to_target_s, energy_to_target_j (and "
                         "cost_to_target_usd with price_usd_per_hour in the spec); assumes the "
                         "captured sample efficiency per env step")
    si.add_argument("--smoothing-episodes", type=int, default=10, metavar="K",
                    help="trailing mean over K episodes decides the target is reached "
                         "(default 10; 1: the raw curve)")
    si.add_argument("--bands", type=int, metavar="N",
                    help="also simulate N systems sampled over every assumed or UNVERIFIED "
                         "preset number's range (Latin hypercube seeded by --seed) and report "
                         "p5/p50/p95 of each metric")
    _presets_option(si)
    si.set_defaults(func=cmd_simulate)

    va = sub.add_parser("validate", help="check replay consistency (event bookkeeping, not "
                        "model accuracy): replay a trace on its capture host, measured vs "
                        "simulated time per phase")
    va.add_argument("trace")
    va.add_argument("--seed", type=int, default=0)
    _presets_option(va)
    va.set_defaults(func=cmd_validate)

    ca = sub.add_parser("calibrate", help="measure this machine's CPU or a GPU and write it "
                        "as a user preset file DIR/NAME.yaml")
    csub = ca.add_subparsers(dest="target", required=True, metavar="PART")
    cg = csub.add_parser("gpu", help="measure a GPU with PyTorch (dispatch, kernel overhead, "
                         "copies, GEMM curve, dependent loads, sum tree, NVML power)")
    cg.add_argument("--device", default="cuda:0",
                    help="torch device (default cuda:0; 'cpu' runs the code path on the CPU)")
    cg.add_argument("--base", metavar="PRESET", help="gpu preset whose datasheet numbers the "
                    "measurements complete (default h100-sxm/h100-pcie on an H100; else required)")
    cc = csub.add_parser("cpu", help="measure this host's fingerprint as a cpu preset, with "
                         "copy-bandwidth and GEMM curves")
    for c in (cg, cc):
        c.add_argument("--name", required=True, help="name of the new preset")
        c.add_argument("-o", "--output", required=True, metavar="DIR",
                       help="directory to write NAME.yaml to (created if missing)")
        c.add_argument("--quick", action="store_true",
                       help="fewer sizes and repeats (seconds; for tests, not for numbers)")
        _presets_option(c)
        c.set_defaults(func=cmd_calibrate)

    se = sub.add_parser(
        "search", help="search the machine design: an Optuna study over SystemSpec paths",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="across machines: make a PostgreSQL database reachable from each, then run\n"
               "  rldse search STUDY.yaml --storage postgresql://USER:PW@HOST/DB --workers 8\n"
               "on the first machine and the same with --resume on every other one.")
    se.add_argument("study", help="study file (YAML): trace, base spec, space, objectives, ...")
    se.add_argument("--trials", type=int, help="total finished trials (default: the file's)")
    se.add_argument("--workers", type=int, default=1, help="worker processes on this machine")
    se.add_argument("--storage", metavar="URL",
                    help="shared study database, e.g. postgresql://user:pw@host/db "
                         "(default: the journal file out/journal.log beside the study)")
    se.add_argument("--resume", action="store_true",
                    help="continue an interrupted study, or join one in --storage")
    _presets_option(se)
    se.set_defaults(func=cmd_search)

    st = sub.add_parser("study", help="reproduce the seed papers")
    ssub = st.add_subparsers(dest="study_command", required=True, metavar="ACTION")
    sr = ssub.add_parser("run", help="run a study (or --all); writes studies/NAME/out/")
    sr.add_argument("name", nargs="?", help="pearl_mapping, swiftrl_pim, amper_replay, "
                    "cpu_gpu_ratio or timerl_memory")
    sr.add_argument("--all", action="store_true", help="run every study")
    sr.add_argument("--root", default="studies", help="folder holding the study folders")
    _presets_option(sr)
    sr.set_defaults(func=cmd_study_run)

    pa = sub.add_parser("parts", help="list part presets, or show one with sources")
    pa.add_argument("action", nargs="?", choices=["list", "show"], default="list")
    pa.add_argument("name", nargs="?", help="preset name (with 'show')")
    _presets_option(pa)
    pa.set_defaults(func=cmd_parts)
    return p


@contextmanager
def _user_presets(args: argparse.Namespace) -> Iterator[None]:
    """The command's --presets directories are the registry's for its length, no longer."""
    if not hasattr(args, "presets"):
        yield
        return
    from rldse.models.registry import use_preset_dirs

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
        print(f"rldse: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("rldse: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `rldse parts | head`: the reader left; not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
