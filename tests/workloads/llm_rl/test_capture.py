"""The structure capture: the loop's phases, its shape in workload_info, the verifier."""

import numpy as np
import pytest

from rldse.errors import RldseError
from rldse.workloads import WORKLOADS, capture
from rldse.workloads.common.base import CaptureConfig
from rldse.workloads.llm_rl.capture import ENV_ID, EOS, ArithmeticEnv, generate


def test_capture_records_each_phase_per_step_and_the_shape():
    trace = capture(CaptureConfig(workload="llm_rl", env_id=ENV_ID, steps=3,
                                  options={"prompts_per_step": 4, "responses_per_prompt": 2,
                                           "train_batch": 2, "model": "qwen3-8b"}))
    counts = trace.ops["phase"].value_counts()
    assert {counts[p] for p in ("act", "env_step", "learn", "sync")} == {3}
    info = WORKLOADS.lookup("llm_rl", "").read_info(trace)
    assert (info.model, info.prompts_per_step, info.responses_per_prompt) == ("qwen3-8b", 4, 2)
    assert 1 <= info.response_tokens_mean <= info.response_tokens_max
    assert trace.env_steps == 3 * 4 * 2  # one verifier call per response


def test_verifier_scores_the_sum():
    env = ArithmeticEnv(0)
    prompt, info = env.reset()
    digits = np.array([int(c) for c in str(info["answer"])] + [EOS])
    assert env.verify(digits[:-1]) == 1.0 and env.verify(np.array([EOS])) == 0.0
    assert prompt[-1] == 11  # ends with '='


def test_generation_stops_at_eos_or_the_cap():
    tokens, lengths, _ = generate(np.random.default_rng(0), 64, 8, 0.5)
    assert lengths.max() <= 8 and lengths.min() >= 1
    short = lengths < 8
    assert (tokens[short, lengths[short] - 1] == EOS).all()


@pytest.mark.parametrize(("env", "options"), [("CartPole-v1", {}),
                                              (ENV_ID, {"model": "qwen3-30b-a3b"}),
                                              (ENV_ID, {"train_batch": 3})])
def test_bad_requests_are_one_line(env, options):
    with pytest.raises(RldseError) as exc:
        capture(CaptureConfig(workload="llm_rl", env_id=env, options=options))
    assert "\n" not in str(exc.value)
