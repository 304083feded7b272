"""Attention forward (issue 16, the FlashAttention-3-style notebook): float64 references, the
online-softmax recurrence written out in plain NumPy, and the counts of the data-movement view.

Shapes follow ``torch.nn.functional.scaled_dot_product_attention``: ``q``, ``k``, ``v`` are
``(B, H, S, D)`` (batch, heads, sequence, head dim) and ``O = softmax(Q K^T / sqrt(D)) V``; with
``causal=True`` query ``i`` sees keys ``j <= i`` only. Nothing here imports Triton or needs a GPU.
"""
from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from ..core.args import choice, positive


_pos_int = positive          # sizes and counts: utils.core.args.positive (wrong kind: TypeError)


def _qkv(q, k, v) -> tuple:
    """q, k, v as float64 NumPy arrays of one shape (B, H, S, D), from torch tensors or arrays."""
    out = []
    for name, x in (("q", q), ("k", k), ("v", v)):
        if hasattr(x, "detach"):
            x = x.detach().cpu().double().numpy()
        x = np.asarray(x, dtype=np.float64)
        if x.ndim != 4 or 0 in x.shape:
            raise ValueError(f"{name} must be a non-empty (B, H, S, D) array, got shape {x.shape}")
        out.append(x)
    if not out[0].shape == out[1].shape == out[2].shape:
        raise ValueError(f"q, k, v must have one shape (B, H, S, D), got {out[0].shape}, "
                         f"{out[1].shape}, {out[2].shape}")
    return tuple(out)


