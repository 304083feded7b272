"""Skinny GEMMs (issue 15): C = A (M x K) @ B (K x N) in fp16/bf16 with a small M, where a tile
grid leaves most SMs idle and the time is bounded by reading B once from HBM.

* the ceiling: :func:`bytes_moved`, :func:`memory_bound_ms`, with the HBM bandwidth measured on
  day 1 (:func:`recorded_hbm_gbps`), and :func:`ceiling`: the larger of that and flops / peak;
* the SMs a tile grid fills: :func:`tiles`, :func:`waves`, :func:`sm_fill`;
* stream-K as CUTLASS schedules it: :func:`cutlass_streamk_tiles` (its data-parallel + stream-K split);
* split-K: :func:`split_k` (the split count, rule below), :func:`k_ranges`, the float64
  reference :func:`split_k_ref`, the same sum through the TMA reduce-add model
  (:func:`split_k_model`), and the fp32 error bound it must meet (:func:`splitk_tolerance`).

Everything here runs on a CPU. The GPU kernels checked against it are in :mod:`.skinny_triton`, measured
by :mod:`.skinny_measure` (notebook ``day05_tma/06``).
"""
from __future__ import annotations

import math

import numpy as np

from ..core import results
from ..core.args import positive
from ..tma.splitk_model import reduce_partials

HBM_STEM, HBM_ROW = "01_hierarchy_bandwidth", "torch copy (memcpy)"
U32 = 2.0 ** -24                                      # fp32 unit roundoff
OUT_U = {"float32": 0.0, "float16": 2.0 ** -11, "bfloat16": 2.0 ** -8}


def _pos(**kw) -> None:
    """Sizes and counts: positive ints (:func:`utils.core.args.positive`: the wrong kind is a
    TypeError, zero or below a ValueError)."""
    for name, v in kw.items():
        positive(name, v)


def bytes_moved(M, N, K, itemsize, c_itemsize=None) -> int:
    """The least traffic of C = A @ B: A and B read once, C written once (``c_itemsize`` bytes
    per element, default ``itemsize``). Split-K adds :func:`splitk_extra_bytes` on top."""
    _pos(M=M, N=N, K=K, itemsize=itemsize, c_itemsize=c_itemsize or itemsize)
    return (M * K + K * N) * itemsize + M * N * (c_itemsize or itemsize)


def splitk_extra_bytes(M, N, splits, acc_itemsize=4) -> int:
    """Bytes the reduce-adds of split-K send: every split adds an M x N partial of
    ``acc_itemsize``-byte elements into C (a read-modify-write done in L2, not in the SM)."""
    _pos(M=M, N=N, splits=splits, acc_itemsize=acc_itemsize)
    return splits * M * N * acc_itemsize


def memory_bound_ms(M, N, K, itemsize, gbps) -> float:
    """The memory-bound ceiling in ms: :func:`bytes_moved` at ``gbps`` GB/s (10^9 B/s)."""
    if isinstance(gbps, bool) or not isinstance(gbps, (int, float, np.number)) or not gbps > 0:
        raise ValueError(f"gbps must be a positive number (GB/s), got {gbps!r}")
    return bytes_moved(M, N, K, itemsize) / (gbps * 1e9) * 1e3


def ceiling(M, N, K, itemsize, gbps, peak_tflops=None) -> tuple:
    """``(ms, bound)``: the roofline ceiling of C = A @ B, the larger of the memory time
    (:func:`memory_bound_ms` at ``gbps``) and the compute time 2·M·N·K / ``peak_tflops``, and which
    one it is, ``"memory"`` or ``"compute"``. ``peak_tflops`` None (no datasheet peak for this GPU):
    the memory time alone, bound ``"memory"``."""
    mem = memory_bound_ms(M, N, K, itemsize, gbps)
    if peak_tflops is None:
        return mem, "memory"
    if isinstance(peak_tflops, bool) or not isinstance(peak_tflops, (int, float, np.number)) or not peak_tflops > 0:
        raise ValueError(f"peak_tflops must be a positive number (TFLOP/s) or None, got {peak_tflops!r}")
    comp = 2 * M * N * K / (peak_tflops * 1e12) * 1e3
    return (comp, "compute") if comp > mem else (mem, "memory")


