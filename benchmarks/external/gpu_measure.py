"""Measure rldse's GPU model on a real GPU, everything in one run.

A GPU machine is lent only sometimes and briefly, so this one script does every
measurement in one go, each section writing its own file under ``--out`` as it finishes
(a late failure or the time limit loses only what had not run):

- ``env.json``: the GPU, driver, clocks and power limit (nvidia-smi), PyTorch and CUDA.
- ``calibrate/``: ``rldse calibrate gpu`` on this device (dispatch, kernel overhead,
  copies, GEMM curve, dependent loads, sum tree, NVML power) as a preset on the
  datasheet preset the device name implies.
- ``captures/``: CartPole DQN (batch 32 and 128) and PPO recorded with
  ``rldse.recording`` with the networks on the GPU, so host dispatch (row wall time) and
  kernel time (CUDA events per row) are split; the DQN pair is the batch 32 → 128
  what-if, measured.
- ``sumtree.csv``: proportional sampling and priority update on an array sum tree at
  capacities 2^13-2^20 and batches 32 and 256: eager PyTorch (wall per call and device
  time per call), one CUDA-graph replay, and one fused Triton kernel each.
- ``tempo.json``: Tempo's encoder weight gradient (B = 256 samples, F = 196,608 =
  3×256×256 features, H = 64 units): dW = Σ_b x_b ⊗ g_b as a cuBLAS GEMM (TF32 off and
  on), as an eager broadcast-multiply-reduce, and (``--only tempo_jax``, in its own
  process so JAX and PyTorch do not share the GPU's memory) as XLA compiles it.
- ``neusight.csv``: nn.Linear, torch.bmm and element-wise (add, mul, relu, tanh) shapes
  of NeuSight's data set (``rldse/external/data/neusight.csv.gz``) measured as NeuSight
  did (one eager call between CUDA events, TF32 off, mean of the fastest 5 of 25),
  plus each call's device time (calls queued behind a GPU sleep) and host enqueue time.
  Shapes run in a seeded round-robin over the groups until the section's budget ends.

    python benchmarks/external/gpu_measure.py --out DIR [--device cuda:0] [--budget-s 330]
    python benchmarks/external/gpu_measure.py --out DIR --only tempo_jax

``--device cpu`` runs every code path on this CPU with wall times (for checking the
script here, not for numbers). Not run by the tests.
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import traceback
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

NEUSIGHT = ROOT / "rldse" / "external" / "data" / "neusight.csv.gz"
#: Tempo's REINFORCE encoder at 3×256×256 observations, 256 envs, 64 units.
TEMPO_B, TEMPO_F, TEMPO_H = 256, 3 * 256 * 256, 64
SUMTREE_LOG2 = (13, 14, 17, 20)
SUMTREE_BATCHES = (32, 256)


# ---- timing ------------------------------------------------------------------------------

class Clock:
    """How to time one call: CUDA events on a GPU, wall time on the CPU."""

    def __init__(self, torch, dev) -> None:
        self.torch, self.dev, self.cuda = torch, dev, dev.type == "cuda"

    def sync(self) -> None:
        if self.cuda:
            self.torch.cuda.synchronize(self.dev)

    def one_call(self, fn, reps: int = 25, fastest: int = 5) -> tuple[float, float]:
        """NeuSight's method: (mean of the fastest ``fastest`` of ``reps`` single calls
        between two CUDA events on an idle GPU, in ms; median host seconds of the call)."""
        torch, times, host = self.torch, [], []
        for _ in range(reps):
            self.sync()
            if self.cuda:
                start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(
                    enable_timing=True)
                start.record()
                t0 = time.perf_counter()
                fn()
                host.append(time.perf_counter() - t0)
                end.record()
                end.synchronize()
                times.append(start.elapsed_time(end))
            else:
                t0 = time.perf_counter()
                fn()
                host.append(time.perf_counter() - t0)
                times.append(host[-1] * 1e3)
        return float(np.mean(sorted(times)[:fastest])), float(statistics.median(host))

    def queued(self, fn, k: int, host_s: float) -> tuple[float, float]:
        """(device ms per call, host enqueue s per call) of ``k`` calls queued back to back
        behind a GPU sleep longer than their enqueueing, so the events time kernels only."""
        torch = self.torch
        fn()
        self.sync()
        if not self.cuda:
            t0 = time.perf_counter()
            for _ in range(k):
                fn()
            s = (time.perf_counter() - t0) / k
            return s * 1e3, s
        cycles = int(min(2e9, max(2e5, 4.0 * k * host_s * 2.0e9)))
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda._sleep(cycles)
        start.record()
        t0 = time.perf_counter()
        for _ in range(k):
            fn()
        host = (time.perf_counter() - t0) / k
        end.record()
        end.synchronize()
        return start.elapsed_time(end) / k, host


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", flush=True)


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(data, indent=1, default=str))
    tmp.replace(path)


# ---- sections ----------------------------------------------------------------------------

def section_env(torch, dev, out: Path, budget_s: float) -> None:
    info = {"python": sys.version, "torch": torch.__version__, "cuda": torch.version.cuda,
            "cudnn": torch.backends.cudnn.version(), "host": platform.node(),
            "cpu": platform.processor(), "nproc": os.cpu_count(),
            "date": time.strftime("%Y-%m-%d %H:%M:%S %Z")}
    with contextlib.suppress(OSError, StopIteration), open("/proc/cpuinfo") as fh:
        info["cpu_model"] = next(ln.split(":", 1)[1].strip() for ln in fh
                                 if ln.startswith("model name"))
    if dev.type == "cuda":
        p = torch.cuda.get_device_properties(dev)
        info.update(device=p.name, sm_count=p.multi_processor_count,
                    total_memory=p.total_memory, l2_bytes=getattr(p, "L2_cache_size", None),
                    capability=f"{p.major}.{p.minor}")
        for q in ("--query-gpu=name,driver_version,power.limit,power.default_limit,"
                  "clocks.max.sm,clocks.max.mem,clocks.sm,clocks.mem,temperature.gpu,"
                  "pstate,power.draw", "--format=csv"), ("-q",):
            try:
                r = subprocess.run(["nvidia-smi", *q], capture_output=True, text=True,
                                   timeout=30)
                info["nvidia_smi" + ("_q" if q == ("-q",) else "")] = r.stdout
            except (OSError, subprocess.SubprocessError) as exc:
                info["nvidia_smi_error"] = repr(exc)
    write_json(out / "env.json", info)


def section_calibrate(torch, dev, out: Path, budget_s: float) -> None:
    from rldse.calibrate.gpu import calibrate_gpu, default_base
    from rldse.calibrate.preset_file import write_preset_file

    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    base = default_base(name) or "h100-sxm"
    slug = base.split("-")[0] if dev.type == "cuda" else "cpu"
    cal = calibrate_gpu(f"{slug}-measured", out / "calibrate", device=str(dev), base=base,
                        quick=dev.type != "cuda")
    path = write_preset_file(out / "calibrate", cal.name, cal.document)
    (out / "calibrate" / "report.txt").write_text("\n".join(cal.report) + "\n")
    log(f"calibrate: wrote {path}\n" + "\n".join(cal.report))


def dqn_update(torch, q, target, opt, s, s2, act, rew, done) -> None:
    """One DQN learn step as the loop below runs it (TD target, Huber loss, Adam)."""
    with torch.no_grad():
        y = rew + 0.99 * (1 - done) * target(s2).max(1).values
    loss = torch.nn.functional.smooth_l1_loss(q(s).gather(1, act[:, None]).squeeze(1), y)
    opt.zero_grad()
    loss.backward()
    opt.step()


def ppo_update(torch, pi, v, opt, mb, f_obs, f_act, f_logp, f_adv, ret) -> None:
    """One PPO minibatch step as the loop below runs it (clipped objective, value loss,
    entropy bonus), the minibatch ``mb`` gathered inside it."""
    dist = torch.distributions.Categorical(logits=pi(f_obs[mb]))
    ratio = torch.exp(dist.log_prob(f_act[mb]) - f_logp[mb])
    a_mb = f_adv[mb]
    a_mb = (a_mb - a_mb.mean()) / (a_mb.std() + 1e-8)
    pg = -torch.min(ratio * a_mb, ratio.clamp(0.8, 1.2) * a_mb).mean()
    vl = 0.5 * ((v(f_obs[mb]).squeeze(-1) - ret[mb]) ** 2).mean()
    loss = pg + vl - 0.01 * dist.entropy().mean()
    opt.zero_grad()
    loss.backward()
    opt.step()


def dqn_cartpole(torch, dev, path: Path, steps: int, batch: int, hidden: int = 64) -> dict:
    """A minimal DQN as a user writes it (replay in numpy, a torch Q network and Adam), the
    networks on ``dev``: tests/recording/test_session.py's loop with a device."""
    import gymnasium as gym

    import rldse

    learning_starts, learn_every, target_sync, cap = 200, 2, 250, 10_000
    torch.manual_seed(0)
    rng = np.random.default_rng(0)
    env = gym.make("CartPole-v1")

    def net():
        return torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.ReLU(),
                                   torch.nn.Linear(hidden, 2)).to(dev)

    q, target = net(), net()
    target.load_state_dict(q.state_dict())
    opt = torch.optim.Adam(q.parameters(), lr=1e-3)
    obs_buf = np.zeros((cap, 4), np.float32)
    next_buf = np.zeros((cap, 4), np.float32)
    act_buf = np.zeros(cap, np.int64)
    rew_buf = np.zeros(cap, np.float32)
    done_buf = np.zeros(cap, np.float32)
    t0 = time.perf_counter()
    with rldse.recording(path, loop="off_policy", env_id="CartPole-v1", network=q,
                         batch_size=batch, replay_capacity=cap, learning_starts=learning_starts,
                         learn_every=learn_every, target_sync=target_sync) as rec:
        with rec.phase("env_reset"):
            obs, _ = env.reset(seed=0)
        ep = 0.0
        for step in range(steps):
            eps = max(0.05, 1.0 - step / 1000)
            if rng.random() < eps:
                with rec.phase("act", flops=0, bytes=0):
                    a = int(rng.integers(2))
            else:
                with rec.phase("act"), torch.no_grad():
                    a = int(q(torch.as_tensor(obs, device=dev).unsqueeze(0)).argmax())
            with rec.phase("env_step"):
                nxt, r, term, trunc, _ = env.step(a)
            with rec.phase("replay_add"):
                i = step % cap
                obs_buf[i], next_buf[i], act_buf[i], rew_buf[i], done_buf[i] = \
                    obs, nxt, a, r, term
            ep += r
            if term or trunc:
                rec.episode(ep)
                ep = 0.0
                with rec.phase("env_reset"):
                    obs, _ = env.reset()
            else:
                obs = nxt
            if step >= learning_starts and step % learn_every == 0:
                with rec.phase("learn"):
                    with rec.phase("replay_sample"):
                        idx = rng.integers(min(step + 1, cap), size=batch)
                        s = torch.as_tensor(obs_buf[idx], device=dev)
                        s2 = torch.as_tensor(next_buf[idx], device=dev)
                        act = torch.as_tensor(act_buf[idx], device=dev)
                        rew = torch.as_tensor(rew_buf[idx], device=dev)
                        done = torch.as_tensor(done_buf[idx], device=dev)
                    dqn_update(torch, q, target, opt, s, s2, act, rew, done)
            if step % target_sync == 0 and step > 0:
                with rec.phase("sync", items=1):
                    target.load_state_dict(q.state_dict())
    env.close()
    return {"wall_s": time.perf_counter() - t0}


