"""The typed workload_info a recording's program needs, from its networks and hyperparameters.

Each registered workload a recording can become builds its info from the networks' shapes
(``Recordable.info`` in its family's registration); the schedule (batch, replay capacity,
warm-up, ...) comes from the hyperparameters the user passes under the Info's own field
names. The result is validated against the workload's Info here, so a missing field fails
when the recording starts, naming it, not at simulate time.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rldse.errors import RldseError, validation_error
from rldse.recording.network import Network
from rldse.trace import plain
from rldse.workloads import WORKLOADS


def workload_info(workload: str, nets: dict[str, Network],
                  hyperparameters: dict[str, Any]) -> dict[str, Any]:
    """The Info of ``workload`` as a plain dict: network shapes, then every hyperparameter
    named like one of its fields (the user's value wins)."""
    registered = WORKLOADS.lookup(workload, "workload")
    info_type = registered.info
    info = plain(registered.recording.info(nets, hyperparameters), "recording: workload_info")
    names = set(info_type.model_fields)
    for spec in info_type.model_fields.values():
        if spec.validation_alias is not None:
            names.update(a for a in spec.validation_alias.choices if isinstance(a, str))
    info.update({k: v for k, v in hyperparameters.items() if k in names})
    try:
        info_type.model_validate(info)
    except ValidationError as exc:  # every missing or bad one at once
        bad = "; ".join(f"hyperparameter '{e.where}': {e.message}" for e in
                        (validation_error(exc, "", index=i) for i in range(exc.error_count())))
        raise RldseError(f"{bad} (the {workload} program reads "
                         f"{', '.join(info_type.model_fields)})", where="recording") from None
    return info
