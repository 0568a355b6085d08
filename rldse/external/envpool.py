"""Data set "envpool": EnvPool's published Atari Pong throughput against workers (sail-sg/envpool
docs/content/benchmark.rst; data/README.md) predicted from this host's capture of the same
loop (benchmarks/external/envpool_capture.py → data/envpool_capture.json) and spec-sheet
CPU presets.

Machines: ``Laptop`` is the ``i7-8750h`` preset; ``DGX-A100`` is ``epyc-7742`` with two
sockets (NVIDIA DGX A100 datasheet: dual AMD Rome 7742, 128 cores). Nothing is fitted to
the published numbers: every cost comes from the capture, scaled by the CPU model
(rldse.models.cpu, "Clock under load, and vector envs").

- ``for-loop`` (gym's SyncVectorEnv, one process): an env step costs the host's CPU seconds
  per step × ``single_thread_scale(1)``: one core busy, at its single-core turbo.
- ``subprocess`` (gym 0.23's AsyncVectorEnv, one worker per env): ``subprocess_batch_seconds``
  with the host's env step, its round trip through a worker that does no env work, and the
  main process's serial cost per further worker: one blocking command/reply exchange through
  a pipe (the pickling benchmark's fixed cost per message, sender side) plus the deep copy
  of that worker's observation out of shared memory at the host's copy rate.

MuJoCo Ant is not predicted: MuJoCo does not install here, so there is no capture.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pandas as pd

from rldse.external import ROW_COLUMNS, Dataset, register
from rldse.host import HostFingerprint
from rldse.models.cpu import CpuModel
from rldse.models.presets import cpu_from_host, load_part

DATA = Path(__file__).with_name("data")
TABLE = DATA / "envpool_throughput.csv"
CAPTURE = DATA / "envpool_capture.json"
FRAME_SKIP = 4  # Atari frames per env step (published frames/s = steps/s × 4)
#: Published machine → (device label, preset, overrides).
MACHINES = {"Laptop": ("Laptop i7-8750H", "i7-8750h", {}),
            "DGX-A100": ("DGX-A100 2x EPYC 7742", "epyc-7742", {"sockets": 2})}
REGIMES = {"For-loop": "for-loop", "Subprocess": "subprocess"}


@cache
def capture() -> dict:
    """The shipped capture (data/envpool_capture.json)."""
    return json.loads(CAPTURE.read_text())


def published() -> pd.DataFrame:
    """EnvPool's Atari rows of the executors rldse predicts."""
    table = pd.read_csv(TABLE)
    return table[(table["env"] == "Atari") & table["executor"].isin(list(REGIMES))]


def host_model(preset: str, **overrides) -> CpuModel:
    """The preset as a target of the capture host, whose clock is the capture's measured
    one (a VM's fingerprint clock is the nominal one) where it was measured."""
    cap = capture()
    fp = HostFingerprint.model_validate(cap["fingerprint"])
    host = cpu_from_host(fp, **({"clock_mhz": cap["clock_mhz"]} if cap["clock_mhz"] else {}))
    return CpuModel(load_part("cpu", preset, **overrides), host)


def step_costs() -> tuple[float, float, float]:
    """Host seconds: (env step CPU, worker round trip wall, main's serial cost per worker)."""
    cap = capture()
    fp = cap["fingerprint"]
    copy_s = 2 * cap["loop"]["obs_bytes"] / (fp["copy_gbs"] * 1e9)  # read + write
    per_worker = cap["pipe"]["send_fixed_s"] + copy_s
    return (cap["loop"]["cpu_s_per_step"], cap["subprocess"]["stub_wall_s_per_step_1_worker"],
            per_worker)


def predict_frames_per_s(model: CpuModel, executor: str, workers: int) -> float:
    step_s, round_trip_s, per_worker_s = step_costs()
    if executor == "For-loop":
        return FRAME_SKIP / (step_s * model.single_thread_scale(1))
    batch_s = model.subprocess_batch_seconds(step_s, workers, round_trip_s, per_worker_s)
    return FRAME_SKIP * workers / batch_s


def rows() -> pd.DataFrame:
    out = []
    for r in published().itertuples(index=False):
        device, preset, overrides = MACHINES[r.machine]
        model = host_model(preset, **overrides)
        out.append(("envpool", device, REGIMES[r.executor], f"workers={r.workers}",
                    float(r.frames_per_s), predict_frames_per_s(model, r.executor, r.workers),
                    "frames/s"))
    return pd.DataFrame(out, columns=list(ROW_COLUMNS))


register(Dataset(
    name="envpool",
    description="Atari Pong frames/s against workers, gym for-loop and subprocess vector "
                "env, on EnvPool's laptop (i7-8750H) and DGX-A100 (2x EPYC 7742), from this "
                "host's capture of the same loop",
    citation="sail-sg/envpool docs/content/benchmark.rst (commit 9cbcd267, Apache-2.0); "
             "Weng et al., EnvPool, NeurIPS 2022 Datasets and Benchmarks, arXiv 2206.10558",
    rows=rows,
    part_of={device: f"cpu/{preset}" for device, preset, _ in MACHINES.values()}.__getitem__))
