"""The GPU model checked against real runs on an H200 (benchmarks/external/gpu_measure.py,
2026-11-26: traces/h200/ and benchmarks/results/h200-2026-11-26/): each GPU capture replayed
with its act and learn predicted by the GPU model on a preset; the batch 32 → 128 what-if of
the DQN learner, predicted from the batch-32 capture and measured by the batch-128 one; the
sum tree (eager and fused) and Tempo's encoder-gradient kernel, model against measurement;
and the learn steps' aten ops with their host time per op, GPU against CPU.

Two capture orders were run (run1: batch 32 first; run3: batch 128 first), because the
first capture of a process pays warm-up that the second does not. The host's own speed
drifts between captures too: the env step, which no batch touches, is printed beside the
learner so a reader can tell host drift from the model's error.

    python benchmarks/fidelity/gpu_vs_h200.py [--preset h200-measured]
"""

from __future__ import annotations

import argparse
import json
from functools import partial
from pathlib import Path

import pandas as pd

from rldse.models import presets
from rldse.sim import simulate
from rldse.sim.check_replay import check_replay, host_spec_for
from rldse.system import parse_spec
from rldse.trace import Trace, load_trace

ROOT = Path(__file__).resolve().parents[2]
H200 = ROOT / "traces" / "h200"
RESULTS = ROOT / "benchmarks" / "results" / "h200-2026-11-26"
RUNS = ("run1", "run3")


def mean_us(trace: Trace, phase: str) -> float:
    """Mean host time of a phase's rows (the simulator draws the rows, so means compare)."""
    ops = trace.ops
    return 1e6 * float(ops.loc[ops["phase"] == phase, "dur_s"].mean())


def learner_us_per_update(trace: Trace, gpu: str, batch: int | None = None) -> float:
    """Simulated learner time per update (host dispatch and device, waits and the replay
    sample left out) with act and learn on one ``gpu``."""
    spec = host_spec_for(trace, gpu)
    if batch is not None:
        raw = spec.model_dump(mode="json", exclude_none=True)
        raw.setdefault("workload", {})["batch_size"] = batch
        spec = parse_spec(raw, where="what-if")
    frame = simulate(trace, spec, seed=0).phases_frame()
    learner = frame[(frame["worker"] == "learner") & ~frame["phase"].str.startswith("wait:")
                    & (frame["phase"] != "replay_sample")]
    updates = int(frame.loc[(frame["phase"] == "learn"), "count"].sum())
    return 1e6 * float(learner["time_s"].sum()) / max(updates, 1)


def sumtree_rows(preset: str) -> None:
    """Model against measurement per capacity and batch: device time (kernels queued behind
    a GPU sleep) and one call's wall time between CUDA events (host dispatch included)."""
    meas = pd.read_csv(RESULTS / "sumtree.csv")
    print(f"\nsum-tree sample on {preset}: model (host, device) against measured (call, device), us")
    for impl in ("eager", "fused"):
        model = presets.make_model(presets.load_part("gpu", preset, sumtree=impl))
        for r in meas.itertuples(index=False):
            t = model.sumtree_time(r.batch, r.capacity)
            call, dev = (getattr(r, f"{impl}_sample_call_ms") * 1e3,
                         getattr(r, f"{impl}_sample_device_ms") * 1e3)
            print(f"  {impl:5} 2^{r.levels:<2} x {r.batch:3}: model host {1e6 * t.host_s:7.1f} "
                  f"device {1e6 * t.device_s:7.1f} | measured call {call:7.1f} device {dev:7.1f}"
                  f" | device error {100 * (t.device_s * 1e6 / dev - 1):+.0f} %")


