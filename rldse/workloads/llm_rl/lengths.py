"""Response lengths of one step: ``workload.response_tokens`` (a mean and a cap) as the
lengths of every response, the same ones for the same inputs.

Without measured lengths, a response's length is taken as exponential (the maximum-entropy
law for a positive length of given mean) truncated at the cap: a response that reaches
``max`` tokens is cut there, as a rollout engine cuts it. The scale of the exponential is
solved so that the truncated lengths have the requested mean; the step's n lengths are its
quantiles at (i + 0.5) / n (stratified, so the same n and mean give the same lengths and
the longest is the quantile a sample of n reaches: about scale × ln 2n). Responses are
then given to prompts (``responses_per_prompt`` each) in a fixed shuffled order, so a
group mixes short and long ones as sampling does.
"""

from __future__ import annotations

import numpy as np

from rldse.errors import RldseError

#: Seed of the fixed order lengths are dealt to prompts in (not the simulation's seed:
#: the lengths are the workload, the same in every run).
DEAL_SEED = 20_251_202


def truncated_scale(mean: float, cap: float) -> float:
    """Scale θ of an exponential whose values cut at ``cap`` have mean ``mean``:
    θ (1 − e^(−cap/θ)) = mean, solved by bisection (the left side grows with θ)."""
    if not 0 < mean < cap:
        raise RldseError(f"response_tokens.mean {mean:g}: expected above 0 and below "
                         f"response_tokens.max ({cap:g})", where="workload.response_tokens")
    lo, hi = mean, mean * 1e6
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if mid * -np.expm1(-cap / mid) < mean:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


def response_lengths(n: int, mean: float, cap: int) -> np.ndarray:
    """``n`` response lengths (tokens, ≥ 1, ≤ cap) with mean ≈ ``mean``, in dealing
    order (module docstring)."""
    theta = truncated_scale(mean, cap)
    q = (np.arange(n) + 0.5) / n
    lengths = np.clip(np.rint(-theta * np.log1p(-q)), 1, cap).astype(np.int64)
    return lengths[np.random.default_rng(DEAL_SEED).permutation(n)]
