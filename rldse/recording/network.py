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

``Network.network_work()`` describes the network per layer for the simulated programs
(rldse.kernels.network_work): layer sizes give mlp.py's description; a module that
is not a chain of nn.Linear layers is counted by ``module_work``: per leaf module,
FlopCounterMode's forward FLOPs, and for nn.Linear and nn.Conv{1,2,3}d layers the GEMM shape
(im2col) whose 2·rows·inputs·outputs FLOPs must equal the counter's (else the layer is
'other'); backward FLOPs per GEMM layer are its weight gradient plus, when its input needs
one, its input gradient, and the backward the counter sees beyond those is kept as an
'other' layer, so the totals are the counter's. Every other aten op (not a view, no FLOP
formula) counts its tensors' bytes read and written and one FLOP per output element,
charged to the leaf module it runs in (forward) or to the network (backward and ops
outside leaves); measured at batch 1 and 2, so bytes per sample and per pass are exact for
networks linear in the batch.
"""

from __future__ import annotations

import copy
from typing import Any

from rldse.errors import RldseError

#: Work counts by (network structure, batch, backward), for the whole process.
_COUNTS: dict[tuple, tuple[int, int, int]] = {}

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
    observation's shape (default: the first layer's inputs); ``extra_inputs``: one
    sample's shape of each further tensor its forward takes (a Q network's action)."""

    def __init__(self, network: Any, obs_shape: tuple[int, ...] | None = None,
                 where: str = "recording: network",
                 extra_inputs: tuple[tuple[int, ...], ...] = ()) -> None:
        self.where = where
        self.extra_inputs = tuple(tuple(int(d) for d in s) for s in extra_inputs)
        self._meta = None
        self._network_work = None
        self._outputs = 0
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
            raise RldseError("this simulated program models MLPs: the network must be a chain "
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
        key = (self._structure(), batch, backward)
        if key not in _COUNTS:
            _COUNTS[key] = _count(self, batch, backward)
        return _COUNTS[key]

    def _structure(self) -> tuple:
        """What the count depends on: the input shape, every submodule's class and settings
        (their repr) and the parameters' shapes and dtypes. Equal structures count alike,
        so a process counts each once (FlopCounterMode: about 4 ms per shape)."""
        if self.module is None:
            return (tuple(self.sizes), self.obs_shape)
        return (self.obs_shape, self.extra_inputs, repr(self.module),
                tuple(type(m) for m in self.module.modules()),
                tuple((tuple(p.shape), p.dtype) for p in self.module.parameters()))

    def operator_work(self, batch: int, backward: bool):
        """The analytic Work of one forward at ``batch`` (with ``backward``, its backward
        and an Adam step, as mlp.adam_work counts one) from the per-layer description
        (``network_work``): what a trace's operators list (``TraceMeta.operators``)."""
        from rldse.kernels.mlp import adam_work

        net = self.network_work()
        work = net.forward(int(batch))
        if backward:
            work += net.backward(int(batch)) + adam_work(net.n_params, net.n_tensors)
        return work

    def network_work(self):
        """The per-layer description the simulated programs rescale with (module
        docstring); counted once."""
        if self._network_work is None:
            if self.module is None:
                from rldse.kernels.mlp import network

                self._network_work, self._outputs = network(self.sizes), self.sizes[-1]
            else:
                self._network_work, self._outputs = module_work(
                    self.meta_copy(), self.obs_shape, self.where, self.extra_inputs)
        return self._network_work

    def stand_in_sizes(self) -> list[int]:
        """``layer_sizes`` for a program's Info: the MLP's own, or for another network
        [input elements, the last layer's inputs, outputs per sample] (what obs_dim,
        n_actions and the hidden knob's default read; the work is ``network_work``'s)."""
        if self.sizes is not None:
            return list(self.sizes)
        net = self.network_work()
        n_in = 1
        for d in self.obs_shape:
            n_in *= d
        gemms = [layer for layer in net.layers if layer.kind != "other"]
        last = gemms[-1] if gemms else net.layers[-1]
        return [n_in, max(1, last.inputs), max(1, self._outputs)]

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
    xs = [torch.zeros((batch, *shape), device="meta", dtype=dtype)
          for shape in (net.obs_shape, *net.extra_inputs)]
    act_bytes = [0]

    def hook(_mod, _inp, out) -> None:
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor):
                act_bytes[0] += t.numel() * t.element_size()

    leaves = [m for m in meta.modules() if not any(True for _ in m.children())]
    handles = [m.register_forward_hook(hook) for m in leaves]
    try:
        with FlopCounterMode(display=False) as counter, torch.set_grad_enabled(backward):
            out = meta(*xs)
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
    return counter.get_total_flops(), act_bytes[0], sum(x.numel() * x.element_size()
                                                        for x in xs)


