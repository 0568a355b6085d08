"""TRL: ``RldseCallback(trainer, "run.parquet", model="qwen2.5-7b")`` before
``trainer.train()`` records a ``GRPOTrainer`` run as an llm_rl trace (the rows the llm_rl
capture records, rldse/workloads/llm_rl/capture.py), with no other change to the user's
code; ``rldse simulate`` replays it at the scale of ``model``, a published architecture
(rldse/workloads/llm_rl/models.yaml): the trace gives the step's shape (prompts and
responses per step, prompts per optimizer step, measured prompt and response lengths).

The callback registers itself on the trainer, and at ``on_train_begin`` wraps a few of
its methods (instance attributes, restored at ``on_train_end``) and hooks the policy's
forward:

- ``act``: each forward of the policy inside ``_generate_single_turn`` (transformers'
  ``generate`` with its KV cache): the prefill, then one row per decode iteration. The
  batch stays whole to the last token (``generate`` pads finished sequences).
- ``env_step``: ``_calculate_rewards`` (the reward functions), items the completions.
- ``learn``: the no-gradient log-prob passes of ``_generate_and_score_completions`` (the
  old policy's, where TRL runs one, and the reference's where ``beta`` is not 0); each
  micro-batch's loss and backward (``training_step`` after its ``_prepare_inputs``, which
  generates); each optimizer step (``on_pre_optimizer_step`` to ``on_optimizer_step``).
  Which passes ran is in the trace (``old_logprob``, ``ref_logprob``): the replay runs them.

Flops are counted from the policy's config as the capture counts them (``arch.Arch``). An
RL step is one generation round. Generation with vLLM (and its weight sync), continuous
batching, custom rollouts, tools, evaluation, more than one process and loops whose
optimizer steps do not split a round into whole prompts are refused with one line.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from rldse.errors import RldseError

try:
    from transformers import TrainerCallback
    from trl import GRPOTrainer
except ImportError as exc:  # the extra is absent
    raise RldseError(f"rldse.integrations.trl needs trl, transformers and torch ({exc.name} "
                     "is missing): pip install 'rldse[trl]'") from None

from rldse.kernels.mlp import ADAM_FLOPS_PER_PARAM
from rldse.threads import CAPTURE_TORCH_THREADS, TorchThreads
from rldse.workloads.common.base import build_trace
from rldse.workloads.common.recorder import Recorder
from rldse.workloads.llm_rl.arch import Arch, arch
from rldse.workloads.llm_rl.capture import forward_flops

WHERE = "RldseCallback"


class RldseCallback(TrainerCallback):
    """Record ``trainer.train()`` of a GRPOTrainer into the trace file ``path`` (written
    when training ends), priced by the simulator as the architecture ``model``."""

    def __init__(self, trainer: Any, path: str | Path, model: str, force: bool = False,
                 torch_threads: int | None = CAPTURE_TORCH_THREADS) -> None:
        """``torch_threads``: torch's intra-op threads while training is recorded (the
        trace records the count; None leaves torch's own)."""
        self.threads = TorchThreads(torch_threads, where=f"{WHERE}: torch_threads")
        self.path = Path(path)
        if self.path.suffix != ".parquet":
            raise RldseError(f"{self.path}: a trace file must end in .parquet",
                             where=f"{WHERE}: path")
        if self.path.exists() and not force:  # refused before training, as the CLI does
            raise RldseError(f"{self.path}: exists (pass force=True to overwrite it)",
                             where=f"{WHERE}: path")
        arch(model, where=f"{WHERE}: model")
        self.model_name = model
        self.train_batch = _check_loop(trainer)
        self.trainer, self.arch = trainer, config_arch(trainer.model.config)
        self._restore: list[tuple[Any, str]] = []
        self._hooks: list[Any] = []
        trainer.add_callback(self)

    # ---- transformers' callback events -------------------------------------------------
    def on_train_begin(self, args, state, control, **kwargs) -> None:
        t = self.trainer
        self.rec = Recorder(worker="learner")
        self.rounds = 0  # generation rounds: the RL steps
        self.prompt_tokens: list[int] = []
        self.response_tokens: list[int] = []
        self.returns: list[float] = []
        self.passes = {"old": 0, "ref": 0}  # no-gradient log-prob passes, by model
        self._generating = self._scoring = False
        self._seen = 0  # tokens per sequence the generating policy has processed
        self._wrap(t, "_generate_and_score_completions", self._score)
        self._wrap(t, "_generate_single_turn", self._generate)
        self._wrap(t, "_calculate_rewards", self._rewards)
        self._wrap(t, "_get_per_token_logps_and_entropies", self._logps)
        self._wrap(t, "_prepare_inputs", self._prepare)
        self._wrap(t, "training_step", self._training_step)
        self._hooks = [t.model.register_forward_pre_hook(self._forward_start, with_kwargs=True),
                       t.model.register_forward_hook(self._forward_end, with_kwargs=True)]
        self.threads.start()  # last: nothing above failed, so on_train_end restores it
        self.t_start = time.perf_counter()

    def on_pre_optimizer_step(self, args, state, control, **kwargs) -> None:
        self._t_opt = self.rec.now()

    def on_optimizer_step(self, args, state, control, **kwargs) -> None:
        self.rec.add("learn", self._t_opt, state.global_step, items=self.arch.params,
                     flops=ADAM_FLOPS_PER_PARAM * self.arch.params)

    def on_train_end(self, args, state, control, **kwargs) -> None:
        wall_s = time.perf_counter() - self.t_start
        torch_threads = self.threads.stop()
        for hook in self._hooks:
            hook.remove()
        for obj, name in reversed(self._restore):
            delattr(obj, name)
        self._restore.clear()
        if not self.rounds:
            raise RldseError("training ended before its first generation: nothing to "
                             "record", where=WHERE)
        self.trace(wall_s, torch_threads).save(self.path)

    def trace(self, wall_s: float, torch_threads: tuple[int, str]):
        """The recorded run as an llm_rl Trace."""
        t, a = self.trainer, self.arch
        g = t.num_generations
        prompts = len(self.response_tokens) // (self.rounds * g)
        info = {"model": self.model_name, "prompts_per_step": prompts,
                "responses_per_prompt": g, "train_batch": self.train_batch,
                "prompt_tokens": round(sum(self.prompt_tokens) / len(self.prompt_tokens)),
                "response_tokens_mean": sum(self.response_tokens) / len(self.response_tokens),
                "response_tokens_max": t.args.max_completion_length, "steps": self.rounds,
                "old_logprob": self.passes["old"] > 0, "ref_logprob": self.passes["ref"] > 0,
                "captured_network": {"layers": a.layers, "hidden": a.hidden, "heads": a.heads,
                                     "kv_heads": a.kv_heads, "ffn": a.ffn, "vocab": a.vocab,
                                     "params": a.params}}
        hyper = {"beta": t.beta, "num_generations": g, "learning_rate": t.args.learning_rate,
                 "per_device_train_batch_size": t.args.per_device_train_batch_size,
                 "gradient_accumulation_steps": t.args.gradient_accumulation_steps,
                 "steps_per_generation": t.args.steps_per_generation,
                 "max_completion_length": t.args.max_completion_length,
                 "loss_type": t.loss_type}
        return build_trace(workload="llm_rl", algorithm="grpo", env_id="trl/GRPOTrainer",
                           seed=t.args.seed, hyperparameters=hyper, workload_info=info,
                           episode_returns=self.returns, wall_time_s=wall_s,
                           recorders=[self.rec], torch_threads=torch_threads)

    # ---- wrappers ----------------------------------------------------------------------
    def _wrap(self, obj: Any, name: str, make) -> None:
        if name in vars(obj):
            raise RldseError(f"{type(obj).__name__}.{name} is already replaced on this "
                             "object (another recorder?)", where=WHERE)
        setattr(obj, name, make(getattr(obj, name)))
        self._restore.append((obj, name))

    def _score(self, orig):
        """A generation round: generation, rewards and the no-gradient log-prob passes."""
        def wrapped(*a, **k):
            self._scoring = True
            try:
                return orig(*a, **k)
            finally:
                self._scoring = False
                self.rounds += 1
        return wrapped

    def _generate(self, orig):
        def wrapped(prompt_ids, *a, **k):
            self._generating, self._seen = True, 0
            try:
                completion_ids, logprobs = orig(prompt_ids, *a, **k)
            finally:
                self._generating = False
            self.prompt_tokens += [len(p) for p in prompt_ids]
            self.response_tokens += [len(c) for c in completion_ids]
            return completion_ids, logprobs
        return wrapped

    def _forward_start(self, module, args, kwargs) -> None:
        if self._generating:
            self._t_forward = self.rec.now()

    def _forward_end(self, module, args, kwargs, output) -> None:
        if not self._generating:
            return
        ids = kwargs["input_ids"] if "input_ids" in kwargs else args[0]
        n, tokens = ids.shape
        # the prefill attends to half its prompt on average; a decode step to all before it
        context = tokens / 2 if self._seen == 0 else self._seen + tokens
        self._seen += tokens
        self.rec.add("act", self._t_forward, self.rounds, items=n * tokens,
                     flops=forward_flops(self.arch, n * tokens, context))

    def _rewards(self, orig):
        def wrapped(*a, **k):
            t0 = self.rec.now()
            per_func = orig(*a, **k)
            self.rec.add("env_step", t0, self.rounds, items=len(per_func), dtype="fp32")
            weights = self.trainer.reward_weights.to(per_func.device)
            rewards = (per_func * weights[None]).nansum(1)
            self.returns += rewards.view(-1, self.trainer.num_generations).mean(1).tolist()
            return per_func
        return wrapped

    def _logps(self, orig):
        """The no-gradient passes of a round are rows; the loss's own (inside
        ``training_step``) is in the micro-batch's row."""
        def wrapped(model, input_ids, *a, **k):
            if not self._scoring:
                return orig(model, input_ids, *a, **k)
            t0 = self.rec.now()
            result = orig(model, input_ids, *a, **k)
            self.passes["ref" if model is self.trainer.ref_model else "old"] += 1
            n, length = input_ids.shape
            self.rec.add("learn", t0, self.rounds, items=n * length,
                         flops=forward_flops(self.arch, n * length, length / 2))
            return result
        return wrapped

    def _prepare(self, orig):
        def wrapped(*a, **k):
            inputs = orig(*a, **k)
            self._t_learn, self._batch = self.rec.now(), inputs
            return inputs
        return wrapped

    def _training_step(self, orig):
        def wrapped(*a, **k):
            result = orig(*a, **k)
            b = self._batch
            n = b["prompt_ids"].shape[0]
            length = b["prompt_ids"].shape[1] + b["completion_ids"].shape[1]
            self.rec.add("learn", self._t_learn, self.trainer.state.global_step,
                         items=n * length,
                         flops=3 * forward_flops(self.arch, n * length, length / 2))
            return result
        return wrapped


