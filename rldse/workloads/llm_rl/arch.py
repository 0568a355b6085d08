"""Decoder-only transformer architectures by name (``workload.model``): the numbers of a
published config.json (``models.yaml``, each entry citing its model card) and the work
they imply per token, which every phase of the LLM RL step is priced from.

Layers are Llama/Qwen style: RMSNorm, grouped-query attention (``heads`` query heads of
``head_dim``, ``kv_heads`` key/value heads), a SwiGLU MLP (gate, up and down projections
of ``ffn``), an embedding and an LM head (one matrix when ``tied_embeddings``). Norms,
biases and rotary tables are under 0.1 % of the parameters and are not counted.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from importlib import resources

import yaml

from rldse.errors import RldseError, did_you_mean

#: Bytes per element of the precisions a step may run its GEMMs, weights and KV cache in.
PRECISION_BYTES = {"bf16": 2, "fp8": 1}


@dataclass(frozen=True)
class Arch:
    """One architecture's shape (models.yaml)."""

    name: str
    source: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    tied_embeddings: bool

    @property
    def q_width(self) -> int:
        return self.heads * self.head_dim

    @property
    def kv_width(self) -> int:
        return self.kv_heads * self.head_dim

    def layer_gemms(self) -> tuple[tuple[str, int, int], ...]:
        """(name, inputs, outputs) of one layer's weight GEMMs, unsharded: the fused QKV
        projection, the output projection, the fused gate/up projection and the down
        projection (how vLLM and FSDP models lay them out)."""
        return (("qkv", self.hidden, self.q_width + 2 * self.kv_width),
                ("o", self.q_width, self.hidden),
                ("gate_up", self.hidden, 2 * self.ffn),
                ("down", self.ffn, self.hidden))

    @property
    def layer_params(self) -> int:
        return sum(i * o for _, i, o in self.layer_gemms())

    @property
    def embedding_params(self) -> int:
        """Embedding plus LM head (one matrix where they are tied)."""
        return self.vocab * self.hidden * (1 if self.tied_embeddings else 2)

    @property
    def params(self) -> int:
        return self.layers * self.layer_params + self.embedding_params

    @property
    def matmul_params(self) -> int:
        """Parameters a token multiplies by (every layer's GEMMs and the LM head; the
        embedding is a lookup)."""
        return self.layers * self.layer_params + self.vocab * self.hidden

    def kv_bytes_per_token(self, precision: str) -> int:
        """KV cache of one token over every layer: keys and values of each KV head."""
        return 2 * self.layers * self.kv_width * PRECISION_BYTES[precision]

    def attention_flops(self, queries, context) -> object:
        """Score and value products of ``queries`` tokens against ``context`` keys each,
        every layer: 2 GEMMs × 2 flops × heads × head_dim (element-wise over arrays)."""
        return 4.0 * self.layers * self.q_width * queries * context


@cache
def _table() -> dict[str, dict]:
    text = resources.files("rldse.workloads.llm_rl").joinpath("models.yaml").read_text(
        encoding="utf-8")
    return yaml.safe_load(text)["models"]


def names() -> list[str]:
    return sorted(_table())


def arch(name: str, where: str = "workload.model") -> Arch:
    """The architecture ``name`` (models.yaml); RldseError naming ``where`` for an unknown
    name or a mixture-of-experts model (not priced yet)."""
    table = _table()
    if name not in table:
        raise RldseError(f"model '{name}': unknown{did_you_mean(name, list(table))} "
                         f"(known: {', '.join(names())})", where=where)
    entry = table[name]
    if entry.get("moe"):
        raise RldseError(f"model '{name}' is a mixture of experts: expert routing is not "
                         "priced yet (dense models: " + ", ".join(
                             n for n in names() if not table[n].get("moe")) + ")",
                         where=where)
    return Arch(name=name, source=entry["source"], layers=entry["layers"],
                hidden=entry["hidden"], heads=entry["heads"], kv_heads=entry["kv_heads"],
                head_dim=entry.get("head_dim", entry["hidden"] // entry["heads"]),
                ffn=entry["ffn"], vocab=entry["vocab"],
                tied_embeddings=bool(entry["tied_embeddings"]))