def _linear_chain(module) -> list[int] | None:
    """[in, out1, out2, ...] when every parameterised leaf is an nn.Linear and each takes
    the previous one's outputs; None otherwise (convolutions, parallel heads)."""
    import torch

    leaves = [m for m in module.modules()
              if not any(True for _ in m.children()) and any(True for _ in m.parameters())]
    if not leaves or not all(isinstance(m, torch.nn.Linear) for m in leaves):
        return None
    sizes = [int(leaves[0].in_features)]
    for lin in leaves:
        if lin.in_features != sizes[-1]:
            return None
        sizes.append(int(lin.out_features))  # a script may size it with numpy ints
    return sizes


def _gemm_shape(mod, out) -> tuple[str, int, int, int] | None:
    """(kind, rows per sample, inputs, outputs) of a linear or convolution leaf."""
    import torch

    if isinstance(mod, torch.nn.Linear):
        return "linear", out.numel() // (out.shape[0] * mod.out_features), mod.in_features, \
            mod.out_features
    if isinstance(mod, (torch.nn.Conv1d, torch.nn.Conv2d, torch.nn.Conv3d)):
        rows = out[0, 0].numel()
        k = 1
        for d in mod.kernel_size:
            k *= d
        return "conv", rows, mod.in_channels // mod.groups * k, mod.out_channels
    return None


