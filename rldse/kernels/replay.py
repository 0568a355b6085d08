"""Replay buffers that report their own work: a uniform ring buffer and proportional
prioritized replay (Schaul et al. 2016) on an array-backed sum tree.

Every operation returns an ``OpWork`` (items, flops, bytes, touches) so the training loop
can record it and a simulator can cost it. Counting conventions (trace schema v1: bytes
are read plus written; touches are irregular accesses, which the simulator costs as
dependent ones):

- A transition of an ``obs_dim`` observation stores obs and next_obs (obs dtype), an int32
  action, a float32 reward and a one-byte done flag:
  ``T = 2·obs_dim·obs_itemsize + 4 + 4 + 1`` bytes.
- Sum tree of ``capacity`` leaves, padded to ``L = 2^ceil(log2(capacity))`` so every
  leaf-to-root path has ``D = log2(L) + 1`` nodes; nodes are float64 (8 bytes).
- Random row gathers are irregular but independent (they overlap in memory), so they
  are costed by their bytes, not as touches; only tree nodes, visited one level after the
  other, are touches.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from rldse.kernels.network_work import Operator

NODE_BYTES = 8  # float64 sum-tree node
INDEX_BYTES = 8  # int64 sampled index
ACTION_BYTES = 4  # int32
REWARD_BYTES = 4  # float32
DONE_BYTES = 1  # bool
WEIGHT_BYTES = 4  # float32 importance weight
TD_BYTES = 4  # float32 TD error
PRIORITY_FLOPS = 3  # |δ|, + ε, ^α
IS_WEIGHT_FLOPS = 5  # p/total, ·N, ^-β, max-reduce, / max
STRATUM_FLOPS = 2  # (i + U)·(total/B)


@dataclass(frozen=True)
class OpWork:
    """Work of one buffer operation, in the trace's units, and the operators it is made
    of (``operators``: rldse.kernels.network_work.OPERATOR_KINDS)."""

    items: int
    flops: int = 0
    bytes: int = 0
    touches: int = 0
    parts: tuple[Operator, ...] = ()

    def __add__(self, other: OpWork) -> OpWork:
        return OpWork(self.items, self.flops + other.flops, self.bytes + other.bytes,
                      self.touches + other.touches, self.parts + other.parts)

    def operators(self) -> tuple[Operator, ...]:
        """What a trace records for this operation."""
        return self.parts


def write(items: int, bytes_: int) -> OpWork:
    """``items`` transitions written into the buffer."""
    return OpWork(items, bytes=bytes_, parts=(Operator("replay_write", (items, bytes_)),))


def gather(items: int, bytes_: int) -> OpWork:
    """``items`` rows read from the buffer (and written to the batch)."""
    return OpWork(items, bytes=bytes_, parts=(Operator("gather", (items, bytes_)),))


def tree_walk(items: int, levels: int, flops: int, bytes_: int) -> OpWork:
    """``items`` sum-tree paths of ``levels`` dependent node accesses each."""
    return OpWork(items, flops=flops, bytes=bytes_, touches=items * levels,
                  parts=(Operator("sumtree", (items, levels)),))


def arith(items: int, flops: int, bytes_: int, touches: int = 0) -> OpWork:
    """Per-item arithmetic (priorities, importance weights, quantization) and its bytes."""
    return OpWork(items, flops=flops, bytes=bytes_, touches=touches,
                  parts=(Operator("replay_arith", (items, bytes_, flops)),))


@dataclass(frozen=True)
class Batch:
    """A sampled minibatch; ``weights`` are importance weights (None for uniform replay)."""

    obs: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    next_obs: np.ndarray
    done: np.ndarray
    idx: np.ndarray
    weights: np.ndarray | None = None


def transition_bytes(obs_dim: int, obs_dtype: np.dtype) -> int:
    return 2 * obs_dim * np.dtype(obs_dtype).itemsize + ACTION_BYTES + REWARD_BYTES + DONE_BYTES


class UniformReplay:
    """Fixed-capacity ring buffer of transitions in preallocated numpy arrays."""

    dtype = "none"  # trace dtype of its operations: pure data movement

    def __init__(self, capacity: int, obs_dim: int, rng: np.random.Generator,
                 obs_dtype: np.dtype = np.float32) -> None:
        if capacity < 1:
            raise ValueError(f"replay capacity must be >= 1, got {capacity}")
        self.capacity = capacity
        self.rng = rng
        self.obs = np.zeros((capacity, obs_dim), dtype=obs_dtype)
        self.next_obs = np.zeros((capacity, obs_dim), dtype=obs_dtype)
        self.action = np.zeros(capacity, dtype=np.int32)
        self.reward = np.zeros(capacity, dtype=np.float32)
        self.done = np.zeros(capacity, dtype=bool)
        self.pos = 0  # next slot to write
        self.size = 0  # filled slots
        self.transition_bytes = transition_bytes(obs_dim, obs_dtype)

    def __len__(self) -> int:
        return self.size

    def add(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
            done: bool) -> OpWork:
        """Write one transition over the oldest slot. Work: read it and write it, 2·T bytes."""
        slot = self.pos
        self._store(slot, obs, action, reward, next_obs, done)
        self.pos = (slot + 1) % self.capacity
        self.size = min(self.size + 1, self.capacity)
        return write(1, 2 * self.transition_bytes)

    def sample(self, batch: int) -> tuple[Batch, OpWork]:
        """Draw ``batch`` filled slots with replacement, uniformly.

        Work: write and read back B int64 indices, gather B rows (read and write):
        bytes = B·(2·T + 2·8); no flops, no dependent touches.
        """
        idx = self.rng.integers(0, self.size, size=batch)
        work = gather(batch, batch * (2 * self.transition_bytes + 2 * INDEX_BYTES))
        return self._gather(idx), work

    def _store(self, slot: int, obs: np.ndarray, action: int, reward: float,
               next_obs: np.ndarray, done: bool) -> None:
        self.obs[slot] = obs
        self.next_obs[slot] = next_obs
        self.action[slot] = action
        self.reward[slot] = reward
        self.done[slot] = done

    def _gather(self, idx: np.ndarray, weights: np.ndarray | None = None) -> Batch:
        return Batch(self.obs[idx], self.action[idx], self.reward[idx], self.next_obs[idx],
                     self.done[idx], idx, weights)


class SumTree:
    """Binary tree whose internal nodes hold the sum of their children's priorities.

    Heap layout in one float64 array: root at 1, children of n at 2n and 2n+1, leaf i at
    L + i. Every operation reports the nodes it touches under the sequential reference
    algorithm (one path per item), which is what a simulator costs as dependent accesses.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.leaves = 1 << max(0, (capacity - 1).bit_length())
        self.depth = self.leaves.bit_length()  # log2(L) + 1 nodes per path
        self.nodes = np.zeros(2 * self.leaves, dtype=np.float64)
        self._levels = np.arange(self.depth)

    @property
    def total(self) -> float:
        return float(self.nodes[1])

    def priorities(self, idx: np.ndarray) -> np.ndarray:
        return self.nodes[self.leaves + np.asarray(idx)]

    def update(self, idx: np.ndarray, priority: np.ndarray) -> OpWork:
        """Set leaf priorities; for repeated indices the last write wins.

        Each leaf's change δ is added to its D-1 ancestors in one unbuffered scatter
        (``np.add.at`` sums siblings that share a parent). Work per item, as the
        sequential algorithm does it: touches = D (leaf and ancestors); flops = D (one
        subtraction for δ, D-1 additions); bytes = 8 (read the priority) + 16·D (read
        and write each path node).
        """
        idx = np.atleast_1d(np.asarray(idx, dtype=np.int64))
        priority = np.atleast_1d(np.asarray(priority, dtype=np.float64))
        n = idx.size
        # last occurrence of each index: unique over the reversed order
        uniq, first_rev = np.unique(idx[::-1], return_index=True)
        last = priority[::-1][first_rev]
        leaf = self.leaves + uniq
        delta = last - self.nodes[leaf]
        self.nodes[leaf] = last
        ancestors = leaf[:, None] >> self._levels[None, 1:]
        np.add.at(self.nodes, ancestors.ravel(), np.repeat(delta, self.depth - 1))
        d = self.depth
        return tree_walk(n, d, n * d, n * (NODE_BYTES + 2 * NODE_BYTES * d))

    def find(self, mass: np.ndarray, filled: int) -> tuple[np.ndarray, OpWork]:
        """Leaf index for each prefix-sum ``mass`` in [0, total): all descents level by level.

        Leaves ``filled`` and beyond must hold zero priority; a descent that rounding
        pushes past the last filled leaf is clamped back to it.

        At each of the D-1 internal levels every item reads its left child, compares and
        conditionally subtracts. Work per item: touches = D (root-to-leaf path); flops =
        2·(D-1); bytes = 8·D (left child per level and the leaf) + 8 (read the mass)
        + 8 (write the index).
        """
        mass = np.array(mass, dtype=np.float64)
        node = np.ones(mass.shape, dtype=np.int64)
        for _ in range(self.depth - 1):
            left = 2 * node
            left_sum = self.nodes[left]
            right = mass >= left_sum
            mass -= np.where(right, left_sum, 0.0)
            node = left + right
        idx = np.minimum(node - self.leaves, filled - 1)
        n, d = mass.size, self.depth
        return idx, tree_walk(n, d, n * 2 * (d - 1),
                              n * (NODE_BYTES * d + NODE_BYTES + INDEX_BYTES))


