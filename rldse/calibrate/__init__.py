"""`rldse calibrate`: measure this machine's CPU or GPU and write it as a user preset.

``cpu.calibrate_cpu`` and ``gpu.calibrate_gpu`` measure and return a ``Calibration``
(the preset file's mapping and a printable report); ``preset_file.write_preset_file``
writes it to ``DIR/NAME.yaml``, which ``--presets DIR`` makes a preset like any other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Calibration:
    """What a calibration measured: the preset file's mapping, and lines to print."""

    kind: str
    name: str
    document: dict[str, Any]
    report: list[str] = field(default_factory=list)


__all__ = ["Calibration"]
