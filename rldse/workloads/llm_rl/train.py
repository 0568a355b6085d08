"""The trainer's passes over a step's sequences (FSDP/ZeRO-3 with tensor, pipeline and
context parallelism), priced per micro-batch on one GPU, and its memory.

A pass (``Pass``) is a forward (log-prob passes: the old policy's, the reference's) or a
training pass (forward, activation recomputation, backward, optimizer) over micro-batches
of ``M`` tokens per GPU (verl's dynamic batch size packs sequences up to a token budget per
GPU). Per micro-batch on one GPU:

- weight GEMMs (``rldse.models.gpu_ops.price``) of its ``layers / pp`` layers with TP
  shards: forward x·W; backward dy·Wᵀ and xᵀ·dy; gradient checkpointing recomputes the
  forward inside the backward; the LM head on the last stage;
- causal attention, ``4 · layers · heads · head_dim · Σ s²/2`` flops forward over the
  sequences of length s in the micro-batch (backward 2.5 × forward: FlashAttention-2's five
  products against two), at ``ATTENTION_EFFICIENCY`` of the BF16 tensor peak;
- element-wise kernels (norms, SwiGLU, residuals, rotary; logits' softmax) by their bytes
  at achieved bandwidth (``ELEMENTWISE_BYTES``);
- FSDP's all-gather of the bf16 parameters (forward, and again in the backward) and
  reduce-scatter of the fp32 gradients over the data-parallel ranks, prefetched layer by
  layer so they overlap the compute: the micro-batch takes the longer of the two;
- per layer, two tensor-parallel all-reduces of the activations forward and two backward
  (and two in the recomputation), and four Ulysses all-to-alls with context parallelism,
  on the critical path;
- pipeline parallelism adds the bubble (pp − 1) / (m + pp − 1) of m micro-batches.

The optimizer (AdamW, fp32 moments) touches 16 bytes read and 12 written per parameter of
the GPU's shard once per mini-batch, at achieved bandwidth; with ``offload`` (verl's
param/optimizer offload) it runs on the host CPU, whose DRAM bandwidth the node's GPUs
share, and the shard's fp32 parameters and gradients cross the host link once per
micro-batch each way.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rldse.kernels.network_work import gemm_shape
from rldse.models.collectives import Cluster, choose
from rldse.models.gpu_ops import price
from rldse.workloads.llm_rl.arch import Arch
from rldse.workloads.llm_rl.rollout import ATTENTION_EFFICIENCY

#: Bytes one token moves through a layer's element-wise kernels in a forward, in units of
#: (hidden, ffn) elements of 2 bytes: two RMSNorms (read and write: 4 hidden), two residual
#: adds (3 hidden each), rotary on queries and keys (≈ 2 hidden), SwiGLU (reads gate and
#: up, writes their product: 3 ffn). Counted from the Llama/Qwen layer; backward twice.
ELEMENTWISE_BYTES = (12, 3)
#: fp32 bytes per parameter FSDP keeps sharded: master weights, gradients, two AdamW
#: moments (verl's FSDP workers keep fp32 parameters and compute in bf16).
STATE_BYTES_PER_PARAM = 16
#: AdamW's bytes per parameter: reads weight, gradient, two moments (16), writes weight and
#: two moments (12).
ADAM_BYTES_PER_PARAM = 28
#: Activation bytes per token a recomputed layer holds at its peak, in units of (hidden,
#: ffn, q+2kv) bf16 elements: the layer input, norms, attention output, gate, up and their
#: product (counted from the Llama/Qwen layer).
LAYER_ACTIVATION = (6, 3, 1)


@dataclass(frozen=True)
class Parallel:
    """How the trainer's ``gpus`` split the model and the data."""

    gpus: int
    tp: int = 1
    pp: int = 1
    cp: int = 1

    @property
    def dp(self) -> int:
        return self.gpus // (self.tp * self.pp * self.cp)


