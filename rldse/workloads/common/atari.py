"""Atari: the standard preprocessing and the Nature-CNN, with its work counted from shapes.

Environments (``ALE/...`` ids, the ``atari`` extra: ale-py ships its ROMs, so this runs
offline): gymnasium's ``AtariPreprocessing`` as Mnih et al. (Nature 518, 2015) set it
up — frame skip 4 (max-pooled over the last two frames), 84×84 greyscale, up to 30
no-op starts — then the last 4 frames stacked (``FrameStackObservation``): uint8
observations of shape (4, 84, 84). The base env is made with ``frameskip=1`` (the
wrapper skips) and ALE v5's sticky actions (repeat_action_probability 0.25, Machado et
al. 2018).

Network: Mnih et al.'s: conv 32×8×8 stride 4, conv 64×4×4 stride 2, conv 64×3×3 stride 1,
fully connected 512, all ReLU, then linear heads; input scaled by 1/255.

Work (float32, B samples). Each layer is a GEMM as im2col lowers it (Chetlur et al.,
cuDNN, arXiv 1410.0759): a conv with output H'×W', C input channels, k×k kernels and O
filters is the product of a (B·H'·W') × (C·k²) matrix by a (C·k²) × O one, so its flops
2·B·H'·W'·C·k²·O are exactly what ``torch.utils.flop_counter`` counts; bytes are the
lowered operands' (rldse.workloads.common.mlp.gemm), an upper bound on what a direct
convolution reads. Per layer besides the GEMM, as mlp.py counts them: bias add (B·r·o
flops; 4·(2·B·r·o + o) bytes), ReLU (B·r·o; 8·B·r·o); backward: dW and dX GEMMs (no dX
for the first layer), the bias gradient (B·r·o; 4·(B·r·o + o)) and the ReLU mask
(2·B·r·o; 12·B·r·o: read gradient and output, write gradient). Scaling the uint8 input:
B·28,224 flops, 13 bytes each (convert 1 + 4, divide 4 + 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from rldse.errors import RldseError
from rldse.workloads.common.network_work import F32, Kernels, NetworkWork, Work
from rldse.workloads.common.network_work import Layer as LayerWork

if TYPE_CHECKING:
    import gymnasium as gym

FRAME_SKIP, SCREEN, STACK, NOOP_MAX = 4, 84, 4, 30
STICKY_ACTIONS = 0.25  # ALE v5's default (Machado et al. 2018)
OBS_SHAPE = (STACK, SCREEN, SCREEN)
OBS_BYTES = STACK * SCREEN * SCREEN  # uint8
EXTRA = "pip install 'rldse[atari]'"


@dataclass(frozen=True)
class Layer:
    """One layer as the GEMM it is: rows per sample (H'·W' for a conv, 1 for a linear
    layer), inputs (C·k², or in-features) and outputs (filters, or out-features)."""

    rows: int
    inputs: int
    outputs: int

    @property
    def params(self) -> int:
        return self.inputs * self.outputs + self.outputs


#: Nature-CNN torso on (4, 84, 84): 84 → 20 → 9 → 7 pixels, then 3,136 → 512.
TORSO = (Layer(20 * 20, STACK * 8 * 8, 32), Layer(9 * 9, 32 * 4 * 4, 64),
         Layer(7 * 7, 64 * 3 * 3, 64), Layer(1, 64 * 7 * 7, 512))
FEATURES = TORSO[-1].outputs


def is_atari(env_id: str) -> bool:
    return env_id.startswith("ALE/")


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


def network_layers(heads: tuple[int, ...]) -> tuple[tuple[Layer, ...], tuple[Layer, ...]]:
    """(torso, heads) layers: the shared torso and one linear head per output width."""
    return TORSO, tuple(Layer(1, FEATURES, o) for o in heads)


def n_params(heads: tuple[int, ...]) -> int:
    torso, hs = network_layers(heads)
    return sum(layer.params for layer in (*torso, *hs))


def n_tensors(heads: tuple[int, ...]) -> int:
    """Parameter tensors (a weight and a bias per layer): the optimizer's loop runs over them."""
    return 2 * (len(TORSO) + len(heads))


def network(heads: tuple[int, ...]) -> NetworkWork:
    """The work of the torso and the given heads, per layer (module docstring): the input
    scaling; per torso layer its GEMM, bias add and ReLU (torch keeps both outputs), and
    backward the bias gradient and ReLU mask (no input gradient for the first layer); per
    head its GEMM and bias, both gradients backward."""
    torso, hs = network_layers(heads)
    layers = []
    for k, layer in enumerate(torso):
        r, o = layer.rows, layer.outputs
        gemm_flops = 2 * r * layer.inputs * o
        layers.append(LayerWork(
            name=f"torso.{k}", kind="conv" if r > 1 else "linear", rows=r,
            inputs=layer.inputs, outputs=o, forward_flops=gemm_flops,
            backward_flops=(2 if k > 0 else 1) * gemm_flops, input_grad=k > 0,
            params=layer.params, tensors=2, param_bytes=F32 * layer.params,
            activation_bytes=2 * F32 * r * o,
            forward_kernels=Kernels(flops_per_sample=2 * r * o, bytes_per_sample=16 * r * o,
                                    fixed_bytes=F32 * o, calls=2),
            backward_kernels=Kernels(flops_per_sample=3 * r * o, bytes_per_sample=16 * r * o,
                                     fixed_bytes=F32 * o, calls=2)))
    for k, layer in enumerate(hs):
        o = layer.outputs
        layers.append(LayerWork(
            name=f"heads.{k}", kind="linear", inputs=layer.inputs, outputs=o,
            forward_flops=2 * layer.inputs * o, backward_flops=4 * layer.inputs * o,
            params=layer.params, tensors=2, param_bytes=F32 * layer.params,
            activation_bytes=F32 * o,
            forward_kernels=Kernels(flops_per_sample=o, bytes_per_sample=2 * F32 * o,
                                    fixed_bytes=F32 * o, calls=1),
            backward_kernels=Kernels(flops_per_sample=o, bytes_per_sample=F32 * o,
                                     fixed_bytes=F32 * o, calls=1)))
    return NetworkWork(kind="nature_cnn", obs_shape=list(OBS_SHAPE), obs_dtype="uint8",
                       layers=layers,
                       forward_kernels=Kernels(flops_per_sample=OBS_BYTES,
                                               bytes_per_sample=13 * OBS_BYTES, calls=2))


def forward_work(batch: int, heads: tuple[int, ...]) -> Work:
    """One forward of the torso and the given heads on ``batch`` observations."""
    return network(heads).forward(batch)


def backward_work(batch: int, heads: tuple[int, ...]) -> Work:
    """The backward pass of forward_work (no input gradient for the first layer)."""
    return network(heads).backward(batch)


def network_info(heads: tuple[int, ...]) -> dict[str, Any]:
    """What a program needs to cost this network (workload_info['network'])."""
    return network(heads).info()


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
