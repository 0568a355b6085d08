"""The network between nodes: one NIC's line rate and the share of it NCCL reaches.

A node has ``nics`` of these (its fabric preset says how many the datasheet ships); a
collective across nodes moves each node's share over all of them at once
(``rldse.models.collectives``). Line rates are per direction, in Gb/s as NICs are sold;
``efficiency`` is the share of it NCCL's bus bandwidth reaches (headers, the protocol's
flags), the same kind of number as a fabric's ``efficiency``. Per-hop latency is NCCL's own
table for network hops (``rldse.models.collectives``), not a property of the NIC alone.
"""

from __future__ import annotations

from rldse.models.kinds import PartKind, register
from rldse.models.spec import PartSpec, quantity


class NetworkSpec(PartSpec):
    line_rate_gbps: float = quantity("Gb/s", "one NIC's line rate per direction", gt=0,
                                     le=10_000, plausible=(0.1, 3200))
    efficiency: float = quantity("fraction", "share of the line rate NCCL's bus bandwidth "
                                 "reaches over it", gt=0, le=1)

    @property
    def nic_gbs(self) -> float:
        """What one NIC carries per direction at NCCL's efficiency, GB/s."""
        return self.line_rate_gbps / 8 * self.efficiency


register(PartKind(name="network", spec=NetworkSpec, model=lambda spec, ctx: spec,
                  description="networks between nodes (InfiniBand, RoCE, Ethernet NICs)",
                  in_system=False))
