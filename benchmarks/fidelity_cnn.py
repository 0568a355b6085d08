"""Held-out batch what-if for a recorded CNN: record a DQN-style learner step of a small
PyTorch CNN (conv 16×8×8/4, conv 32×4×4/2, linear 2,592 → 6 on 4×84×84) at batch A through
rldse.recording, predict the mean learn step at batch B from that trace alone on the
``host`` preset (the program's rescaling with the network's own per-layer work,
rldse.kernels.network_work), then record at B for real and compare.

    python benchmarks/fidelity_cnn.py [--learns 30] [--repeats 3] [--pairs 32:128,128:32]

Prints each case's prediction, measurement and error (best of the repeats' captures) with
the host's load average; exits 0.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import numpy as np
import torch

import rldse
from rldse.kernels.trace_network import from_info
from rldse.models.cpu import with_works
from rldse.sim.machine import Machine
from rldse.sim.validate import host_spec_for
from rldse.system import resolve
from rldse.trace import load_trace
from rldse.workloads.offpolicy.dqn import net_learn_work

OBS = (4, 84, 84)


def cnn() -> torch.nn.Module:
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(4, 16, 8, stride=4), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 4, stride=2), torch.nn.ReLU(),
        torch.nn.Flatten(), torch.nn.Linear(32 * 9 * 9, 6))


def record(path: Path, batch: int, learns: int) -> None:
    """Q(s) and target Q(s') forwards, a TD loss, backward and Adam, each step timed."""
    q, target = cnn(), cnn()
    opt = torch.optim.Adam(q.parameters(), lr=1e-4)
    x = torch.rand((batch, *OBS))
    with rldse.recording(path, loop="off_policy", env_id="ALE/Pong-v5", network=q,
                         obs_shape=OBS, batch_size=batch, replay_capacity=10_000,
                         learning_starts=0, learn_every=1, target_sync=10**6) as rec:
        with rec.phase("env_reset"):
            pass
        for _ in range(learns):
            with rec.phase("act"), torch.no_grad():
                q(x[:1])
            with rec.phase("env_step"):
                pass
            with rec.phase("replay_add"):
                pass
            with rec.phase("replay_sample"):
                pass
            with rec.phase("learn"):
                with torch.no_grad():
                    y = target(x).max(1).values
                loss = (q(x).max(1).values - y).square().mean()
                opt.zero_grad()
                loss.backward()
                opt.step()


def learn_times(path: Path) -> np.ndarray:
    ops = load_trace(path).ops
    return ops.loc[ops.phase == "learn", "dur_s"].to_numpy()[2:]  # the first are warm-up


def predict(path: Path, batch: int) -> float:
    """Mean learn step at ``batch`` from the trace at another batch, on its capture host."""
    trace = load_trace(path)
    m = Machine(trace, resolve(host_spec_for(trace), trace), seed=0)
    net = from_info(trace.meta.workload_info)
    b0 = int(trace.meta.workload_info["batch_size"])
    ops = m.trace_ops("learn")
    new = with_works(m.model("cpu").host, ops, net_learn_work(net, batch, False),
                     net_learn_work(net, b0, False), batch)
    return float(np.mean(np.asarray(m.model("cpu").op_seconds(new))[2:]))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--learns", type=int, default=30)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--pairs", default="32:128,128:32")
    args = ap.parse_args()
    torch.set_num_threads(1)
    with tempfile.TemporaryDirectory() as tmp:
        best: dict[int, Path] = {}
        means: dict[int, float] = {}
        batches = sorted({int(b) for p in args.pairs.split(",") for b in p.split(":")})
        for b in batches:
            for r in range(args.repeats):  # best of the repeats: the least-loaded capture
                path = Path(tmp) / f"b{b}_{r}.parquet"
                record(path, b, args.learns)
                mean = float(np.mean(learn_times(path)))
                if b not in means or mean < means[b]:
                    means[b], best[b] = mean, path
        print(f"load average {os.getloadavg()[0]:.2f}; torch {torch.__version__}, 1 thread")
        for pair in args.pairs.split(","):
            a, b = (int(x) for x in pair.split(":"))
            pred = predict(best[a], b)
            err = pred / means[b] - 1
            print(f"CNN learn step, batch {a} -> {b}: predicted {pred * 1e3:.2f} ms, "
                  f"measured {means[b] * 1e3:.2f} ms (captured at {a}: "
                  f"{means[a] * 1e3:.2f} ms), error {err:+.1%}")


if __name__ == "__main__":
    main()
