"""One step of LLM RL post-training on a GPU cluster: the inputs (``StepPlan``), the
rollout engines' batches, the trainer's passes, GPU memory, and the step time under the
plan's protocol (``protocols``). ``program.py`` books it on the machine; ``rldse validate
external --dataset verl`` runs it through ``rldse simulate``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from rldse.errors import RldseError
from rldse.models.collectives import Cluster, choose
from rldse.workloads.llm_rl.arch import PRECISION_BYTES, Arch
from rldse.workloads.llm_rl.lengths import response_lengths
from rldse.workloads.llm_rl.protocols import StepTimes, async_rollouter, minibatch_lags
from rldse.workloads.llm_rl.rollout import Engine, Generation, generate
from rldse.workloads.llm_rl.train import (
    Parallel,
    group_cluster,
    micro_batches,
    pass_cost,
    train_memory_bytes,
)

#: vLLM's reserve for the engine's activations and CUDA graphs beside weights and KV
#: cache, bytes per GPU: assumption (vLLM profiles a forward at max_num_batched_tokens;
#: ≈1-3 GiB for 7-70B models at 8192 tokens), range 1-4 GiB.
ENGINE_RESERVE_BYTES = 2 * 2**30


@dataclass(frozen=True)
class StepPlan:
    """Everything one step depends on, resolved (knobs, parts, cluster)."""

    arch: Arch
    gpu: object  # GpuModel of the trainer (colocated: of every GPU)
    rollout_gpu: object  # GpuModel of the rollout engines (colocated: ``gpu``)
    gpus: int
    gpus_per_node: int
    fabric: object
    network: object | None
    nics: int | None
    host_bw_gbs: float
    host_link_gbs: float
    protocol: str
    rollout_gpus: int  # disaggregated protocols: GPUs of the rollout engines
    prompts: int
    responses: int
    train_batch: int
    prompt_tokens: int
    response_mean: float
    response_max: int
    precision: str
    rollout_tp: int
    train: Parallel
    max_num_seqs: int
    gpu_memory_utilization: float
    max_tokens_per_gpu: int
    logprob_tokens_per_gpu: int
    old_logprob: bool
    ref_logprob: bool
    offload: bool
    staleness: float
    partial_rollout: bool
    require_batches: int
    trigger_sync_steps: int
    reward_s: float

    @property
    def train_gpus(self) -> int:
        return self.gpus if self.protocol == "colocated" else self.gpus - self.rollout_gpus

    @property
    def engine_gpus(self) -> int:
        return self.gpus if self.protocol == "colocated" else self.rollout_gpus


@dataclass(frozen=True)
class Memory:
    """Peak bytes per GPU of the rollout engines and the trainer, and why a plan does not
    fit (empty: it fits)."""

    rollout_bytes: float
    train_bytes: float
    kv_capacity_tokens: float  # per engine
    reason: str = ""


def gib(x: float) -> str:
    return f"{x / 2**30:.1f} GiB"


def memory(plan: StepPlan, tokens_per_gpu: float) -> Memory:
    """Per-GPU memory of the plan's trainer and rollout engines (colocated: the trainer's
    state stays resident during rollout unless offloaded)."""
    a, cap = plan.arch, float(plan.gpu.spec.mem_bytes)
    engine_cap = float(plan.rollout_gpu.spec.mem_bytes)
    train_parts = train_memory_bytes(a, plan.train, tokens_per_gpu)
    train_bytes = sum(train_parts.values())
    weights = a.params * PRECISION_BYTES[plan.precision] / plan.rollout_tp
    resident = train_parts["state"] if plan.protocol == "colocated" and not plan.offload \
        else 0.0
    budget = plan.gpu_memory_utilization * engine_cap - resident
    kv_bytes = budget - weights - ENGINE_RESERVE_BYTES
    kv_tokens = max(kv_bytes, 0.0) * plan.rollout_tp / a.kv_bytes_per_token(plan.precision)
    rollout_bytes = resident + weights + ENGINE_RESERVE_BYTES + max(kv_bytes, 0.0)
    reason = ""
    if train_bytes > cap:
        worst = max(train_parts, key=train_parts.get)
        reason = (f"the trainer needs {gib(train_bytes)} per GPU of {gib(cap)} "
                  f"({worst} {gib(train_parts[worst])}: {a.name} over {plan.train.gpus} "
                  f"GPUs at tp {plan.train.tp}, pp {plan.train.pp}, cp {plan.train.cp})")
    elif kv_tokens < plan.prompt_tokens + plan.response_max:
        reason = (f"the rollout engine's {a.name} weights ({gib(weights)} per GPU at tp "
                  f"{plan.rollout_tp}){' beside the trainer state ' + gib(resident) if resident else ''}"
                  f" leave KV cache for {kv_tokens:,.0f} tokens, under one "
                  f"{plan.prompt_tokens + plan.response_max:,}-token sequence")
    return Memory(rollout_bytes, train_bytes, kv_tokens, reason)


def engine_of(plan: StepPlan, kv_tokens: float, lengths: np.ndarray) -> Engine:
    """A rollout engine of the plan: slots up to max_num_seqs, and no more sequences of
    the prompt and the mean response's tokens than its KV cache holds."""
    per_seq = plan.prompt_tokens + float(lengths.mean())
    slots = int(max(1, min(plan.max_num_seqs, kv_tokens // per_seq)))
    tp_cluster = Cluster(plan.fabric, nodes=1, gpus_per_node=plan.rollout_tp) \
        if plan.rollout_tp > 1 else None
    return Engine(plan.arch, plan.rollout_gpu, plan.rollout_tp, slots, plan.precision,
                  tp_cluster)


def batch_generation(plan: StepPlan, engine: Engine, lengths: np.ndarray
                     ) -> list[Generation]:
    """The step's responses dealt round-robin to the engines (a router balancing requests)
    and generated as one batch; returns each engine's Generation."""
    engines = plan.engine_gpus // plan.rollout_tp
    return [generate(engine, lengths[e::engines], plan.prompt_tokens)
            for e in range(engines)]


def weight_sync_s(plan: StepPlan) -> float:
    """Trainer → rollout weights: the FSDP shards gathered into whole bf16 tensors on the
    trainer, then broadcast to every engine GPU (colocated: only the gather, the engines
    load from the same GPUs)."""
    a = plan.arch
    nbytes = 2.0 * a.params
    train_cl = group_cluster(plan.train_gpus, plan.gpus_per_node, plan.fabric, plan.network,
                             plan.nics)
    gather = float(choose(train_cl, "all_gather", nbytes / plan.train.tp).seconds) \
        if train_cl is not None else 0.0
    if plan.protocol == "colocated":
        return gather
    nodes = math.ceil(plan.gpus / plan.gpus_per_node)
    bcast_cl = Cluster(plan.fabric, nodes=nodes, gpus_per_node=min(plan.gpus,
                                                                   plan.gpus_per_node),
                       network=plan.network if nodes > 1 else None, nics=plan.nics)
    return gather + float(choose(bcast_cl, "broadcast", nbytes / plan.rollout_tp).seconds)


def switch_s(plan: StepPlan) -> float:
    """Colocated engine switches per step, each over the host link: the rollout engine's
    weights offloaded and reloaded (vLLM sleep level 1 and wake-up), and with ``offload``
    the trainer's fp32 state moved out before rollout and back before training."""
    a = plan.arch
    link = plan.host_link_gbs * 1e9
    engine = 2 * a.params * PRECISION_BYTES[plan.precision] / plan.rollout_tp / link
    state = 2 * 16 * a.params / plan.train.gpus / link if plan.offload else 0.0
    return engine + state


def step(plan: StepPlan) -> tuple[StepTimes, Memory]:
    """The step's time, its parts and lag, and the memory it needs."""
    n = plan.prompts * plan.responses
    lengths = response_lengths(n, plan.response_mean, plan.response_max)
    seqs = lengths + plan.prompt_tokens
    mini_batches = max(plan.prompts // plan.train_batch, 1)
    trainer = dict(arch=plan.arch, gpu=plan.gpu, par=plan.train, seq_lengths=seqs,
                   precision=plan.precision, gpus_per_node=plan.gpus_per_node,
                   fabric=plan.fabric, network=plan.network, nics=plan.nics,
                   host_bw_gbs=plan.host_bw_gbs, host_link_gbs=plan.host_link_gbs)
    offload = plan.offload and plan.protocol == "colocated"
    # an infeasible plan is still timed (as if its memory sufficed, its engines holding at
    # least one sequence): the search's bound and the result's metrics need a time
    mem = memory(plan, micro_batches(seqs, plan.train, mini_batches,
                                     plan.max_tokens_per_gpu)[1])
    train = pass_cost(mini_batches=mini_batches, max_tokens_per_gpu=plan.max_tokens_per_gpu,
                      train=True, offload=offload, **trainer)
    logprob = pass_cost(mini_batches=1, max_tokens_per_gpu=plan.logprob_tokens_per_gpu,
                        train=False, offload=offload, **trainer)
    engine = engine_of(plan, max(mem.kv_capacity_tokens,
                                 plan.prompt_tokens + plan.response_max), lengths)
    # async streams its prompts (_async times its rollouter); the others generate a batch
    gen_s = 0.0 if plan.protocol == "async" else max(
        g.total_s for g in batch_generation(plan, engine, lengths))
    logprobs_s = logprob.total_s * (int(plan.old_logprob) + int(plan.ref_logprob))
    sync_s = weight_sync_s(plan)
    parts = {"generate": gen_s, "reward": plan.reward_s, "logprob": logprobs_s,
             "train": train.total_s, "weight_sync": sync_s}
    lags = minibatch_lags(plan.prompts, plan.train_batch, plan.responses)
    train_side = logprobs_s + train.total_s
    if plan.protocol == "colocated":
        parts["switch"] = switch_s(plan)
        total = sum(parts.values())
        return StepTimes(total, parts, lags, gen_s, train_side), mem
    if plan.protocol == "disaggregated":
        total = gen_s + plan.reward_s + train_side + sync_s
        return StepTimes(total, parts, lags, gen_s, train_side), mem
    if plan.protocol == "one_step_off":
        total = max(gen_s + plan.reward_s, train_side) + sync_s
        lags = minibatch_lags(plan.prompts, plan.train_batch, plan.responses,
                              shift=mini_batches)
        return StepTimes(total, parts, lags, gen_s, train_side), mem
    return _async(plan, parts, lengths, engine, train_side, sync_s, mem)


def _async(plan: StepPlan, parts: dict[str, float], lengths: np.ndarray, engine: Engine,
           train_side: float, sync_s: float, mem: Memory) -> tuple[StepTimes, Memory]:
    """verl's fully_async_policy (protocols docstring), its rollouter simulated on one
    server (``protocols.async_rollouter``); partial rollout acts only with a threshold above
    0 (with none, nothing is in flight at a sync)."""
    servers = plan.engine_gpus // plan.rollout_tp
    chunk_prompts = plan.require_batches * plan.train_batch
    chunks = max(plan.prompts // chunk_prompts, 1)
    updates = max(plan.prompts // plan.train_batch, 1)
    run = async_rollouter(
        engine, lengths.reshape(plan.prompts, plan.responses), plan.prompt_tokens,
        step_groups=plan.prompts / servers, staleness=plan.staleness,
        partial=plan.partial_rollout and plan.staleness > 0,
        chunk_groups=chunk_prompts / servers, chunk_train_s=train_side / chunks,
        chunks_per_step=chunks, sync_s=sync_s)
    total = run.step_s + plan.reward_s
    # prompts generated under the weights before the last sync: learned on a sync later
    stale_share = min(run.carried_prompts * servers / plan.prompts, 1.0)
    lags = minibatch_lags(plan.prompts, plan.train_batch, plan.responses)
    lags = {**{k: round(v * (1 - stale_share)) for k, v in lags.items()},
            **{k + updates: round(v * stale_share) for k, v in lags.items()}}
    parts.update(generate=run.busy_s,
                 trainer_wait=max(total - sync_s - train_side, 0.0))
    return StepTimes(total, parts, lags, run.busy_s, train_side), mem


def check_parallel(gpus: int, tp: int, pp: int, cp: int, where: str) -> None:
    if gpus % (tp * pp * cp):
        raise RldseError(f"{gpus} trainer GPUs are not a multiple of train_tp × train_pp × "
                         f"train_cp = {tp * pp * cp}", where=where)