def attention_ref(q, k, v, causal: bool = False) -> np.ndarray:
    """``softmax(Q K^T / sqrt(D)) V`` in float64, the whole score matrix at once (the reference)."""
    q, k, v = _qkv(q, k, v)
    S, D = q.shape[-2:]
    s = q @ k.swapaxes(-1, -2) / math.sqrt(D)                  # (B, H, S, S) scores
    if causal:
        s = np.where(np.tril(np.ones((S, S), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))               # shift by the row max: no overflow
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def online_softmax_step(m_old, l_old, s) -> tuple:
    """One block of the online softmax: ``(m_new, alpha, l_new)``.

    ``m_old``/``l_old`` (shape ``(..., R)``) are each row's running max and running sum of
    ``exp(score - m_old)`` over the blocks seen so far; ``s`` (``(..., R, N)``) is this block's
    scores. The new max can only grow, so everything summed so far was shifted by a max that was
    too small: multiply the old sum (and the old output accumulator) by
    ``alpha = exp(m_old - m_new) <= 1``, then add this block's ``exp(s - m_new)``.
    On the first block ``m_old = -inf``, so ``alpha = 0``: nothing to rescale.
    """
    m_new = np.maximum(m_old, s.max(axis=-1))
    alpha = np.exp(m_old - m_new)
    l_new = alpha * l_old + np.exp(s - m_new[..., None]).sum(axis=-1)
    return m_new, alpha, l_new


def online_softmax_ref(q, k, v, block_n: int = 64, causal: bool = False) -> np.ndarray:
    """The same result as :func:`attention_ref`, computed K/V block by K/V block the way
    FlashAttention does: never more than ``block_n`` scores per row exist at once.

    Every query row keeps a running max ``m``, a running sum ``l`` and an unnormalized output
    ``acc``; each block rescales them (:func:`online_softmax_step`) and adds its own part; one
    division by ``l`` at the end. (All query rows at once here; a kernel does one Q tile.)
    """
    q, k, v = _qkv(q, k, v)
    block_n = _pos_int("block_n", block_n)
    B, H, S, D = q.shape
    m = np.full((B, H, S), -np.inf)          # running max per query row
    l = np.zeros((B, H, S))                  # running sum of exp(score - m)
    acc = np.zeros((B, H, S, D))             # running sum of exp(score - m) * v
    rows = np.arange(S)[:, None]
    for start in range(0, S, block_n):       # the last block may be partial
        cols = np.arange(start, min(start + block_n, S))
        s = q @ k[..., cols, :].swapaxes(-1, -2) / math.sqrt(D)
        if causal:                           # block 0 holds key 0, so every row's m is finite
            s = np.where(cols[None, :] <= rows, s, -np.inf)
        m_new, alpha, l = online_softmax_step(m, l, s)
        acc = alpha[..., None] * acc + np.exp(s - m_new[..., None]) @ v[..., cols, :]
        m = m_new
    return acc / l[..., None]


def flops(B: int, H: int, S: int, D: int, causal: bool = False) -> int:
    """FLOPs of a forward pass, counted the standard way: ``4·B·H·S²·D`` (two GEMMs, ``Q K^T``
    and ``P V``, of ``2·S²·D`` each per head), halved for causal (as FlashAttention's benchmarks
    count it; the masked work actually done is a little more than half)."""
    B, H, S, D = (_pos_int(n, x) for n, x in zip("BHSD", (B, H, S, D)))
    total = 4 * B * H * S * S * D
    return total // 2 if causal else total


def kv_stage_bytes(block_n: int, D: int, itemsize: int) -> int:
    """Bytes one pipeline stage receives: a K tile and a V tile of ``block_n x D`` elements
    each, the ``expect_tx`` count of the stage's mbarrier."""
    block_n, D = _pos_int("block_n", block_n), _pos_int("D", D)
    itemsize = choice("itemsize", itemsize, (1, 2, 4), " (bytes: fp8, fp16/bf16, fp32)")
    return 2 * block_n * D * itemsize


class CausalTiles(NamedTuple):
    """K/V tiles of one causal query tile: ``visit`` tiles 0..visit-1 are loaded (the rest are
    skipped: every score in them is masked); ``masked`` lists the ones that need the mask."""
    visit: int
    masked: tuple


def causal_tiles(m_block: int, block_m: int, block_n: int, seq_len: int | None = None) -> CausalTiles:
    """The tile-skip bound of causal attention for query tile ``m_block``.

    Its last row is ``(m_block+1)*block_m - 1``, so it needs keys up to that index: tiles
    ``0 .. ceil((m_block+1)*block_m / block_n) - 1`` (fewer if ``seq_len`` ends first). A tile
    needs the mask when its last key lies after the tile's first row ``m_block*block_m``; the
    ones before that see only past keys. A tile that runs past ``seq_len`` (bounds mask) is
    always among the masked ones.
    """
    if isinstance(m_block, bool) or not isinstance(m_block, (int, np.integer)) or m_block < 0:
        raise ValueError(f"m_block must be a non-negative int, got {m_block!r}")
    block_m, block_n = _pos_int("block_m", block_m), _pos_int("block_n", block_n)
    visit = -(-(m_block + 1) * block_m // block_n)
    if seq_len is not None:
        seq_len = _pos_int("seq_len", seq_len)
        if m_block * block_m >= seq_len:
            raise ValueError(f"query tile {m_block} starts at row {m_block * block_m}, past "
                             f"seq_len {seq_len}")
        visit = min(visit, -(-seq_len // block_n))
    first_masked = (m_block * block_m + 1) // block_n    # tiles 0..first_masked-1 end <= row m*block_m
    return CausalTiles(visit, tuple(range(first_masked, visit)))


def kv_bytes_per_output_tile(S: int, D: int, block_n: int, itemsize: int, causal: bool = False,
                             m_block: int = 0, block_m: int = 128) -> int:
    """Bytes of K and V that output tile ``m_block`` (``block_m`` query rows) loads: one
    :func:`kv_stage_bytes` per visited K/V tile, counted whole as TMA moves them (a tile that
    runs past ``S`` is zero-filled and its full box still counts). Non-causal: every tile."""
    S = _pos_int("S", S)
    if not causal:
        block_m = _pos_int("block_m", block_m)
        if isinstance(m_block, bool) or not isinstance(m_block, (int, np.integer)) or \
                not 0 <= m_block * block_m < S:
            raise ValueError(f"m_block must be a query tile of S={S} (0..{-(-S // block_m) - 1}), "
                             f"got {m_block!r}")
        tiles = -(-S // _pos_int("block_n", block_n))
    else:
        tiles = causal_tiles(m_block, block_m, block_n, S).visit
    return tiles * kv_stage_bytes(block_n, D, itemsize)


EPS = {"float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}     # unit roundoff of the 16-bit formats


def output_bound(dtype: str, v_max: float, ref):
    """Elementwise error bound of a fused attention output against a float32 reference.

    Two roundings dominate: P is rounded to fp16/bf16 before ``P V`` (each probability off by at
    most a relative ``u``, so the output row, a weighted mean of V rows, moves by at most
    ``u * max|V|``), and the output itself is rounded (``u * |O|``). fp32 accumulation and the
    hardware ``ex2`` (relative error ~2^-22) are far below. Twice the sum, for headroom:
    ``2 u (max|V| + |ref|)``, with ``u`` = 2^-11 (fp16) or 2^-8 (bf16).
    """
    if dtype not in EPS:
        raise ValueError(f"dtype must be one of {sorted(EPS)}, got {dtype!r}")
    if not v_max >= 0:
        raise ValueError(f"v_max must be a non-negative number, got {v_max!r}")
    return 2 * EPS[dtype] * (v_max + abs(ref))
