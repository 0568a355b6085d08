"""One iteration's shapes and the bytes they hold: Tempo's network on its observations."""

from __future__ import annotations

from dataclasses import dataclass

F32 = 4


@dataclass(frozen=True)
class TempoShape:
    """One iteration's shapes: B envs × T steps, observations of 3 × side × side fp32, an
    MLP with ``hidden`` units after the encoder (Tempo's ModelBuilder.from_env)."""

    envs: int
    steps: int
    side: int
    hidden: tuple[int, ...] = (64, 64)
    actions: int = 1
    value_head: bool = False  # PPO's actor-critic

    @property
    def features(self) -> int:
        return 3 * self.side * self.side

    @property
    def obs_bytes(self) -> int:
        return F32 * self.features

    @property
    def step_bytes(self) -> int:
        """One time step's observations, all envs."""
        return self.envs * self.obs_bytes

    @property
    def rollout_bytes(self) -> int:
        return self.steps * self.step_bytes

    @property
    def layers(self) -> int:
        return 2 + len(self.hidden) + int(self.value_head)

    @property
    def weights(self) -> int:
        """Parameters: the encoder F→h0, the hidden layers, the heads (biases included)."""
        h = (self.hidden[0], *self.hidden)
        n = self.features * h[0] + h[0]
        n += sum(a * b + b for a, b in zip(h[:-1], h[1:], strict=True))
        n += h[-1] * self.actions + self.actions
        return n + (h[-1] + 1 if self.value_head else 0)

    @property
    def width(self) -> int:
        """Activations per sample (hidden units and heads)."""
        return self.hidden[0] + sum(self.hidden) + self.actions + int(self.value_head)

    @property
    def step_activation_bytes(self) -> int:
        """One time step's activations, all envs: kept until that step's backward."""
        return F32 * self.envs * self.width


def fixed_bytes(shape: TempoShape) -> int:
    """Parameters, gradients and Adam's two moments."""
    return 4 * F32 * shape.weights


def ppo_baseline_need(shape: TempoShape) -> int:
    """GPU bytes the baselines hold with the whole rollout as one minibatch: the rollout
    and its bootstrap step, the gathered minibatch (a second copy), parameters with Adam
    state, and the minibatch's activations and their gradients."""
    samples = shape.steps * shape.envs
    return (shape.rollout_bytes + shape.step_bytes + samples * shape.obs_bytes
            + fixed_bytes(shape) + 2 * F32 * samples * shape.width)
