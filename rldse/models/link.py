"""Links between parts: PCIe, NVLink, DDR channels, the UPMEM rank bus.

A transfer of b bytes over a link takes latency + b / bandwidth (the first-order form
PEARL's traffic model uses: hops × (latency + bytes / bandwidth)). Bandwidth is per
direction; a link's published "total" (NVLink) counts both directions.
"""

from __future__ import annotations

import numpy as np

from rldse.models.kinds import PartKind, register
from rldse.models.ops import ArrayLike
from rldse.models.spec import PartSpec, quantity


class LinkSpec(PartSpec):
    bandwidth_gbs: float = quantity("GB/s", "sustained bandwidth per direction", ge=0.001,
                             le=100_000, plausible=(0.05, 5000))
    latency_s: float = quantity("s", "time before the first byte arrives", ge=0, le=1.0,
                                plausible=(0, 0.01))


class LinkModel:
    """Cost of moving bytes over one link."""

    def __init__(self, spec: LinkSpec) -> None:
        self.spec = spec

    def transfer_seconds(self, bytes_: ArrayLike) -> np.ndarray:
        """latency + bytes / bandwidth, per transfer."""
        b = np.asarray(bytes_, dtype=np.float64)
        return self.spec.latency_s + b / (self.spec.bandwidth_gbs * 1e9)


register(PartKind(name="link", spec=LinkSpec, model=lambda spec, ctx: LinkModel(spec),
                  description="links between parts (named by other parts' presets)",
                  in_system=False))
