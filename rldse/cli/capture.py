"""`rldse capture WORKLOAD|script`: run real training and record it as a trace.

One subcommand per registered workload (rldse.workloads.WORKLOADS), generated: its flags
are the CaptureConfig fields that apply to it (the field's ``workloads`` metadata), its
``--help`` lists its own Config's options (``--set KEY=VALUE``). Another workload's flag
is refused, never ignored; the output path is checked before any training starts.
``capture script`` runs a user's single-file PyTorch script (rldse.recording.script).
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import types
import typing
from pathlib import Path

from rldse.cli.common import (
    OneLineParser,
    check_output_file,
    parse_set,
    progress_bar,
    progress_option,
)
from rldse.errors import RldseError
from rldse.threads import CAPTURE_TORCH_THREADS

#: CaptureConfig fields that are not per-workload flags (set from the common flags).
_COMMON = ("workload", "env_id", "steps", "seed", "options")


def checked_output(path: str, force: bool, flag: str = "-o") -> Path:
    """The output trace path, refused before any work when it cannot be written as asked
    (rldse.cli.common.check_output_file: .parquet, not a folder, --force to overwrite)."""
    return check_output_file(path, flag, ".parquet", force=force)


#: bytes of trace a captured env step takes, the most of the shipped traces' (ddpg_pendulum:
#: 1.28 MB for 10,000 steps; the others 14-106 B): what -o needs free before training
TRACE_BYTES_PER_STEP = 130


def save_trace(trace, out: Path) -> Path:
    """Write ``trace`` to ``out`` (Trace.save writes atomically, through rldse.files: an
    error names ``out``, never its temporary)."""
    return trace.save(out)


def cmd_capture(args: argparse.Namespace) -> None:
    from pydantic import ValidationError

    from rldse.errors import validation_error
    from rldse.sim.run_cost import run_steps, warm_steps
    from rldse.workloads import capture
    from rldse.workloads.common.base import CaptureConfig

    if args.refused:
        raise RldseError(args.refused[0])
    out = checked_output(args.output, args.force)
    if args.env is None and not getattr(args, "dataset", None):
        raise RldseError("--env: required (a Gymnasium env id, e.g. CartPole-v1)")
    fields = dict(workload=args.workload, env_id=args.env or "auto", steps=args.steps,
                  seed=args.seed, options=parse_set(args.set))
    fields.update({name: getattr(args, name) for name in _workload_fields(args.workload)})
    try:
        cfg = CaptureConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        err = validation_error(exc, "")
        flag = "--env" if err.where == "env_id" else f"--{err.where}" if err.where else args.workload
        raise RldseError(f"{flag}: {err.message}") from None
    if args.seeds < 1:
        raise RldseError(f"--seeds {args.seeds}: must be at least 1")
    if args.seeds > 1 and getattr(args, "dataset", None):
        raise RldseError("--seeds: an offline capture (--dataset) has no learning curve to "
                         "repeat")
    if cfg.steps:
        from rldse.sim.budget import check_free_space

        check_free_space(cfg.steps * TRACE_BYTES_PER_STEP, out, "-o",
                         f"a trace of {cfg.steps:,} steps at up to {TRACE_BYTES_PER_STEP} B "
                         "each", "make room there, or capture fewer --steps")
    with progress_bar(cfg.steps, f"capture {cfg.workload} {cfg.env_id}", args.progress) as bar:
        bounded = Bounded(bar.update, run_steps(cfg), args.allow_long, warm_steps(cfg),
                          runs=args.seeds)
        trace = capture(cfg, bounded)
    if args.seeds > 1:
        bounded.check_runs()  # a run shorter than its probe: priced from the whole of it
        trace = _with_seed_curves(trace, cfg, args.seeds, args.progress)
    path = save_trace(trace, out)
    print(f"wrote {path} ({len(trace.ops)} ops, digest {trace.digest})")


#: A capture projected past this much training is stopped early unless --allow-long.
CAPTURE_LIMIT_S = 3600.0
#: A projection longer than this is shown (one line on stderr) as the capture goes on.
SHOW_AFTER_S = 60.0


class Bounded:
    """A capture's progress callback that also projects its length before most of it has
    run: once its steps past the warm-up (``warm_steps``) have taken a second of CPU time,
    their rate gives the rest (rldse.sim.run_cost.Watch); over CAPTURE_LIMIT_S (with
    ``allow_long`` False) it stops the training with one line giving the projection,
    before hours go into a run nobody meant to start."""

    def __init__(self, update, steps: int | None, allow_long: bool, warm_steps: int = 0,
                 runs: int = 1, **clocks) -> None:
        from rldse.sim.budget import Limits
        from rldse.sim.run_cost import Watch

        self.update, self.steps, self.runs = update, steps, runs
        self.limits = Limits(wall_s=CAPTURE_LIMIT_S, allow_long=allow_long)
        self.watch = None if steps is None else \
            Watch(steps, warm_steps, self._check, **clocks)

    def __call__(self, n: int) -> None:
        self.update(n)
        if self.watch is not None:
            self.watch(n)

    def _check(self, probe) -> None:
        from rldse.sim.budget import check_runs, refuse_over

        cost = probe.cost(self.steps)
        if cost.wall_s > CAPTURE_LIMIT_S:
            refuse_over(f"--steps {self.steps:,}: this capture would train for "
                        f"{cost.describe()}, over the {CAPTURE_LIMIT_S / 3600:.0f} h limit",
                        "fewer --steps", "", self.limits)
        if self.runs > 1:
            check_runs(cost.wall_s, self.runs, self.limits, f"--seeds {self.runs:,}", "")
        if cost.wall_s * self.runs > SHOW_AFTER_S:
            from tqdm import tqdm

            tqdm.write(f"capture: {cost.describe()}", file=sys.stderr)


    def check_runs(self) -> None:
        """Price every seed's run from the first, where it ended before its probe did."""
        if self.watch is not None and not self.watch.probed:
            self._check(self.watch.probe(whole=True))