def ppo_cartpole(torch, dev, path: Path, iters: int, n_envs: int = 4, rollout: int = 128,
                 minibatch: int = 128, epochs: int = 4, hidden: int = 64) -> dict:
    """A minimal PPO as a user writes it: a vector of CartPole envs, policy and value MLPs
    on ``dev``, GAE, clipped objective; phases tiled as the SB3 integration tiles PPO."""
    import gymnasium as gym

    import rldse

    torch.manual_seed(0)
    envs = gym.vector.SyncVectorEnv([lambda: gym.make("CartPole-v1")] * n_envs)

    def mlp(out_dim):
        return torch.nn.Sequential(torch.nn.Linear(4, hidden), torch.nn.Tanh(),
                                   torch.nn.Linear(hidden, hidden), torch.nn.Tanh(),
                                   torch.nn.Linear(hidden, out_dim)).to(dev)

    pi, v = mlp(2), mlp(1)
    opt = torch.optim.Adam([*pi.parameters(), *v.parameters()], lr=2.5e-4)
    obs_b = torch.zeros((rollout, n_envs, 4), device=dev)
    act_b = torch.zeros((rollout, n_envs), dtype=torch.long, device=dev)
    logp_b, rew_b, done_b, val_b = (torch.zeros((rollout, n_envs), device=dev)
                                    for _ in range(4))
    ep_ret = np.zeros(n_envs)
    t0 = time.perf_counter()
    with rldse.recording(path, loop="on_policy", env_id="CartPole-v1",
                         network={"policy": pi, "value": v}, envs_per_actor=n_envs,
                         n_envs=n_envs, rollout_len=rollout, minibatch_size=minibatch,
                         epochs=epochs) as rec:
        with rec.phase("env_reset"):
            obs, _ = envs.reset(seed=0)
        for _ in range(iters):
            for t in range(rollout):
                with rec.phase("act"), torch.no_grad():
                    o = torch.as_tensor(obs, device=dev)
                    dist = torch.distributions.Categorical(logits=pi(o))
                    a = dist.sample()
                    logp, val = dist.log_prob(a), v(o).squeeze(-1)
                    a_np = a.cpu().numpy()
                with rec.phase("env_step"):
                    obs2, r, term, trunc, _ = envs.step(a_np)
                    d = np.logical_or(term, trunc)
                    obs_b[t], act_b[t], logp_b[t], val_b[t] = o, a, logp, val
                    rew_b[t] = torch.as_tensor(r, device=dev)
                    done_b[t] = torch.as_tensor(d, dtype=torch.float32, device=dev)
                ep_ret += r
                for i in np.flatnonzero(d):  # the vector env reset it inside its step
                    rec.episode(float(ep_ret[i]))
                    ep_ret[i] = 0.0
                    with rec.phase("env_reset", items=1):
                        pass
                obs = obs2
            with rec.phase("rollout_add"), torch.no_grad():
                nv = v(torch.as_tensor(obs, device=dev)).squeeze(-1)
                adv = torch.zeros_like(rew_b)
                last = torch.zeros(n_envs, device=dev)
                for t in reversed(range(rollout)):
                    nxt_v = nv if t == rollout - 1 else val_b[t + 1]
                    delta = rew_b[t] + 0.99 * nxt_v * (1 - done_b[t]) - val_b[t]
                    last = delta + 0.99 * 0.95 * (1 - done_b[t]) * last
                    adv[t] = last
                ret = (adv + val_b).flatten()
                f_obs, f_act = obs_b.reshape(-1, 4), act_b.flatten()
                f_logp, f_adv = logp_b.flatten(), adv.flatten()
            n = rollout * n_envs
            for _ in range(epochs):
                perm = torch.randperm(n, device=dev)
                for lo in range(0, n, minibatch):
                    with rec.phase("learn"):
                        ppo_update(torch, pi, v, opt, perm[lo:lo + minibatch], f_obs, f_act,
                                   f_logp, f_adv, ret)
            with rec.phase("sync", items=1):
                pass  # one process: the actor already holds the learner's parameters
    envs.close()
    return {"wall_s": time.perf_counter() - t0}


