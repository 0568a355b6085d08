"""EnvPool's gym benchmark loop (sail-sg/envpool benchmark/test_gym.py) captured on this host,
as unit costs the "envpool" validation data set (rldse/external/envpool.py) scales to the
published machines.

What it runs, as the published benchmark did: Pong without frame skip in the emulator
(``ALE/Pong-v5`` with frameskip=1 and no sticky actions, i.e. ``PongNoFrameskip-v4``) under
Baselines-style wrappers as that benchmark's ``wrap_deepmind(episode_life=False,
clip_rewards=False, frame_stack=4)``: no-op reset (1-30), max-and-skip 4, fire reset,
84×84 grey warp (OpenCV, INTER_AREA), frame stack 4; one fixed sampled action.

What it measures (CPU time of the thread or process, not wall: this host is shared, and
time the OS gives to other processes must not land in a unit cost):

- ``loop``: gym's SyncVectorEnv loop (step each env in turn, auto-reset, batch the
  observations and copy the batch): CPU and wall per env step, and the step's split into
  emulator work (the ALE env's own ``step``: emulation and screen copy) and the Python
  wrappers around it (a second pass with the emulator timed; its clock calls cost <1 %);
- ``pipe``: a pickled payload through a ``multiprocessing`` pipe to a child, CPU of the
  sender (pickle + write) and of the receiver (read + unpickle) per message, fitted as a
  fixed cost plus a cost per byte;
- ``subprocess``: gym 0.23's AsyncVectorEnv protocol (what ``gym.vector.make(...,
  asynchronous=True)`` built: one worker process per env, shared-memory observations,
  ``("step", action)`` commands and ``(None, reward, done, info)`` replies pickled through
  pipes, the batch deep-copied in the main process) with workers that reply at once, so
  the main process's CPU per worker step is its own serial cost; and the same protocol
  with one real env, wall per step beside the loop's;
- ``clock_mhz``: the clock one busy core runs at, from a chain of dependent integer adds
  (one cycle each) timed in thread CPU time (a VM's /proc/cpuinfo gives the nominal one);
- the host fingerprint (rldse.host) and the load average before and after.

    PYTHONPATH=. python benchmarks/external/envpool_capture.py [--steps 2000] [--repeats 3]
        [--out F]

Writes rldse/external/data/envpool_capture.json (the shipped capture) unless --out.
"""

from __future__ import annotations

import argparse
import copy
import json
import multiprocessing as mp
import os
import platform
import subprocess
import sys
import tempfile
import time
from collections import deque
from pathlib import Path

import ale_py
import cv2
import gymnasium as gym
import numpy as np

from rldse.host import measure

gym.register_envs(ale_py)
OUT = Path(__file__).resolve().parents[2] / "rldse/external/data/envpool_capture.json"
SIZE, STACK, SKIP, NOOP_MAX = 84, 4, 4, 30


class NoopReset(gym.Wrapper):
    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        for _ in range(int(self.unwrapped.np_random.integers(1, NOOP_MAX + 1))):
            obs, _, term, trunc, info = self.env.step(0)
            if term or trunc:
                obs, info = self.env.reset()
        return obs, info


class MaxAndSkip(gym.Wrapper):
    def step(self, action):
        frames, total = [], 0.0
        for _ in range(SKIP):
            obs, r, term, trunc, info = self.env.step(action)
            frames.append(obs)
            total += r
            if term or trunc:
                break
        return np.max(frames[-2:], axis=0), total, term, trunc, info


class FireReset(gym.Wrapper):
    def reset(self, **kw):
        self.env.reset(**kw)
        obs, _, _, _, info = self.env.step(1)
        return obs, info


class Warp(gym.ObservationWrapper):
    def __init__(self, env):
        super().__init__(env)
        self.observation_space = gym.spaces.Box(0, 255, (SIZE, SIZE), np.uint8)

    def observation(self, frame):
        grey = cv2.cvtColor(frame, cv2.COLOR_RGB2GRAY)
        return cv2.resize(grey, (SIZE, SIZE), interpolation=cv2.INTER_AREA)


class FrameStack(gym.Wrapper):
    def __init__(self, env):
        super().__init__(env)
        self.frames: deque = deque(maxlen=STACK)
        self.observation_space = gym.spaces.Box(0, 255, (STACK, SIZE, SIZE), np.uint8)

    def reset(self, **kw):
        obs, info = self.env.reset(**kw)
        for _ in range(STACK):
            self.frames.append(obs)
        return np.stack(self.frames), info

    def step(self, action):
        obs, r, term, trunc, info = self.env.step(action)
        self.frames.append(obs)
        return np.stack(self.frames), r, term, trunc, info


def make_env(seed: int = 0) -> gym.Env:
    env = gym.make("ALE/Pong-v5", frameskip=1, repeat_action_probability=0.0)
    env = FrameStack(Warp(FireReset(MaxAndSkip(NoopReset(env)))))
    env.reset(seed=seed)
    return env


