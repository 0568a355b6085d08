"""The capture: a GRPO loop with a small transformer, its phases, its shape, the verifier."""

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.workloads import WORKLOADS, capture
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.llm_rl.capture import (
    ENV_ID,
    EOS,
    PROMPT_TOKENS,
    ArithmeticEnv,
    LlmRlConfig,
    forward_flops,
    generate,
    tiny_arch,
)

torch = pytest.importorskip("torch")

OPTIONS = {"prompts_per_step": 4, "responses_per_prompt": 2, "train_batch": 2,
           "model": "qwen3-8b", "max_response_tokens": 6}


def test_capture_records_each_phase_and_the_shape(monkeypatch, host_fp):
    from rldse.workloads.common import base

    monkeypatch.setattr(base, "host_fingerprint", lambda: host_fp)  # not measured: fast
    trace = capture(CaptureConfig(workload="llm_rl", env_id=ENV_ID, steps=2, options=OPTIONS))
    counts = trace.ops["phase"].value_counts()
    assert counts["env_step"] == counts["sync"] == 2
    # per step: old and reference log-prob passes and one update per mini-batch of 2 prompts
    assert counts["learn"] == 2 * (2 + 4 // 2)
    assert counts["act"] >= 2 * 2  # a prefill and at least one decode iteration a step
    info = WORKLOADS.lookup("llm_rl", "").read_info(trace)
    assert (info.model, info.prompts_per_step, info.responses_per_prompt) == ("qwen3-8b", 4, 2)
    assert 1 <= info.response_tokens_mean <= info.response_tokens_max == 6
    assert trace.env_steps == 2 * 4 * 2  # one verifier call per response


def test_decode_batch_shrinks_and_stops_at_eos_or_the_cap():
    cfg = LlmRlConfig(max_response_tokens=8)
    a = tiny_arch(cfg)
    from rldse.workloads.llm_rl.tiny import build

    policy = build(a, PROMPT_TOKENS + 8, seed=0)
    prompts = torch.from_numpy(np.stack([ArithmeticEnv(s).reset()[0] for s in range(16)]))
    rec = Recorder()
    tokens, lengths = generate(policy, prompts, 8, rec, a, 0)
    assert lengths.max() <= 8 and lengths.min() >= 1
    short = lengths < 8
    assert (tokens[short, lengths[short] - 1] == EOS).all()
    live = [row[5] for row in rec.rows[1:]]  # items of the decode iterations
    assert live == sorted(live, reverse=True) and live[0] <= 16
    # the prefill row's flops: every prompt token through the matmuls, half-context attention
    assert rec.rows[0][6] == forward_flops(a, 16 * PROMPT_TOKENS, PROMPT_TOKENS / 2)


def test_verifier_scores_the_sum():
    env = ArithmeticEnv(0)
    prompt, info = env.reset()
    digits = np.array([int(c) for c in str(info["answer"])])
    assert env.verify(digits) == 1.0 and env.verify(np.array([EOS])) == 0.0
    assert len(prompt) == PROMPT_TOKENS and prompt[-1] == 11  # ends with '='


@pytest.mark.parametrize(("env", "options"), [("CartPole-v1", {}),
                                              (ENV_ID, {"model": "qwen3-30b-a3b"}),
                                              (ENV_ID, {"train_batch": 3}),
                                              (ENV_ID, {"tiny_heads": 3})])
def test_bad_requests_are_one_line(env, options):
    with pytest.raises(RldseError) as exc:
        capture(CaptureConfig(workload="llm_rl", env_id=env, options=options))
    assert "\n" not in str(exc.value)