def section_captures(torch, dev, out: Path, budget_s: float, steps: int = 4000,
                     batches: tuple[int, ...] = (32, 128)) -> None:
    """The DQN pair and PPO with the networks on ``dev`` (on the CPU: one torch thread, as
    the shipped CPU captures run), named by device kind."""
    d = out / "captures"
    d.mkdir(parents=True, exist_ok=True)
    quick = dev.type != "cuda" and steps < 4000
    if dev.type != "cuda":
        torch.set_num_threads(1)
    summary = {}
    for batch in batches:
        path = d / f"dqn_cartpole_{dev.type}_b{batch}.parquet"
        summary[path.name] = dqn_cartpole(torch, dev, path, steps, batch)
        log(f"captures: {path.name} {summary[path.name]}")
    path = d / f"ppo_cartpole_{dev.type}.parquet"
    summary[path.name] = ppo_cartpole(torch, dev, path, iters=2 if quick else 8)
    log(f"captures: {path.name} {summary[path.name]}")
    write_json(d / "captures.json", summary)


def sumtree_eager(torch, dev, log_cap: int, batch: int):
    """rldse.calibrate.gpu's eager array sum tree (leaves at [cap, 2cap))."""
    from rldse.calibrate.gpu import _sumtree

    return _sumtree(torch, dev, log_cap, batch)