def emulator_clock(env: gym.Env) -> list[int]:
    """Time the ALE env's own step (thread CPU ns, summed into the returned cell)."""
    base, cell = env.unwrapped, [0]
    raw = base.step

    def step(action):
        t = time.thread_time_ns()
        out = raw(action)
        cell[0] += time.thread_time_ns() - t
        return out

    base.step = step
    return cell


def sync_loop(envs: list[gym.Env], action: int, steps: int) -> tuple[float, float]:
    """SyncVectorEnv's step, ``steps`` times: (thread CPU s, wall s)."""
    c0, w0 = time.thread_time(), time.perf_counter()
    for _ in range(steps):
        obs = []
        for env in envs:
            o, _, term, trunc, _ = env.step(action)
            if term or trunc:
                o, _ = env.reset()
            obs.append(o)
        copy.deepcopy(np.stack(obs))
    return time.thread_time() - c0, time.perf_counter() - w0


def measure_loop(steps: int, repeats: int, n_envs: int = 4) -> dict:
    envs = [make_env(seed=i) for i in range(n_envs)]
    action = int(envs[0].action_space.sample())  # fixed, as test_gym.py
    sync_loop(envs, action, 50)  # warm
    runs = [sync_loop(envs, action, steps) for _ in range(repeats)]
    cells = [emulator_clock(e) for e in envs]
    timed = sync_loop(envs, action, steps)
    emu = sum(c[0] for c in cells) * 1e-9
    n = steps * n_envs
    cpu = min(r[0] for r in runs) / n
    return {"env_steps_per_run": n, "runs": repeats, "obs_bytes": STACK * SIZE * SIZE,
            "cpu_s_per_step": cpu, "wall_s_per_step": min(r[1] for r in runs) / n,
            "emulator_share": emu / timed[0],
            "emulator_cpu_s_per_step": cpu * emu / timed[0],
            "wrapper_cpu_s_per_step": cpu * (1 - emu / timed[0])}


def _echo(conn) -> None:
    """Receive payloads until None; reply b'' to each; then send own thread CPU seconds."""
    c0 = time.thread_time()
    while conn.recv() is not None:
        conn.send(b"")
    conn.send(time.thread_time() - c0)


def measure_pipe(repeats: int) -> dict:
    """Per message CPU of sending (pickle + write) and of receiving (read + unpickle) a
    uint8 array of each size through a multiprocessing pipe; least squares fixed + per byte."""
    ctx = mp.get_context("fork")
    sizes = [0, 1024, STACK * SIZE * SIZE, 4 * STACK * SIZE * SIZE, 1 << 20]
    send_s, recv_s = [], []
    for size in sizes:
        payload = np.zeros(size, np.uint8)
        n = 200 if size > 200_000 else 1000
        best_send, best_recv = np.inf, np.inf
        for _ in range(repeats):
            a, b = ctx.Pipe()
            p = ctx.Process(target=_echo, args=(b,))
            p.start()
            a.send(payload)  # warm
            a.recv()
            c0 = time.thread_time()
            for _ in range(n):
                a.send(payload)
                a.recv()
            mine = time.thread_time() - c0
            a.send(None)
            child = a.recv()
            p.join()
            best_send, best_recv = min(best_send, mine / n), min(best_recv, child / (n + 1))
        send_s.append(best_send)
        recv_s.append(best_recv)
    fit = {}
    for name, ys in (("send", send_s), ("recv", recv_s)):
        slope, fixed = np.polyfit(sizes, ys, 1)
        fit[f"{name}_fixed_s"], fit[f"{name}_s_per_byte"] = float(fixed), float(slope)
    return {"sizes_bytes": sizes, "send_cpu_s": send_s, "recv_cpu_s": recv_s, **fit,
            "note": "send includes the echo's 1-byte reply read; recv its reply write"}


def _worker(index: int, pipe, shm, real: bool, seed: int) -> None:
    """gym 0.23 AsyncVectorEnv's _worker_shared_memory, for 'step' and 'close'."""
    obs_view = np.frombuffer(shm.get_obj(), np.uint8).reshape(-1, STACK, SIZE, SIZE)[index]
    env = make_env(seed) if real else None
    stub = (np.zeros((STACK, SIZE, SIZE), np.uint8), 0.0, False,
            {"lives": 0, "episode_frame_number": 0, "frame_number": 0})
    c0 = time.thread_time()
    while True:
        cmd, data = pipe.recv()
        if cmd == "close":
            pipe.send(time.thread_time() - c0)
            return
        if real:
            obs, r, term, trunc, info = env.step(data)
            done = term or trunc
            if done:
                obs, info = env.reset()
        else:
            obs, r, done, info = stub
        np.copyto(obs_view, obs)
        pipe.send(((None, r, done, info), True))


