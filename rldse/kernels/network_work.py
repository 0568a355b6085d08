"""The work of a network, in one place: ``Work`` (what one operation costs, as the part
models price it) and ``NetworkWork`` (a network's layers, from which every program rescales
forward and backward work to another batch).

Why one description: a program rescales a trace's ``act`` and ``learn`` rows when a
what-if changes the batch, the actors or the network (rldse.models.cpu.roofline.with_works), and it
must do so with the captured network's own per-sample numbers, a CNN's convolutions
included, not with MLP formulas. ``NetworkWork`` is built three ways, each checked in
tests/kernels/test_network_work.py:

- from layer sizes, for the numpy MLPs (``rldse.kernels.mlp.network``: the
  kernels mlp.py's docstring lists);
- for the Nature-CNN of Atari captures (``rldse.kernels.nature_cnn.network``);
- from any ``torch.nn.Module`` at an input shape, by ``torch.utils.flop_counter``
  (``rldse.recording.network.network_work``).

It is stored in a trace's ``workload_info['network']`` (``model_dump``) and read back by
``rldse.kernels.trace_network.from_info``; traces with only ``layer_sizes`` keep the MLP builder.

Per layer: GEMM shape (im2col for a convolution: rows per sample H'·W', inputs C·k²,
outputs filters, as in Chetlur et al., cuDNN, arXiv 1410.0759; a linear layer has one row),
forward and backward FLOPs per sample (2·rows·inputs·outputs each for the forward, the
weight gradient and, where the layer's input needs one, the input gradient: what
``FlopCounterMode`` counts), parameters, parameter tensors, activation bytes per sample,
and its element-wise kernels (bias, activation, masks: ``Kernels``, linear in the batch).
Sums of GEMM times depend on order in the last bit, so forward and backward both visit the
layers in stored order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

F32 = 4  # bytes per float32


#: Operator kinds a traced operation lists (``Work.operators``, replay's
#: ``OpWork.operators``): a GEMM as nn.Linear's (B, M, N, K); element-wise and reduction
#: kernels, and the optimizer's (Adam, Polyak, target copies), each as (KERNELS, BYTES,
#: FLOPS) in total; state first read from memory as (BYTES,); a replay's writes of new
#: transitions as (ITEMS, BYTES), its row gathers as (ITEMS, BYTES), its sum-tree
#: descents or climbs as (ITEMS, LEVELS) and its per-item arithmetic (priorities,
#: importance weights, quantization) as (ITEMS, BYTES, FLOPS).
OPERATOR_KINDS = ("linear", "elementwise", "optimizer", "state_read", "replay_write",
                  "gather", "sumtree", "replay_arith")


@dataclass(frozen=True)
class Operator:
    """``count`` calls of one operator of ``shape`` (``OPERATOR_KINDS``) in an operation."""

    op: str
    shape: tuple[int, ...]
    count: int = 1


def gemm_shape(product: str, batch: int, inputs: int, outputs: int) -> tuple[int, ...]:
    """One product of a layer of ``inputs`` → ``outputs`` at ``batch`` rows as the
    ``linear`` operator's (B, M, N, K), input (B·M)×N through an N→K layer: 'fwd' x·W is
    (batch × inputs)·(inputs × outputs); 'dw' xᵀ·dy (inputs × batch)·(batch × outputs);
    'dx' dy·Wᵀ (batch × outputs)·(outputs × inputs)."""
    if product == "fwd":
        return (1, batch, inputs, outputs)
    if product == "dw":
        return (1, inputs, batch, outputs)
    if product == "dx":
        return (1, batch, outputs, inputs)
    raise ValueError(f"GEMM product {product!r}: expected fwd, dw or dx")


@dataclass(frozen=True)
class Work:
    """Analytic work of one operation: totals, its GEMMs, contiguous-vector work, calls."""

    flops: int
    bytes: int
    #: each GEMM as (product, batch, inputs, outputs) of its layer, product 'fwd' (x·W),
    #: 'dw' (xᵀ·dy) or 'dx' (dy·Wᵀ): the CPU model's GEMM curve is keyed so
    gemms: tuple[tuple[str, int, int, int], ...] = ()
    gemm_bytes: int = 0  # bytes of the GEMMs' operands, included in bytes
    vector_bytes: int = 0  # bytes of contiguous same-shape kernels (Adam, Polyak), in bytes
    cold_bytes: int = 0  # state first read from memory each time (``cold``), in bytes
    calls: int = 0  # kernel calls (GEMMs included)
    vector_flops: int = 0  # flops of the contiguous kernels, in flops
    vector_calls: int = 0  # calls of the contiguous kernels, in calls

    def __add__(self, other: Work) -> Work:
        return Work(self.flops + other.flops, self.bytes + other.bytes,
                    self.gemms + other.gemms, self.gemm_bytes + other.gemm_bytes,
                    self.vector_bytes + other.vector_bytes,
                    self.cold_bytes + other.cold_bytes, self.calls + other.calls,
                    self.vector_flops + other.vector_flops,
                    self.vector_calls + other.vector_calls)

    @property
    def gemm_flops(self) -> int:
        return sum(2 * b * i * o for _, b, i, o in self.gemms)

    def operators(self) -> tuple[Operator, ...]:
        """The operators this work runs (``OPERATOR_KINDS``): each GEMM shape with its
        calls, in first-seen order, then the element-wise, optimizer and cold-state totals
        that are not zero. What a trace records for its network operations."""
        shapes: dict[tuple[int, ...], int] = {}
        for g in self.gemms:
            shape = gemm_shape(*g)
            shapes[shape] = shapes.get(shape, 0) + 1
        out = [Operator("linear", shape, n) for shape, n in shapes.items()]
        rest = (self.calls - len(self.gemms) - self.vector_calls,
                self.bytes - self.gemm_bytes - self.vector_bytes - self.cold_bytes,
                self.flops - self.gemm_flops - self.vector_flops)
        if any(rest):
            out.append(Operator("elementwise", tuple(max(v, 0) for v in rest)))
        if self.vector_calls or self.vector_bytes or self.vector_flops:
            out.append(Operator("optimizer", (self.vector_calls, self.vector_bytes,
                                              self.vector_flops)))
        if self.cold_bytes:
            out.append(Operator("state_read", (self.cold_bytes,)))
        return tuple(out)


NOTHING = Work(0, 0)


def gemm(product: str, batch: int, inputs: int, outputs: int) -> Work:
    """One float32 product of a layer of ``inputs`` → ``outputs`` at ``batch``: 'fwd' x·W,
    'dw' xᵀ·dy or 'dx' dy·Wᵀ (2·B·i·o flops, 4·(B·i + i·o + B·o) bytes each)."""
    b = F32 * (batch * inputs + inputs * outputs + batch * outputs)
    return Work(2 * batch * inputs * outputs, b, ((product, batch, inputs, outputs),), b,
                calls=1)


def elementwise(flops: int, bytes_: int, calls: int = 1) -> Work:
    """Non-GEMM kernels: element-wise arithmetic, reductions, gathers, copies."""
    return Work(flops, bytes_, calls=calls)


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Kernels(_Model):
    """Element-wise kernels of one pass, linear in the batch B: B·flops_per_sample flops,
    B·bytes_per_sample + fixed_bytes bytes (e.g. a bias read once), ``calls`` kernels."""

    flops_per_sample: int = Field(default=0, ge=0)
    bytes_per_sample: int = Field(default=0, ge=0)
    fixed_bytes: int = Field(default=0, ge=0)
    calls: int = Field(default=0, ge=0)

    def at(self, batch: int) -> Work:
        return elementwise(batch * self.flops_per_sample,
                           batch * self.bytes_per_sample + self.fixed_bytes, self.calls)


class Layer(_Model):
    """One layer (see the module docstring). ``kind`` 'other': FLOPs the counter has a
    formula for but no single GEMM shape (attention, batched products): costed as
    non-GEMM flops."""

    name: str
    kind: Literal["linear", "conv", "other"]
    rows: int = Field(default=1, ge=1)  # GEMM rows per sample
    inputs: int = Field(default=0, ge=0)
    outputs: int = Field(default=0, ge=0)
    forward_flops: int = Field(ge=0)  # per sample
    backward_flops: int = Field(ge=0)  # per sample
    input_grad: bool = True  # the backward computes this layer's input gradient
    params: int = Field(default=0, ge=0)
    tensors: int = Field(default=0, ge=0)  # parameter tensors (the optimizer loops over them)
    param_bytes: int = Field(default=0, ge=0)
    activation_bytes: int = Field(default=0, ge=0)  # per sample: the outputs it keeps
    forward_kernels: Kernels = Kernels()
    backward_kernels: Kernels = Kernels()

    def forward(self, batch: int) -> Work:
        if self.kind == "other":
            return elementwise(batch * self.forward_flops, 0, 0) + self.forward_kernels.at(batch)
        return gemm("fwd", batch * self.rows, self.inputs, self.outputs) \
            + self.forward_kernels.at(batch)

    def backward(self, batch: int, input_grad: bool) -> Work:
        if self.kind == "other":
            return (elementwise(batch * self.backward_flops, 0, 0)
                    + self.backward_kernels.at(batch))
        rows = batch * self.rows
        work = gemm("dw", rows, self.inputs, self.outputs) + self.backward_kernels.at(batch)
        if input_grad:
            work += gemm("dx", rows, self.inputs, self.outputs)
        return work


class NetworkWork(_Model):
    """A network's work at any batch. ``kind``: 'mlp' (layer sizes), 'nature_cnn', or
    'module' (counted from an nn.Module); ``obs_shape``/``obs_dtype``: one input sample;
    ``forward_kernels``/``backward_kernels``: element-wise work outside the layers (input
    conversion; a counted module's backward kernels, which are not attributed per layer)."""

    kind: str
    obs_shape: list[int]
    obs_dtype: str = "float32"
    layers: list[Layer] = Field(min_length=1)
    forward_kernels: Kernels = Kernels()
    backward_kernels: Kernels = Kernels()

    def forward(self, batch: int) -> Work:
        """One forward on ``batch`` samples."""
        work = self.forward_kernels.at(batch)
        for layer in self.layers:
            work += layer.forward(batch)
        return work

    def backward(self, batch: int, input_grad: bool = False) -> Work:
        """The backward of ``forward``; ``input_grad``: also the first layer's input
        gradient (e.g. DDPG's dQ/da)."""
        work = self.backward_kernels.at(batch)
        for k, layer in enumerate(self.layers):
            work += layer.backward(batch, layer.input_grad or (k == 0 and input_grad))
        return work

    @property
    def n_params(self) -> int:
        return sum(layer.params for layer in self.layers)

    @property
    def n_tensors(self) -> int:
        return sum(layer.tensors for layer in self.layers)

    @property
    def param_bytes(self) -> int:
        return sum(layer.param_bytes for layer in self.layers)

    @property
    def activation_bytes(self) -> int:
        """Per sample: what a forward keeps for the backward."""
        return sum(layer.activation_bytes for layer in self.layers)

    @property
    def forward_flops(self) -> int:
        """Per sample, as FlopCounterMode counts (GEMMs and other formula'd ops)."""
        return sum(layer.forward_flops for layer in self.layers)

    @property
    def backward_flops(self) -> int:
        return sum(layer.backward_flops for layer in self.layers)

    @property
    def obs_bytes(self) -> int:
        n = 1
        for d in self.obs_shape:
            n *= d
        return n * DTYPE_BYTES[self.obs_dtype]

    def info(self) -> dict[str, Any]:
        """What a trace stores (workload_info['network']), with the per-sample totals
        readers without rldse want."""
        return {**self.model_dump(mode="json"), "n_params": self.n_params,
                "param_bytes": self.param_bytes,
                "forward_flops_per_sample": self.forward_flops,
                "backward_flops_per_sample": self.backward_flops,
                "activation_bytes_per_sample": self.activation_bytes}


def combine(parts: dict[str, NetworkWork]) -> NetworkWork:
    """Separate networks on the same input run as one (e.g. a policy and a value network):
    their layers named by part, in the given order."""
    nets = list(parts.values())
    if len(nets) == 1:
        return nets[0]

    def total(attr: str) -> Kernels:
        ks = [getattr(n, attr) for n in nets]
        return Kernels(**{f: sum(getattr(k, f) for k in ks) for f in Kernels.model_fields})

    return NetworkWork(
        kind="module", obs_shape=nets[0].obs_shape, obs_dtype=nets[0].obs_dtype,
        layers=[layer.model_copy(update={"name": f"{part}.{layer.name}"})
                for part, net in parts.items() for layer in net.layers],
        forward_kernels=total("forward_kernels"), backward_kernels=total("backward_kernels"))


#: Bytes per element of the input dtypes a NetworkWork may name.
DTYPE_BYTES = {"uint8": 1, "int8": 1, "float16": 2, "bfloat16": 2, "float32": 4,
               "float64": 8, "int32": 4, "int64": 8}


def float32_bytes(shape: tuple[int, ...] | list[int]) -> int:
    """Bytes of one float32 array of ``shape`` (a recorded network's observation)."""
    n = 1
    for d in shape:
        n *= d
    return F32 * n


def network_info(nets: dict[str, Any], always: bool = False) -> dict[str, Any]:
    """``{'network': ...}`` for a program's workload_info when any of ``nets`` (recorded
    networks: rldse.recording.network.Network) is not an MLP chain, or ``always``: their
    per-layer work as one network (``combine``), which the programs rescale with; ``{}``
    for MLPs, whose ``layer_sizes`` say it all."""
    if not always and all(n.sizes is not None for n in nets.values()):
        return {}
    return {"network": combine({k: n.network_work() for k, n in nets.items()}).info()}
