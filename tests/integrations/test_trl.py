"""RldseCallback for TRL: a 2-step GRPO run of a tiny random Llama recorded, shown by
`rldse trace info` and simulated at a published model's scale."""

from __future__ import annotations

import json

import pytest

from rldse.cli import main
from rldse.errors import RldseError
from rldse.trace import load_trace

pytest.importorskip("trl", reason="needs the 'trl' extra (pip install rldse[trl])")
torch = pytest.importorskip("torch")
from rldse.integrations.trl import RldseCallback  # noqa: E402

#: Characters of the tiny tokenizer: digits, '+', '=', then pad, end of sequence, unknown.
SYMBOLS = [*"0123456789+=", "<pad>", "<eos>", "<unk>"]


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A 2-layer Llama (random init, built from its config) and a character tokenizer,
    saved where GRPOTrainer loads them from (its reference model is loaded by path)."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {s: i for i, s in enumerate(SYMBOLS)}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.Split("", "isolated")
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>",
                                        eos_token="<eos>", unk_token="<unk>")
    config = LlamaConfig(vocab_size=len(vocab), hidden_size=64, intermediate_size=128,
                         num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                         max_position_embeddings=64, pad_token_id=vocab["<pad>"],
                         eos_token_id=vocab["<eos>"], bos_token_id=None)
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("tiny")
    LlamaForCausalLM(config).save_pretrained(path)
    tokenizer.save_pretrained(path)
    return path


def sum_reward(prompts, completions, **kwargs) -> list[float]:
    """1 where the completion's digits spell the prompt's sum."""
    return [float(c.replace(" ", "") == str(int(p[:3]) + int(p[4:7])))
            for p, c in zip(prompts, completions, strict=True)]


def trainer(tiny_dir, tmp_path, **args):
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    settings = dict(output_dir=str(tmp_path / "out"), max_steps=2, num_generations=4,
                    per_device_train_batch_size=8, gradient_accumulation_steps=2,
                    max_completion_length=8, beta=0.04, use_cpu=True, report_to=[],
                    save_strategy="no", logging_steps=1, disable_tqdm=True, seed=0)
    prompts = [f"{a:03d}+{b:03d}=" for a, b in ((123, 456), (1, 2), (500, 500), (999, 1))]
    return GRPOTrainer(model=str(tiny_dir), reward_funcs=sum_reward,
                       args=GRPOConfig(**{**settings, **args}),
                       train_dataset=Dataset.from_dict({"prompt": prompts * 8}))


def test_grpo_run_records_each_phase_and_simulates(tiny_dir, tmp_path, capsys):
    path = tmp_path / "grpo.parquet"
    t = trainer(tiny_dir, tmp_path)
    RldseCallback(t, path, model="qwen2.5-7b")
    t.train()
    trace = load_trace(path)
    info, ops = trace.meta.workload_info, trace.ops
    assert (trace.meta.workload, trace.meta.algorithm) == ("llm_rl", "grpo")
    # a round per optimizer step: 8 × 2 completions of 4 prompts, all in one update
    assert (info["steps"], info["prompts_per_step"], info["responses_per_prompt"],
            info["train_batch"]) == (2, 4, 4, 4)
    assert info["prompt_tokens"] == 8 and info["response_tokens_max"] == 8
    assert 1 <= info["response_tokens_mean"] <= 8
    assert info["captured_network"]["layers"] == 2
    counts = ops["phase"].value_counts()
    assert counts["env_step"] == 2 and trace.env_steps == 2 * 16
    # per round: the reference's pass (beta 0.04; no old-policy pass: one update a round),
    # two micro-batches and an optimizer step
    assert counts["learn"] == 2 * (1 + 2 + 1)
    acts = ops[ops["phase"] == "act"]
    for r in (0, 1):  # the prefill over 16 × 8 prompt tokens, then one token per sequence
        items = acts.loc[acts["iter"] == r, "items"].tolist()
        assert items[0] == 16 * 8 and set(items[1:]) == {16} and 2 <= len(items) <= 8
    assert (ops.loc[ops["phase"] != "env_step", "flops"] > 0).all()
    assert len(trace.meta.episode_returns) == 2 * 4
    assert "_calculate_rewards" not in vars(t)  # the callback restored the trainer
    assert main(["trace", "info", str(path)]) == 0
    out = capsys.readouterr().out
    assert all(phase in out for phase in ("act", "env_step", "learn"))
    # the replay runs the passes TRL ran: no old-policy pass (verl's default runs one); the
    # system file turns the reference's off
    assert (info["old_logprob"], info["ref_logprob"]) == (False, True)
    assert main(["simulate", str(path), "--system", "examples/verl_h20.yaml", "--json"]) == 0
    breakdown = json.loads(capsys.readouterr().out)["breakdown_s"]
    assert breakdown["logprob_s"] == 0 and breakdown["step_s"] > 0


def test_unrecorded_loops_are_one_line_errors(tiny_dir, tmp_path):
    t = trainer(tiny_dir, tmp_path)
    with pytest.raises(RldseError, match="model 'qwen9'"):
        RldseCallback(t, tmp_path / "run.parquet", model="qwen9")
    with pytest.raises(RldseError, match=r"must end in \.parquet"):
        RldseCallback(t, tmp_path / "run.csv", model="qwen2.5-7b")
    t.args.use_vllm = True  # as GRPOConfig(use_vllm=True) sets it, without vLLM installed
    with pytest.raises(RldseError, match="use_vllm: generation and weight sync in vLLM"):
        RldseCallback(t, tmp_path / "run.parquet", model="qwen2.5-7b")
    t = trainer(tiny_dir, tmp_path, steps_per_generation=3)
    with pytest.raises(RldseError, match="steps_per_generation 3: expected a multiple"):
        RldseCallback(t, tmp_path / "run.parquet", model="qwen2.5-7b")
