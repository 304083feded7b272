"""A plain Triton forward attention kernel (FlashAttention-2 style), the "plain Triton attention"
contender of issue 16's benchmark.

One program per (query tile, batch x head): the Q tile stays in registers, K/V tiles are loaded
with ``tl.load`` (no TMA, no warp specialization) and folded in with the online softmax of
:func:`utils.day05.attention.online_softmax_step`, accumulating in fp32. Causal: the K/V tiles
past the query tile's diagonal are skipped (:func:`utils.day05.attention.causal_tiles`) and only
the diagonal ones are masked.

Status: verified against :func:`utils.day05.attention.attention_ref` under the Triton interpreter
(CPU, fp32, small sizes) and compiled ahead of time for sm_90a; not yet run or timed on a GPU,
so the GPU block sizes below are a starting point, not a tuned configuration.

Importing this module decides the tier first (``utils.core.tier.current()``), so that
``TRITON_INTERPRET`` is set before Triton loads.
"""
from __future__ import annotations

from ..core.tier import current
from ..triton_lang.compat import require_triton

current()         # a no-op after utils.setup(); otherwise it decides the tier before Triton loads
require_triton()  # imports Triton and snapshots triton.language before any interpreted launch,
#                   so that compile_hopper can undo what the interpreter leaks (compat.repair_language)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

GPU_BLOCKS = dict(block_m=128, block_n=64, num_warps=8, num_stages=3)   # untuned starting point
CPU_BLOCKS = dict(block_m=32, block_n=16, num_warps=4, num_stages=1)    # partial tiles at S=100, 72


@triton.jit
def _attn_tiles(acc, l_i, m_i, q, k_ptr, v_ptr, offs_m, offs_d, S, lo, hi, qk_scale,
                D: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL_MASK: tl.constexpr):
    """Fold K/V tiles ``lo .. hi`` (keys, a multiple of BLOCK_N apart) into (acc, l_i, m_i)."""
    for start_n in range(lo, hi, BLOCK_N):
        offs_n = start_n + tl.arange(0, BLOCK_N)
        in_seq = offs_n < S
        kt = tl.load(k_ptr + offs_n[None, :] * D + offs_d[:, None], mask=in_seq[None, :], other=0.0)
        qk = tl.dot(q, kt) * qk_scale                       # (BLOCK_M, BLOCK_N), log2 units
        keep = in_seq[None, :]                              # keys past S (padding) score -inf
        if CAUSAL_MASK:
            keep = keep & (offs_n[None, :] <= offs_m[:, None])
        qk = tl.where(keep, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))              # online softmax: new running max,
        alpha = tl.exp2(m_i - m_new)                        # rescale of the old acc and sum,
        p = tl.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)                    # new running sum
        v = tl.load(v_ptr + offs_n[:, None] * D + offs_d[None, :], mask=in_seq[:, None], other=0.0)
        acc = acc * alpha[:, None] + tl.dot(p.to(v.dtype), v)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(q_ptr, k_ptr, v_ptr, o_ptr, S, sm_scale, D: tl.constexpr,
                         BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, CAUSAL: tl.constexpr):
    """``O = softmax(Q K^T * sm_scale) V`` for contiguous (B, H, S, D) tensors; grid
    ``(cdiv(S, BLOCK_M), B * H)``. D must be a power of 2 (``tl.arange``)."""
    m_block, bh = tl.program_id(0), tl.program_id(1)
    base = bh.to(tl.int64) * S * D                          # this (batch, head)'s slice
    offs_m = m_block * BLOCK_M + tl.arange(0, BLOCK_M)
    offs_d = tl.arange(0, D)
    q = tl.load(q_ptr + base + offs_m[:, None] * D + offs_d[None, :], mask=offs_m[:, None] < S,
                other=0.0)                                  # the resident Q tile
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
    acc = tl.zeros([BLOCK_M, D], dtype=tl.float32)
    qk_scale = sm_scale * 1.4426950408889634                # exp(x) = exp2(x * log2(e)): exp2 is
    # the hardware instruction, so scores are kept in log2 units (scale times log2(e))
    if CAUSAL:
        # tiles before `lo` end at or before this tile's first row: no mask; tiles lo..hi hold
        # the diagonal (and the padding past S); tiles past hi are skipped
        lo = (m_block * BLOCK_M + 1) // BLOCK_N * BLOCK_N
        hi = tl.minimum((m_block + 1) * BLOCK_M, S)
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, offs_d,
                                    S, 0, lo, qk_scale, D, BLOCK_N, False)
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, offs_d,
                                    S, lo, hi, qk_scale, D, BLOCK_N, True)
    else:
        acc, l_i, m_i = _attn_tiles(acc, l_i, m_i, q, k_ptr + base, v_ptr + base, offs_m, offs_d,
                                    S, 0, S, qk_scale, D, BLOCK_N, False)
    out = acc / l_i[:, None]                                # one division, at the end
    tl.store(o_ptr + base + offs_m[:, None] * D + offs_d[None, :], out.to(o_ptr.dtype.element_ty),
             mask=offs_m[:, None] < S)