@dataclass(frozen=True)
class PassCost:
    """Seconds of a pass over a step's tokens on the trainer, and how they split."""

    total_s: float
    compute_s: float
    exposed_comm_s: float
    optimizer_s: float
    bubble_s: float
    micro_batches: int
    tokens_per_micro_batch: float


def group_cluster(ranks: int, per_node: int, fabric, network, nics) -> Cluster | None:
    """The GPUs of one collective group of ``ranks``, ``per_node`` of them in each node
    (within one node where they fit); None for a group of one."""
    if ranks <= 1:
        return None
    if ranks <= per_node:
        return Cluster(fabric, nodes=1, gpus_per_node=ranks)
    return Cluster(fabric, nodes=math.ceil(ranks / per_node), gpus_per_node=per_node,
                   network=network, nics=nics)


def micro_batches(seqs: np.ndarray, par: Parallel, mini_batches: int,
                  max_tokens_per_gpu: int) -> tuple[int, float]:
    """(micro-batches per mini-batch, tokens per GPU in each): a mini-batch's tokens over
    the data-parallel ranks and each rank's CP group, packed up to the budget per GPU."""
    per_gpu = float(np.sum(seqs)) / mini_batches / par.dp / par.cp
    micro = max(1, math.ceil(per_gpu / max_tokens_per_gpu))
    return micro, per_gpu / micro