def tempo_rows(preset: str) -> None:
    """Tempo's encoder gradient (256 x 196,608 x 64): the model's GEMM and memory-bound
    times against cuBLAS, PyTorch eager and XLA as measured."""
    torch_m = json.loads((RESULTS / "tempo.json").read_text())
    jax_m = json.loads((RESULTS / "tempo_jax.json").read_text())
    model = presets.make_model(presets.load_part("gpu", preset))
    flops, nbytes = torch_m["flops"], torch_m["min_bytes"]
    gemm = model.kernel_times(1, flops, nbytes).device_s
    fused = model.kernel_times(1, 0, jax_m["broadcast_reduce"]["xla_bytes"]).device_s
    print(f"\nTempo encoder gradient on {preset} ({flops / 1e9:.2f} GFLOP): model GEMM "
          f"{1e3 * float(gemm):.3f} ms vs cuBLAS SGEMM {torch_m['gemm_tf32_off']['device_ms']:.3f}"
          f" ms (TF32 on {torch_m['gemm_tf32_on']['device_ms']:.3f}); XLA's fused broadcast-"
          f"reduce ({jax_m['broadcast_reduce']['xla_bytes'] / 1e6:.0f} MB accessed) measured "
          f"{jax_m['broadcast_reduce']['median_ms']:.2f} ms vs {1e3 * float(fused):.3f} ms at "
          f"the preset's bandwidth; PyTorch eager (12.9 GB intermediate) "
          f"{torch_m['eager_broadcast_reduce']['call_ms']:.1f} ms")


def learn_ops(foreach: bool) -> dict[str, int]:
    """Non-view aten ops of one learn step of the captured loops
    (benchmarks/external/gpu_measure.py's dqn_update at 2-4 Linear layers, ppo_update),
    counted on the CPU; ``foreach``: Adam's
    multi-tensor path, PyTorch's default for CUDA parameters (the CPU's is per tensor)."""
    import sys

    import torch

    sys.path.insert(0, str(ROOT / "benchmarks" / "external"))
    from gpu_measure import dqn_update, ppo_update

    from rldse.calibrate.gpu import count_ops

    torch.manual_seed(0)

    def mlp(depth: int, out: int, act=torch.nn.ReLU):
        mods = [torch.nn.Linear(4, 64)]
        for _ in range(depth - 2):
            mods += [act(), torch.nn.Linear(64, 64)]
        return torch.nn.Sequential(*mods, act(), torch.nn.Linear(64, out))

    counts = {}
    for depth in (2, 3, 4):
        q, target = mlp(depth, 2), mlp(depth, 2)
        opt = torch.optim.Adam(q.parameters(), lr=1e-3, foreach=foreach)
        s, s2 = torch.rand(32, 4), torch.rand(32, 4)
        act, rew, done = torch.zeros(32, dtype=torch.long), torch.zeros(32), torch.zeros(32)
        step = partial(dqn_update, torch, q, target, opt, s, s2, act, rew, done)
        step()  # Adam's state exists before the counted step
        counts[f"dqn {depth} layers"] = count_ops(torch, step)
    pi, v = mlp(3, 2, torch.nn.Tanh), mlp(3, 1, torch.nn.Tanh)
    opt = torch.optim.Adam([*pi.parameters(), *v.parameters()], lr=2.5e-4, foreach=foreach)
    flat = (torch.rand(512, 4), torch.randint(2, (512,)), torch.rand(512), torch.rand(512),
            torch.rand(512))
    mb = torch.randperm(512)[:128]
    step = partial(ppo_update, torch, pi, v, opt, mb, *flat)
    step()
    counts["ppo"] = count_ops(torch, step)
    return counts


def dispatch_rows() -> None:
    """Host time per aten op of the captured learn steps, on the GPU and on the same
    host's CPU (means over every learn row)."""
    gpu_ops, cpu_ops = learn_ops(foreach=True), learn_ops(foreach=False)
    print("\nlearn steps' aten ops (foreach Adam on the GPU, per-tensor on the CPU): "
          + ", ".join(f"{k} {gpu_ops[k]} / {cpu_ops[k]}" for k in gpu_ops))
    for name, key in (("dqn", "dqn 2 layers"), ("ppo", "ppo")):
        cpu_us = mean_us(load_trace(H200 / f"{name}_cpu{'_b32' if name == 'dqn' else ''}.parquet"),
                         "learn")
        for run in RUNS:
            trace = load_trace(H200 / f"{name}_gpu{'_b32' if name == 'dqn' else ''}_{run}.parquet")
            gpu_us = mean_us(trace, "learn")
            print(f"  {name} {run}: GPU learn {gpu_us:.0f} us = {gpu_us / gpu_ops[key]:.1f} us "
                  f"per op; same host's CPU {cpu_us:.0f} us; GPU / CPU x{gpu_us / cpu_us:.2f}")


