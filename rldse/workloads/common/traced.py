"""The operators a capture recorded (``TraceMeta.operators``) against a simulated
program's count of the same work: the real loop and its twin must describe one network."""

from __future__ import annotations

from rldse.errors import RldseError
from rldse.trace import Trace, operator_records


def check_traced_operators(trace: Trace, phase: str, items: int, work) -> None:
    """Refuse ``trace`` in one line where its capture recorded operators for ``phase`` at
    ``items`` and they are not ``work``'s (an analytic Work: the program's count of that
    operation at the trace's shapes), so a program that prices other operators than the
    capture ran fails here, not in a silently different answer. Only operators a built-in
    loop recorded (``source`` 'loop': the count its twin makes) are held to it; a phase
    without such a record (no network work, or a user's modules) passes."""
    recorded = [o for o in trace.meta.operators if o.phase == phase and o.items == items
                and o.source == "loop"]
    if not recorded:
        return
    mine = operator_records(phase, items, work)
    same = [o for o in recorded if o.flops == work.flops]
    if same != mine:
        first = next((f"{o.op} {','.join(map(str, o.shape))} ×{o.count}" for o in recorded
                      if o not in mine), "fewer operators")
        raise RldseError(f"the capture recorded {phase}'s operators at {items} items "
                         f"({len(recorded)}, first differing: {first}) and this rldse's "
                         f"program counts {len(mine)} others for the same operation: "
                         "re-capture the trace with this rldse",
                         where=f"trace {trace.digest}")
