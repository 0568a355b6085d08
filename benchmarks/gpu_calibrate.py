"""Measure, on a real NVIDIA GPU, the quantities rldse's GPU model claims.

Not part of the package (rldse never needs a GPU): run it where PyTorch and CuPy see a
GPU, and record its JSON beside the part it calibrates (rldse/models/calibration/).

    python benchmarks/gpu_calibrate.py OUT.json

What it measures, and the model term each one checks:
- launch_us: back-to-back launches of a 1-element kernel, host-side cost per launch
  (GPU model: launch overhead per kernel); sync_us: one launch + synchronize round trip.
- h2d / d2h copies, pageable and pinned, 4 B .. 64 MiB: fixed cost + bytes / bandwidth
  (GPU model: copy_fixed_s and the host link's bandwidth), fitted by least squares.
- dependent_load_ns: one thread chasing a random pointer cycle over 1 GiB of global
  memory (GPU model: per-level latency of sum-tree descents).
- copy_gbs: device-to-device copy of 2 GiB, bytes read + written (memory bandwidth).
- fp32_tflops: 8192^3 fp32 matmul with TF32 off (peak FP32 for the roofline).
- mlp: forward and full training step (forward, backward, Adam) of the DQN-sized MLPs
  rldse captures, at several batch sizes, with the flops and kernel count per step.
- sumtree: batched proportional sampling on a GPU sum tree, one gather per level, for
  capacities 2^13..2^20 and batches 32..1024 (the GPU baseline of the AMPER study).
"""

from __future__ import annotations

import json
import sys
import time

import cupy as cp
import numpy as np
import torch

DEV = torch.device("cuda")


