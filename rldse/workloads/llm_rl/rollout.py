"""A rollout engine (vLLM-style) generating a batch of responses, simulated decode
iteration by decode iteration, vectorised over sequences (never a SimPy event per token).

One engine is ``tp`` GPUs holding the model sharded by tensor parallelism. It admits up to
``slots`` sequences at once (``max_num_seqs``, or fewer where the KV cache holds fewer of
mean length): continuous batching, a finished sequence's slot taken by the next waiting
one at the next iteration. Each iteration every running sequence emits one token; the
iteration costs, per GPU of the engine:

- the layers' weight GEMMs and the LM head at M = the running batch, each priced by
  ``rldse.models.gpu_ops.price`` (at small M they are bound by reading the weights);
- attention over the running sequences' KV cache: its bytes at achieved bandwidth or its
  flops at ``ATTENTION_EFFICIENCY`` of the tensor peak, whichever is longer;
- two tensor-parallel all-reduces per layer of the batch's hidden states
  (``rldse.models.collectives``), where tp > 1;
- ``DECODE_STEP_OVERHEAD_S``: the engine's scheduling and sampling per iteration.

As sequences finish the batch shrinks, and an iteration still reads every weight: the
length tail leaves the GPUs reading weights for few sequences, which is what makes
colocated RL slow to scale. Prefill is priced as GEMMs over every prompt token at
``PREFILL_CHUNK`` tokens per forward (chunked prefill) plus causal attention over each
prompt, before the first decode iteration.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass

import numpy as np

from rldse.models.collectives import Cluster, choose
from rldse.models.gpu_ops import price
from rldse.workloads.llm_rl.arch import PRECISION_BYTES, Arch

#: Share of the dense BF16 tensor peak FlashAttention-2 reaches on Hopper: "FlashAttention-2
#: achieving only 35% utilization on the H100 GPU" (Shah et al., FlashAttention-3,
#: arXiv 2407.08608, 2024, abstract); vLLM and FSDP training both run FlashAttention-2.
ATTENTION_EFFICIENCY = 0.35
#: Host work of one decode iteration of the engine (scheduler, sampler, output handling)
#: with CUDA graphs, seconds: assumption, vLLM V1's design goal of near-zero CPU overhead
#: (vLLM blog, "vLLM V1", 2025-01-27); range 0.2-2 ms.
DECODE_STEP_OVERHEAD_S = 0.5e-3
#: Prompt tokens per prefill forward (vLLM's chunked-prefill max_num_batched_tokens default
#: for online serving on data-centre GPUs, 8192).
PREFILL_CHUNK = 8192
#: Batch sizes the per-iteration GEMM and all-reduce times are priced at (interpolated
#: between): every size to 16, then about 6 % apart.
_GRID_MAX = 1 << 16


def _grid(top: int) -> np.ndarray:
    sizes = set(range(1, min(top, 16) + 1))
    b = 16.0
    while b < top:
        b *= 1.06
        sizes.add(min(int(round(b)), top))
    sizes.add(top)
    return np.array(sorted(sizes), dtype=np.float64)


@dataclass(frozen=True)
class Engine:
    """One rollout engine: its model, GPU, tensor-parallel size, slots and precision."""

    arch: Arch
    gpu: object  # GpuModel
    tp: int
    slots: int
    precision: str
    tp_cluster: Cluster | None  # the engine's GPUs in their node (None: tp == 1)

    def __post_init__(self) -> None:
        grid = _grid(self.slots)
        object.__setattr__(self, "_grid", grid)
        object.__setattr__(self, "_gemm_s", np.array([self.gemm_s(int(b)) for b in grid]))
        if self.tp_cluster is not None:
            nbytes = 2 * grid * self.arch.hidden * PRECISION_BYTES["bf16"]
            ar = choose(self.tp_cluster, "all_reduce", nbytes / 2).seconds
            object.__setattr__(self, "_allreduce_s", 2 * self.arch.layers * ar)
        else:
            object.__setattr__(self, "_allreduce_s", np.zeros_like(grid))

    def gemm_s(self, tokens: int) -> float:
        """Device seconds of one forward's weight GEMMs over ``tokens`` tokens, per GPU
        (column-parallel QKV and gate/up, row-parallel O and down, LM head split by
        vocabulary)."""
        a, tp, dtype = self.arch, self.tp, self.precision
        layer = 0.0
        for name, inputs, outputs in a.layer_gemms():
            shard_in, shard_out = (inputs // tp, outputs) if name in ("o", "down") else \
                (inputs, -(-outputs // tp))
            layer += price(self.gpu, "linear", (1, tokens, shard_in, shard_out), dtype).device_s
        head = price(self.gpu, "linear", (1, tokens, a.hidden, -(-a.vocab // tp)),
                     dtype).device_s
        return a.layers * layer + head

    def iteration_s(self, batch: np.ndarray, kv_tokens: np.ndarray) -> np.ndarray:
        """Seconds of decode iterations with ``batch`` running sequences holding
        ``kv_tokens`` tokens of KV cache in all (element-wise; batch ≥ 1)."""
        b = np.asarray(batch, np.float64)
        gemm = np.interp(b, self._grid, self._gemm_s)
        comm = np.interp(b, self._grid, self._allreduce_s)
        spec = self.gpu.spec
        kv_bytes = kv_tokens * self.arch.kv_bytes_per_token(self.precision) / self.tp
        attn_flops = self.arch.attention_flops(1.0, kv_tokens) / self.tp
        attn = np.maximum(kv_bytes / (spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency),
                          attn_flops / (self.gpu.peak_flops("bf16") * ATTENTION_EFFICIENCY))
        return gemm + attn + comm + DECODE_STEP_OVERHEAD_S

    def prefill_s(self, prompts: int, prompt_tokens: int) -> float:
        """Prefill of ``prompts`` prompts of ``prompt_tokens`` each (chunked)."""
        tokens = prompts * prompt_tokens
        if tokens == 0:
            return 0.0
        chunk = min(PREFILL_CHUNK, tokens)
        chunks = -(-tokens // chunk)
        attn = prompts * self.arch.attention_flops(prompt_tokens, prompt_tokens / 2) / self.tp
        return chunks * self.gemm_s(chunk) + attn / (
            self.gpu.peak_flops("bf16") * ATTENTION_EFFICIENCY)


@dataclass(frozen=True)
class Generation:
    """One engine's batch: when each sequence finished (seconds from the batch's start),
    how long the batch took, and the slot-seconds its sequences left idle."""

    finish_s: np.ndarray
    total_s: float
    decode_iterations: int
    idle_slot_s: float  # sum over iterations of (slots − running) × iteration seconds
    busy_slot_s: float


def admission(lengths: np.ndarray, slots: int) -> np.ndarray:
    """Iteration at which each sequence starts under continuous batching with ``slots``:
    first come, first served, each into the slot that frees first."""
    n = len(lengths)
    if n <= slots:
        return np.zeros(n, dtype=np.int64)
    start = np.zeros(n, dtype=np.int64)
    free = [int(x) for x in lengths[:slots]]  # when each slot frees
    heapq.heapify(free)
    for j in range(slots, n):
        t = heapq.heappop(free)
        start[j] = t
        heapq.heappush(free, t + int(lengths[j]))
    return start


def generate(engine: Engine, lengths: np.ndarray, prompt_tokens: int) -> Generation:
    """Simulate ``engine`` generating responses of ``lengths`` after ``prompt_tokens``
    prompts each: iteration i runs every sequence started at or before i that has not
    finished; its cost follows the running batch and its KV tokens (module docstring)."""
    lengths = np.asarray(lengths, dtype=np.int64)
    if len(lengths) == 0:
        return Generation(np.zeros(0), 0.0, 0, 0.0, 0.0)
    start = admission(lengths, engine.slots)
    end = start + lengths
    iters = int(end.max())
    running = np.zeros(iters + 1)
    offset = np.zeros(iters + 1)  # Σ (prompt − start) over running sequences
    np.add.at(running, start, 1.0)
    np.add.at(running, end, -1.0)
    np.add.at(offset, start, prompt_tokens - start)
    np.add.at(offset, end, -(prompt_tokens - start))
    running = np.cumsum(running)[:iters]
    i = np.arange(iters, dtype=np.float64)
    kv = np.cumsum(offset)[:iters] + i * running  # context = prompt + tokens so far
    live = running > 0
    step_s = np.zeros(iters)
    step_s[live] = engine.iteration_s(running[live], kv[live])
    clock = np.cumsum(step_s)
    prefill = engine.prefill_s(len(lengths), prompt_tokens)
    finish = prefill + clock[end - 1]
    idle_slots = engine.slots - np.minimum(running, engine.slots)
    return Generation(finish, prefill + float(clock[-1]), iters,
                      float((idle_slots * step_s).sum()), float((running * step_s).sum()))
