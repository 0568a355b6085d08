"""Work counts of a user's network: FLOPs from PyTorch's own counter, bytes to first order.

A ``Network`` wraps a ``torch.nn.Module`` (or, without torch, a list of MLP layer sizes)
and answers the work of one forward (``act``) and of one forward plus backward and Adam
step (``learn``) at a batch size:

- FLOPs: ``torch.utils.flop_counter.FlopCounterMode`` (matmuls, convolutions, attention:
  what it has formulas for; element-wise kernels count 0) on a copy of the module on the
  ``meta`` device, so nothing runs and the user's module (its gradients, its statistics)
  is untouched. Counted once per (batch, backward) and cached. Layer sizes alone use
  mlp.py's GEMM counts (2·B·i·o per layer forward, twice that backward).
- bytes, first order, read plus written: a forward reads every parameter once and writes
  every leaf module's output (activations, measured by hooks on the meta copy) and reads
  the input batch. ``learn`` adds the backward (parameters read again, gradients written,
  activations read and their gradients written and read: 2 × parameter + 3 × activation
  bytes more) and Adam (reads g, p, m, v and writes p, m, v: 7 × parameter bytes).
"""

from __future__ import annotations

import copy
from typing import Any

from rldse.errors import RldseError

#: Adam per parameter: reads gradient, parameter, m, v; writes parameter, m, v.
ADAM_TOUCHES_PER_PARAM = 7
#: Backward, per parameter: read again and its gradient written.
BACKWARD_TOUCHES_PER_PARAM = 2
#: Backward, per activation: read, its gradient written and read by the layer below.
BACKWARD_TOUCHES_PER_ACTIVATION = 3


def is_module(obj: Any) -> bool:
    """A torch.nn.Module, without importing torch when the caller never did."""
    import sys

    torch = sys.modules.get("torch")
    return torch is not None and isinstance(obj, torch.nn.Module)


class Network:
    """``network``: an nn.Module or a list of MLP layer sizes; ``obs_shape``: one
    observation's shape (default: the first layer's inputs)."""

    def __init__(self, network: Any, obs_shape: tuple[int, ...] | None = None,
                 where: str = "recording: network") -> None:
        self.where = where
        self._cache: dict[tuple[int, bool], tuple[int, int, int]] = {}
        self._meta = None
        if is_module(network):
            self.module = network
            params = list(network.parameters())
            self.n_params = sum(p.numel() for p in params)
            self.param_bytes = sum(p.numel() * p.element_size() for p in params)
            self.device = params[0].device.type if params else "cpu"
            self.sizes = _linear_chain(network)
        elif isinstance(network, (list, tuple)) and len(network) >= 2 and all(
                isinstance(w, int) and not isinstance(w, bool) and w >= 1 for w in network):
            self.module = None
            self.sizes = [int(w) for w in network]
            self.n_params = sum(i * o + o for i, o in zip(self.sizes[:-1], self.sizes[1:], strict=True))
            self.param_bytes = 4 * self.n_params
            self.device = "cpu"
        else:
            raise RldseError("expected a torch.nn.Module or a list of at least two positive "
                             f"layer sizes, got {type(network).__name__}", where=where)
        if obs_shape is None:
            if self.sizes is None:
                raise RldseError("the network is not a chain of nn.Linear layers, so the "
                                 "observation shape is unknown: pass obs_shape=(...)",
                                 where=where)
            obs_shape = (self.sizes[0],)
        self.obs_shape = tuple(int(d) for d in obs_shape)

    def layer_sizes(self) -> list[int]:
        """MLP layer sizes, which the simulated programs' work formulas need."""
        if self.sizes is None:
            raise RldseError("the simulated programs model MLPs: the network must be a chain "
                             "of nn.Linear layers (each one's inputs the previous one's "
                             "outputs), or give its layer sizes as a list", where=self.where)
        return list(self.sizes)

    def work(self, batch: int, backward: bool) -> tuple[int, int]:
        """(flops, bytes) of one forward (and, with ``backward``, backward and Adam step)
        at ``batch`` observations."""
        flops, act_bytes, in_bytes = self._counted(int(batch), backward)
        nbytes = self.param_bytes + act_bytes + in_bytes
        if backward:
            nbytes += ((BACKWARD_TOUCHES_PER_PARAM + ADAM_TOUCHES_PER_PARAM) * self.param_bytes
                       + BACKWARD_TOUCHES_PER_ACTIVATION * act_bytes)
        return int(flops), int(nbytes)

    def _counted(self, batch: int, backward: bool) -> tuple[int, int, int]:
        key = (batch, backward)
        if key not in self._cache:
            self._cache[key] = _count(self, batch, backward)
        return self._cache[key]

    def meta_copy(self):
        """The module on the meta device (made once): shapes and dtypes, no data."""
        if self._meta is None:
            self._meta = copy.deepcopy(self.module).to("meta")
        return self._meta


def _count(net: Network, batch: int, backward: bool) -> tuple[int, int, int]:
    """(flops, activation bytes, input bytes) of one pass at ``batch``."""
    if net.module is None:
        s = net.sizes
        fwd = sum(2 * batch * i * o for i, o in zip(s[:-1], s[1:], strict=True))
        act = 4 * batch * sum(s[1:])
        return (3 * fwd if backward else fwd), act, 4 * batch * s[0]
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    meta = net.meta_copy()
    dtype = next((p.dtype for p in meta.parameters() if p.is_floating_point()), torch.float32)
    x = torch.zeros((batch, *net.obs_shape), device="meta", dtype=dtype)
    act_bytes = [0]

    def hook(_mod, _inp, out) -> None:
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                act_bytes[0] += t.numel() * t.element_size()

    leaves = [m for m in meta.modules() if not any(True for _ in m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with FlopCounterMode(display=False) as counter, torch.set_grad_enabled(backward):
            out = meta(x)
            if backward:
                outs = out if isinstance(out, (tuple, list)) else (out,)
                sum(o.float().sum() for o in outs if isinstance(o, torch.Tensor)).backward()
    except (RuntimeError, TypeError, ValueError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise RldseError(f"counting its work at input shape {(batch, *net.obs_shape)} "
                         f"failed ({first}); pass obs_shape=(...) or flops=/bytes=",
                         where=net.where) from None
    finally:
        for h in handles:
            h.remove()
        meta.zero_grad(set_to_none=True)
    return counter.get_total_flops(), act_bytes[0], x.numel() * x.element_size()


def _linear_chain(module) -> list[int] | None:
    """[in, out1, out2, ...] when every parameterised leaf is an nn.Linear and each takes
    the previous one's outputs; None otherwise (convolutions, parallel heads)."""
    import torch

    leaves = [m for m in module.modules()
              if not any(True for _ in m.children()) and any(True for _ in m.parameters())]
    if not leaves or not all(isinstance(m, torch.nn.Linear) for m in leaves):
        return None
    sizes = [leaves[0].in_features]
    for lin in leaves:
        if lin.in_features != sizes[-1]:
            return None
        sizes.append(lin.out_features)
    return sizes
