"""The llm_rl capture: a real, small GRPO post-training loop on this machine's CPU.

An arithmetic prompt environment (``ArithmeticEnv``: Gymnasium's reset/step interface, the
observation a prompt "aaa+bbb=" as token ids, the reward a verifier's: 1 when the
response's digits spell the sum) gives ``prompts_per_step`` prompts per step. The policy
is a small decoder-only transformer (``tiny.py``, built from the ``tiny_*`` options, random
init) that generates ``responses_per_prompt`` responses per prompt with a KV cache: one
prefill, then one decode iteration per token over the responses still running (the batch
shrinks as responses reach their end-of-sequence token or ``max_response_tokens``). Then
the verifier scores them (``env_step``); the old policy's and a frozen reference's
log-probs are computed over the whole sequences (``learn``, no gradient); GRPO's
advantages normalise each group's rewards, and the clipped policy loss with a KL term
updates the policy in mini-batches of ``train_batch`` prompts (``learn``, Adam); the
weights are copied to the rollout copy (``sync``). Every row carries its flops, counted
from the architecture's shapes (``arch.Arch``).

``workload_info`` names the model whose costs the simulator prices (``model``: a published
architecture; the tiny one only makes the loop real), the counts per step, the mean prompt
and response tokens measured here and the cap. The simulator prices every GPU phase from
``model`` and the parts; the rows' host times are this CPU's for the tiny model.
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
from rldse.workloads.llm_rl.arch import Arch, arch

#: The env id the capture runs (its only task so far).
ENV_ID = "rldse/Arithmetic-v0"
#: Token ids: the digits 0-9, '+', '=', end of sequence.
DIGITS, PLUS, EQUALS, EOS = 10, 10, 11, 12
VOCAB = 13


class LlmRlConfig(UserModel):
    """The capture's options (``rldse capture llm_rl --set KEY=VALUE``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    env_id: str = ENV_ID
    steps: int = Field(2, ge=1, le=10_000, description="RL steps")
    seed: int = 0
    model: str = Field("qwen2.5-7b", description="architecture the simulator prices")
    prompts_per_step: int = Field(8, ge=1, le=4096)
    responses_per_prompt: int = Field(4, ge=1, le=256)
    train_batch: int = Field(4, ge=1, le=4096, description="prompts per optimizer step")
    max_response_tokens: int = Field(16, ge=1, le=4096)
    tiny_layers: int = Field(2, ge=1, le=4, description="the captured transformer's layers")
    tiny_hidden: int = Field(64, ge=8, le=1024)
    tiny_heads: int = Field(4, ge=1, le=64)
    tiny_kv_heads: int = Field(2, ge=1, le=64)
    tiny_ffn: int = Field(128, ge=8, le=4096)
    lr: float = Field(1e-3, gt=0)
    clip: float = Field(0.2, gt=0, description="PPO ratio clip")
    kl_coef: float = Field(0.04, ge=0, description="KL to the reference policy")


Config = LlmRlConfig
#: Prompt length: "aaa+bbb=" with both numbers written with three digits.
PROMPT_TOKENS = 8