def micro_batch_s(arch: Arch, gpu, par: Parallel, tokens: float, seq_sq: float,
                  precision: str, train: bool) -> tuple[float, float]:
    """(compute seconds, non-overlapped TP/CP communication seconds are priced by the
    caller) of one micro-batch of ``tokens`` per GPU whose sequences' Σ s² (per GPU, after
    the CP split) is ``seq_sq``: forward only, or forward + recompute + backward."""
    m = max(int(round(tokens)), 1)
    tp, layers = par.tp, arch.layers / par.pp
    fwd = bwd = 0.0
    for name, inputs, outputs in arch.layer_gemms():
        i, o = (inputs // tp, outputs) if name in ("o", "down") else \
            (inputs, -(-outputs // tp))
        fwd += price(gpu, "linear", gemm_shape("fwd", m, i, o), precision).device_s
        if train:
            bwd += price(gpu, "linear", gemm_shape("dx", m, i, o), precision).device_s
            bwd += price(gpu, "linear", gemm_shape("dw", m, i, o), precision).device_s
    head_o = -(-arch.vocab // tp)
    head_f = price(gpu, "linear", gemm_shape("fwd", m, arch.hidden, head_o), precision).device_s
    head_b = (price(gpu, "linear", gemm_shape("dx", m, arch.hidden, head_o), precision).device_s
              + price(gpu, "linear", gemm_shape("dw", m, arch.hidden, head_o),
                      precision).device_s) if train else 0.0
    rate = gpu.peak_flops("bf16") * ATTENTION_EFFICIENCY
    attn_f = arch.attention_flops(1.0, 0.5 * seq_sq) / (tp * par.pp) / rate
    spec = gpu.spec
    bw = spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency
    h, f = ELEMENTWISE_BYTES
    elem_f = layers * m * 2 * (h * arch.hidden + f * arch.ffn / tp) / bw
    logits_f = m * head_o * 4 * 2 / bw  # fp32 logits written, read by the log-softmax
    forward = layers * fwd + attn_f + elem_f + head_f / par.pp + logits_f / par.pp
    if not train:
        return forward, 0.0
    backward = layers * bwd + 2.5 * attn_f + 2 * elem_f + (head_b + logits_f) / par.pp
    return 2 * forward + backward, 0.0  # forward, its recomputation, backward


def pass_cost(arch: Arch, gpu, par: Parallel, seq_lengths: np.ndarray, mini_batches: int,
              max_tokens_per_gpu: int, precision: str, train: bool, gpus_per_node: int,
              fabric, network, nics, host_bw_gbs: float = 0.0, offload: bool = False,
              host_link_gbs: float = 0.0) -> PassCost:
    """A pass over sequences of ``seq_lengths`` tokens (prompt + response) split in
    ``mini_batches`` optimizer steps (module docstring)."""
    seqs = np.asarray(seq_lengths, dtype=np.float64)
    micro, m = micro_batches(seqs, par, mini_batches, max_tokens_per_gpu)
    # Σ s² per GPU per micro-batch: the micro-batch's share of sequences, split by CP
    seq_sq = float((seqs * seqs).sum()) / mini_batches / par.dp / micro / (par.cp ** 2)
    compute, _ = micro_batch_s(arch, gpu, par, m, seq_sq, precision, train)
    # FSDP over the data-parallel and context-parallel ranks of one TP/PP position
    fsdp_ranks = par.dp * par.cp
    params_stage = arch.params / (par.tp * par.pp)
    fsdp = group_cluster(fsdp_ranks, max(gpus_per_node // par.tp, 1), fabric, network, nics)
    comm = 0.0
    if fsdp is not None:
        gathers = 2 if train else 1
        comm = gathers * float(choose(fsdp, "all_gather", 2 * params_stage).seconds)
        if train:
            comm += float(choose(fsdp, "reduce_scatter", 4 * params_stage).seconds)
    layers = arch.layers / par.pp
    exposed = 0.0
    if par.tp > 1:
        tp_cl = Cluster(fabric, nodes=1, gpus_per_node=par.tp)
        ar = float(choose(tp_cl, "all_reduce", m * arch.hidden * 2).seconds)
        exposed += layers * ar * (6 if train else 2)
    if par.cp > 1:
        cp_cl = Cluster(fabric, nodes=1, gpus_per_node=par.cp)
        a2a = float(choose(cp_cl, "all_to_all",
                           m * (2 * arch.q_width + 2 * arch.kv_width) * 2 / par.tp).seconds)
        exposed += layers * a2a * (3 if train else 1)
    per_micro = max(compute, comm) + exposed
    if offload:
        shard_bytes = 4 * arch.params / par.gpus
        per_micro += (2 if train else 1) * shard_bytes / (host_link_gbs * 1e9)
    bubble = (par.pp - 1) / (micro + par.pp - 1) if par.pp > 1 else 0.0
    passes = mini_batches * micro * per_micro / (1 - bubble)
    optimizer = 0.0
    if train:
        shard = arch.params / par.gpus
        if offload:
            optimizer = mini_batches * ADAM_BYTES_PER_PARAM * shard * gpus_per_node / (
                host_bw_gbs * 1e9)
        else:
            spec = gpu.spec
            optimizer = mini_batches * ADAM_BYTES_PER_PARAM * shard / (
                spec.mem_bw_gbs * 1e9 * spec.mem_bw_efficiency)
    total = passes + optimizer
    return PassCost(total, mini_batches * micro * compute,
                    mini_batches * micro * (per_micro - compute), optimizer,
                    passes * bubble, mini_batches * micro, m)


def train_memory_bytes(arch: Arch, par: Parallel, tokens_per_gpu: float,
                       resident_state: bool = True) -> dict[str, float]:
    """What one trainer GPU holds at its peak, by part: the sharded fp32 state (unless
    offloaded), two gathered layers of bf16 weights (the one computing and the prefetched
    one), checkpointed layer inputs, one recomputed layer's activations, and the logits."""
    h, f, q = LAYER_ACTIVATION
    m = tokens_per_gpu
    layers = arch.layers / par.pp
    return {
        "state": STATE_BYTES_PER_PARAM * arch.params / par.gpus if resident_state else 0.0,
        "gathered_layers": 2 * 2 * arch.layer_params / par.tp,
        "checkpoints": layers * m * arch.hidden * 2 / par.tp,
        "layer_activations": m * 2 * (h * arch.hidden + f * arch.ffn
                                      + q * (arch.q_width + 2 * arch.kv_width)) / par.tp,
        "logits": m * arch.vocab * 4 * 2 / par.tp,
    }
