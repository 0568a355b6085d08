"""One run's share of a machine that several identical runs share (rldse.models.packing)."""

from __future__ import annotations

import pytest

from rldse.errors import RldseError
from rldse.models import load_part
from rldse.models.kinds import Instance
from rldse.models.packing import cpu_share, run_share


def _parts(gpus: int, **cpu):
    spec = load_part("cpu", "epyc-9654", **cpu)
    gpu = load_part("gpu", "l4")
    return {"cpu": (Instance("cpu", spec, "epyc-9654"),),
            "gpu": tuple(Instance(f"gpu{i}", gpu, "l4") for i in range(gpus))}


def test_four_runs_split_one_socket_into_quarters():
    cpu = load_part("cpu", "epyc-9654", cores=32)
    run = cpu_share(cpu, 4, "here")
    assert (run.sockets, run.cores, run.mem_bytes) == (1, 8, cpu.mem_bytes // 4)
    assert run.mem_bw_gbs == pytest.approx(cpu.mem_bw_gbs / 4)
    assert run.core_bw_gbs == pytest.approx(cpu.core_bw_gbs)  # per core: as when alone
    assert 4 * run.price_usd == pytest.approx(cpu.price_usd)
    assert 4 * run.idle_w == pytest.approx(cpu.idle_w)
    assert 4 * run.max_w == pytest.approx(cpu.max_w)


@pytest.mark.parametrize("busy", [1, 3, 8])
def test_a_runs_clock_is_the_machines_with_every_run_busy(busy):
    """b busy cores in each of 4 runs: the machine has 4·b busy, and sets the clock."""
    cpu = load_part("cpu", "epyc-9654", cores=32)
    run = cpu_share(cpu, 4, "here")
    assert run.busy_clock_mhz(busy) == pytest.approx(cpu.busy_clock_mhz(4 * busy))
    assert run.busy_clock_mhz(busy) < cpu.busy_clock_mhz(busy)


def test_two_runs_on_two_sockets_take_one_each():
    cpu = load_part("cpu", "epyc-9654", sockets=2)
    run = cpu_share(cpu, 2, "here")
    assert (run.sockets, run.cores, run.mem_bw_gbs) == (1, cpu.cores, cpu.mem_bw_gbs)


def test_gpus_are_dealt_out_whole():
    parts = run_share(_parts(4, cores=32), 4, "cpu", "here")
    assert [i.name for i in parts["gpu"]] == ["gpu0"]
    assert run_share(_parts(4), 1, "cpu", "here") == _parts(4)


@pytest.mark.parametrize("gpus,cores,runs,needle", [
    (1, 32, 4, "4 runs, but the system has 1 gpu"),
    (4, 30, 4, "4 runs do not split 1 socket(s) of 30 cores"),
    (6, 32, 4, "4 runs, but the system has 6 gpu"),
])
def test_a_machine_that_does_not_split_evenly_is_refused(gpus, cores, runs, needle):
    with pytest.raises(RldseError, match="here") as e:
        run_share(_parts(gpus, cores=cores), runs, "cpu", "here")
    assert needle in str(e.value)


def test_a_single_part_runs_would_time_share_is_refused():
    pim = load_part("pim", "upmem-p21")
    parts = {**_parts(2, cores=32), "pim": (Instance("pim", pim, "upmem-p21"),)}
    with pytest.raises(RldseError, match="2 runs, but the system has 1 pim: a run uses whole "
                                         r"parts \(a system holds one pim part\)"):
        run_share(parts, 2, "cpu", "here")
