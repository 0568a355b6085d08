"""CPU part: cores that run the interpreted RL loop and numpy, scaled from the capture host.

Every trace operation was measured on the capture host, so the model scales that time to
the target instead of predicting it afresh: the share the host's roofline explains scales
with the two machines' rooflines, the rest (interpreter, dispatch) with single-thread
speed, and counted network work is priced kernel class by kernel class on the host's
measured GEMM curve. The busy cores set the clock; the ``host`` preset scales by exactly
1. Why, the formulas, the clock under load, vector envs, power, price and the shared
cores: docs/architecture.md, "The CPU model".

The package: ``spec`` (CpuSpec: a CPU's numbers and what follows from them alone),
``gemm_curve`` (GEMM time on a measured curve), ``roofline`` (one core's roofline of
counted work and the rules that rescale trace rows by it), ``model`` (CpuModel, the
registered kind), ``host_preset`` (the ``host`` preset from a trace's host fingerprint).
"""

from rldse.models.cpu.model import CpuModel
from rldse.models.cpu.spec import CpuSpec

__all__ = ["CpuModel", "CpuSpec"]
