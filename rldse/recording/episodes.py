"""Episode returns of a script run by `rldse capture script` (rldse.recording.script), read
from what its env steps return, so its trace carries the learning curve the script saw.

A vector env's step reports the episodes that ended in it: gymnasium's
``RecordEpisodeStatistics`` puts their returns in ``info["episode"]["r"]`` with the mask
``info["_episode"]`` (gymnasium 1.x), or in the dicts of ``info["final_info"]``
(gymnasium 0.29); SB3's ``Monitor`` in ``info["episode"]["r"]`` of an env's info dict.
Where the step reports none, an episode's return is the sum of the rewards the step
returned to the script since that env's last episode end (``terminated or truncated``).
"""

from __future__ import annotations

from typing import Any

import numpy as np


class Episodes:
    """Returns of the episodes ended so far, in the order their steps returned."""

    def __init__(self) -> None:
        self.returns: list[float] = []
        self._running: np.ndarray | None = None  # each env's reward sum since its last end

    def step(self, out: Any) -> int:
        """Read one step's ``(obs, reward, terminated, truncated, info)``; the number of
        episodes that ended in it (0 for a step that returned something else)."""
        if not isinstance(out, tuple) or len(out) != 5:
            return 0
        _, reward, terminated, truncated, info = out
        try:
            reward = np.atleast_1d(np.asarray(reward, np.float64))
            done = np.atleast_1d(np.logical_or(terminated, truncated))
        except (TypeError, ValueError):  # not a gymnasium step's numbers
            return 0
        if self._running is None or self._running.shape != reward.shape:
            self._running = np.zeros_like(reward)
        self._running += reward
        sums = self._running[done].tolist() if done.shape == reward.shape else []
        if done.shape == reward.shape:
            self._running[done] = 0.0
        reported = _reported(info)
        ended = reported if reported is not None else sums
        self.returns.extend(float(r) for r in ended)
        return len(ended)


def _reported(info: Any) -> list[float] | None:
    """The returns ``info`` reports (module docstring); None where it reports none."""
    if not isinstance(info, dict):
        return None
    episode = info.get("episode")
    if isinstance(episode, dict) and "r" in episode:
        r = np.atleast_1d(np.asarray(episode["r"], np.float64))
        mask = info.get("_episode")
        if mask is None:  # one env's info (SB3's Monitor): this episode ended
            return r.tolist()
        return r[np.asarray(mask, bool)].tolist()
    final = info.get("final_info")
    if final is not None and "_final_info" in info:
        mask = np.asarray(info["_final_info"], bool)
        returns = [float(np.asarray(f["episode"]["r"]).reshape(-1)[0])
                   for f, m in zip(final, mask, strict=False)
                   if m and isinstance(f, dict) and isinstance(f.get("episode"), dict)]
        return returns if len(returns) == int(mask.sum()) else None
    return None
