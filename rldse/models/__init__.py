"""The part library: what each kind of hardware costs, in seconds and joules, per operation.

One module per kind of part, each a pydantic spec plus a cost model whose functions
take whole numpy columns of operations (``OpColumns``). ``power`` holds the energy
estimators; ``presets`` the presets in ``presets/*.yaml``, every number with its source.
"""

# Part kinds: importing a kind's module registers it (``kinds.register``), one line each.
# isort: off
from rldse.models import cpu  # noqa: F401, E402  (first: env steps run on its cores)
from rldse.models import link  # noqa: F401, E402
from rldse.models import gpu  # noqa: F401, E402
from rldse.models import pim  # noqa: F401, E402
from rldse.models import tcam  # noqa: F401, E402
from rldse.models import table  # noqa: F401, E402
from rldse.models import fpga  # noqa: F401, E402
from rldse.models import network  # noqa: F401, E402
from rldse.models import fabric  # noqa: F401, E402
from rldse.models import platform  # noqa: F401, E402
# isort: on
from rldse.models.cpu import CpuModel, CpuSpec  # noqa: E402
from rldse.models.gpu import GpuModel, GpuSpec  # noqa: E402
from rldse.models.kinds import PART_KINDS, ROLES, PartKind, PartRef, all_checks  # noqa: E402
from rldse.models.link import LinkModel, LinkSpec  # noqa: E402
from rldse.models.ops import OpColumns  # noqa: E402
from rldse.models.pim import OpMix, PimModel, PimSpec  # noqa: E402
from rldse.models.power import EnergyEstimate  # noqa: E402
from rldse.models.presets import (  # noqa: E402
    cpu_from_host,
    get_preset,
    list_presets,
    load_part,
    make_model,
    show_preset,
)
from rldse.models.table import (  # noqa: E402
    LinkTable,
    TableModel,
    TableSpec,
    load_link_table,
    load_table_part,
)
from rldse.models.tcam import TcamModel, TcamSpec  # noqa: E402

__all__ = [
    "PART_KINDS", "ROLES", "CpuModel", "CpuSpec", "EnergyEstimate",
    "GpuModel", "GpuSpec", "LinkModel", "LinkSpec", "LinkTable", "OpColumns", "OpMix",
    "PartKind", "PartRef", "PimModel", "PimSpec", "TableModel", "TableSpec", "TcamModel",
    "TcamSpec", "all_checks",
    "cpu_from_host", "get_preset", "list_presets", "load_link_table", "load_part",
    "load_table_part", "make_model", "show_preset",
]
