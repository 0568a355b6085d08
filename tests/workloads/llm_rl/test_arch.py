"""Architectures by name: the published configs' numbers and the work they imply."""

import pytest

from rldse.errors import RldseError
from rldse.workloads.llm_rl.arch import arch, names


def test_qwen25_7b_parameters_are_the_published_count():
    a = arch("qwen2.5-7b")
    d, f, kv, v, layers = 3584, 18944, 4 * 128, 152064, 28
    per_layer = d * (d + 2 * kv) + d * d + 3 * d * f  # qkv, o, gate/up/down
    assert a.params == layers * per_layer + 2 * v * d
    # the model card's "Number of Parameters: 7.61B" (biases and norms are < 0.1 %)
    assert a.params == pytest.approx(7.61e9, rel=2e-3)


def test_llama_70b_and_qwen3_head_dim_from_config():
    assert arch("llama-3.1-70b").params == pytest.approx(70.55e9, rel=2e-3)
    q3 = arch("qwen3-32b")
    assert q3.head_dim == 128 and q3.q_width == 64 * 128 != q3.hidden  # config's head_dim


def test_kv_cache_bytes_per_token():
    # 2 (K, V) × layers × kv heads × head_dim × bytes
    assert arch("qwen2.5-math-7b").kv_bytes_per_token("bf16") == 2 * 28 * 4 * 128 * 2
    assert arch("llama-3.1-8b").kv_bytes_per_token("fp8") == 2 * 32 * 8 * 128


def test_every_required_model_is_known_and_moe_is_refused_in_one_line():
    for name in ("llama-3.1-8b", "llama-3.1-70b", "qwen2.5-7b", "qwen2.5-32b",
                 "qwen2.5-math-7b", "qwen3-8b", "qwen3-32b"):
        assert arch(name).source.startswith("https://huggingface.co/")
    with pytest.raises(RldseError, match="mixture of experts") as exc:
        arch("qwen3-30b-a3b")
    assert "\n" not in str(exc.value)
    with pytest.raises(RldseError, match="unknown"):
        arch("gpt-5")
    assert "qwen3-8b" in names()
