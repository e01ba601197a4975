"""A decoder-only GPT: RoPE, RMSNorm, SwiGLU, optional QK-norm and tied embeddings.

The architecture is the one most recent open pretraining runs converged on (LLaMA-style blocks) because it trains
faster per FLOP than GPT-2's learned positions, LayerNorm and GELU MLP at the same parameter count. Attention goes
through `F.scaled_dot_product_attention`, which dispatches to flash kernels on GPU. No biases anywhere: they cost
memory bandwidth and buy nothing at this scale.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint

# Sizes of the presets. tiny is for CPU tests and the sweep; the other two are the usual GPT-2 scales.
PRESETS: dict[str, dict[str, int]] = {
    "tiny": {"n_layer": 2, "n_head": 4, "n_embd": 128},
    "gpt2-124m": {"n_layer": 12, "n_head": 12, "n_embd": 768},
    "350m": {"n_layer": 24, "n_head": 16, "n_embd": 1024},
    "1b": {"n_layer": 20, "n_head": 16, "n_embd": 2048},  # 1.0B in the blocks (+0.2B embedding and head): FSDP's size
}


# Weights that stack several matrices by rows so one matmul computes them all (Q, K, V; SwiGLU's gate and up).
# Muon orthogonalises each stacked matrix on its own, as if they were separate weights.
FUSED_ROWS: dict[str, int] = {"attn.qkv.weight": 3, "mlp.gate_up.weight": 2}


@dataclass
class GPTConfig:
    vocab_size: int
    seq_len: int = 1024
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    qk_norm: bool = True
    tie_embeddings: bool = False
    rope_base: float = 10000.0

    @classmethod
    def preset(cls, name: str, vocab_size: int, **overrides) -> GPTConfig:
        if name not in PRESETS:
            raise ValueError(f"unknown model preset {name!r}; choose one of {sorted(PRESETS)}")
        return cls(vocab_size=vocab_size, **{**PRESETS[name], **overrides})

    @property
    def mlp_hidden(self) -> int:
        """SwiGLU width: 8/3·d keeps the parameter count of a 4·d GELU MLP; rounded to 64 for matmul tiling."""
        return 64 * math.ceil(8 * self.n_embd / 3 / 64)


def padded_vocab(vocab_size: int, multiple: int = 64) -> int:
    """Round the embedding table up so the LM-head matmul has tensor-core-friendly shapes (GPT-2: 50257 -> 50304)."""
    return multiple * math.ceil(vocab_size / multiple)


class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.rms_norm(x, (x.size(-1),), self.weight.to(x.dtype), self.eps)  # matching dtypes keep the fused kernel under autocast


def rope_tables(seq_len: int, head_dim: int, base: float) -> tuple[torch.Tensor, torch.Tensor]:
    """cos/sin of the rotary angles, shaped (seq_len, head_dim/2) to broadcast over (B, H, T, head_dim/2)."""
    inv_freq = 1.0 / base ** (torch.arange(0, head_dim, 2, dtype=torch.float32) / head_dim)
    angles = torch.outer(torch.arange(seq_len, dtype=torch.float32), inv_freq)
    return angles.cos(), angles.sin()


def apply_rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Rotate pairs (first half, second half) of each head's channels by a position-dependent angle."""
    x1, x2 = x.chunk(2, dim=-1)
    cos, sin = cos.to(x.dtype), sin.to(x.dtype)
    return torch.cat((x1 * cos - x2 * sin, x1 * sin + x2 * cos), dim=-1)


class Attention(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        assert cfg.n_embd % cfg.n_head == 0, "n_embd must be divisible by n_head"
        self.n_head, self.head_dim = cfg.n_head, cfg.n_embd // cfg.n_head
        self.qkv = nn.Linear(cfg.n_embd, 3 * cfg.n_embd, bias=False)
        self.proj = nn.Linear(cfg.n_embd, cfg.n_embd, bias=False)
        # QK-norm bounds the attention logits, which removes a common source of loss spikes at high learning rates.
        self.q_norm = RMSNorm(self.head_dim) if cfg.qk_norm else nn.Identity()
        self.k_norm = RMSNorm(self.head_dim) if cfg.qk_norm else nn.Identity()

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        B, T, C = x.shape
        q, k, v = self.qkv(x).view(B, T, 3, self.n_head, self.head_dim).transpose(1, 3).unbind(dim=2)
        q, k = apply_rope(self.q_norm(q), cos, sin), apply_rope(self.k_norm(k), cos, sin)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(B, T, C))