def config_arch(config: Any) -> Arch:
    """The Arch of a transformers Llama-style config (Llama, Qwen2, Qwen3: the fields
    models.yaml reads from a config.json); RldseError naming a missing field."""
    if getattr(config, "num_experts", None) or getattr(config, "num_local_experts", None):
        raise RldseError(f"{type(config).__name__}: a mixture of experts (not recorded)",
                         where=f"{WHERE}: trainer.model.config")
    fields = ("num_hidden_layers", "hidden_size", "num_attention_heads", "intermediate_size",
              "vocab_size")
    missing = [f for f in fields if getattr(config, f, None) is None]
    if missing:
        raise RldseError(f"{type(config).__name__} has no {', '.join(missing)}: expected a "
                         "Llama-style decoder config", where=f"{WHERE}: trainer.model.config")
    heads = config.num_attention_heads
    return Arch(name=getattr(config, "model_type", "trl"), source="the trainer's model config",
                layers=config.num_hidden_layers, hidden=config.hidden_size, heads=heads,
                kv_heads=getattr(config, "num_key_value_heads", None) or heads,
                head_dim=getattr(config, "head_dim", None) or config.hidden_size // heads,
                ffn=config.intermediate_size, vocab=config.vocab_size,
                tied_embeddings=bool(getattr(config, "tie_word_embeddings", False)))