def _with_seed_curves(trace, cfg, seeds: int, progress: bool):
    """``trace`` with the learning curves of ``seeds`` − 1 more runs of ``cfg`` (seeds
    cfg.seed + 1, ...) in ``meta.seed_curves``; their ops are not kept."""
    from rldse.sim.target import learning_curve
    from rldse.trace import SeedCurve
    from rldse.workloads import capture

    learning_curve(trace)  # one line now, not after the other runs, if it has no curve
    curves = []
    for seed in range(cfg.seed + 1, cfg.seed + seeds):
        with progress_bar(cfg.steps, f"capture {cfg.workload} {cfg.env_id} seed {seed}",
                          progress) as bar:
            run = capture(cfg.model_copy(update={"seed": seed}), bar.update)
        curve = learning_curve(run)
        curves.append(SeedCurve(seed=seed, end_steps=curve.end_steps.tolist(),
                                returns=curve.returns.tolist()))
    return dataclasses.replace(trace, meta=trace.meta.model_copy(update={"seed_curves": curves}),
                               _digest=None)


def cmd_capture_script(args: argparse.Namespace) -> None:
    """Options may follow SCRIPT (``script train.py -o run.parquet -- ARGS``): what comes
    after SCRIPT and before ``--`` is parsed as this command's options, the rest goes to
    the script."""
    from rldse.recording.script import capture_script

    rest = list(args.script_args)
    cut = rest.index("--") if "--" in rest else len(rest)
    options = argparse.ArgumentParser(prog="rldse capture script", add_help=False)
    _script_options(options)
    options.parse_args(rest[:cut], namespace=args)
    if args.output is None:
        raise RldseError("-o/--output: required (the trace file to write, .parquet)")
    out = checked_output(args.output, args.force)
    threads = args.torch_threads or None  # 0: the script's own
    # the script's length is its own: the bar counts env steps with no total
    with progress_bar(None, f"capture {Path(args.script).name}", args.progress,
                      unit="env step") as bar:
        trace = capture_script(args.script, rest[cut + 1:], loop=args.loop, env_id=args.env,
                               seed=args.seed, replay=tuple(args.replay),
                               torch_threads=threads, out=out, on_env_steps=bar.update)
    print(f"wrote {out} ({len(trace.ops)} ops, digest {trace.digest})")