def triton_sumtree():
    """A fused sum-tree sample and update: one Triton kernel each, one thread per sample,
    every level's load (and, for updates, an atomic add of the leaf's change per level)
    inside the kernel."""
    import triton
    import triton.language as tl

    @triton.jit
    def sample_kernel(tree, u_ptr, out, n, cap, LEVELS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        u = tl.load(u_ptr + offs, mask=mask, other=0.0)
        idx = tl.full((BLOCK,), 1, tl.int64)
        for _ in tl.static_range(LEVELS):
            left = tl.load(tree + 2 * idx, mask=mask, other=0.0)
            right = u > left
            u = tl.where(right, u - left, u)
            idx = 2 * idx + right.to(tl.int64)
        tl.store(out + offs, idx - cap, mask=mask)

    @triton.jit
    def update_kernel(tree, idx_ptr, val_ptr, n, LEVELS: tl.constexpr, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        idx = tl.load(idx_ptr + offs, mask=mask, other=1)
        val = tl.load(val_ptr + offs, mask=mask, other=0.0)
        old = tl.load(tree + idx, mask=mask, other=0.0)
        delta = val - old
        tl.store(tree + idx, val, mask=mask)
        for _ in tl.static_range(LEVELS):
            idx = idx // 2
            tl.atomic_add(tree + idx, delta, mask=mask)

    return sample_kernel, update_kernel


def section_sumtree(torch, dev, out: Path, budget_s: float) -> None:
    from rldse.calibrate.gpu import capture_graph, count_ops

    clock = Clock(torch, dev)
    rows, path = [], out / "sumtree.csv"
    try:
        sample_k, update_k = triton_sumtree() if dev.type == "cuda" else (None, None)
        triton_note = "" if sample_k else "no GPU"
    except Exception as exc:  # noqa: BLE001 - no Triton: the other variants still run
        sample_k = update_k = None
        triton_note = f"{type(exc).__name__}: {exc}"
    for log_cap in SUMTREE_LOG2:
        for batch in SUMTREE_BATCHES:
            cap = 1 << log_cap
            sample, update = sumtree_eager(torch, dev, log_cap, batch)
            row = {"capacity": cap, "levels": log_cap, "batch": batch,
                   "eager_sample_ops": count_ops(torch, sample),
                   "eager_update_ops": count_ops(torch, update)}
            for key, fn in (("sample", sample), ("update", update)):
                ms, host = clock.one_call(fn, reps=15, fastest=5)
                dev_ms, enq = clock.queued(fn, 10, host)
                row.update({f"eager_{key}_call_ms": ms, f"eager_{key}_device_ms": dev_ms,
                            f"eager_{key}_enqueue_ms": enq * 1e3})
                if dev.type == "cuda":
                    try:
                        g = capture_graph(torch, fn)
                        ms, host = clock.one_call(g.replay, reps=15, fastest=5)
                        dev_ms, _ = clock.queued(g.replay, 10, host)
                        row.update({f"graph_{key}_call_ms": ms, f"graph_{key}_device_ms": dev_ms})
                    except Exception as exc:  # noqa: BLE001 - graphs unavailable
                        row[f"graph_{key}_error"] = f"{type(exc).__name__}: {exc}"
            if sample_k is not None:
                row.update(_fused_sumtree(torch, dev, clock, sample_k, update_k, log_cap, batch))
            else:
                row["fused_error"] = triton_note
            rows.append(row)
            log(f"sumtree: {row}")
            _write_rows(path, rows)


def _fused_sumtree(torch, dev, clock, sample_k, update_k, log_cap: int, batch: int) -> dict:
    """Time the Triton kernels and check them against the eager tree's answers."""
    from rldse.calibrate.gpu import sumtree_array

    cap = 1 << log_cap
    gen = torch.Generator(device="cpu").manual_seed(1)
    tree = sumtree_array(torch, dev, log_cap, gen)
    u = torch.rand(batch, generator=gen).to(dev) * tree[1]
    out = torch.empty(batch, dtype=torch.int64, device=dev)
    block = 128
    grid = (triton_cdiv(batch, block),)

    def sample():
        sample_k[grid](tree, u, out, batch, cap, LEVELS=log_cap, BLOCK=block)

    sample()
    leaves = tree[cap:]
    cum = torch.cumsum(leaves.double(), 0)
    want = torch.searchsorted(cum, u.double(), right=True).clamp(max=cap - 1)
    agree = float((out == want).float().mean())  # fp32 descent vs fp64 cumsum: ties aside
    idx = torch.randperm(cap, generator=gen)[:batch].to(dev) + cap
    val = torch.rand(batch, generator=gen).to(dev)

    def update():
        update_k[grid](tree, idx, val, batch, LEVELS=log_cap, BLOCK=block)

    update()
    root_err = float(abs(tree[1] - tree[cap:].double().sum()) / tree[1])
    res = {"fused_sample_agree": agree, "fused_update_root_rel_err": root_err}
    for key, fn in (("sample", sample), ("update", update)):
        ms, host = clock.one_call(fn, reps=15, fastest=5)
        dev_ms, enq = clock.queued(fn, 20, host)
        res.update({f"fused_{key}_call_ms": ms, f"fused_{key}_device_ms": dev_ms,
                    f"fused_{key}_enqueue_ms": enq * 1e3})
    return res


def triton_cdiv(a: int, b: int) -> int:
    return -(-a // b)


def section_tempo_torch(torch, dev, out: Path, budget_s: float) -> None:
    b, f, h = (TEMPO_B, TEMPO_F, TEMPO_H) if dev.type == "cuda" else (16, 3 * 32 * 32, 64)
    clock = Clock(torch, dev)
    gen = torch.Generator(device="cpu").manual_seed(0)
    x = torch.randn(b, f, generator=gen).to(dev)
    g = torch.randn(b, h, generator=gen).to(dev)
    res = {"B": b, "F": f, "H": h, "flops": 2 * b * f * h,
           "min_bytes": 4 * (b * f + b * h + f * h)}
    ref = None
    for tf32 in (False, True):
        torch.backends.cuda.matmul.allow_tf32 = tf32
        def fn():
            return x.t() @ g
        ms, host = clock.one_call(fn, reps=20, fastest=5)
        dev_ms, _ = clock.queued(fn, 10, host)
        res[f"gemm_tf32_{'on' if tf32 else 'off'}"] = {"call_ms": ms, "device_ms": dev_ms}
        if not tf32:
            ref = fn()
    torch.backends.cuda.matmul.allow_tf32 = False
    write_json(out / "tempo.json", res)
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 1 << 40
    if free > 2.2 * 4 * b * f * h:
        def fn():
            return (x[:, :, None] * g[:, None, :]).sum(0)
        got = fn()
        res["bmr_max_rel_err"] = float((got - ref).abs().max() / ref.abs().max())
        del got
        ms, host = clock.one_call(fn, reps=5, fastest=3)
        res["eager_broadcast_reduce"] = {"call_ms": ms, "intermediate_bytes": 4 * b * f * h}
    else:
        res["eager_broadcast_reduce"] = {"skipped": f"needs {4 * b * f * h} B, {free} free"}
    write_json(out / "tempo.json", res)
    log(f"tempo (torch): {res}")


def section_tempo_jax(out: Path, budget_s: float, cpu: bool) -> None:
    """XLA's compile of the encoder gradient as Tempo writes it (a broadcast multiply
    reduced over the batch), and of the same as a dot; cost analysis and fusion kept."""
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    log("tempo (jax): importing jax")
    import jax
    import jax.numpy as jnp

    log(f"tempo (jax): jax {jax.__version__}, devices {jax.devices()}")
    b, f, h = (16, 3 * 32 * 32, 64) if cpu else (TEMPO_B, TEMPO_F, TEMPO_H)
    k1, k2 = jax.random.split(jax.random.PRNGKey(0))
    x = jax.random.normal(k1, (b, f), jnp.float32)
    g = jax.random.normal(k2, (b, h), jnp.float32)
    res = {"B": b, "F": f, "H": h, "jax": jax.__version__, "backend": jax.default_backend(),
           "devices": [str(d) for d in jax.devices()]}
    variants = {  # the dots first: the broadcast-reduce's compile did not end in 120 s
        "dot_highest": lambda x, g: jnp.dot(x.T, g, precision=jax.lax.Precision.HIGHEST),
        "dot_default": lambda x, g: jnp.dot(x.T, g),
        "broadcast_reduce": lambda x, g: jnp.sum(x[:, :, None] * g[:, None, :], axis=0),
    }
    for name, fn in variants.items():
        try:
            log(f"tempo (jax): {name}: compiling")
            jf = jax.jit(fn)
            compiled = jf.lower(x, g).compile()
            log(f"tempo (jax): {name}: compiled, timing")
            cost = compiled.cost_analysis()
            cost = cost[0] if isinstance(cost, list) else cost
            hlo = compiled.as_text()
            jf(x, g).block_until_ready()
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                jf(x, g).block_until_ready()
                times.append(time.perf_counter() - t0)
            res[name] = {"median_ms": 1e3 * statistics.median(times),
                         "min_ms": 1e3 * min(times),
                         "xla_flops": float((cost or {}).get("flops", float("nan"))),
                         "xla_bytes": float((cost or {}).get("bytes accessed", float("nan"))),
                         "fusions": hlo.count("fusion("), "hlo_chars": len(hlo)}
            (out / f"tempo_jax_{name}.hlo.txt").write_text(hlo[:200_000])
        except Exception as exc:  # noqa: BLE001 - one variant failing keeps the others
            res[name] = {"error": f"{type(exc).__name__}: {exc}"}
        write_json(out / "tempo_jax.json", res)
    log(f"tempo (jax): {res}")


def _write_rows(path: Path, rows: list[dict]) -> None:
    keys = list(dict.fromkeys(k for r in rows for k in r))
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w", newline="") as fh:
        w = csv.DictWriter(fh, keys)
        w.writeheader()
        w.writerows(rows)
    tmp.replace(path)


def neusight_ops(torch, dev):
    """op name → (make inputs from a shape row, the call)."""

    def linear(r):
        m = torch.nn.Linear(r["N"], r["K"], bias=True, device=dev)
        x = torch.randn(r["B"] * r["M"], r["N"], device=dev)
        return lambda: m(x)

    def bmm(r):
        a = torch.randn(r["B"], r["M"], r["N"], device=dev)
        b = torch.randn(r["B"], r["N"], r["K"], device=dev)
        return lambda: torch.bmm(a, b)

    def binary(fn):
        def make(r):
            a = torch.randn(r["B"], r["H"], device=dev)
            b = torch.randn(r["B"], r["H"], device=dev)
            return lambda: fn(a, b)
        return make

    def unary(fn):
        def make(r):
            a = torch.randn(r["B"], r["H"], device=dev)
            return lambda: fn(a)
        return make

    return {"linear": linear, "bmm": bmm, "add": binary(torch.add), "mul": binary(torch.mul),
            "relu": unary(torch.relu), "tanh": unary(torch.tanh)}


def neusight_shapes() -> list[dict]:
    """NeuSight's distinct shapes per op, 'test' where any GPU's row of it is a test row."""
    import pandas as pd

    d = pd.read_csv(NEUSIGHT)
    keys = ["op", "B", "M", "N", "K", "H"]
    d["test"] = d["split"].eq("test")
    d = d.groupby(keys, dropna=False, as_index=False)["test"].any()
    d["split"] = np.where(d["test"], "test", "train")
    return [{k: (v if k in ("op", "split") else (None if pd.isna(v) else int(v)))
             for k, v in r.items() if k != "test"} for r in d.to_dict("records")]


def _shape_bytes(r: dict) -> int:
    if r["op"] == "linear":
        return 4 * (r["B"] * r["M"] * (r["N"] + r["K"]) + r["N"] * r["K"])
    if r["op"] == "bmm":
        return 4 * r["B"] * (r["M"] * r["N"] + r["N"] * r["K"] + r["M"] * r["K"])
    return 4 * 3 * r["B"] * r["H"]


def section_neusight(torch, dev, out: Path, budget_s: float, skip: int = 0) -> None:
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    clock = Clock(torch, dev)
    ops = neusight_ops(torch, dev)
    shapes = neusight_shapes()
    if dev.type != "cuda":  # checking the code path: small shapes only
        shapes = [r for r in shapes if _shape_bytes(r) < (4 << 20)]
    free = torch.cuda.mem_get_info(dev)[0] if dev.type == "cuda" else 8 << 30
    rng = np.random.default_rng(0)
    groups: dict[tuple[str, str], list[dict]] = {}
    for r in shapes:
        groups.setdefault((r["op"], r["split"]), []).append(r)
    order = []
    queues = [list(rng.permutation(len(g))) for g in groups.values()]
    for i in range(max(len(q) for q in queues)):
        order += [g[q[i]] for g, q in zip(groups.values(), queues, strict=True) if i < len(q)]
    order = order[skip:]
    deadline = time.perf_counter() + budget_s
    rows, path = [], out / "neusight.csv"
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "cpu"
    last_write = time.perf_counter()
    for r in order:
        fn = None
        if time.perf_counter() > deadline:
            break
        if 3 * _shape_bytes(r) > free:
            continue
        try:
            fn = ops[r["op"]](r)
            ms, host = clock.one_call(fn, reps=3, fastest=1)  # warm-up and size probe
            reps, k = (25, 10) if ms < 5 else (8, 3)
            ms, host = clock.one_call(fn, reps=reps, fastest=5)
            dev_ms, enq = clock.queued(fn, k, host)
            rows.append({**r, "device": name, "latency_ms": ms, "reps": reps,
                         "device_ms": dev_ms, "enqueue_us": enq * 1e6,
                         "host_call_us": host * 1e6})
        except Exception as exc:  # noqa: BLE001 - one shape (out of memory, say) skipped
            rows.append({**r, "device": name, "error": f"{type(exc).__name__}: {exc}"[:200]})
        del fn
        if time.perf_counter() - last_write > 10:
            _write_rows(path, rows)
            last_write = time.perf_counter()
    _write_rows(path, rows)
    log(f"neusight: {len(rows)} of {len(order)} shapes in {budget_s:.0f} s budget")


SECTIONS = {"env": (section_env, 5), "calibrate": (section_calibrate, 90),
            "captures": (section_captures, 60), "sumtree": (section_sumtree, 40),
            "tempo_torch": (section_tempo_torch, 20), "neusight": (section_neusight, 110)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--only", help="comma-separated sections (tempo_jax runs only this way)")
    ap.add_argument("--neusight-s", type=float, default=None,
                    help="the NeuSight sweep's time budget (default 110 s)")
    ap.add_argument("--capture-steps", type=int, help="env steps of each DQN capture "
                    "(default 4000; PPO: 8 iterations at 4000)")
    ap.add_argument("--capture-batches", help="DQN batch sizes, captured in this order "
                    "(default 32,128)")
    ap.add_argument("--neusight-skip", type=int,
                    help="skip the first N shapes of the sweep's seeded order (a second run "
                         "continues where the first ended)")
    args = ap.parse_args()
    names = args.only.split(",") if args.only else list(SECTIONS)
    unknown = [n for n in names if n not in SECTIONS and not (n == "tempo_jax" and len(names) == 1)]
    if unknown:
        ap.error(f"--only: unknown section '{unknown[0]}' (expected {', '.join(SECTIONS)}, "
                 "or tempo_jax alone)")
    for flag, value, section in (("--neusight-s", args.neusight_s, "neusight"),
                                 ("--neusight-skip", args.neusight_skip, "neusight"),
                                 ("--capture-steps", args.capture_steps, "captures"),
                                 ("--capture-batches", args.capture_batches, "captures")):
        if value is not None and section not in names:
            ap.error(f"{flag}: applies to the {section} section, which --only leaves out")
    try:
        batches = tuple(int(b) for b in (args.capture_batches or "32,128").split(","))
    except ValueError:
        ap.error(f"--capture-batches {args.capture_batches}: expected integers like 32,128")
    args.out.mkdir(parents=True, exist_ok=True)
    if names == ["tempo_jax"]:
        section_tempo_jax(args.out, 30, cpu=args.device == "cpu")
        return
    import torch

    dev = torch.device(args.device)
    errors = {}
    for name in names:
        fn, budget = SECTIONS[name]
        if name == "neusight" and args.neusight_s is not None:
            budget = args.neusight_s
        t0 = time.perf_counter()
        log(f"{name}: start")
        extra = {"neusight": {"skip": args.neusight_skip or 0},
                 "captures": {"steps": args.capture_steps or 4000,
                              "batches": batches}}.get(name, {})
        try:
            fn(torch, dev, args.out, budget, **extra)
        except Exception:  # noqa: BLE001 - one section failing keeps the others
            errors[name] = traceback.format_exc()
            log(f"{name}: FAILED\n{errors[name]}")
        log(f"{name}: {time.perf_counter() - t0:.1f} s")
        if dev.type == "cuda":
            torch.cuda.empty_cache()
        write_json(args.out / "errors.json", errors)


if __name__ == "__main__":
    main()
