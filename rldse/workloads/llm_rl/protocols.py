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
- ``async``: verl's fully_async_policy (``async_rollouter``). The rollouter streams
  prompts to its servers, ``GROUPS_PER_SERVER`` groups each at once, and the trainer
  updates every ``require_batches`` × ``train_batch`` finished prompts and syncs weights
  every ``trigger_parameter_sync_step`` updates (a step). Between syncs the rollouter may
  dispatch (1 + ``staleness_threshold``) × one step's prompts, counting those still in
  flight or waiting at the last sync; once that budget is spent it stops dispatching and
  its running groups drain, the long responses idling the servers. With threshold 0 it
  drains to nothing before every sync (stream off-policy pipeline: each step pays the
  tail); a threshold s lets s × one step's prompts stay in flight across a sync, so the
  servers drain less or, once s × prompts reach their concurrency, not at all. With
  partial rollout the running responses pause for the sync and resume on the new weights
  (their KV cache rebuilt); without it the sync waits for them.

Policy lag per sample is counted in optimizer updates between the weights that generated
the sample and the trainer's weights when it learns on it.
"""

from __future__ import annotations

import heapq
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


#: Prompts (GRPO groups) one rollout server generates at once in verl's fully_async
#: rollouter: ``max_concurrent_samples = len(server_handles) * 16`` (verl-project/verl
#: recipe/fully_async_policy/fully_async_rollouter.py, ``set_max_required_samples``); a
#: group holds its place until its last response finishes.
GROUPS_PER_SERVER = 16


@dataclass(frozen=True)
class RollouterRun:
    """The steady state of ``async_rollouter``: seconds per sync round, the engine's busy
    seconds in one, and the prompts per round generated under the previous weights."""

    step_s: float
    busy_s: float
    carried_prompts: float


def async_rollouter(engine, groups: np.ndarray, prompt_tokens: int, step_groups: float,
                    staleness: float, partial: bool, chunk_groups: float,
                    chunk_train_s: float, chunks_per_step: int, sync_s: float
                    ) -> RollouterRun:
    """verl's fully_async_policy on one rollout server (the servers are alike: each holds
    1/servers of the prompts, the dispatch budget and the trainer's chunks), event by event.

    The server runs up to ``GROUPS_PER_SERVER`` groups (``groups``: their response
    lengths, one row each, cycled) at once, every running response emitting one token per
    decode iteration (``engine.iteration_s`` at the running batch and its KV tokens). Since
    the last sync it may dispatch (1 + ``staleness``) × ``step_groups`` groups, less those
    in flight or waiting at the sync (verl's ``staleness_samples``, reset to them at each
    parameter update); past that it pauses and its running groups drain (the tail). The
    trainer learns on ``chunk_groups`` finished groups at a time (``chunk_train_s`` each)
    and syncs after ``chunks_per_step``: with ``partial`` the running responses pause for
    the sync and resume with their KV cache rebuilt (a prefill of their context), without
    it the sync waits for them to finish. Returns the mean over the rounds after the first
    two (the carry-over settles): enough to cycle through every group once, 8 at least."""
    responses = groups.shape[1]
    rounds = 2 + max(int(np.ceil(len(groups) / step_groups)), 8)
    group_prefill_s = engine.prefill_s(responses, prompt_tokens)
    cap = max(1, min(GROUPS_PER_SERVER, engine.slots // responses))
    budget = (1.0 + staleness) * step_groups
    t, it = 0.0, 0.0  # wall clock; decode iterations so far (the token clock)
    ends: list[tuple[float, float, int]] = []  # (end iteration, start iteration, group)
    left: dict[int, int] = {}  # running groups: responses still generating
    running, offset = 0, 0.0  # running responses; Σ (prompt − start) over them
    ready = dispatched = 0.0  # finished groups not yet learned on; dispatched since sync
    next_group, chunks, train_end = 0, 0, None
    draining = False  # a sync waits for the running groups (no partial rollout)
    sync_at, busy, carried = [0.0], [0.0], []

    def sync() -> None:
        nonlocal t, dispatched, chunks, draining
        kv = running * it + offset
        t += sync_s
        if partial and running:
            t += engine.prefill_s(running, int(kv / running))
        dispatched, chunks, draining = float(len(left)) + ready, 0, False
        carried.append(dispatched)
        sync_at.append(t)
        busy.append(0.0)

    while len(sync_at) <= rounds:
        while not draining and len(left) < cap and dispatched < budget - 1e-9:
            g = next_group % len(groups)
            for n_tokens in groups[g]:
                heapq.heappush(ends, (it + float(n_tokens), it, next_group))
            left[next_group] = responses
            running += responses
            offset += responses * (prompt_tokens - it)
            dispatched += 1
            next_group += 1
            t += group_prefill_s
            busy[-1] += group_prefill_s
        if train_end is None and ready >= chunk_groups - 1e-9 and not draining:
            ready -= chunk_groups
            train_end = t + chunk_train_s
        if running:
            n = ends[0][0] - it
            kv = running * it + offset + running * n / 2
            per_it = float(engine.iteration_s(float(running), kv))
            engine_at = t + n * per_it
        else:
            n, per_it, engine_at = 0.0, 0.0, float("inf")
        if train_end is not None and train_end <= engine_at:
            if running and train_end > t:
                it += (train_end - t) / per_it
                busy[-1] += train_end - t
            t, train_end = max(t, train_end), None
            chunks += 1
            if chunks == chunks_per_step:
                if partial or not running:
                    sync()
                else:
                    draining = True
            continue
        if engine_at == float("inf"):
            raise RuntimeError("async rollouter stalled: no running group, no training")
        busy[-1] += engine_at - t
        t, it = engine_at, ends[0][0]
        while ends and ends[0][0] <= it:
            _, start, g = heapq.heappop(ends)
            running -= 1
            offset -= prompt_tokens - start
            left[g] -= 1
            if not left[g]:
                del left[g]
                ready += 1
        if draining and not running:
            sync()
    gaps = np.diff(sync_at)[2:]
    return RollouterRun(float(gaps.mean()), float(np.mean(busy[2:rounds])),
                        float(np.mean(carried[1:rounds - 1])))
