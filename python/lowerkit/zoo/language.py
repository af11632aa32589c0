"""Language models in plain PyTorch (no ``transformers``): BERT-, GPT-2- and LLaMA-style.

The shapes follow the originals (post-norm BERT with GELU; pre-norm GPT-2 with a causal mask;
LLaMA with RMSNorm, rotary embeddings, SwiGLU, grouped-query SDPA and a KV cache), at widths
small enough to check on two cores.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn


# -- BERT ----------------------------------------------------------------------------------
class BertLayer(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln1 = nn.LayerNorm(dim, eps=1e-12)
        self.ff = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))
        self.ln2 = nn.LayerNorm(dim, eps=1e-12)

    def forward(self, x, bias):
        b, t, d = x.shape
        q, k, v = self.qkv(x).view(b, t, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        scores = q @ k.transpose(-1, -2) / math.sqrt(d // self.heads) + bias
        a = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, d)
        x = self.ln1(x + self.proj(a))
        return self.ln2(x + self.ff(x))


class Bert(nn.Module):
    def __init__(self, vocab=1000, dim=128, depth=2, heads=2, max_len=128):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.typ = nn.Embedding(2, dim)
        self.ln = nn.LayerNorm(dim, eps=1e-12)
        self.layers = nn.ModuleList(BertLayer(dim, heads) for _ in range(depth))
        self.pool = nn.Linear(dim, dim)

    def forward(self, ids, mask):
        t = ids.shape[1]
        pos = torch.arange(t, device=ids.device)
        x = self.ln(self.tok(ids) + self.pos(pos)[None] + self.typ(torch.zeros_like(ids)))
        bias = (1.0 - mask[:, None, None, :].to(x.dtype)) * -1e4  # padding mask
        for layer in self.layers:
            x = layer(x, bias)
        return x, torch.tanh(self.pool(x[:, 0]))


def bert_tiny(batch: int = 1, seq: int = 32):
    """BERT-style encoder: 2 layers, width 128, padding mask, pooled output."""
    torch.manual_seed(0)
    ids = torch.randint(0, 1000, (batch, seq))
    mask = torch.ones(batch, seq, dtype=torch.int64)
    mask[:, seq - 4:] = 0
    return Bert().eval(), (ids, mask)


def bert_small(batch: int = 1, seq: int = 128):
    """BERT-style encoder: 4 layers, width 256 (≈ BERT-small), 128 tokens."""
    torch.manual_seed(0)
    ids = torch.randint(0, 8000, (batch, seq))
    return Bert(8000, 256, 4, 4, 512).eval(), (ids, torch.ones(batch, seq, dtype=torch.int64))


# -- GPT-2 ---------------------------------------------------------------------------------
class GPT2Block(nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.attn(self.ln1(x)).split(d, dim=2)
        q, k, v = (z.view(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        causal = torch.ones(t, t, dtype=torch.bool, device=x.device).tril()
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // self.heads))
        att = att.masked_fill(~causal, float("-inf")).softmax(-1)
        x = x + self.proj((att @ v).transpose(1, 2).reshape(b, t, d))
        return x + self.mlp(self.ln2(x))


class GPT2(nn.Module):
    def __init__(self, vocab=1000, dim=128, depth=2, heads=4, max_len=128):
        super().__init__()
        self.wte = nn.Embedding(vocab, dim)
        self.wpe = nn.Embedding(max_len, dim)
        self.blocks = nn.ModuleList(GPT2Block(dim, heads) for _ in range(depth))
        self.ln_f = nn.LayerNorm(dim)

    def forward(self, ids):
        x = self.wte(ids) + self.wpe(torch.arange(ids.shape[1], device=ids.device))
        for blk in self.blocks:
            x = blk(x)
        return self.ln_f(x) @ self.wte.weight.t()  # tied output embedding


def gpt2_tiny(batch: int = 1, seq: int = 32):
    """GPT-2-style decoder: 2 layers, width 128, causal mask, tied embeddings."""
    torch.manual_seed(0)
    return GPT2().eval(), (torch.randint(0, 1000, (batch, seq)),)


def gpt2_small(batch: int = 1, seq: int = 64):
    """GPT-2-style decoder: 6 layers, width 384, vocabulary 8000."""
    torch.manual_seed(0)
    return GPT2(8000, 384, 6, 6, 256).eval(), (torch.randint(0, 8000, (batch, seq)),)


# -- LLaMA ---------------------------------------------------------------------------------
class RMSNorm(nn.Module):
    def __init__(self, dim: int, eps: float = 1e-6):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(dim) + 0.1 * torch.randn(dim))

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


def rope_tables(head_dim: int, max_len: int, base: float = 10000.0):
    inv = 1.0 / base ** (torch.arange(0, head_dim, 2).float() / head_dim)
    angles = torch.outer(torch.arange(max_len).float(), inv)
    return torch.cat([angles, angles], -1).cos(), torch.cat([angles, angles], -1).sin()


def rotate(x, cos, sin):
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], -1)
    return x * cos + rotated * sin


class LlamaLayer(nn.Module):
    def __init__(self, dim: int, heads: int, kv_heads: int, hidden: int):
        super().__init__()
        self.heads, self.kv_heads, self.hd = heads, kv_heads, dim // heads
        self.q = nn.Linear(dim, dim, bias=False)
        self.kv = nn.Linear(dim, 2 * kv_heads * self.hd, bias=False)
        self.o = nn.Linear(dim, dim, bias=False)
        self.gate = nn.Linear(dim, hidden, bias=False)
        self.up = nn.Linear(dim, hidden, bias=False)
        self.down = nn.Linear(hidden, dim, bias=False)
        self.n1, self.n2 = RMSNorm(dim), RMSNorm(dim)

    def forward(self, x, cos, sin, k_cache, v_cache, start: int):
        b, t, d = x.shape
        h = self.n1(x)
        q = self.q(h).view(b, t, self.heads, self.hd).transpose(1, 2)
        k, v = self.kv(h).view(b, t, 2, self.kv_heads, self.hd).permute(2, 0, 3, 1, 4)
        q, k = rotate(q, cos, sin), rotate(k, cos, sin)
        # the cache holds the past; the new keys and values are appended to it
        k = torch.cat([k_cache, k], dim=2)
        v = torch.cat([v_cache, v], dim=2)
        rep = self.heads // self.kv_heads
        kk, vv = k.repeat_interleave(rep, 1), v.repeat_interleave(rep, 1)
        a = F.scaled_dot_product_attention(q, kk, vv, is_causal=start == 0 and t > 1)
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        h = self.n2(x)
        return x + self.down(F.silu(self.gate(h)) * self.up(h)), k, v


class Llama(nn.Module):
    """Decoder-only LLaMA: takes token ids and the KV cache, returns logits and the new cache."""

    def __init__(self, vocab=1000, dim=128, depth=2, heads=4, kv_heads=2, hidden=344, max_len=256):
        super().__init__()
        self.embed = nn.Embedding(vocab, dim)
        self.layers = nn.ModuleList(LlamaLayer(dim, heads, kv_heads, hidden) for _ in range(depth))
        self.norm = RMSNorm(dim)
        self.lm_head = nn.Linear(dim, vocab, bias=False)
        cos, sin = rope_tables(dim // heads, max_len)
        self.register_buffer("cos", cos, persistent=False)
        self.register_buffer("sin", sin, persistent=False)

    def empty_cache(self, batch: int):
        l0 = self.layers[0]
        shape = (batch, l0.kv_heads, 0, l0.hd)
        return [(torch.zeros(shape), torch.zeros(shape)) for _ in self.layers]

    def forward(self, ids, cache):
        start = cache[0][0].shape[2]
        t = ids.shape[1]
        cos, sin = self.cos[start:start + t], self.sin[start:start + t]
        x = self.embed(ids)
        new_cache = []
        for layer, (kc, vc) in zip(self.layers, cache):
            x, k, v = layer(x, cos, sin, kc, vc, start)
            new_cache.append((k, v))
        return self.lm_head(self.norm(x)), new_cache


def llama_tiny_prefill(batch: int = 1, seq: int = 32):
    """LLaMA-style prefill: RMSNorm, RoPE, GQA with causal SDPA, SwiGLU; returns the KV cache."""
    torch.manual_seed(0)
    model = Llama().eval()
    return model, (torch.randint(0, 1000, (batch, seq)), model.empty_cache(batch))


def llama_tiny_decode(batch: int = 1, past: int = 31):
    """LLaMA-style decode step: one new token against a KV cache of ``past`` positions."""
    torch.manual_seed(0)
    model = Llama().eval()
    with torch.no_grad():
        _, cache = model(torch.randint(0, 1000, (batch, past)), model.empty_cache(batch))
    return model, (torch.randint(0, 1000, (batch, 1)), cache)


def llama_small_decode(batch: int = 1, past: int = 127):
    """LLaMA-style decode step at width 512, 8 layers (≈ 30M parameters)."""
    torch.manual_seed(0)
    model = Llama(8000, 512, 8, 8, 4, 1376, 512).eval()
    with torch.no_grad():
        _, cache = model(torch.randint(0, 8000, (batch, past)), model.empty_cache(batch))
    return model, (torch.randint(0, 8000, (batch, 1)), cache)