#: CPU capture -> the GPU captures of the same loop (traces/h200)
MOVED = {"dqn b32": ("dqn_cpu_b32", "dqn_gpu_b32"), "dqn b128": ("dqn_cpu_b128", "dqn_gpu_b128"),
         "ppo": ("ppo_cpu", "ppo_gpu")}


def framework_ratios() -> pd.DataFrame:
    """Per CPU/GPU capture pair and phase: the GPU capture's host time per op, the CPU
    capture's framework share (its time less its flops at the capture host's core rate,
    as GpuModel.moved_host_s takes it) and their ratio, and the env step's GPU / CPU
    capture time (DQN's env step runs no torch: the host's own speed between captures)."""
    from rldse.models.presets import cpu_from_host

    rows = []
    for loop, (cpu_name, gpu_name) in MOVED.items():
        cpu = load_trace(H200 / f"{cpu_name}.parquet")
        host = cpu_from_host(cpu.meta.host)
        for phase in ("act", "learn"):
            ops = cpu.ops[cpu.ops["phase"] == phase]
            compute_s = float(ops["flops"].mean()) / (host.core_gflops * 1e9)
            share_us = mean_us(cpu, phase) - 1e6 * compute_s
            for run in RUNS:
                gpu = load_trace(H200 / f"{gpu_name}_{run}.parquet")
                gpu_us = mean_us(gpu, phase)
                rows.append({"loop": loop, "family": loop.split()[0], "phase": phase, "run": run,
                             "cpu_share_us": share_us, "gpu_us": gpu_us,
                             "ratio": gpu_us / share_us,
                             "env_step_drift": mean_us(gpu, "env_step") / mean_us(cpu, "env_step")})
    return pd.DataFrame(rows)


def simulated_us(trace: Trace, gpu: str, phase: str, host_slowdown: float = 1.0) -> float:
    """Mean simulated time per op of ``phase`` with act and learn on one ``gpu``: its
    un-overlapped device time and its worker's host dispatch (the phase table books the
    dispatch on the CPU under 'dispatch'; these loops dispatch only act and learn).
    ``host_slowdown``: the issuing host's single-thread speed divided by this (its
    ``cpu.ipc_factor``), as every CPU-side cost of the simulation scales with it."""
    spec = host_spec_for(trace, gpu)
    if host_slowdown != 1.0:
        raw = spec.model_dump(mode="json", exclude_none=True)
        raw["cpu"]["ipc_factor"] = raw["cpu"].get("ipc_factor", 1.0) / host_slowdown
        spec = parse_spec(raw, where="host speed")
    frame = simulate(trace, spec, seed=0).phases_frame()
    rows = frame[frame["phase"] == phase]
    worker = rows["worker"].iloc[0]
    host = frame[(frame["worker"] == worker) & (frame["phase"] == "dispatch")]
    total = float(rows["time_s"].sum()) + float(host["time_s"].sum())
    return 1e6 * total / max(int(rows["count"].sum()), 1)