def attention(q, k, v, causal: bool = False, *, out=None, block_m: int | None = None,
              block_n: int | None = None, num_warps: int | None = None,
              num_stages: int | None = None):
    """Run :func:`attention_fwd_kernel` on torch tensors q, k, v of one shape (B, H, S, D) and
    dtype (fp16/bf16 on a GPU, where fp32 inputs would run tl.dot in TF32; fp32 under the
    interpreter, where tl.dot is an fp32 NumPy matmul). Writes into ``out`` when
    given (e.g. pre-filled with NaN), returns it. Block sizes default by tier."""
    import torch
    if not all(torch.is_tensor(x) for x in (q, k, v)):
        raise TypeError("q, k, v must be torch tensors")
    if q.ndim != 4 or not q.shape == k.shape == v.shape or not q.dtype == k.dtype == v.dtype:
        raise ValueError(f"q, k, v must share one (B, H, S, D) shape and dtype, got "
                         f"{[(tuple(x.shape), str(x.dtype)) for x in (q, k, v)]}")
    if q.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        raise ValueError(f"dtype must be float16, bfloat16 or float32, got {q.dtype}")
    B, H, S, D = q.shape
    if D < 16 or D & (D - 1):
        raise ValueError(f"head dim D must be a power of 2 and at least 16 (tl.arange, tl.dot), got {D}")
    cfg = dict(GPU_BLOCKS if q.is_cuda else CPU_BLOCKS)
    for key, val in dict(block_m=block_m, block_n=block_n, num_warps=num_warps,
                         num_stages=num_stages).items():
        cfg[key] = cfg[key] if val is None else val
    for key in ("block_m", "block_n"):
        if cfg[key] < 16 or cfg[key] & (cfg[key] - 1):
            raise ValueError(f"{key} must be a power of 2 and at least 16, got {cfg[key]}")
    q, k, v = q.contiguous(), k.contiguous(), v.contiguous()
    if out is None:
        out = torch.empty_like(q)
    elif out.shape != q.shape or out.dtype != q.dtype or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {tuple(q.shape)} {q.dtype} tensor")
    grid = (triton.cdiv(S, cfg["block_m"]), B * H)
    attention_fwd_kernel[grid](q, k, v, out, S, D ** -0.5, D=D, BLOCK_M=cfg["block_m"],
                               BLOCK_N=cfg["block_n"], CAUSAL=bool(causal),
                               num_warps=cfg["num_warps"], num_stages=cfg["num_stages"])
    return out


def compile_hopper(D: int = 128, causal: bool = False, dtype: str = "fp16", **blocks):
    """:func:`attention_fwd_kernel` compiled ahead of time for sm_90a (any machine, no GPU): a
    ``CompiledKernel`` whose ``.asm["ptx"]`` holds the code to read (on Triton 3.9: ``wgmma``
    for both GEMMs, ``cp.async`` for the K/V loads, no TMA). ``blocks`` overrides GPU_BLOCKS."""
    from ..triton_lang.compile import triton_compile
    if dtype not in ("fp16", "bf16"):
        raise ValueError(f"dtype must be 'fp16' or 'bf16', got {dtype!r}")
    cfg = {**GPU_BLOCKS, **blocks}
    ptrs = ("q_ptr", "k_ptr", "v_ptr", "o_ptr")
    sig = {**{p: f"*{dtype}" for p in ptrs}, "S": "i32", "sm_scale": "fp32", "D": "constexpr",
           "BLOCK_M": "constexpr", "BLOCK_N": "constexpr", "CAUSAL": "constexpr"}
    consts = dict(D=D, BLOCK_M=cfg["block_m"], BLOCK_N=cfg["block_n"], CAUSAL=bool(causal))
    return triton_compile(attention_fwd_kernel, sig, consts, num_warps=cfg["num_warps"],
                          num_stages=cfg["num_stages"], aligned=ptrs)
