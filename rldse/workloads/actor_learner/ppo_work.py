"""What the real PPO loop (ppo.py) and its simulated twin (program/) share: the fields of a
rollout message, and the work of PPO's loss kernels (ppo.ppo_grads besides the networks),
counted per sample.

Per sample with A actions, bytes read + written as the numpy calls run them (float32,
int64 row indices): log-softmax (max 4·A + 4, subtract 12·A, exp 8·A, sum 4·A + 4, log 8,
subtract 12·A), probabilities exp (8·A), advantage normalisation (mean, std, subtract,
divide: 44), ratio (gather 20, subtract 12, exp 8), the clip mask (seven boolean kernels:
29), d logp (negate, multiply, where, divide: 41), d logits (8 + 8·A, the scatter 24),
entropy (16·A + 12), its gradient (44·A), d values (20): 124·A + 234 bytes; about
20·A + 25 flops; 30 calls.
"""

from __future__ import annotations

from rldse.kernels.mlp import Work, elementwise

#: Per transition: float32 obs, int32 action, float32 logp, reward, done and value (what an
#: actor's rollout message holds; ppo.py sends them, the simulated twin costs them).
ROLLOUT_FIELDS = ("obs", "actions", "logp", "rewards", "dones", "values")

BYTES_PER_SAMPLE, BYTES_PER_LOGIT = 234, 124
FLOPS_PER_SAMPLE, FLOPS_PER_LOGIT = 25, 20
CALLS = 30


def ppo_loss_work(batch: int, n_actions: int) -> Work:
    return elementwise(batch * (FLOPS_PER_SAMPLE + FLOPS_PER_LOGIT * n_actions),
                       batch * (BYTES_PER_SAMPLE + BYTES_PER_LOGIT * n_actions), CALLS)