def _async_run(n: int, steps: int, real: bool, action: int) -> tuple[float, float, float]:
    """(main CPU s per batch step, wall s per batch step, worker CPU s per step)."""
    ctx = mp.get_context("fork")  # gym 0.23's default context on Linux
    shm = ctx.Array("B", n * STACK * SIZE * SIZE)
    obs = np.frombuffer(shm.get_obj(), np.uint8).reshape(n, STACK, SIZE, SIZE)
    pipes, procs = [], []
    for i in range(n):
        a, b = ctx.Pipe()
        p = ctx.Process(target=_worker, args=(i, b, shm, real, i), daemon=True)
        p.start()
        pipes.append(a)
        procs.append(p)

    def batch():
        for pipe in pipes:
            pipe.send(("step", action))
        results, _ = zip(*[pipe.recv() for pipe in pipes], strict=True)
        _, rewards, dones, infos = zip(*results, strict=True)
        np.array(rewards), np.array(dones, bool)
        return copy.deepcopy(obs), infos

    for _ in range(20):
        batch()
    c0, w0 = time.process_time(), time.perf_counter()
    for _ in range(steps):
        batch()
    main, wall = (time.process_time() - c0) / steps, (time.perf_counter() - w0) / steps
    worker = 0.0
    for pipe, p in zip(pipes, procs, strict=True):
        pipe.send(("close", None))
        worker += pipe.recv()
        p.join()
    return main, wall, worker / (n * (steps + 20))


def measure_subprocess(steps: int, repeats: int) -> dict:
    workers = [1, 2, 4]
    main = [min(_async_run(n, steps, False, 0)[0] for _ in range(repeats)) for n in workers]
    slope, fixed = np.polyfit(workers, main, 1)
    stub = [_async_run(1, steps, False, 0) for _ in range(repeats)]
    real = [_async_run(1, steps // 4, True, 3) for _ in range(repeats)]
    return {"workers": workers, "main_cpu_s_per_batch": main,
            "main_cpu_s_per_worker_step": float(slope), "main_cpu_s_per_batch_fixed": float(fixed),
            "worker_ipc_cpu_s_per_step": min(r[2] for r in stub),
            "stub_wall_s_per_step_1_worker": min(r[1] for r in stub),
            "real_wall_s_per_step_1_worker": min(r[1] for r in real),
            "real_worker_cpu_s_per_step": min(r[2] for r in real)}


ADD_CHAIN = r"""
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#define A1 "add $1, %0\n\t"
#define A10 A1 A1 A1 A1 A1 A1 A1 A1 A1 A1
int main(int argc, char **argv) {
  long n = atol(argv[1]); unsigned long x = 0; struct timespec a, b;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
  for (long i = 0; i < n; i++) __asm__ volatile(A10 A10 A10 A10 A10 A10 A10 A10 A10 A10
                                                : "+r"(x));
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
  printf("%.6f %lu\n", (b.tv_sec - a.tv_sec) + 1e-9 * (b.tv_nsec - a.tv_nsec), x);
  return 0;
}
"""


def measure_clock_mhz(repeats: int) -> float | None:
    """One busy core's clock: 100 dependent one-cycle adds per iteration, in thread CPU
    time; the fastest repeat (None without a C compiler)."""
    with tempfile.TemporaryDirectory() as tmp:
        src, exe = Path(tmp, "chain.c"), Path(tmp, "chain")
        src.write_text(ADD_CHAIN)
        try:
            subprocess.run(["cc", "-O1", "-o", str(exe), str(src)], check=True)
        except (OSError, subprocess.CalledProcessError):
            return None
        n = 20_000_000
        best = min(float(subprocess.run([str(exe), str(n)], check=True, capture_output=True,
                                        text=True).stdout.split()[0]) for _ in range(repeats))
    return 100 * n / best / 1e6


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=2000, help="batch steps per loop run")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", type=Path, default=OUT)
    args = ap.parse_args()
    load_before = os.getloadavg()
    out = {
        "what": "EnvPool's gym loop (PongNoFrameskip-v4, Baselines wrappers) on this host; "
                "benchmarks/external/envpool_capture.py",
        "versions": {"python": platform.python_version(), "gymnasium": gym.__version__,
                     "ale_py": ale_py.__version__, "opencv": cv2.__version__,
                     "numpy": np.__version__},
        "clock_mhz": measure_clock_mhz(args.repeats),
        "loop": measure_loop(args.steps, args.repeats),
        "pipe": measure_pipe(args.repeats),
        "subprocess": measure_subprocess(args.steps, args.repeats),
        "fingerprint": measure().model_dump(mode="json"),
    }
    out["load_average_before_after"] = [load_before[0], os.getloadavg()[0]]
    args.out.write_text(json.dumps(out, indent=1) + "\n")
    json.dump({k: v for k, v in out.items() if k != "fingerprint"}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
