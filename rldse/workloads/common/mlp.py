"""A small float32 numpy MLP with Adam, and the analytic work counts of each of its steps.

No torch: the networks RL control tasks use (two hidden layers of 64-256 units) are
fast enough in numpy, and counting their work from shapes is exact.

Work formulas (float32, 4 bytes per number; B = batch, layer of i inputs and o outputs),
counting every numpy kernel the code below runs:

- forward, per layer: GEMM h @ W (flops 2·B·i·o; bytes 4·(B·i + i·o + B·o)); bias add
  (flops B·o; bytes 4·(2·B·o + o), it allocates); ReLU in place on hidden layers or tanh on
  a tanh output (flops B·o; bytes 8·B·o).
- backward, per layer: a tanh output's derivative g·(1 − y²) (flops 3·B·o; bytes 28·B·o:
  three allocating kernels); GEMM dW = xᵀ·dy (2·B·i·o; 4·(B·i + B·o + i·o)); db = column
  sum (flops B·o; bytes 4·(B·o + o)); GEMM dx = dy·Wᵀ (2·B·i·o; 4·(B·o + i·o + B·i)),
  skipped for the first layer unless the input gradient is asked for; the ReLU mask
  dx·(x > 0) below hidden layers (flops 2·B·i; bytes 14·B·i: the compare reads 4 and
  writes 1 byte, the multiply reads 5 and writes 4).
- Adam, per parameter: 12 flops; bytes 124: the 13 kernels of `Adam.step` (m *= β1;
  (1−β1)·g; m +=; v *= β2; g·g; (1−β2)·g²; v +=; v / c2; sqrt; + ε; (lr/c1)·m; divide;
  p −=), 8 bytes per unary or in-place-by-scalar kernel and 12 per binary one. With a
  clip norm, g·g and its sum add 16 bytes and 2 flops.
- copy (target network sync): 0 flops, bytes = 4·2·P (read and write every parameter).
- cold state (``cold``): an update's reads from memory of the parameters it runs and
  Adam's moments (4 bytes per number and copy).

``Work.gemms`` lists each GEMM by its layer shape (the CPU model prices them by the host's
measured GEMM curve, rldse.models.cpu), ``Work.vector_bytes`` the bytes of contiguous
kernels (Adam, target updates; their own measured rate); ``Work.calls`` counts numpy calls (their fixed cost is
interpreter time, which a rescale adds or removes per call).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = 4  # bytes per float32
ADAM_FLOPS_PER_PARAM = 12
ADAM_BYTES_PER_PARAM = 124  # 13 kernels (module docstring)
ADAM_CALLS_PER_TENSOR = 13
CLIP_FLOPS_PER_PARAM, CLIP_BYTES_PER_PARAM, CLIP_CALLS_PER_TENSOR = 2, 16, 2


@dataclass(frozen=True)
class Work:
    """Analytic work of one operation: totals, its GEMMs, contiguous-vector bytes, calls."""

    flops: int
    bytes: int
    #: each GEMM as (product, batch, inputs, outputs) of its layer, product 'fwd' (x·W),
    #: 'dw' (xᵀ·dy) or 'dx' (dy·Wᵀ): the CPU model's GEMM curve is keyed so
    gemms: tuple[tuple[str, int, int, int], ...] = ()
    gemm_bytes: int = 0  # bytes of the GEMMs' operands, included in bytes
    vector_bytes: int = 0  # bytes of contiguous same-shape kernels (Adam, Polyak), in bytes
    cold_bytes: int = 0  # state first read from memory each time (``cold``), in bytes
    calls: int = 0  # numpy calls (GEMMs included)

    def __add__(self, other: Work) -> Work:
        return Work(self.flops + other.flops, self.bytes + other.bytes,
                    self.gemms + other.gemms, self.gemm_bytes + other.gemm_bytes,
                    self.vector_bytes + other.vector_bytes,
                    self.cold_bytes + other.cold_bytes, self.calls + other.calls)

    @property
    def gemm_flops(self) -> int:
        return sum(2 * b * i * o for _, b, i, o in self.gemms)


def gemm(product: str, batch: int, inputs: int, outputs: int) -> Work:
    """One float32 product of a layer of ``inputs`` → ``outputs`` at ``batch``: 'fwd' x·W,
    'dw' xᵀ·dy or 'dx' dy·Wᵀ (2·B·i·o flops, 4·(B·i + i·o + B·o) bytes each)."""
    b = F32 * (batch * inputs + inputs * outputs + batch * outputs)
    return Work(2 * batch * inputs * outputs, b, ((product, batch, inputs, outputs),), b,
                calls=1)


def elementwise(flops: int, bytes_: int, calls: int = 1) -> Work:
    """Non-GEMM kernels: element-wise arithmetic, reductions, gathers, copies."""
    return Work(flops, bytes_, calls=calls)


def vector(flops: int, bytes_: int, calls: int = 1) -> Work:
    """Contiguous same-shape float32 kernels (optimizer and target updates)."""
    return Work(flops, bytes_, vector_bytes=bytes_, calls=calls)


def cold(params: int, networks: int) -> Work:
    """An update's reads of its network state from memory: between two updates the loop's
    env steps and inserts run and evict it from the core's caches. Per parameter of the
    trained network(s), 4 bytes from each of the ``networks`` copies the update runs
    (online, target) and from Adam's m and v: networks + 2 reads (write-backs drain in the
    background and are not counted). The CPU model prices these bytes at the copy rate."""
    b = F32 * params * (networks + 2)
    return Work(0, b, cold_bytes=b)


def forward_work(sizes: list[int], batch: int, tanh: bool = False) -> Work:
    """``tanh``: the output layer ends in tanh (an MLP with out_act 'tanh')."""
    work = Work(0, 0)
    last = len(sizes) - 2
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        bo = batch * o
        work += gemm("fwd", batch, i, o) + elementwise(bo, F32 * (2 * bo + o))
        if k < last or tanh:
            work += elementwise(bo, 2 * F32 * bo)
    return work


def backward_work(sizes: list[int], batch: int, input_grad: bool = False,
                  tanh: bool = False) -> Work:
    work = elementwise(3 * batch * sizes[-1], 7 * F32 * batch * sizes[-1], 3) if tanh \
        else Work(0, 0)
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        bo, bi = batch * o, batch * i
        work += gemm("dw", batch, i, o) + elementwise(bo, F32 * (bo + o))
        if k > 0 or input_grad:
            work += gemm("dx", batch, i, o)
        if k > 0:
            work += elementwise(2 * bi, 14 * bi, 2)
    return work


def n_params(sizes: list[int]) -> int:
    return sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:], strict=True))


def n_tensors(sizes: list[int]) -> int:
    """Parameter arrays (a weight and a bias per layer): Adam's loop runs over them."""
    return 2 * (len(sizes) - 1)


