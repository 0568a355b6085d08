"""`rldse capture`: run real training and record it as a trace."""

from __future__ import annotations

import argparse

from rldse.cli.common import parse_set, progress_bar
from rldse.errors import RldseError


def cmd_capture(args: argparse.Namespace) -> None:
    from pydantic import ValidationError

    from rldse.workloads import capture
    from rldse.workloads.common.base import CaptureConfig

    if args.env is None and not args.dataset:
        raise RldseError("--env: required (a Gymnasium env id, e.g. CartPole-v1)")
    fields = dict(workload=args.workload, env_id=args.env or "auto", steps=args.steps, seed=args.seed,
                  actors=args.actors, replay=args.replay, algorithm=args.algorithm,
                  dataset=args.dataset, agents=args.agents, dtype=args.dtype,
                  options=parse_set(args.set))
    try:
        cfg = CaptureConfig(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as exc:
        err = exc.errors()[0]
        raise RldseError(f"--{'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    with progress_bar(cfg.steps, f"capture {cfg.workload} {cfg.env_id}") as bar:
        trace = capture(cfg, bar.update)
    path = trace.save(args.output)
    print(f"wrote {path} ({len(trace.ops)} ops, digest {trace.digest})")


def add_parser(sub) -> None:
    from rldse.workloads import WORKLOADS

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
