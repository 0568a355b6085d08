"""A small decoder-only transformer in PyTorch (the capture's policy), built from an
``Arch`` like the published ones: token embedding, ``layers`` blocks of RMSNorm,
grouped-query attention with a KV cache and a SwiGLU MLP, a final norm and an LM head.
Positions are a learned embedding (RoPE is left out: it is element-wise work the cost
model does not count either). Random initialisation: nothing is downloaded.
"""

from __future__ import annotations

from typing import Any

from rldse.errors import RldseError
from rldse.workloads.llm_rl.arch import Arch

EXTRA = "install PyTorch (the 'torch' extra: pip install 'rldse[torch]')"


def build(arch: Arch, max_len: int, seed: int) -> Any:
    """The decoder for ``arch`` holding sequences of up to ``max_len`` tokens."""
    try:
        import torch
        from torch import nn
        from torch.nn import functional as F  # noqa: N812
    except ImportError:
        raise RldseError(f"the llm_rl capture runs a PyTorch transformer: {EXTRA}") from None

    torch.manual_seed(seed)

    class Block(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            a = arch
            self.norm1, self.norm2 = nn.RMSNorm(a.hidden), nn.RMSNorm(a.hidden)
            self.qkv = nn.Linear(a.hidden, a.q_width + 2 * a.kv_width, bias=False)
            self.o = nn.Linear(a.q_width, a.hidden, bias=False)
            self.gate_up = nn.Linear(a.hidden, 2 * a.ffn, bias=False)
            self.down = nn.Linear(a.ffn, a.hidden, bias=False)

        def forward(self, x, cache, causal: bool):
            a = arch
            b, t, _ = x.shape
            q, k, v = self.qkv(self.norm1(x)).split([a.q_width, a.kv_width, a.kv_width], -1)
            q = q.view(b, t, a.heads, a.head_dim).transpose(1, 2)
            k = k.view(b, t, a.kv_heads, a.head_dim).transpose(1, 2)
            v = v.view(b, t, a.kv_heads, a.head_dim).transpose(1, 2)
            if cache is not None:  # decode: attend to every cached position and this one
                k, v = torch.cat([cache[0], k], 2), torch.cat([cache[1], v], 2)
            att = F.scaled_dot_product_attention(q, k, v, is_causal=causal,
                                                 enable_gqa=a.kv_heads != a.heads)
            x = x + self.o(att.transpose(1, 2).reshape(b, t, a.q_width))
            gate, up = self.gate_up(self.norm2(x)).chunk(2, -1)
            return x + self.down(F.silu(gate) * up), (k, v)

    class Decoder(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.embed = nn.Embedding(arch.vocab, arch.hidden)
            self.pos = nn.Embedding(max_len, arch.hidden)
            self.blocks = nn.ModuleList(Block() for _ in range(arch.layers))
            self.norm = nn.RMSNorm(arch.hidden)
            self.head = nn.Linear(arch.hidden, arch.vocab, bias=False)

        def forward(self, tokens, caches=None, start: int = 0):
            """Logits of ``tokens`` (B × T) at positions start..start+T−1 and the KV
            caches after them; ``caches`` None: a causal pass over the whole sequence."""
            pos = torch.arange(start, start + tokens.shape[1])
            x = self.embed(tokens) + self.pos(pos)[None]
            out = []
            for i, block in enumerate(self.blocks):
                x, kv = block(x, None if caches is None else caches[i], caches is None)
                out.append(kv)
            return self.head(self.norm(x)), out

    return Decoder()
