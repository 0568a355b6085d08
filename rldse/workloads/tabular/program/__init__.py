"""The simulated twin of the tabular loops in train.py: the same loops on a SimPy Machine,
with the Q updates on CPU cores, a GPU or UPMEM DPUs (SwiftRL).

``program(m)`` replays the loop on the device that ``placement.q_update`` names. Online
traces replay the online loop (CPU only: online.py). Offline, every round each agent runs
``passes_per_round`` passes over its chunk and the host averages the tables, as
``train_offline`` does (offline.py); what differs per device is how a round is costed
(cpu.py, gpu.py, pim.py with dpu_kernel.py and released.py). A round of all agents is one
booking per lane or device and one SimPy timeout, so events grow with rounds (online: with
chunks of ONLINE_CHUNK steps), never with transitions.
"""

from __future__ import annotations

from collections.abc import Callable

from rldse.errors import RldseError
from rldse.models.kinds import Runs
from rldse.sim.machine import Machine, Outcome
from rldse.system import CPU_KIND
from rldse.workloads.tabular.program.cpu import cpu_program
from rldse.workloads.tabular.program.gpu import gpu_program
from rldse.workloads.tabular.program.offline import offline_loop
from rldse.workloads.tabular.program.online import online_program
from rldse.workloads.tabular.program.pim import pim_program


def program(m: Machine) -> Outcome:
    """The tabular loop on machine ``m``, on the device kind placed for ``q_update``."""
    q = m.runner("q_update")
    for knob in ("tasklets", "pim_kernel"):
        if getattr(m.knobs, knob) is not None and q.runs is not Runs.DPUS:
            raise RldseError(f"{knob} applies to DPUs: q_update runs on '{q.kind}'",
                             where=f"workload.{knob}")
    if m.system.info.mode == "online":
        if not q.is_host:
            raise RldseError(f"'{q.kind}' runs offline (SwiftRL-style) tabular traces only; "
                             "this trace is online (one agent stepping its env), which runs "
                             f"on '{CPU_KIND}'", where="placement.q_update")
        return online_program(m)
    offline = OFFLINE_PROGRAMS.get(q.runs)
    if offline is None:
        known = ", ".join(r.value for r in OFFLINE_PROGRAMS)
        raise RldseError(f"'{q.kind}' runs q_update as {q.runs.value}, which tabular "
                         f"programs do not implement (they run: {known})",
                         where="placement.q_update")
    return offline(m)


def _on_cores(m: Machine) -> Outcome:
    return cpu_program(m, offline_loop(m, m.system.info.agents))


def _as_kernels(m: Machine) -> Outcome:
    return gpu_program(m, offline_loop(m, m.system.info.agents))


def _on_dpus(m: Machine) -> Outcome:
    """One agent per DPU unless the knobs say otherwise."""
    return pim_program(m, offline_loop(m, m.runner("q_update").model.spec.dpus))


#: The offline twin for each way a part runs q_update (rldse.models.kinds.Runs): on the
#: host's cores, as kernels a core issues, or on in-memory processors.
OFFLINE_PROGRAMS: dict[Runs, Callable[[Machine], Outcome]] = {
    Runs.CORES: _on_cores, Runs.KERNELS: _as_kernels, Runs.DPUS: _on_dpus,
}