class SwiGLU(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.gate_up = nn.Linear(cfg.n_embd, 2 * cfg.mlp_hidden, bias=False)  # one matmul for gate and up
        self.down = nn.Linear(cfg.mlp_hidden, cfg.n_embd, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        gate, up = self.gate_up(x).chunk(2, dim=-1)
        return self.down(F.silu(gate) * up)


class Block(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.attn_norm, self.attn = RMSNorm(cfg.n_embd), Attention(cfg)
        self.mlp_norm, self.mlp = RMSNorm(cfg.n_embd), SwiGLU(cfg)
        # Activation checkpointing: keep only the block's input for backward and run its forward again there
        # (~1/3 more compute for a block's activations in memory). Set by `--activation_checkpointing`.
        self.checkpointed = False

    def forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        if self.checkpointed and torch.is_grad_enabled():
            return torch.utils.checkpoint.checkpoint(self._forward, x, cos, sin, use_reentrant=False)
        return self._forward(x, cos, sin)

    def _forward(self, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.attn_norm(x), cos, sin)
        return x + self.mlp(self.mlp_norm(x))


class GPT(nn.Module):
    def __init__(self, cfg: GPTConfig):
        super().__init__()
        self.cfg = cfg
        vocab = padded_vocab(cfg.vocab_size)
        self.embed = nn.Embedding(vocab, cfg.n_embd)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layer))
        self.norm = RMSNorm(cfg.n_embd)
        self.lm_head = nn.Linear(cfg.n_embd, vocab, bias=False)
        if cfg.tie_embeddings:
            self.lm_head.weight = self.embed.weight
        cos, sin = rope_tables(cfg.seq_len, cfg.n_embd // cfg.n_head, cfg.rope_base)
        self.register_buffer("rope_cos", cos, persistent=False)
        self.register_buffer("rope_sin", sin, persistent=False)
        self.apply(self._init_weights)
        # Residual-branch outputs start smaller so the residual stream's variance does not grow with depth (GPT-2).
        for name, p in self.named_parameters():
            if name.endswith(("attn.proj.weight", "mlp.down.weight")):
                nn.init.normal_(p, std=0.02 / math.sqrt(2 * cfg.n_layer))

    @staticmethod
    def _init_weights(m: nn.Module) -> None:
        if isinstance(m, (nn.Linear, nn.Embedding)):
            nn.init.normal_(m.weight, std=0.02)

    def num_params(self, non_embedding: bool = True) -> int:
        """Parameters counted once (tied weights are shared); by default without the token embedding, as in
        the Chinchilla and Kaplan scaling fits, since a lookup costs no FLOPs."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding and not self.cfg.tie_embeddings:
            n -= self.embed.weight.numel()
        return n

    def flops_per_token(self) -> float:
        """Training FLOPs per token: 6·N for the matmuls plus 12·L·d·T for attention scores (PaLM appendix B)."""
        c = self.cfg
        n = sum(p.numel() for p in self.parameters()) - self.embed.weight.numel() * (not c.tie_embeddings)
        return 6 * n + 12 * c.n_layer * c.n_embd * c.seq_len

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None) -> torch.Tensor:
        """Logits (B, T, vocab) when targets is None, else the mean next-token cross-entropy (a scalar)."""
        T = idx.size(1)
        assert self.cfg.seq_len >= T, f"sequence of {T} tokens exceeds the model's seq_len {self.cfg.seq_len}"
        cos, sin = self.rope_cos[:T], self.rope_sin[:T]
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, cos, sin)
        return self.head(x, targets)

    def hidden(self, idx: torch.Tensor) -> torch.Tensor:
        """The last block's output after the final norm (B, T, n_embd): what the LM head reads, and what
        `curate.models.inference` pools into document embeddings."""
        T = idx.size(1)
        assert self.cfg.seq_len >= T, f"sequence of {T} tokens exceeds the model's seq_len {self.cfg.seq_len}"
        x = self.embed(idx)
        for block in self.blocks:
            x = block(x, self.rope_cos[:T], self.rope_sin[:T])
        return self.norm(x)

    def head(self, x: torch.Tensor, targets: torch.Tensor | None) -> torch.Tensor:
        logits = self.lm_head(self.norm(x))
        if targets is None:
            return logits
        return F.cross_entropy(logits.float().view(-1, logits.size(-1)), targets.reshape(-1))

    def compile_blocks(self) -> None:
        """torch.compile each block, and the head with its loss, as separate graphs (as torchtitan does) instead of
        the whole model as one. Under DDP a block's gradient buckets are then all-reduced as soon as its backward
        ends, overlapping the backward of the blocks below it; a single compiled backward would release every
        bucket only at its very end. The blocks share one compiled graph, and state_dict keys do not change."""
        for block in self.blocks:
            block.compile()
        self.head = torch.compile(self.head)
