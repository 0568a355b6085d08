"""The part library: what each kind of hardware costs, in seconds and joules, per operation.

One module per kind of part (``cpu``, ``gpu``, ``pim``, ``am``, ``link``, and ``table``
for parts measured by the user), each a pydantic spec plus a cost model whose functions
take whole numpy columns of operations (``OpColumns``). ``power`` holds the energy
estimators; ``registry`` the presets in ``presets/*.yaml``, every number with its source.
"""

from rldse.models.am import AmModel, AmSpec
from rldse.models.cpu import CpuModel, CpuSpec
from rldse.models.gpu import GpuModel, GpuSpec
from rldse.models.link import LinkModel, LinkSpec
from rldse.models.ops import OpColumns
from rldse.models.pim import OpMix, PimModel, PimSpec
from rldse.models.power import EnergyEstimate
from rldse.models.registry import (
    cpu_from_host,
    get_preset,
    list_presets,
    load_part,
    make_model,
    show_preset,
)
from rldse.models.table import LinkTable, TableModel, TableSpec, load_link_table, load_table_part

__all__ = [
    "AmModel", "AmSpec", "CpuModel", "CpuSpec", "EnergyEstimate", "GpuModel", "GpuSpec",
    "LinkModel", "LinkSpec", "LinkTable", "OpColumns", "OpMix", "PimModel", "PimSpec",
    "TableModel", "TableSpec", "cpu_from_host", "get_preset", "list_presets", "load_link_table",
    "load_part", "load_table_part", "make_model", "show_preset",
]
