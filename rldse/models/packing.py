"""Several runs on one machine (``runs_per_machine: N``): the share of the machine one run
gets, so it is simulated once and its figures scaled by N (rldse.models.platform).

The model: N identical runs, each pinned to 1/N of the machine.

- Parts a system holds several of (GPUs, FPGA cards) are dealt out: each run gets
  count / N of them, whole (a run on a 4-GPU box with N = 4 has one GPU; a count N does
  not divide is refused, as is a single part N runs would have to time-share).
- The CPU is split by sockets, or within a socket by cores: a run gets cores / k of each
  of its sockets when k runs share one, and with them 1/k of the socket's DRAM bandwidth,
  DRAM capacity, uncore power and socket price. Bandwidth splits evenly because every
  run makes the same demands at the same rate (a run whose neighbours idle could take
  more, which this model never gives it). The last-level cache one core can use
  (``llc_kib``) is left whole: on chiplet CPUs (EPYC) a run pinned to whole CCDs owns
  their slices; on one shared LLC (Xeon) the runs' working sets would compete, which is
  not charged (optimistic there).
- The clock a busy core sustains follows the busy cores of the whole machine
  (CpuSpec.busy_clock_mhz): with b busy cores per run the machine has N·b, which is what
  the run's share gives when its single-core clock is the machine's with N busy cores
  (each run keeps at least one busy).
- Each GPU keeps its own host link (a PCIe switch shared by several GPUs is not modelled);
  the platform (board, fans, supplies) is shared in N equal parts.
"""

from __future__ import annotations

from dataclasses import replace

from rldse.errors import RldseError
from rldse.models.cpu import CpuSpec
from rldse.models.kinds import PART_KINDS, Instance

#: CpuSpec fields of one socket a run gets 1/k of when k runs share the socket
SOCKET_SHARES = ("mem_bw_gbs", "uncore_w", "socket_base_usd")


def run_share(parts: dict[str, tuple[Instance, ...]], runs: int, host_kind: str,
              where: str) -> dict[str, tuple[Instance, ...]]:
    """The parts one of ``runs`` identical runs gets (module docstring); RldseError naming
    ``where`` when the machine does not split into that many equal shares."""
    if runs == 1:
        return parts
    out = {}
    for kind, insts in parts.items():
        if kind == host_kind:
            out[kind] = tuple(replace(i, spec=cpu_share(i.spec, runs, where)) for i in insts)
        elif len(insts) % runs:
            fix = (f"give {kind} a count that {runs} divides" if PART_KINDS[kind].countable
                   else f"a system holds one {kind} part")
            raise RldseError(f"{runs} runs, but the system has {len(insts)} {kind}: a run "
                             f"uses whole parts ({fix})", where=where)
        else:
            out[kind] = insts[:len(insts) // runs]
    return out


def cpu_share(cpu: CpuSpec, runs: int, where: str) -> CpuSpec:
    """One run's share of ``cpu`` when ``runs`` runs split it evenly."""
    top = cpu.busy_clock_mhz(runs)  # every run keeps at least one core busy
    if cpu.sockets % runs == 0:
        return cpu.model_copy(update={"sockets": cpu.sockets // runs, "single_core_mhz": top})
    if runs % cpu.sockets or cpu.cores % (runs // cpu.sockets):
        raise RldseError(f"{runs} runs do not split {cpu.sockets} socket(s) of {cpu.cores} "
                         "cores into equal shares (expected a divisor or a multiple of the "
                         "sockets that divides their cores)", where=where)
    k = runs // cpu.sockets
    update = {f: getattr(cpu, f) / k for f in SOCKET_SHARES}
    return cpu.model_copy(update={**update, "sockets": 1, "cores": cpu.cores // k,
                                  "mem_bytes": cpu.mem_bytes // k, "single_core_mhz": top})