class ArithmeticEnv:
    """A prompt environment (Gymnasium's reset/step interface): ``reset`` gives a prompt
    "aaa+bbb=" as token ids; ``verify`` scores a response with the verifier."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.answer = 0

    def reset(self) -> tuple[np.ndarray, dict]:
        a, b = (int(x) for x in self.rng.integers(0, 1000, size=2))
        self.answer = a + b
        prompt = [*map(int, f"{a:03d}"), PLUS, *map(int, f"{b:03d}"), EQUALS]
        return np.array(prompt, dtype=np.int64), {"answer": self.answer}

    def step(self, response: np.ndarray) -> tuple[np.ndarray, float, bool, bool, dict]:
        return np.zeros(0, dtype=np.int64), self.verify(response), True, False, {}

    def verify(self, response: np.ndarray) -> float:
        digits = response[response < DIGITS]
        return float(len(digits) > 0 and int("".join(map(str, digits))) == self.answer)


def tiny_arch(c: LlmRlConfig) -> Arch:
    if c.tiny_hidden % c.tiny_heads or c.tiny_heads % c.tiny_kv_heads:
        raise RldseError("llm_rl options tiny_hidden, tiny_heads, tiny_kv_heads: the hidden "
                         "size must divide into heads, the heads into KV heads")
    return Arch(name="tiny", source="rldse capture llm_rl", layers=c.tiny_layers,
                hidden=c.tiny_hidden, heads=c.tiny_heads, kv_heads=c.tiny_kv_heads,
                head_dim=c.tiny_hidden // c.tiny_heads, ffn=c.tiny_ffn, vocab=VOCAB,
                tied_embeddings=False)


def forward_flops(a: Arch, tokens: float, context: float) -> int:
    """Flops of a forward over ``tokens`` tokens attending to ``context`` keys each."""
    return int(2 * a.matmul_params * tokens + a.attention_flops(tokens, context))


def generate(policy: Any, prompts: Any, max_tokens: int, rec: Recorder, a: Arch, step: int
             ) -> tuple[Any, np.ndarray]:
    """Responses sampled with a KV cache (module docstring): (tokens n × max_tokens padded
    with EOS, lengths). One ``act`` row for the prefill, one per decode iteration."""
    import torch

    n, p = prompts.shape
    out = torch.full((n, max_tokens), EOS, dtype=torch.long)
    lengths = np.full(n, max_tokens, dtype=np.int64)
    with torch.no_grad():
        t0 = rec.now()
        logits, caches = policy(prompts)
        rec.add("act", t0, step, items=n * p, flops=forward_flops(a, n * p, p / 2))
        live = torch.arange(n)
        nxt = torch.distributions.Categorical(logits=logits[:, -1]).sample()
        for it in range(max_tokens):
            t0 = rec.now()
            out[live, it] = nxt
            done = (nxt == EOS) | (it == max_tokens - 1)
            lengths[live[done].numpy()] = it + 1
            keep = ~done
            if not keep.any():
                rec.add("act", t0, step, items=int(len(live)), dtype="int64")
                break
            live, nxt = live[keep], nxt[keep]
            caches = [(k[keep], v[keep]) for k, v in caches]
            logits, caches = policy(nxt[:, None], caches, start=p + it)
            nxt = torch.distributions.Categorical(logits=logits[:, -1]).sample()
            rec.add("act", t0, step, items=int(len(live)),
                    flops=forward_flops(a, len(live), p + it + 1))
    return out, lengths


def _token_logp(model: Any, seqs: Any, p: int) -> Any:
    """Log-probabilities of each response token under ``model`` (n × response length)."""
    import torch

    logits, _ = model(seqs[:, :-1])
    logp = torch.log_softmax(logits[:, p - 1:], -1)
    return logp.gather(-1, seqs[:, p:, None])[..., 0]


def capture(cfg: CaptureConfig, progress: Progress = no_progress) -> Trace:
    """Run the GRPO loop (module docstring) and return its Trace."""
    import copy

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
    a = tiny_arch(c)
    import torch

    from rldse.workloads.llm_rl.tiny import build

    torch.set_num_threads(1)
    policy = build(a, PROMPT_TOKENS + c.max_response_tokens, c.seed)
    reference, rollout = copy.deepcopy(policy), copy.deepcopy(policy)
    opt = torch.optim.Adam(policy.parameters(), lr=c.lr)
    rec = Recorder(worker="learner")
    env = ArithmeticEnv(c.seed)
    t_start = time.perf_counter()
    response_lengths, returns = [], []
    g, n = c.responses_per_prompt, c.prompts_per_step * c.responses_per_prompt
    updates = 0
    for s in range(c.steps):
        prompts, answers = [], []
        for _ in range(c.prompts_per_step):
            obs, info = env.reset()
            prompts.append(obs)
            answers.append(info["answer"])
        batch = torch.from_numpy(np.repeat(np.stack(prompts), g, axis=0))
        tokens, lengths = generate(rollout, batch, c.max_response_tokens, rec, a, s)
        t0 = rec.now()
        rewards = np.empty(n)
        for j in range(n):
            env.answer = answers[j // g]
            rewards[j] = env.verify(tokens[j, :lengths[j]].numpy())
        rec.add("env_step", t0, s, items=n, dtype="fp64")
        seqs = torch.cat([batch, tokens], 1)
        mask = torch.arange(c.max_response_tokens)[None] < torch.from_numpy(lengths)[:, None]
        seq_tokens = int(seqs.shape[1] - 1) * n
        with torch.no_grad():
            t0 = rec.now()
            old = _token_logp(policy, seqs, PROMPT_TOKENS)
            rec.add("learn", t0, s, items=seq_tokens, flops=forward_flops(
                a, seq_tokens, seqs.shape[1] / 2))
            t0 = rec.now()
            ref = _token_logp(reference, seqs, PROMPT_TOKENS)
            rec.add("learn", t0, s, items=seq_tokens, flops=forward_flops(
                a, seq_tokens, seqs.shape[1] / 2))
        groups = rewards.reshape(c.prompts_per_step, g)
        adv = (groups - groups.mean(1, keepdims=True)) / (groups.std(1, keepdims=True) + 1e-6)
        adv_t = torch.from_numpy(adv.reshape(-1)).float()[:, None]
        per = c.train_batch * g
        for lo in range(0, n, per):
            idx = slice(lo, lo + per)
            t0 = rec.now()
            logp = _token_logp(policy, seqs[idx], PROMPT_TOKENS)
            ratio = torch.exp(logp - old[idx])
            surrogate = torch.min(ratio * adv_t[idx],
                                  torch.clamp(ratio, 1 - c.clip, 1 + c.clip) * adv_t[idx])
            kl = torch.exp(ref[idx] - logp) - (ref[idx] - logp) - 1  # k3 estimator
            m = mask[idx].float()
            loss = -((surrogate - c.kl_coef * kl) * m).sum() / m.sum().clamp(min=1)
            opt.zero_grad()
            loss.backward()
            opt.step()
            mb_tokens = int(seqs.shape[1] - 1) * per
            rec.add("learn", t0, updates, items=mb_tokens,
                    flops=3 * forward_flops(a, mb_tokens, seqs.shape[1] / 2))
            updates += 1
        t0 = rec.now()
        rollout.load_state_dict(policy.state_dict())
        rec.add("sync", t0, s, items=1, bytes=4 * a.params, dtype="none")
        response_lengths += lengths.tolist()
        returns += groups.mean(1).tolist()
        progress(n)
    info = {"model": c.model, "prompts_per_step": c.prompts_per_step,
            "responses_per_prompt": g, "train_batch": c.train_batch,
            "prompt_tokens": PROMPT_TOKENS,
            "response_tokens_mean": float(np.mean(response_lengths)),
            "response_tokens_max": c.max_response_tokens, "steps": c.steps,
            "captured_network": {"layers": a.layers, "hidden": a.hidden, "heads": a.heads,
                                 "kv_heads": a.kv_heads, "ffn": a.ffn, "vocab": a.vocab,
                                 "params": a.params}}
    return build_trace(workload="llm_rl", algorithm="grpo", env_id=c.env_id, seed=c.seed,
                       hyperparameters=c.model_dump(exclude={"env_id", "seed"}),
                       workload_info=info, episode_returns=returns,
                       wall_time_s=time.perf_counter() - t_start, recorders=[rec])