def moved_rows(preset: str) -> None:
    """CPU captures placed on the GPU, no coefficient taken from the GPU captures
    (GpuModel.moved_host_s: the CPU capture's framework share plus kernels x dispatch_s,
    the blocking copies in and out, the device), against the GPU captures of the same
    loop. Beside each: the measured GPU / CPU-share ratio, and the env step's GPU / CPU
    capture time: the host's own speed between the captures, which no prediction from the
    CPU capture sees. DQN's env step runs no torch, so it measures the issuing host's
    single-thread speed in the GPU run itself; the host-calibrated column simulates the
    same CPU capture with the issuing core slowed by it (nothing else from the GPU
    capture). PPO's env step stores the rollout on the GPU: no such calibration."""
    r = framework_ratios()
    print(f"\nCPU captures with act and learn moved to {preset}: time per op against the GPU "
          "capture of the same loop (us; the model: the CPU capture's framework share + "
          "kernels x dispatch_s, blocking copies, device; nothing fitted on these captures)")
    for phase in ("act", "learn"):
        print(f"  {phase}:")
        for x in r[r["phase"] == phase].itertuples():
            cpu = load_trace(H200 / f"{MOVED[x.loop][0]}.parquet")
            sim = simulated_us(cpu, preset, phase)
            line = (f"    {x.loop:9} {x.run}: measured {x.gpu_us:6.0f}, simulated {sim:6.0f} "
                    f"({100 * (sim / x.gpu_us - 1):+5.1f} %); measured / CPU share x{x.ratio:.2f};"
                    f" env step GPU / CPU capture x{x.env_step_drift:.2f}")
            if x.family == "dqn":
                cal = simulated_us(cpu, preset, phase, host_slowdown=x.env_step_drift)
                line += (f"; host-calibrated {cal:6.0f} ({100 * (cal / x.gpu_us - 1):+5.1f} %)")
            else:
                line += "; host-calibrated n/a (env step runs torch)"
            print(line)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="h200-measured", help="gpu preset (default "
                    "h200-measured)")
    args = ap.parse_args()
    print(f"GPU captures replayed with act and learn on {args.preset} (rldse check-replay --gpu; "
          "the host side is each capture's own, so the totals check the device side and "
          "the bookkeeping, not dispatch):")
    for path in sorted(H200.glob("*gpu*.parquet")):
        table, _ = check_replay(load_trace(path), gpu=args.preset)
        err = table["error"]
        print(f"  {path.name:24} total {100 * err['TOTAL (wall)']:+6.1f} %, "
              + ", ".join(f"{p} {100 * err[p]:+.1f} %" for p in ("act", "learn") if p in err))
    print(f"\nDQN learner, batch 32 -> 128, on {args.preset} (per update, means):")
    for run in RUNS:
        small = load_trace(H200 / f"dqn_gpu_b32_{run}.parquet")
        big = load_trace(H200 / f"dqn_gpu_b128_{run}.parquet")
        pred = learner_us_per_update(small, args.preset, batch=128)
        same = learner_us_per_update(small, args.preset)
        meas_small, meas_big = mean_us(small, "learn"), mean_us(big, "learn")
        drift = mean_us(big, "env_step") / mean_us(small, "env_step")
        print(f"  {run}: measured {meas_small:.0f} -> {meas_big:.0f} us (x{meas_big / meas_small:.3f}"
              f"; env_step x{drift:.3f}); predicted {same:.0f} -> {pred:.0f} us "
              f"(x{pred / same:.3f}); error at 128 {100 * (pred / meas_big - 1):+.1f} %, "
              f"of the ratio {100 * ((pred / same) / (meas_big / meas_small) - 1):+.1f} %")
    small, big = (load_trace(H200 / f"dqn_cpu_b{b}.parquet") for b in (32, 128))
    raw = {"name": "capture-host", "cpu": {"preset": "host"}, "workload": {"batch_size": 128}}
    frame = simulate(small, parse_spec(raw, where="what-if"), seed=0).phases_frame()
    rows = frame[frame["phase"] == "learn"]
    pred = 1e6 * float(rows["time_s"].sum()) / int(rows["count"].sum())
    meas = 1e6 * float(big.ops.loc[big.ops["phase"] == "learn", "dur_s"].mean())
    sumtree_rows(args.preset)
    tempo_rows(args.preset)
    dispatch_rows()
    moved_rows(args.preset)
    print(f"\nsame host, learner on its CPU (one torch thread), batch 32 -> 128: predicted "
          f"{pred:.0f} us, measured {meas:.0f} us (means), error {100 * (pred / meas - 1):+.1f} %")


if __name__ == "__main__":
    main()