def adam_work(params: int, tensors: int = 0, clip: bool = False) -> Work:
    """Adam over ``params`` parameters in ``tensors`` arrays; ``clip``: with a clip norm."""
    work = vector(ADAM_FLOPS_PER_PARAM * params, ADAM_BYTES_PER_PARAM * params,
                  ADAM_CALLS_PER_TENSOR * tensors)
    if clip:
        work += vector(CLIP_FLOPS_PER_PARAM * params, CLIP_BYTES_PER_PARAM * params,
                       CLIP_CALLS_PER_TENSOR * tensors)
    return work


def copy_work(params: int) -> Work:
    return vector(0, 2 * F32 * params, 0)


class MLP:
    """Fully connected network: ReLU hidden layers, linear or tanh output."""

    def __init__(self, sizes: list[int], rng: np.random.Generator, out_act: str = "linear",
                 out_scale: float = 1.0) -> None:
        if out_act not in ("linear", "tanh"):
            raise ValueError(f"out_act must be 'linear' or 'tanh', got {out_act!r}")
        self.sizes = list(sizes)
        self.out_act = out_act
        self.W: list[np.ndarray] = []
        self.b: list[np.ndarray] = []
        for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
            limit = np.sqrt(6.0 / (i + o))  # Glorot-uniform
            if k == len(sizes) - 2:
                limit *= out_scale
            self.W.append(rng.uniform(-limit, limit, size=(i, o)).astype(np.float32))
            self.b.append(np.zeros(o, dtype=np.float32))

    @property
    def params(self) -> list[np.ndarray]:
        return [p for pair in zip(self.W, self.b, strict=True) for p in pair]

    @property
    def n_params(self) -> int:
        return n_params(self.sizes)

    def forward(self, x: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
        """Output and the per-layer activations the backward pass needs."""
        acts = [np.asarray(x, dtype=np.float32)]
        h = acts[0]
        last = len(self.W) - 1
        for k, (W, b) in enumerate(zip(self.W, self.b, strict=True)):
            h = h @ W + b
            if k < last:
                np.maximum(h, 0.0, out=h)
            elif self.out_act == "tanh":
                h = np.tanh(h)
            acts.append(h)
        return h, acts

    def __call__(self, x: np.ndarray) -> np.ndarray:
        return self.forward(x)[0]

    def backward(self, acts: list[np.ndarray], dy: np.ndarray,
                 input_grad: bool = False) -> tuple[list[np.ndarray], np.ndarray | None]:
        """Gradients (in `params` order) of sum(dy * output); and d/dinput if asked."""
        grads: list[np.ndarray] = [None] * (2 * len(self.W))  # type: ignore[list-item]
        g = np.asarray(dy, dtype=np.float32)
        if self.out_act == "tanh":
            g = g * (1.0 - acts[-1] ** 2)
        dx = None
        for k in range(len(self.W) - 1, -1, -1):
            x = acts[k]
            grads[2 * k] = x.T @ g
            grads[2 * k + 1] = g.sum(axis=0)
            if k > 0 or input_grad:
                dx = g @ self.W[k].T
                if k > 0:
                    g = dx * (x > 0)
        return grads, dx

    def copy_from(self, other: MLP, tau: float = 1.0) -> None:
        """Hard (tau=1) or Polyak (tau<1) update of these parameters towards `other`'s."""
        for mine, theirs in zip(self.params, other.params, strict=True):
            if tau >= 1.0:
                np.copyto(mine, theirs)
            else:
                mine *= 1.0 - tau
                mine += tau * theirs

    def get_flat(self) -> np.ndarray:
        return np.concatenate([p.ravel() for p in self.params])

    def set_flat(self, flat: np.ndarray) -> None:
        pos = 0
        for p in self.params:
            p[...] = flat[pos:pos + p.size].reshape(p.shape)
            pos += p.size


class Adam:
    """Adam (Kingma and Ba 2015) over a list of float32 arrays, updated in place."""

    def __init__(self, params: list[np.ndarray], lr: float = 1e-3, beta1: float = 0.9,
                 beta2: float = 0.999, eps: float = 1e-8, clip_norm: float | None = None) -> None:
        self.params, self.lr, self.b1, self.b2, self.eps = params, lr, beta1, beta2, eps
        self.clip_norm = clip_norm
        self.m = [np.zeros_like(p) for p in params]
        self.v = [np.zeros_like(p) for p in params]
        self.t = 0

    def step(self, grads: list[np.ndarray]) -> None:
        if self.clip_norm is not None:
            norm = float(np.sqrt(sum(float(np.sum(g * g)) for g in grads)))
            if norm > self.clip_norm:
                grads = [g * (self.clip_norm / norm) for g in grads]
        self.t += 1
        c1 = 1.0 - self.b1**self.t
        c2 = 1.0 - self.b2**self.t
        for p, g, m, v in zip(self.params, grads, self.m, self.v, strict=True):
            m *= self.b1
            m += (1.0 - self.b1) * g
            v *= self.b2
            v += (1.0 - self.b2) * (g * g)
            p -= (self.lr / c1) * m / (np.sqrt(v / c2) + self.eps)
