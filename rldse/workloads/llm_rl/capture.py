"""The llm_rl capture, for now a structure capture (docs/llm-rl.md says what is missing):
the loop of GRPO post-training with a stand-in policy, recorded phase by phase.

An arithmetic prompt environment (``ArithmeticEnv``, a Gymnasium env whose observation is a
prompt "a+b=" as token ids and whose reward a verifier computes: 1 when the response's
digits spell the sum) gives ``prompts_per_step`` prompts per step; a stand-in policy
samples ``responses_per_prompt`` responses per prompt, one token per decode iteration for
every unfinished response (a response ends at its end-of-sequence token or at
``max_response_tokens``), from a fixed token distribution (no transformer yet: nothing is
downloaded, nothing learned); the verifier scores them (``env_step``); GRPO's advantages
normalise each group's rewards (``learn``); the weights' version is bumped (``sync``).

The trace records the loop's shape for the simulator: ``workload_info`` names the model
whose costs the simulator prices (``model``), the counts per step, the mean prompt and
response tokens measured here and the cap; its rows' times are this host's for the
stand-in and are not used to price the GPU phases, which follow from the model and parts.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
from pydantic import ConfigDict, Field

from rldse.errors import RldseError
from rldse.strict import UserModel
from rldse.trace import Trace
from rldse.workloads.common.base import CaptureConfig, Progress, build_trace, no_progress
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.llm_rl.arch import arch

#: The env id the capture runs (its only task so far).
ENV_ID = "rldse/Arithmetic-v0"
#: Token ids: the digits 0-9, '+', '=', end of sequence.
DIGITS, PLUS, EQUALS, EOS = 10, 10, 11, 12
VOCAB = 13


class LlmRlConfig(UserModel):
    """The structure capture's options (``rldse capture llm_rl --set KEY=VALUE``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str = ENV_ID
    steps: int = Field(2, ge=1, le=10_000, description="RL steps")
    seed: int = 0
    model: str = Field("qwen2.5-7b", description="architecture the simulator prices")
    prompts_per_step: int = Field(8, ge=1, le=4096)
    responses_per_prompt: int = Field(4, ge=1, le=256)
    train_batch: int = Field(4, ge=1, le=4096, description="prompts per optimizer step")
    max_response_tokens: int = Field(16, ge=1, le=4096)
    eos_probability: float = Field(0.25, gt=0, le=1, description="stand-in policy: chance "
                                   "of ending the response at each token")


Config = LlmRlConfig


class ArithmeticEnv:
    """A prompt environment (Gymnasium's reset/step interface): ``reset`` gives a prompt
    "a+b=" as token ids; ``step(response)`` scores the response with the verifier and
    ends the episode (one response per prompt)."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.answer = 0

    def reset(self) -> tuple[np.ndarray, dict]:
        a, b = (int(x) for x in self.rng.integers(0, 1000, size=2))
        self.answer = a + b
        prompt = [*map(int, str(a)), PLUS, *map(int, str(b)), EQUALS]
        return np.array(prompt, dtype=np.int64), {"answer": self.answer}

    def verify(self, response: np.ndarray) -> float:
        digits = response[response < DIGITS]
        return float(len(digits) > 0 and int("".join(map(str, digits))) == self.answer)


def generate(rng: np.random.Generator, n: int, max_tokens: int, eos_p: float
             ) -> tuple[np.ndarray, np.ndarray, int]:
    """``n`` responses of the stand-in policy, decode iteration by iteration over the
    unfinished ones: (tokens n × max_tokens, padded with EOS; lengths; iterations)."""
    out = np.full((n, max_tokens), EOS, dtype=np.int64)
    live = np.ones(n, dtype=bool)
    lengths = np.full(n, max_tokens, dtype=np.int64)
    it = 0
    for it in range(max_tokens):
        idx = np.flatnonzero(live)
        if idx.size == 0:
            break
        ends = rng.random(idx.size) < eos_p
        out[idx, it] = np.where(ends, EOS, rng.integers(0, DIGITS, idx.size))
        lengths[idx[ends]] = it + 1
        live[idx[ends]] = False
    return out, lengths, it + 1


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    if cfg.env_id != ENV_ID:
        raise RldseError(f"env '{cfg.env_id}': llm_rl captures {ENV_ID} (its prompt task)")
    values: dict[str, Any] = {**cfg.options, "env_id": cfg.env_id, "seed": cfg.seed}
    if cfg.steps is not None:
        values["steps"] = cfg.steps
    try:
        c = LlmRlConfig(**values)
    except ValueError as exc:
        raise RldseError(f"llm_rl option: {str(exc).splitlines()[-1]}") from None
    arch(c.model, where="llm_rl option 'model'")
    if c.prompts_per_step % c.train_batch:
        raise RldseError(f"llm_rl option 'train_batch' {c.train_batch}: must divide "
                         f"prompts_per_step {c.prompts_per_step}")
    rec = Recorder(worker="learner")
    rng = np.random.default_rng(c.seed)
    env = ArithmeticEnv(c.seed)
    t_start = time.perf_counter()
    prompt_lengths, response_lengths, returns = [], [], []
    n = c.prompts_per_step * c.responses_per_prompt
    for s in range(c.steps):
        prompts = [env.reset()[0] for _ in range(c.prompts_per_step)]
        answers = []
        for _ in prompts:  # the env holds one answer at a time: keep each prompt's
            answers.append(env.answer)
        t0 = rec.now()
        tokens, lengths, iters = generate(rng, n, c.max_response_tokens, c.eos_probability)
        rec.add("act", t0, s, items=int(lengths.sum()), dtype="int64")
        t0 = rec.now()
        rewards = np.empty(n)
        for j in range(n):
            env.answer = answers[j // c.responses_per_prompt]
            rewards[j] = env.verify(tokens[j, :lengths[j]])
        rec.add("env_step", t0, s, items=n, dtype="fp64")
        t0 = rec.now()
        groups = rewards.reshape(c.prompts_per_step, c.responses_per_prompt)
        adv = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, keepdims=True) + 1e-6)
        rec.add("learn", t0, s, items=int(adv.size), flops=4 * int(adv.size), dtype="fp64")
        t0 = rec.now()
        rec.add("sync", t0, s, items=1, dtype="none")
        prompt_lengths += [len(p) for p in prompts]
        response_lengths += lengths.tolist()
        returns += groups.mean(1).tolist()
        progress(n)
    info = {"model": c.model, "prompts_per_step": c.prompts_per_step,
            "responses_per_prompt": c.responses_per_prompt, "train_batch": c.train_batch,
            "prompt_tokens": max(1, int(round(np.mean(prompt_lengths)))),
            "response_tokens_mean": float(np.mean(response_lengths)),
            "response_tokens_max": c.max_response_tokens, "steps": c.steps,
            "capture": "structure (stand-in policy; no transformer yet)"}
    return build_trace(workload="llm_rl", algorithm="grpo", env_id=c.env_id, seed=c.seed,
                       hyperparameters=c.model_dump(exclude={"env_id", "seed"}),
                       workload_info=info, episode_returns=returns,
                       wall_time_s=time.perf_counter() - t_start, recorders=[rec])
