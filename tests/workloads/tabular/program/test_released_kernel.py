"""SwiftRL's released DPU kernel (``workload.pim_kernel: released``): every tasklet runs the
whole loop in FP64 on a uint8 table, one launch, one gather. Checked against its closed
form from the PIM model's own terms, and against rldse's split INT32 kernel."""

from __future__ import annotations

from functools import cache

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.sim import simulate
from rldse.sim.machine import Machine
from rldse.system import parse_spec
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.tabular import train
from rldse.workloads.tabular.program.offline import offline_loop
from rldse.workloads.tabular.program.released import released_mix

PIM_HOST = {"cpu": {"preset": "xeon-silver-4215", "sockets": 2}, "pim": {"preset": "upmem-p21"},
            "placement": {"q_update": "pim"}}


@cache
def frozenlake_trace(tmp_dir):
    rng = np.random.default_rng(0)
    s, a, s2 = rng.integers(0, 16, 4000), rng.integers(0, 4, 4000), rng.integers(0, 16, 4000)
    r = (s2 == 15).astype(int)
    path = tmp_dir / "FrozenLake_trajectories_4k.txt"
    path.write_text("".join(f"{x} {y} {z} {w}\n" for x, y, z, w in zip(s, a, r, s2,
                                                                       strict=True)))
    return train.capture(CaptureConfig(
        workload="tabular", env_id="auto", dataset=str(path), agents=4, dtype="int32",
        options={"passes": 4, "passes_per_round": 2, "workers": 1}))


@pytest.fixture(scope="module")
def trace(tmp_path_factory):
    return frozenlake_trace(tmp_path_factory.mktemp("released"))


def spec(**workload):
    return parse_spec({**PIM_HOST, "workload": workload})


def test_released_kernel_is_its_closed_form(trace):
    """One launch: every tasklet does all the DPU's updates (chunk × passes) of
    released_mix in FP64, against 4 eight-byte DMAs per update; load, kernel, one
    gather, one average."""
    sp = spec(pim_kernel="released", agents=8, transitions=4000, tasklets=16)
    m = Machine(trace, sp)
    sh = offline_loop(m, 8)
    pm = m.model("pim")
    items = 4000 // 8 * 4
    compute = items * 16 * pm.instructions(released_mix(sh), "fp64") / (
        pm.spec.clock_mhz * 1e6)
    dma = items * 16 * 4 * float(pm.mram_seconds(8, 8))
    result = simulate(trace, sp)
    assert result.breakdown_s["kernel_s"] == pytest.approx(max(compute, dma))
    assert result.breakdown_s["inter_dpu_broadcast_s"] == 0.0
    assert result.breakdown_s["inter_dpu_gather_s"] == 0.0
    assert result.updates == 4000 * 4


def test_released_kernel_gains_nothing_from_tasklets(trace):
    """Tasklets repeat the loop instead of sharing it: from 11 tasklets up the kernel
    grows with them; below, the pipeline is as slow as one tasklet's."""
    k = {t: simulate(trace, spec(pim_kernel="released", agents=8, tasklets=t)
                     ).breakdown_s["kernel_s"] for t in (1, 11, 16)}
    split = {t: simulate(trace, spec(agents=8, tasklets=t)).breakdown_s["kernel_s"]
             for t in (1, 16)}
    assert k[16] == pytest.approx(k[11] * 16 / 11)
    assert split[16] < split[1] / 5  # the split kernel shares its chunk over tasklets
    assert k[16] > 10 * split[16]  # FP64 emulation, the repeated work


@pytest.mark.parametrize("workload, match", [
    ({"pim_kernel": "released", "dtype": "fp32"}, "workload.dtype: the released kernel's"),
    ({"pim_kernel": "released", "agents": 1, "transitions": 200_000},
     "exceed the released kernel's MRAM vectors"),
])
def test_released_kernel_refusals_are_one_line(trace, workload, match):
    with pytest.raises(RldseError, match=match):
        simulate(trace, spec(**workload))


def test_pim_kernel_off_pim_is_one_line(trace):
    with pytest.raises(RldseError, match="workload.pim_kernel: pim_kernel applies to DPUs"):
        simulate(trace, parse_spec({"cpu": {"preset": "xeon-silver-4215"},
                                    "workload": {"pim_kernel": "released"}}))
