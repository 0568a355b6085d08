"""One RL step (GRPO/DAPO/PPO-style: generate, score, log-probs, train, sync weights) under
each placement protocol, from the same rollout-engine and trainer costs.

- ``colocated``: every GPU time-shares the rollout engine and the trainer (verl's hybrid
  engine): generate the whole batch (the length tail idles the engines), switch engines
  (the rollout engine's KV cache freed and its weights offloaded, the trainer's state
  brought back when it was offloaded, and the reverse after training), old-policy and
  reference log-prob passes, the update, and the trainer's weights resharded into the
  engines.
- ``disaggregated``: N rollout GPUs and M trainer GPUs, synchronous: the trainer waits for
  the batch, the engines wait for the update and the weight sync.
- ``one_step_off``: the engines generate step k+1's batch with the weights of step k−1
  while the trainer trains on step k's (verl's one_step_off_policy): a step takes the
  longer of the two, plus the sync.
- ``async``: verl's fully_async_policy. The rollouter streams samples to the trainer, which
  updates every ``require_batches`` × ``train_batch`` prompts and syncs weights every
  ``trigger_parameter_sync_step`` updates (a step). With ``staleness_threshold`` 0 the
  rollouter generates exactly one step's prompts per sync (stream off-policy pipeline): the
  trainer starts on the first complete chunk of groups and the rollouter waits for the
  last update and the sync, so each step pays the batch's tail. With a threshold s > 0 and
  partial rollout, the rollouter may run up to s × one step's prompts ahead, and in-flight
  sequences pause across a sync instead of finishing first: the idle slots of a batch's
  tail fill with the next step's prompts, up to that many, so the tail's idle time is
  hidden in the share the look-ahead covers (all of it once s × prompts reach the tail's
  idle slot-time in sequences), and a step takes the longer of the trainer's update and
  the rollouter's time for one step's tokens.

Policy lag per sample is counted in optimizer updates between the weights that generated
the sample and the trainer's weights when it learns on it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np


@dataclass
class StepTimes:
    """One step's time and its parts (seconds), and the policy lag of its samples."""

    step_s: float
    parts_s: dict[str, float]
    lag_updates: dict[int, int] = field(default_factory=dict)
    #: the GPUs' busy share over the step: rollout engines and trainer
    rollout_busy_s: float = 0.0
    train_busy_s: float = 0.0


def minibatch_lags(prompts: int, train_batch: int, responses: int, shift: int = 0
                   ) -> dict[int, int]:
    """Samples per lag when a step's prompts are learned on in mini-batches of
    ``train_batch`` prompts, the k-th after k updates of this step (plus ``shift``)."""
    steps = max(prompts // train_batch, 1)
    return {shift + k: train_batch * responses for k in range(steps)}


def chunk_pipeline(ready_s: np.ndarray, chunk_train_s: float) -> float:
    """When the trainer finishes chunks that become ready at ``ready_s`` (sorted), each
    taking ``chunk_train_s``, one after another."""
    done = 0.0
    for r in ready_s:
        done = max(done, float(r)) + chunk_train_s
    return done


def tail_hidden_share(staleness: float, prompts: int, responses: int, mean_len: float,
                      idle_slot_iterations: float) -> float:
    """Share of a batch's tail that a look-ahead of ``staleness`` × ``prompts`` prompts
    can fill: the idle slot-iterations of the tail against the tokens those prompts'
    responses bring."""
    if idle_slot_iterations <= 0:
        return 1.0
    fill = staleness * prompts * responses * mean_len
    return float(min(1.0, fill / idle_slot_iterations))
