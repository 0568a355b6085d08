"""LLM RL post-training family (GRPO/DAPO/PPO on decoder-only language models): the model
named by ``workload.model`` (``arch.py``, published configs), rollout engines simulated per
decode iteration (``rollout.py``), the trainer's FSDP/TP/PP/CP passes (``train.py``), the
placement protocols (``protocols.py``) and one step of all of them (``step.py``); the
simulated twin books it on the machine (``program.py``). The capture (``capture.py``) runs
a real GRPO loop with a small PyTorch decoder (``tiny.py``; the ``torch`` extra) on an
arithmetic prompt task with a verifier, recorded phase by phase; it sets the step's shape
(model, counts, lengths), not its GPU costs, which follow from the model and the parts.
docs/llm-rl.md.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from rldse.models.kinds import Runs
from rldse.strict import UserModel
from rldse.workloads import Count, Info, Knobs, Workload, learning_knob, register

#: ``placement.protocol`` values (protocols.py says what each does); the first is the default
PROTOCOLS = ("colocated", "disaggregated", "one_step_off", "async")


class ResponseTokens(UserModel):
    """Response lengths of a step: their mean and the cap the engine cuts them at (unset:
    as in the trace). lengths.py says how the lengths follow from them."""

    mean: float | None = Field(default=None, gt=0, le=2**20, description="mean tokens")
    max: int | None = Field(default=None, ge=1, le=2**20, description="cap, tokens")


class LlmRlKnobs(Knobs):
    model: str | None = learning_knob(default=None, description="architecture "
                                      "(rldse/workloads/llm_rl/models.yaml), e.g. qwen2.5-7b")
    prompts_per_step: int | None = learning_knob(default=None, ge=1, le=2**20,
                                                 description="prompts per step")
    responses_per_prompt: int | None = learning_knob(default=None, ge=1, le=4096,
                                                     description="GRPO group size")
    train_batch: int | None = learning_knob(default=None, ge=1, le=2**20,
                                            description="prompts per optimizer step")
    prompt_tokens: int | None = Field(default=None, ge=1, le=2**20,
                                      description="mean prompt tokens")
    response_tokens: ResponseTokens | None = learning_knob(
        default=None, description="response lengths: {mean, max}")
    precision: Literal["bf16", "fp8"] | None = Field(default=None, description="GEMMs, "
                                                     "weights and KV cache")
    rollout_gpus: int | None = Field(default=None, ge=1, le=2**20, description="GPUs of "
                                     "the rollout engines (not colocated; default half)")
    rollout_gpu: str | None = Field(default=None, description="GPU preset of the rollout "
                                    "engines where they have their own GPUs (not "
                                    "colocated; unset: the system's gpu), e.g. h20")
    rollout_tp: int | None = Field(default=None, ge=1, le=64, description="tensor-parallel "
                                   "GPUs per rollout engine")
    train_tp: int | None = Field(default=None, ge=1, le=64, description="trainer TP")
    train_pp: int | None = Field(default=None, ge=1, le=256, description="trainer PP")
    train_cp: int | None = Field(default=None, ge=1, le=64, description="trainer context "
                                 "(Ulysses sequence) parallel")
    max_num_seqs: int | None = Field(default=None, ge=1, le=65_536, description="sequences "
                                     "a rollout engine runs at once")
    gpu_memory_utilization: float | None = Field(default=None, gt=0, le=1, description=
                                                 "share of GPU memory the engine may use")
    max_tokens_per_gpu: int | None = Field(default=None, ge=1, le=2**24, description=
                                           "trainer micro-batch token budget per GPU")
    old_logprob: bool | None = Field(default=None, description="recompute the old "
                                     "policy's log-probs on the trainer")
    ref_logprob: bool | None = Field(default=None, description="reference-model log-probs "
                                     "(KL)")
    offload: bool | None = Field(default=None, description="colocated: offload the "
                                 "trainer's parameters and optimizer to the host")
    staleness_threshold: float | None = learning_knob(default=None, ge=0, le=16,
                                                      description="async: prompts the "
                                                      "rollouter may run ahead between "
                                                      "syncs, a share of one step's")
    partial_rollout: bool | None = learning_knob(default=None, description="async: pause "
                                                 "in-flight sequences across a sync")
    require_batches: int | None = learning_knob(default=None, ge=1, le=4096,
                                                description="async: train_batches per update")
    trigger_parameter_sync_step: int | None = learning_knob(
        default=None, ge=1, le=4096, description="async: updates per weight sync")
    steps: int | None = Field(default=None, ge=1, le=10**6, description="RL steps")


class LlmRlInfo(Info):
    """What the capture recorded of the step's shape (the knobs' values in the trace)."""

    model: str
    prompts_per_step: Count
    responses_per_prompt: Count
    train_batch: Count
    prompt_tokens: Count
    response_tokens_mean: float = Field(gt=0)
    response_tokens_max: Count
    steps: Count
    old_logprob: bool | None = Field(default=None, description="the recorded loop "
                                     "recomputed the old policy's log-probs (None: not "
                                     "recorded; verl's default)")
    ref_logprob: bool | None = Field(default=None, description="the recorded loop ran "
                                     "the reference's log-prob pass (None: not recorded)")


#: Defaults of the knobs the trace does not fix: verl's (verl-project/verl
#: verl/trainer/config/ppo_trainer.yaml and the fully_async recipe's scripts), named there.
DEFAULTS: dict[str, Any] = {
    "precision": "bf16", "rollout_tp": 1, "train_tp": 1,
    "train_pp": 1, "train_cp": 1, "max_num_seqs": 1024, "gpu_memory_utilization": 0.5,
    "old_logprob": True,
    "ref_logprob": False, "offload": False, "staleness_threshold": 0.0,
    "partial_rollout": False, "require_batches": 1, "trigger_parameter_sync_step": 1}


def _trace_knobs(info: LlmRlInfo, trace: Any, parts: dict, placement: dict) -> dict[str, Any]:
    recorded = {k: v for k in ("old_logprob", "ref_logprob")
                if (v := getattr(info, k)) is not None}
    return {**DEFAULTS, **recorded, "model": info.model, "prompts_per_step": info.prompts_per_step,
            "responses_per_prompt": info.responses_per_prompt,
            "train_batch": info.train_batch, "prompt_tokens": info.prompt_tokens,
            "response_tokens": {"mean": info.response_tokens_mean,
                                "max": info.response_tokens_max},
            "steps": info.steps, "env_steps": trace.env_steps}


def _work(k: Any) -> tuple[float, str]:
    return float(k.steps), "RL steps"


register(Workload(
    name="llm_rl", family="llm_rl",
    description="RL post-training of a language model: rollout engines and a trainer",
    knobs=LlmRlKnobs, info=LlmRlInfo,
    placements={"act": (Runs.KERNELS,), "learn": (Runs.KERNELS,)},
    trace_knobs=_trace_knobs,
    capture_module="rldse.workloads.llm_rl.capture",
    program_module="rldse.workloads.llm_rl.program",
    sides={"act": ("actor", "act"), "env_step": ("actor", "cpu"),
           "learn": ("learner", "learn"), "sync": ("learner", "learn")},
    work=_work, protocols=PROTOCOLS, over_nodes=True))