def _check_loop(trainer: Any) -> int:
    """Prompts per optimizer step of ``trainer``'s loop; RldseError naming what the
    recorder does not replay."""
    if not isinstance(trainer, GRPOTrainer):
        raise RldseError(f"{type(trainer).__name__}: RldseCallback records GRPOTrainer",
                         where=WHERE)
    args = trainer.args
    refusals = (
        (args.use_vllm, "use_vllm: generation and weight sync in vLLM are not recorded "
                        "(record transformers' generate)"),
        (trainer.use_transformers_continuous_batching,
         "use_transformers_continuous_batching: not recorded (record transformers' generate)"),
        (trainer.rollout_func is not None, "rollout_func: custom rollouts are not recorded"),
        (bool(trainer.tools) or trainer.environment_factories is not None,
         "tools and environments: multi-turn rollouts are not recorded"),
        (args.eval_strategy != "no", "eval_strategy: evaluation is not recorded (use 'no')"),
        (args.world_size != 1, f"{args.world_size} processes: one is recorded"),
        (trainer.num_iterations != 1, f"num_iterations {trainer.num_iterations}: the llm_rl "
                                      "program replays one pass over a step's responses"),
        (args.steps_per_generation % args.gradient_accumulation_steps,
         f"steps_per_generation {args.steps_per_generation}: expected a multiple of "
         f"gradient_accumulation_steps {args.gradient_accumulation_steps} (whole optimizer "
         "steps per generation round)"))
    for refused, why in refusals:
        if refused:
            raise RldseError(why, where=WHERE)
    per_update = args.per_device_train_batch_size * args.gradient_accumulation_steps
    if per_update % trainer.num_generations:
        raise RldseError(f"{per_update} completions per optimizer step: expected whole "
                         f"prompts of num_generations {trainer.num_generations}", where=WHERE)
    return per_update // trainer.num_generations