def _script_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--loop", choices=["off_policy", "on_policy"],
                   help="the loop kind (default: inferred from what the script does)")
    p.add_argument("--env", help="env id to record (default: the first env the script makes)")
    p.add_argument("--seed", type=int, default=None,
                   help="seed written to the trace's meta (default: the script's own, the "
                   "seed of its first env reset)")
    p.add_argument("--replay", action="append", default=[], metavar="CLASS[:ADD,SAMPLE]",
                   help="the script's replay buffer class (a class it defines, or "
                   "module.Class), when rldse does not recognise it: its add and sample "
                   "methods are recorded, found by name or named after the colon "
                   "(repeatable)")
    p.add_argument("--torch-threads", type=int, default=CAPTURE_TORCH_THREADS, metavar="N",
                   help=f"torch's intra-op threads while the script runs (default "
                   f"{CAPTURE_TORCH_THREADS}; 0: leave the script's own); the trace records "
                   "the count")
    p.add_argument("-o", "--output", help="trace file to write (.parquet; required)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    progress_option(p)


def _workload_fields(workload: str) -> list[str]:
    """CaptureConfig fields that are flags of ``workload``'s subcommand."""
    from rldse.workloads.common.base import CaptureConfig, workloads_of_field

    return [name for name in CaptureConfig.model_fields
            if name not in _COMMON and workload in (workloads_of_field(name) or [workload])]


class _Refuse(argparse.Action):
    """Another workload's flag: remembered as a one-line refusal (cmd_capture raises it)."""

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        namespace.refused = [*namespace.refused, f"{option_string} does not apply to "
                             f"{namespace.workload} (it is a flag of {self.help_for})"]


def _flag_kwargs(field) -> dict:
    """argparse keywords for a CaptureConfig field: choices of a Literal, its int or str."""
    ann = field.annotation
    args = [a for a in typing.get_args(ann) if a is not type(None)] \
        if isinstance(ann, types.UnionType) or typing.get_origin(ann) is typing.Union else [ann]
    inner = args[0]
    if typing.get_origin(inner) is typing.Literal:
        return {"choices": list(typing.get_args(inner))}
    return {"type": inner if inner in (int, float) else str}


def _options_epilog(workload) -> str:
    """The workload's own options, from its Config model: what ``--set`` accepts."""
    from pydantic_core import PydanticUndefined

    from rldse.workloads.common.base import CaptureConfig

    lines = [f"options of {workload.name} (--set KEY=VALUE; from {workload.capture_module}."
             "Config):"]
    for name, f in workload.config.model_fields.items():
        if name in CaptureConfig.model_fields or name == "env_id":
            continue
        default = "per env" if f.default is PydanticUndefined else repr(f.default)
        lines.append(f"  {name} (default {default}){': ' + f.description if f.description else ''}")
    return "\n".join(lines)


class _CaptureParser(OneLineParser):
    """A capture subcommand's parser whose epilog (its workload's Config options) is built
    only when its help is printed: the Config lives in the capture module, which loads the
    real loop (gymnasium, numpy, pandas), and no other command should pay for that."""

    def __init__(self, *args, workload=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.workload = workload

    def format_help(self) -> str:
        if self.workload is not None and self.epilog is None:
            self.epilog = _options_epilog(self.workload)
        return super().format_help()


def _add_workload_parser(csub, workload) -> None:
    from rldse.workloads.common.base import CaptureConfig, workloads_of_field

    p = csub.add_parser(workload.name, help=workload.description,
                        description=f"capture {workload.name}: {workload.description}",
                        workload=workload,
                        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--env", help="Gymnasium env id, e.g. CartPole-v1; ALE/Pong-v5 needs the "
                   "'atari' extra" + ("; 'auto' with --dataset: from the file name"
                                      if "dataset" in _workload_fields(workload.name) else ""))
    p.add_argument("--steps", type=int, help="environment steps (default per workload)")
    p.add_argument("--seed", type=int, default=0, help="random seed (0 to 2^32 - 1)")
    p.add_argument("--seeds", type=int, default=1, metavar="N",
                   help="train N times (seeds SEED to SEED + N - 1) and keep every run's "
                   "learning curve, so a target return gets the range over seeds; the ops "
                   "(timing) are the first run's (default 1)")
    mine = _workload_fields(workload.name)
    for name, f in CaptureConfig.model_fields.items():
        if name in _COMMON:
            continue
        if name in mine:
            p.add_argument(f"--{name}", help=f.description, **_flag_kwargs(f))
        else:
            action = p.add_argument(f"--{name}", action=_Refuse, help=argparse.SUPPRESS)
            action.help_for = ", ".join(workloads_of_field(name) or [])
    p.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                   help="workload option (repeatable; listed below)")
    _output_flags(p)
    progress_option(p)
    p.set_defaults(func=cmd_capture, workload=workload.name, refused=())


def _output_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("-o", "--output", required=True, help="trace file to write (.parquet)")
    p.add_argument("--force", action="store_true", help="overwrite an existing output file")
    p.add_argument("--allow-long", action="store_true",
                   help="train on when the rate of its first steps past the warm-up projects "
                        f"the capture past {CAPTURE_LIMIT_S / 3600:.0f} h")


def add_parser(sub) -> None:
    from rldse.workloads import WORKLOADS

    c = sub.add_parser("capture", help="run real training and record it as a trace")
    csub = c.add_subparsers(dest="capture_command", required=True, metavar="WORKLOAD",
                            parser_class=_CaptureParser)
    for workload in WORKLOADS.values():
        _add_workload_parser(csub, workload)
    s = csub.add_parser("script", help="run a single-file PyTorch training script, recorded",
                        usage="rldse capture script SCRIPT [options] -o OUT.parquet "
                              "[-- SCRIPT_ARGS]",
                        description="Run SCRIPT as __main__ with its vector-env steps, module "
                        "forwards, backward passes and optimizer steps recorded.")
    s.add_argument("script", help="the training script (.py)")
    _script_options(s)
    s.add_argument("script_args", nargs=argparse.REMAINDER, help=argparse.SUPPRESS)
    s.set_defaults(func=cmd_capture_script)
