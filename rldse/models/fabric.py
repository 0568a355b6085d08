"""A node's GPU fabric: how its GPUs reach each other (NVLink, NVSwitch, PCIe) and the NICs
it ships for the network between nodes.

Per GPU, ``links_per_gpu`` links of ``link_gbs`` each per direction: an NVSwitch fabric
(``topology: switch``) gives every GPU all of them toward any other; the DGX-1's hybrid
cube mesh (``hybrid-cube-mesh``) wires each V100's six links to four neighbours, over
which NCCL's rings still use all six; ``pcie`` is GPUs reaching each other through the
host. ``efficiency`` is the share of the line rate NCCL's ring bus bandwidth reaches
(the Simple protocol's overhead); ``nvls`` says the switch reduces in the fabric (NVLink
SHARP, third-generation NVSwitch), whose all-reduce moves each byte once per direction
at ``nvls_efficiency`` of the line rate. ``rldse.models.collectives`` costs collectives
over it.
"""

from __future__ import annotations

from typing import Literal

from rldse.models.kinds import PartKind, register
from rldse.models.spec import PartSpec, quantity

TOPOLOGIES = ("switch", "hybrid-cube-mesh", "pcie")


class FabricSpec(PartSpec):
    gpus: int = quantity("count", "GPUs the fabric connects in one node", ge=1, le=256)
    links_per_gpu: int = quantity("count", "links of each GPU into the fabric", ge=1, le=64)
    link_gbs: float = quantity("GB/s", "one link's bandwidth per direction", gt=0,
                               le=10_000, plausible=(0.5, 2000))
    topology: Literal["switch", "hybrid-cube-mesh", "pcie"] = quantity(
        "", "how the GPUs are wired: switch, hybrid-cube-mesh or pcie")
    nvls: bool = quantity("", "the switch reduces in the fabric (NVLink SHARP)")
    efficiency: float = quantity("fraction", "share of the line rate NCCL's ring bus "
                                 "bandwidth reaches", gt=0, le=1)
    nvls_efficiency: float = quantity("fraction", "NVLS all-reduce algorithm bandwidth "
                                      "over the line rate", gt=0, le=1)
    nics: int = quantity("count", "NICs the node ships for the network between nodes",
                         ge=0, le=64)

    @property
    def gpu_gbs(self) -> float:
        """One GPU's line rate into the fabric per direction, GB/s."""
        return self.links_per_gpu * self.link_gbs


register(PartKind(name="fabric", spec=FabricSpec, model=lambda spec, ctx: spec,
                  description="GPU fabrics of a node (NVLink, NVSwitch, PCIe) and the "
                              "NICs it ships",
                  in_system=False))
