"""The Nature-CNN's work, counted from its shapes (its PyTorch module and the Atari
environments it plays: rldse.workloads.common.atari).

Network: Mnih et al.'s (Nature 518, 2015): on 4 stacked 84×84 greyscale uint8 frames, conv
32×8×8 stride 4, conv 64×4×4 stride 2, conv 64×3×3 stride 1, fully connected 512, all
ReLU, then linear heads; input scaled by 1/255.

Work (float32, B samples). Each layer is a GEMM as im2col lowers it (Chetlur et al.,
cuDNN, arXiv 1410.0759): a conv with output H'×W', C input channels, k×k kernels and O
filters is the product of a (B·H'·W') × (C·k²) matrix by a (C·k²) × O one, so its flops
2·B·H'·W'·C·k²·O are exactly what ``torch.utils.flop_counter`` counts; bytes are the
lowered operands' (rldse.kernels.mlp.gemm), an upper bound on what a direct
convolution reads. Per layer besides the GEMM, as mlp.py counts them: bias add (B·r·o
flops; 4·(2·B·r·o + o) bytes), ReLU (B·r·o; 8·B·r·o); backward: dW and dX GEMMs (no dX
for the first layer), the bias gradient (B·r·o; 4·(B·r·o + o)) and the ReLU mask
(2·B·r·o; 12·B·r·o: read gradient and output, write gradient). Scaling the uint8 input:
B·28,224 flops, 13 bytes each (convert 1 + 4, divide 4 + 4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rldse.kernels.network_work import F32, Kernels, NetworkWork, Work
from rldse.kernels.network_work import Layer as LayerWork

SCREEN, STACK = 84, 4
OBS_SHAPE = (STACK, SCREEN, SCREEN)
OBS_BYTES = STACK * SCREEN * SCREEN  # uint8


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