def recorded_hbm_gbps(device=None) -> float:
    """The HBM bandwidth day 1 measured: the ``"torch copy (memcpy)"`` row of
    ``results/<device>/01_hierarchy_bandwidth.json`` (GB/s counting bytes read AND written, the
    way :func:`bytes_moved` counts them). ``device``: a name or slug part, e.g. "h100"; default
    ``$COURSE_RESULTS_DEVICE``, else the most recent recording."""
    try:
        doc = results.load(HBM_STEM, device)
    except (FileNotFoundError, LookupError) as e:
        raise type(e)(f"no recorded HBM bandwidth{f' for {device!r}' if device else ''}: it comes from "
                      f"day01_memory_basics/{HBM_STEM}.ipynb run on a GPU with COURSE_RECORD=1 ({e})") from None
    try:
        return float(results.pick(doc["rows"], HBM_ROW)["value"])
    except KeyError as e:
        raise KeyError(f"{doc['path']} has no {HBM_ROW!r} row: re-record day 1's notebook ({e})") from None


def tiles(M, N, BM, BN) -> int:
    """Output tiles of a BM x BN grid over C (edge tiles count whole)."""
    _pos(M=M, N=N, BM=BM, BN=BN)
    return math.ceil(M / BM) * math.ceil(N / BN)


def waves(M, N, BM, BN, sms) -> int:
    """Waves of a grid of one CTA per tile on ``sms`` SMs: ceil(tiles / sms)."""
    _pos(sms=sms)
    return math.ceil(tiles(M, N, BM, BN) / sms)


def sm_fill(units, sms) -> float:
    """The busy fraction of the SMs over the waves ``units`` work units need: units / (waves x sms)."""
    _pos(units=units, sms=sms)
    return units / (math.ceil(units / sms) * sms)