def cuda_time_ms(fn, reps: int, warmup: int = 5) -> float:
    """Median of `reps` CUDA-event timings of fn(), in ms."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fn()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b))
    return float(np.median(times))


def wall_us(fn, reps: int, warmup: int = 5) -> float:
    """Median wall time of fn() followed by a synchronize, in µs."""
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        torch.cuda.synchronize()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)) * 1e6


def launch_overhead() -> dict:
    x = torch.zeros(1, device=DEV)
    n = 20000
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    for _ in range(n):
        x.add_(1.0)
    torch.cuda.synchronize()
    per_launch_us = (time.perf_counter() - t0) / n * 1e6
    return {"launch_us": per_launch_us, "sync_us": wall_us(lambda: x.add_(1.0), 2000)}


def copies() -> dict:
    sizes = [4, 64, 1024, 4096, 16384, 65536, 262144, 1 << 20, 4 << 20, 16 << 20, 64 << 20]
    out = {}
    for pinned in (False, True):
        for direction in ("h2d", "d2h"):
            rows = []
            for n in sizes:
                host = torch.empty(n, dtype=torch.uint8, pin_memory=pinned)
                dev = torch.empty(n, dtype=torch.uint8, device=DEV)
                if direction == "h2d":
                    us = wall_us(lambda h=host, d=dev: d.copy_(h), 200 if n < (4 << 20) else 30)
                else:
                    us = wall_us(lambda h=host, d=dev: h.copy_(d), 200 if n < (4 << 20) else 30)
                rows.append((n, us))
            b = np.array([r[0] for r in rows], dtype=float)
            t = np.array([r[1] for r in rows]) * 1e-6
            big = b >= (1 << 20)
            gbs = float(np.polyfit(b[big], t[big], 1)[0]) ** -1 / 1e9
            out[f"{direction}_{'pinned' if pinned else 'pageable'}"] = {
                "points_bytes_us": rows, "fixed_us": rows[0][1], "bandwidth_gbs": gbs}
    return out


CHASE = cp.RawKernel(r"""
extern "C" __global__ void chase(const unsigned int* next, unsigned int start, int steps,
                                 unsigned int* sink) {
    unsigned int p = start;
    for (int i = 0; i < steps; ++i) p = next[p];
    *sink = p;
}
""", "chase")


def dependent_load() -> dict:
    n = (1 << 30) // 4  # 1 GiB of uint32: far larger than L2
    rng = np.random.default_rng(0)
    perm = rng.permutation(n).astype(np.uint32)
    nxt = np.empty(n, dtype=np.uint32)
    nxt[perm] = np.roll(perm, -1)  # one cycle through every element
    d_next = cp.asarray(nxt)
    sink = cp.zeros(1, dtype=cp.uint32)
    res = {}
    for steps in (10000, 100000):
        CHASE((1,), (1,), (d_next, np.uint32(perm[0]), np.int32(steps), sink))
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        CHASE((1,), (1,), (d_next, np.uint32(perm[0]), np.int32(steps), sink))
        cp.cuda.Device().synchronize()
        res[steps] = (time.perf_counter() - t0) / steps * 1e9
    # difference of the two removes the launch cost
    per = (res[100000] * 100000 - res[10000] * 10000) / 90000
    return {"dependent_load_ns": per, "raw": res}


def bandwidth_and_peak() -> dict:
    src = torch.empty(1 << 31, dtype=torch.uint8, device=DEV)
    dst = torch.empty_like(src)
    ms = cuda_time_ms(lambda: dst.copy_(src), 20)
    copy_gbs = 2 * src.numel() / (ms * 1e-3) / 1e9
    src = dst = None  # free 4 GiB before the matmuls
    torch.backends.cuda.matmul.allow_tf32 = False
    n = 8192
    x = torch.randn(n, n, device=DEV)
    y = torch.randn(n, n, device=DEV)
    ms = cuda_time_ms(lambda: x @ y, 10)
    fp32 = 2 * n**3 / (ms * 1e-3) / 1e12
    torch.backends.cuda.matmul.allow_tf32 = True
    ms = cuda_time_ms(lambda: x @ y, 10)
    tf32 = 2 * n**3 / (ms * 1e-3) / 1e12
    return {"copy_gbs": copy_gbs, "fp32_tflops": fp32, "tf32_tflops": tf32}


def mlp_steps() -> dict:
    torch.backends.cuda.matmul.allow_tf32 = False
    out = {}
    for sizes in ([4, 128, 128, 2], [3, 256, 256, 1], [4, 64, 64, 2]):
        layers = []
        for i, o in zip(sizes[:-1], sizes[1:], strict=True):
            layers += [torch.nn.Linear(i, o), torch.nn.ReLU()]
        net = torch.nn.Sequential(*layers[:-1]).to(DEV)
        opt = torch.optim.Adam(net.parameters(), lr=1e-3)
        key = "-".join(map(str, sizes))
        out[key] = {}
        for batch in (1, 32, 128, 1024, 8192):
            x = torch.randn(batch, sizes[0], device=DEV)
            tgt = torch.randn(batch, sizes[-1], device=DEV)

            def fwd(x=x, net=net):
                with torch.no_grad():
                    net(x)

            def step(x=x, tgt=tgt, net=net, opt=opt):
                opt.zero_grad(set_to_none=True)
                loss = torch.nn.functional.mse_loss(net(x), tgt)
                loss.backward()
                opt.step()

            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                step()
                torch.cuda.synchronize()
            kernels = sum(1 for e in prof.events() if e.device_type.name == "CUDA")
            out[key][batch] = {"forward_us": wall_us(fwd, 300), "step_us": wall_us(step, 300),
                               "step_kernels": kernels}
    return out


def sumtree_sampling() -> dict:
    """Array sum tree (leaves at [cap, 2cap)); batched descent, one gather per level."""
    out = {}
    for log_cap in (13, 15, 17, 20):
        cap = 1 << log_cap
        tree = torch.zeros(2 * cap, device=DEV)
        tree[cap:] = torch.rand(cap, device=DEV)
        for level in range(log_cap - 1, -1, -1):
            lo = 1 << level
            tree[lo:2 * lo] = tree[2 * lo:4 * lo:2] + tree[2 * lo + 1:4 * lo:2]
        for batch in (32, 256, 1024):
            def sample(batch=batch, cap=cap, log_cap=log_cap, tree=tree):
                u = torch.rand(batch, device=DEV) * tree[1]
                idx = torch.ones(batch, dtype=torch.long, device=DEV)
                for _ in range(log_cap):
                    left = tree[2 * idx]
                    go_right = u > left
                    u = torch.where(go_right, u - left, u)
                    idx = 2 * idx + go_right.long()
                return idx - cap

            def update(batch=batch, cap=cap, log_cap=log_cap, tree=tree):
                idx = torch.randint(cap, 2 * cap, (batch,), device=DEV)
                tree[idx] = torch.rand(batch, device=DEV)
                for _ in range(log_cap):
                    idx = idx // 2
                    tree[idx] = tree[2 * idx] + tree[2 * idx + 1]

            out[f"{cap}/{batch}"] = {"sample_us": wall_us(sample, 200),
                                     "update_us": wall_us(update, 200), "levels": log_cap}
    return out


def main() -> None:
    path = sys.argv[1] if len(sys.argv) > 1 else "gpu_calibration.json"
    props = torch.cuda.get_device_properties(0)
    result = {"device": props.name, "sms": props.multi_processor_count,
              "memory_bytes": props.total_memory, "torch": torch.__version__,
              "cuda": torch.version.cuda}
    for name, fn in [("launch", launch_overhead), ("copies", copies),
                     ("dependent_load", dependent_load), ("bandwidth", bandwidth_and_peak),
                     ("mlp", mlp_steps), ("sumtree", sumtree_sampling)]:
        t0 = time.perf_counter()
        result[name] = fn()
        print(f"{name}: done in {time.perf_counter() - t0:.1f} s", flush=True)
        print(json.dumps(result[name], indent=1)[:3000], flush=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1)
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