class PrioritizedReplay(UniformReplay):
    """Proportional prioritized replay: P(i) ∝ p_i with p_i = (|δ_i| + ε)^α.

    New transitions get the largest priority seen so far (tracked in a scalar, so no
    min/max tree), which guarantees each is replayed at least once with high probability.
    Importance weights w_i = (N·P(i))^-β are normalised by the batch maximum.
    """

    dtype = "fp64"  # sum-tree arithmetic

    def __init__(self, capacity: int, obs_dim: int, rng: np.random.Generator,
                 obs_dtype: np.dtype = np.float32, alpha: float = 0.6,
                 eps: float = 1e-3) -> None:
        super().__init__(capacity, obs_dim, rng, obs_dtype)
        self.alpha, self.eps = alpha, eps
        self.tree = SumTree(capacity)
        self.max_priority = 1.0

    def add(self, obs: np.ndarray, action: int, reward: float, next_obs: np.ndarray,
            done: bool) -> OpWork:
        """Ring-buffer write plus one sum-tree path setting the slot to the max priority."""
        slot = self.pos
        work = super().add(obs, action, reward, next_obs, done)
        return work + self.tree.update(slot, self.max_priority)

    def sample(self, batch: int, beta: float = 1.0) -> tuple[Batch, OpWork]:
        """Stratified proportional sampling: one uniform draw in each of B equal segments.

        Work: STRATUM_FLOPS per draw, the tree descents, IS_WEIGHT_FLOPS per weight, the
        row gather (B·2·T bytes) and the written weights (B·4 bytes).
        """
        segment = self.tree.total / batch
        mass = (np.arange(batch) + self.rng.random(batch)) * segment
        idx, tree_work = self.tree.find(mass, self.size)
        prob = self.tree.priorities(idx) / self.tree.total
        weights = (self.size * prob) ** -beta
        weights = (weights / weights.max()).astype(np.float32)
        work = arith(batch, batch * (STRATUM_FLOPS + IS_WEIGHT_FLOPS), batch * WEIGHT_BYTES) \
            + gather(batch, batch * 2 * self.transition_bytes)
        return self._gather(idx, weights), work + tree_work

    def update(self, idx: np.ndarray, td_error: np.ndarray) -> OpWork:
        """Re-prioritise sampled slots from their TD errors.

        Work per item: PRIORITY_FLOPS and one max comparison, read the TD error (4 bytes),
        plus the tree update.
        """
        priority = (np.abs(np.asarray(td_error, dtype=np.float64)) + self.eps) ** self.alpha
        self.max_priority = max(self.max_priority, float(priority.max()))
        n = priority.size
        work = arith(n, n * (PRIORITY_FLOPS + 1), n * TD_BYTES)
        return work + self.tree.update(idx, priority)
