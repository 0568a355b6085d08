"""Atari: the standard preprocessing and the Nature-CNN in PyTorch (its work, counted from
its shapes, is rldse.kernels.nature_cnn's).

Environments (``ALE/...`` ids, the ``atari`` extra: ale-py ships its ROMs, so this runs
offline): gymnasium's ``AtariPreprocessing`` as Mnih et al. (Nature 518, 2015) set it
up — frame skip 4 (max-pooled over the last two frames), 84×84 greyscale, up to 30
no-op starts — then the last 4 frames stacked (``FrameStackObservation``): uint8
observations of shape (4, 84, 84). The base env is made with ``frameskip=1`` (the
wrapper skips) and ALE v5's sticky actions (repeat_action_probability 0.25, Machado et
al. 2018).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from rldse.errors import RldseError
from rldse.kernels.nature_cnn import FEATURES, SCREEN, STACK

if TYPE_CHECKING:
    import gymnasium as gym

FRAME_SKIP, NOOP_MAX = 4, 30
STICKY_ACTIONS = 0.25  # ALE v5's default (Machado et al. 2018)
EXTRA = "pip install 'rldse[atari]'"


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


def refuse_hidden(workload: str, options: dict[str, Any]) -> None:
    """Refuse option 'hidden' on an Atari capture: the Nature-CNN has no hidden widths."""
    if "hidden" in options:
        raise RldseError(f"{workload} option 'hidden': Atari envs run the Nature-CNN, which "
                         "has no hidden widths to set")


def make_env(env_id: str) -> gym.Env:
    """``env_id`` with the standard preprocessing (module docstring), or a one-line
    RldseError when the atari extra is absent or the id is unknown."""
    import gymnasium as gym

    try:
        import ale_py
    except ImportError:
        raise RldseError(f"env '{env_id}': Atari environments need the atari extra "
                         f"({EXTRA})") from None
    from gymnasium.wrappers import AtariPreprocessing, FrameStackObservation

    gym.register_envs(ale_py)
    try:
        env = gym.make(env_id, frameskip=1, repeat_action_probability=STICKY_ACTIONS)
    except gym.error.Error as exc:
        raise RldseError(f"env '{env_id}': {exc}") from None
    env = AtariPreprocessing(env, noop_max=NOOP_MAX, frame_skip=FRAME_SKIP,
                             screen_size=SCREEN, grayscale_obs=True)
    return FrameStackObservation(env, STACK)


def torch_network(heads: tuple[int, ...]) -> Any:
    """The Nature-CNN in PyTorch (the ``torch`` extra): a torso module and a ModuleList
    of linear heads, on the CPU. Raises RldseError when torch is absent."""
    try:
        import torch
        from torch import nn
    except ImportError:
        raise RldseError(f"Atari workloads run a PyTorch Nature-CNN: {EXTRA}") from None

    class NatureCNN(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.torso = nn.Sequential(
                nn.Conv2d(STACK, 32, 8, stride=4), nn.ReLU(),
                nn.Conv2d(32, 64, 4, stride=2), nn.ReLU(),
                nn.Conv2d(64, 64, 3, stride=1), nn.ReLU(),
                nn.Flatten(), nn.Linear(64 * 7 * 7, FEATURES), nn.ReLU())
            self.heads = nn.ModuleList(nn.Linear(FEATURES, o) for o in heads)

        def forward(self, obs: torch.Tensor) -> list[torch.Tensor]:
            h = self.torso(obs.float() / 255.0)
            return [head(h) for head in self.heads]

    return NatureCNN()