def _pass(meta, xs: tuple, backward: bool):
    """One forward (and backward) of ``meta`` on its inputs ``xs`` under the counters: per
    leaf, its forward flops, GEMM shape, output bytes, whether its input needs a gradient and its
    element-wise (flops, bytes, calls); the same outside leaves (forward) and for the
    backward; the counter's backward flops; outputs per sample."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode
    from torch.utils._pytree import tree_flatten
    from torch.utils.flop_counter import FlopCounterMode, flop_registry

    names = {m: n for n, m in meta.named_modules()}
    leaves = [m for m in meta.modules() if not any(True for _ in m.children())]
    seen: dict[str, dict] = {}
    where = [""]  # the leaf running now ("": outside leaves)
    ew: dict[str, list[int]] = {}

    class Elementwise(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            out = func(*args, **(kwargs or {}))
            if func.is_view or func.overloadpacket in flop_registry:
                return out
            ts = [t for t in tree_flatten((args, kwargs, out))[0]
                  if isinstance(t, torch.Tensor)]
            outs = [t for t in tree_flatten(out)[0] if isinstance(t, torch.Tensor)]
            acc = ew.setdefault(where[0], [0, 0, 0])
            acc[0] += sum(t.numel() for t in outs)
            acc[1] += sum(t.numel() * t.element_size() for t in ts)
            acc[2] += 1
            return out

    def pre(mod, inp):
        where[0] = names[mod]

    def post(mod, inp, out):
        where[0] = ""
        outs = [t for t in (out if isinstance(out, (tuple, list)) else (out,))
                if isinstance(t, torch.Tensor)]
        first = next((t for t in inp if isinstance(t, torch.Tensor)), None)
        aliased = bool(outs) and first is not None and (
            outs[0] is first or outs[0]._base is first or first._base is outs[0])
        seen[names[mod]] = {
            "shape": _gemm_shape(mod, outs[0]) if outs else None,
            "act": 0 if aliased else sum(t.numel() * t.element_size() for t in outs),
            "input_grad": first is not None and first.requires_grad,
            "params": sum(p.numel() for p in mod.parameters(recurse=False)),
            "tensors": sum(1 for _ in mod.parameters(recurse=False)),
            "param_bytes": sum(p.numel() * p.element_size()
                               for p in mod.parameters(recurse=False))}

    handles = [h for m in leaves for h in (m.register_forward_pre_hook(pre),
                                           m.register_forward_hook(post))]
    try:
        with torch.set_grad_enabled(backward), FlopCounterMode(display=False) as fwd, \
                Elementwise():
            out = meta(*xs)
        outs = [o for o in (out if isinstance(out, (tuple, list)) else (out,))
                if isinstance(o, torch.Tensor)]
        back_total = 0
        if backward:
            loss = sum(o.float().sum() for o in outs)
            where[0] = "(backward)"
            with FlopCounterMode(display=False) as bwd, Elementwise():
                loss.backward()
            back_total = bwd.get_total_flops()
    finally:
        for h in handles:
            h.remove()
        meta.zero_grad(set_to_none=True)
    root = type(meta).__name__
    counts = fwd.get_flop_counts()
    flops = {n: sum(counts.get(f"{root}.{n}", {}).values()) for n in seen}
    per_out = sum(o[0].numel() for o in outs)
    return seen, flops, fwd.get_total_flops(), back_total, ew, per_out


def module_work(meta, obs_shape: tuple[int, ...], where: str,
                extra_inputs: tuple[tuple[int, ...], ...] = ()):
    """NetworkWork of a meta-device module at one observation's shape, and each further
    input's (module docstring)."""
    import torch

    from rldse.kernels.network_work import Kernels, Layer, NetworkWork

    dtype = next((p.dtype for p in meta.parameters() if p.is_floating_point()), torch.float32)
    runs = []
    for batch in (1, 2):
        xs = tuple(torch.zeros((batch, *shape), device="meta", dtype=dtype)
                   for shape in (obs_shape, *extra_inputs))
        try:
            runs.append(_pass(meta, xs, backward=True))
        except (RuntimeError, TypeError, ValueError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
            raise RldseError(f"counting its work at input shape {(batch, *obs_shape)} "
                             f"failed ({first}); pass obs_shape=(...)", where=where) from None
    (seen, flops, fwd_total, back_total, ew1, n_out), (_, _, _, _, ew2, _) = runs

    def kernels(name: str) -> Kernels:
        a, b = ew1.get(name, [0, 0, 0]), ew2.get(name, [0, 0, 0])
        per = [max(0, y - x) for x, y in zip(a, b, strict=True)]
        return Kernels(flops_per_sample=per[0], bytes_per_sample=per[1],
                       fixed_bytes=max(0, a[1] - per[1]), calls=a[2])

    layers, back_gemm = [], 0
    for name, s in seen.items():
        if not (flops[name] or s["params"] or name in ew1):
            continue
        shape = s["shape"]
        kind, rows, n_in, n_out_f = shape if shape else ("other", 1, 0, 0)
        if shape and flops[name] != 2 * rows * n_in * n_out_f:
            kind, rows, n_in, n_out_f = "other", 1, 0, 0
        back = 0
        if kind != "other":
            back = flops[name] * (2 if s["input_grad"] else 1)
            back_gemm += back
        layers.append(Layer(
            name=name or "module", kind=kind, rows=rows, inputs=n_in, outputs=n_out_f,
            forward_flops=flops[name], backward_flops=back, input_grad=s["input_grad"],
            params=s["params"], tensors=s["tensors"], param_bytes=s["param_bytes"],
            activation_bytes=s["act"], forward_kernels=kernels(name)))
    outside = fwd_total - sum(flops.values())
    if outside or back_total != back_gemm:  # FLOPs the counter saw beyond the leaves' GEMMs
        layers.append(Layer(name="(outside leaf modules)", kind="other",
                            forward_flops=max(0, outside),
                            backward_flops=max(0, back_total - back_gemm), input_grad=False))
    if not layers:
        raise RldseError("the network has no parameters and no counted work", where=where)
    net = NetworkWork(kind="module", obs_shape=list(obs_shape),
                      obs_dtype=str(dtype).removeprefix("torch."), layers=layers,
                      forward_kernels=Kernels() if "" in seen else kernels(""),
                      backward_kernels=kernels("(backward)"))
    return net, n_out
