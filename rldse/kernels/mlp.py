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

import numpy as np

# Work and its kernels live in network_work.py; re-exported, as the programs import them here
from rldse.kernels.network_work import F32 as F32
from rldse.kernels.network_work import Kernels, Layer, NetworkWork
from rldse.kernels.network_work import Work as Work
from rldse.kernels.network_work import elementwise as elementwise
from rldse.kernels.network_work import gemm as gemm

ADAM_FLOPS_PER_PARAM = 12
ADAM_BYTES_PER_PARAM = 124  # 13 kernels (module docstring)
ADAM_CALLS_PER_TENSOR = 13
CLIP_FLOPS_PER_PARAM, CLIP_BYTES_PER_PARAM, CLIP_CALLS_PER_TENSOR = 2, 16, 2


def vector(flops: int, bytes_: int, calls: int = 1) -> Work:
    """Contiguous same-shape float32 kernels (optimizer and target updates)."""
    return Work(flops, bytes_, vector_bytes=bytes_, calls=calls, vector_flops=flops,
                vector_calls=calls)


def cold(params: int, networks: int) -> Work:
    """An update's reads of its network state from memory: between two updates the loop's
    env steps and inserts run and evict it from the core's caches. Per parameter of the
    trained network(s), 4 bytes from each of the ``networks`` copies the update runs
    (online, target) and from Adam's m and v: networks + 2 reads (write-backs drain in the
    background and are not counted). The CPU model prices these bytes at the copy rate."""
    b = F32 * params * (networks + 2)
    return Work(0, b, cold_bytes=b)


def network(sizes: list[int], tanh: bool = False) -> NetworkWork:
    """The numpy MLP's work per layer (module docstring): layer k of i inputs and o outputs
    has its GEMM, the bias add and, on hidden layers (or a tanh output), the activation;
    its backward the bias gradient, the ReLU mask of its input below hidden layers (k > 0)
    and, for a tanh output, the tanh derivative. ``tanh``: the output ends in tanh."""
    layers, last = [], len(sizes) - 2
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        act = k < last or tanh
        fwd = Kernels(flops_per_sample=2 * o if act else o,
                      bytes_per_sample=F32 * (2 * o) + (2 * F32 * o if act else 0),
                      fixed_bytes=F32 * o, calls=2 if act else 1)
        mask = (2 * i, 14 * i, 2) if k > 0 else (0, 0, 0)
        out_tanh = (3 * o, 7 * F32 * o, 3) if k == last and tanh else (0, 0, 0)
        bwd = Kernels(flops_per_sample=o + mask[0] + out_tanh[0],
                      bytes_per_sample=F32 * o + mask[1] + out_tanh[1],
                      fixed_bytes=F32 * o, calls=1 + mask[2] + out_tanh[2])
        layers.append(Layer(name=f"layers.{k}", kind="linear", inputs=i, outputs=o,
                            forward_flops=2 * i * o, backward_flops=(4 if k > 0 else 2) * i * o,
                            input_grad=k > 0, params=i * o + o, tensors=2,
                            param_bytes=F32 * (i * o + o), activation_bytes=F32 * o,
                            forward_kernels=fwd, backward_kernels=bwd))
    return NetworkWork(kind="mlp", obs_shape=[sizes[0]], layers=layers)


def forward_work(sizes: list[int], batch: int, tanh: bool = False) -> Work:
    """``tanh``: the output layer ends in tanh (an MLP with out_act 'tanh')."""
    return network(sizes, tanh).forward(batch)


def backward_work(sizes: list[int], batch: int, input_grad: bool = False,
                  tanh: bool = False) -> Work:
    return network(sizes, tanh).backward(batch, input_grad)


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
