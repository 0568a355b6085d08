"""A small float32 numpy MLP with Adam, and the analytic work counts of each of its steps.

No torch: the networks RL control tasks use (two hidden layers of 64-256 units) are
fast enough in numpy, and counting their work from shapes is exact.

Work formulas (float32, 4 bytes per number; B = batch, layer of i inputs and o outputs):

- forward, per layer: flops = 2·B·i·o (matmul) + B·o (bias) + B·o (activation, hidden
  layers only); bytes = 4·(B·i + i·o + o + B·o) (read input, weights, bias; write output).
- backward, per layer: flops = 2·B·i·o (dW = xᵀ·dy) + B·o (db) + B·o (activation
  derivative, hidden layers) + 2·B·i·o (dx = dy·Wᵀ, skipped for the first layer unless
  the input gradient is asked for); bytes = 4·(B·o + B·i + i·o + i·o + o [+ B·i]) (read dy,
  x, W; write dW, db [and dx]).
- Adam, per parameter: 12 flops (two moment updates, two bias corrections, sqrt, divide,
  step); bytes = 4·7 (read p, g, m, v; write p, m, v).
- copy (target network sync): 0 flops, bytes = 4·2·P (read and write every parameter).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

F32 = 4  # bytes per float32
ADAM_FLOPS_PER_PARAM = 12
ADAM_BYTES_PER_PARAM = 7 * F32


@dataclass(frozen=True)
class Work:
    """Analytic work of one operation."""

    flops: int
    bytes: int

    def __add__(self, other: Work) -> Work:
        return Work(self.flops + other.flops, self.bytes + other.bytes)


def forward_work(sizes: list[int], batch: int) -> Work:
    flops = bytes_ = 0
    last = len(sizes) - 2
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        flops += 2 * batch * i * o + batch * o + (batch * o if k < last else 0)
        bytes_ += F32 * (batch * i + i * o + o + batch * o)
    return Work(flops, bytes_)


def backward_work(sizes: list[int], batch: int, input_grad: bool = False) -> Work:
    flops = bytes_ = 0
    last = len(sizes) - 2
    for k, (i, o) in enumerate(zip(sizes[:-1], sizes[1:], strict=True)):
        dx = k > 0 or input_grad
        flops += 2 * batch * i * o + batch * o + (batch * o if k < last else 0)
        flops += 2 * batch * i * o if dx else 0
        bytes_ += F32 * (batch * o + batch * i + 2 * i * o + o + (batch * i if dx else 0))
    return Work(flops, bytes_)


def n_params(sizes: list[int]) -> int:
    return sum(i * o + o for i, o in zip(sizes[:-1], sizes[1:], strict=True))


def adam_work(params: int) -> Work:
    return Work(ADAM_FLOPS_PER_PARAM * params, ADAM_BYTES_PER_PARAM * params)


def copy_work(params: int) -> Work:
    return Work(0, 2 * F32 * params)


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