def split_k(M, N, K, BM, BN, BK, sms, min_k_tiles=4) -> int:
    """The split-K count: s = max(1, min(sms // tiles, k_tiles // min_k_tiles)).

    The rule: the LARGEST s that keeps tiles x s work units in ONE wave, capped so that every
    split keeps at least ``min_k_tiles`` K tiles (k_tiles = ceil(K / BK)); 1 when the tiles
    alone fill the SMs. Why one wave: a time step is one K tile per SM, so the kernel takes
    waves x ceil(k_tiles / s) steps. The tempting "smallest s with tiles x s >= sms" starts a
    second, partial wave: at 128 x 8192 x 8192 with 128 x 128 tiles (64 tiles, 128 K tiles of
    64, 132 SMs) it picks s = 3, 192 units = 2 waves x 43 steps = 86 steps; s = 2 takes 1 x 64.
    Why the cap: a split shorter than the pipeline (a few stages of K tiles) never fills it, and
    each split adds an M x N partial of reduce-add traffic. s need not divide k_tiles:
    :func:`k_ranges` balances the splits to within one K tile. (A model, to be measured on a GPU;
    stream-K goes further and uses the SMs this rule leaves idle.)
    """
    _pos(K=K, BK=BK, sms=sms, min_k_tiles=min_k_tiles)
    t, k_tiles = tiles(M, N, BM, BN), math.ceil(K / BK)
    return max(1, min(sms // t, k_tiles // min_k_tiles))


def cutlass_streamk_tiles(tiles_, sms, k_tiles, min_iters=8) -> int:
    """How many of ``tiles_`` output tiles CUTLASS's Hopper stream-K scheduler gives to stream-K when
    left to its heuristic (``get_num_sk_tiles`` in ``cutlass/gemm/kernel/tile_scheduler_params.h``,
    1 x 1 clusters); the others run data-parallel, one CTA per tile, each stored once. None
    (all data-parallel) when the tiles fill whole waves, when a tile has ``min_iters`` (8) K tiles or
    fewer, or when the last wave is at least half full. Otherwise the last two waves' tiles (all of
    them if there are at most two) are shared out by stream-K: the data-parallel + stream-K hybrid of
    the Stream-K paper (Osama et al., PPoPP 2023)."""
    _pos(tiles=tiles_, sms=sms, k_tiles=k_tiles, min_iters=min_iters)
    full, total = tiles_ // sms, math.ceil(tiles_ / sms)
    if full == total or k_tiles <= min_iters or 2 * (tiles_ - full * sms) >= sms:
        return 0
    return tiles_ - (full - 1 if full > 1 else 0) * sms


def k_ranges(K, splits, BK=1) -> list:
    """``[(k0, k1), ...]``: the K range of each split, whole K tiles of BK, balanced (the splits
    differ by at most one K tile), the last one ending at K."""
    _pos(K=K, splits=splits, BK=BK)
    k_tiles = math.ceil(K / BK)
    if splits > k_tiles:
        raise ValueError(f"{splits} splits of {k_tiles} K tiles would leave a split without work")
    edges = [min(K, (s * k_tiles // splits) * BK) for s in range(splits + 1)]
    return list(zip(edges[:-1], edges[1:]))


def _ab(a, b):
    a, b = np.asarray(a), np.asarray(b)
    if a.ndim != 2 or b.ndim != 2 or a.shape[1] != b.shape[0]:
        raise ValueError(f"expected A (M, K) and B (K, N), got {a.shape} and {b.shape}")
    return a, b


def split_k_ref(a, b, splits, BK=1) -> np.ndarray:
    """C = A @ B in float64, summed as split-K does: one partial product per K range of
    :func:`k_ranges`, then their sum (what the reduce-add stores compute)."""
    a, b = _ab(a, b)
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return sum(a64[:, k0:k1] @ b64[k0:k1] for k0, k1 in k_ranges(a.shape[1], splits, BK))


def split_k_model(a, b, splits, BM, BN, BK=1, order=None):
    """Split-K as the GPU will do it: fp32 partials (fp32 accumulation), added into a zeroed
    fp32 C by TMA reduce-add boxes of BM x BN (:func:`utils.tma.splitk_model.reduce_partials`),
    the splits arriving in ``order``. Returns ``(C float32, ReduceTraffic)``."""
    a, b = _ab(a, b)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    parts = [a32[:, k0:k1] @ b32[k0:k1] for k0, k1 in k_ranges(a.shape[1], splits, BK)]
    return reduce_partials(np.zeros((a.shape[0], b.shape[1]), np.float32), parts, (BM, BN), order)


def splitk_bound(n, splits, mag, abs_ref, out_dtype="float32", reduce_dtype="float32"):
    """The bound of :func:`splitk_tolerance` from its parts, for NumPy or torch arrays:
    ``(n + splits) x 2^-24 x mag + u_out x abs_ref``, where ``n`` is the longest split's K length,
    ``mag`` = |A| @ |B| and ``abs_ref`` = |A @ B|. When the partials are reduce-added in
    ``reduce_dtype`` fp16/bf16 rather than fp32, each of the ``splits`` adds rounds the running
    sum (at most ``mag``) once more: ``+ splits x u_reduce x mag``."""
    for name, dt in (("out_dtype", out_dtype), ("reduce_dtype", reduce_dtype)):
        if dt not in OUT_U:
            raise ValueError(f"{name} must be one of {tuple(OUT_U)}, got {dt!r}")
    _pos(n=n, splits=splits)
    return (n + splits) * U32 * mag + OUT_U[out_dtype] * abs_ref + splits * OUT_U[reduce_dtype] * mag


def splitk_tolerance(a, b, splits, BK=1, out_dtype="float32") -> np.ndarray:
    """The per-element error bound of split-K C against :func:`split_k_ref`, for fp32
    accumulation in ANY order: (n + s) x 2^-24 x (|A| @ |B|), plus the output rounding
    (2^-11 fp16, 2^-8 bf16) x |C| when C is stored in ``out_dtype``.

    Why: fp16 x fp16 (and bf16 x bf16) products are exact in fp32 (11 + 11 significand bits
    fit in 24). Summing n terms in fp32, in any order or tree, errs by at most about
    (n - 1) x u x sum |terms| (u = 2^-24; Higham, Accuracy and Stability of Numerical
    Algorithms, ch. 4); a split sums at most n = its K length, the reduce-adds then add s
    partials in an undefined order (s - 1 more roundings). The +2 also covers fp32 inputs,
    whose products round once. Reduce-adding into an fp16 C instead would round at 2^-11 on
    each of the s adds: that is why split-K accumulates its partials in fp32.
    """
    a, b = _ab(a, b)
    if out_dtype not in OUT_U:
        raise ValueError(f"out_dtype must be one of {tuple(OUT_U)}, got {out_dtype!r}")
    n = max(k1 - k0 for k0, k1 in k_ranges(a.shape[1], splits, BK))
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    return splitk_bound(n, splits, mag, np.abs(split_k_ref(a, b, splits, BK)), out_dtype)
