"""The network a trace's ``workload_info['network']`` describes (rldse.kernels.network_work),
read back and checked: what the programs rescale a traced network's work with."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from rldse.errors import RldseError, validation_error
from rldse.kernels import nature_cnn
from rldse.kernels.network_work import DTYPE_BYTES, NetworkWork

#: The totals ``info`` adds, derived on reading.
_DERIVED = ("n_params", "param_bytes", "forward_flops_per_sample",
            "backward_flops_per_sample", "activation_bytes_per_sample")


def from_info(info: dict[str, Any], where: str = "trace") -> NetworkWork | None:
    """The network a trace's workload_info describes under 'network', or None (an MLP
    trace: its ``layer_sizes`` are the description)."""
    return read_network(info.get("network"), where)


def read_network(net: Any, where: str = "trace") -> NetworkWork | None:
    """The network ``net`` (a workload_info's 'network' entry) describes, or None where
    there is none. Atari traces from before per-layer descriptions name only
    ``kind: nature_cnn`` and the heads."""
    if not net:
        return None
    if not isinstance(net, dict):
        raise RldseError(f"{where}: workload_info.network must be a mapping, got "
                         f"{type(net).__name__}")
    if "layers" not in net and net.get("kind") == "nature_cnn":
        return nature_cnn.network(tuple(int(h) for h in net.get("heads", ())))
    try:
        out = NetworkWork.model_validate({k: v for k, v in net.items() if k not in _DERIVED})
    except ValidationError as exc:
        raise validation_error(exc, f"{where}: workload_info.network",
                               list(NetworkWork.model_fields)) from None
    if out.obs_dtype not in DTYPE_BYTES:
        raise RldseError(f"{where}: workload_info.network.obs_dtype '{out.obs_dtype}' is not "
                         f"one of {', '.join(DTYPE_BYTES)}")
    return out
