"""What notebook ``day05_tma/06`` measures on a Hopper GPU, as result rows (``utils.core.results``).

* :func:`measure_skinny`: the skinny-GEMM contenders of :func:`skinny_contenders` against cuBLAS at
  every shape of :data:`SKINNY_SHAPES`, fp16 and bf16, each output checked element by element
  against a float64 reference with the bound of :func:`utils.day05.skinny.splitk_bound`; the
  ceiling of each row (:func:`roofline`: memory- or compute-bound);
* :func:`measure_gap`: cuBLAS and the narrow tiles at :data:`GAP_SHAPES`, timed once after a
  written L2 flush and once after a read one (what part of the time above the ceiling is the
  flush's dirty lines written back inside the timed call?);
* :func:`measure_grouped`: the grouped (MoE) GEMM, its tiles row by row and in bands of 8 rows
  (one change), against a loop of cuBLAS calls (plain, and captured in a CUDA graph),
  ``torch._grouped_mm`` where torch has it, on :data:`MIXES`; :func:`measure_grouped_dram`: the
  bytes each tile order reads from DRAM (Nsight Compute);
* :func:`measure_descriptor_modes` and :func:`measure_race`: the raw CUDA kernels of
  ``utils/tma/update_kernels.cu`` (where a descriptor comes from, what a missing fence does).
"""
from __future__ import annotations

import math
import re
import statistics

import numpy as np

from ..core import bench
from ..core.bench import as_graph  # noqa: F401  (notebook 06 names sm.as_graph)
from . import skinny

CUBLAS = "cuBLAS (torch.matmul)"
SKINNY_SHAPES = [(16, 8192, 8192), (32, 8192, 8192), (64, 8192, 8192), (128, 8192, 8192), (256, 8192, 8192),
                 (128, 4096, 4096), (128, 16384, 16384)]
LADDER_SHAPE = (128, 8192, 8192)
QUICK_SHAPES = [LADDER_SHAPE]   # a live run by default (results.full_run false); the sweep is the recording's
# The contenders, each differing from the one it is compared with in ONE thing (see STEP_CHANGES)
WIDE = "wide tiles, no split"
SPLIT32 = "wide tiles, split-K, fp32 reduce-add + cast"
SPLIT16 = "wide tiles, split-K, reduce-add in C's dtype"
NARROW = "narrow tiles, no split"
STREAMK = "narrow tiles, stream-K, reduce-add in C's dtype"
STEPS = (WIDE, SPLIT32, SPLIT16, NARROW, STREAMK)
STEP_CHANGES = {SPLIT32: (WIDE, "split K so that tiles x splits fill the SMs (fp32 partials, zeroed fp32 C, a cast)"),
                SPLIT16: (SPLIT32, "reduce-add straight into the fp16/bf16 C: no fp32 C, no cast pass"),
                NARROW: (WIDE, "halve the tile's N so that the tiles alone fill the SMs; at M = 256, where the wide "
                                "tiles already fill them, the tile becomes 256 x 64 (as many tiles, in one row): two changes there"),
                STREAMK: (NARROW, "one program per SM, each an equal share of all K-iterations (reduce-add into a zeroed C)")}


def tile_m(M, most: int = 256) -> int:
    """BM: M rounded up to a power of two, between 16 (``tl.dot``'s least) and ``most``. Up to
    M = 256 one row of tiles covers all of M, so each CTA reads its slice of B once. Capping at 128
    instead split M = 256 into two rows of tiles: 0.88x cuBLAS at best on an H100 (06's recording
    of 2026-11-27), against 0.95-0.96x with 256-row narrow tiles (recorded 2026-11-28)."""
    return min(most, max(16, 1 << (M - 1).bit_length()))


def small_smem(tier=None) -> bool:
    """True on a GPU with TMA but 99 KB of shared memory per block (compute capability 12.x), where
    Triton 3.9's TMA pipelines need fewer stages than on Hopper: for sm_120a the narrow tiles take
    120-136 KiB with 6 stages, 72-88 KiB with 4; the grouped 128 x 256 tiles 160 KiB, 128 x 128 96 KiB."""
    from ..core.tier import current
    tier = tier or current()
    return tier.has("tma") and not tier.has("big_smem")


def tile_configs(M, N, K, sms, tier=None) -> dict:
    """``{contender: config}`` for a shape: "wide" tiles are BM x 128, "narrow" tiles halve N to
    BM x 64; the split count is :func:`utils.day05.skinny.split_k`'s rule for the wide tiles.
    Wide tiles are at most 128 rows tall: at 256 x 128, the fp32 split's C tile (128 KiB) and 4
    stages need 320 KiB of shared memory under Triton 3.6. Narrow tiles are up to 256 rows tall
    (:func:`tile_m`), with 5 stages at 256 (6 would need 240 KiB), else 6. With 99 KB of shared
    memory per block (:func:`small_smem`) they are at most 128 rows tall, with 4 stages."""
    small = small_smem(tier)
    BM, BMn = tile_m(M, 128), tile_m(M, 128 if small else 256)
    s = skinny.split_k(M, N, K, BM, 128, 64, sms)
    wide = dict(BM=BM, BN=128, BK=64, num_warps=8 if BM == 128 else 4, num_stages=4)
    narrow = dict(BM=BMn, BN=64, BK=64, num_warps=4, num_stages=4 if small else 5 if BMn == 256 else 6)
    return {WIDE: dict(wide, splits=1), SPLIT32: dict(wide, splits=s, reduce="float32"),
            SPLIT16: dict(wide, splits=s, reduce="out"), NARROW: dict(narrow, splits=1),
            STREAMK: dict(narrow, programs=sms, reduce="out")}


def interpreter_configs(M, N, K, programs=5) -> dict:
    """The same five contenders with tiles small enough for the CPU interpreter (BM 16, "wide"
    BN 32, "narrow" BN 16, BK 32): shapes like 24 x 96 x 256 leave partial tiles and uneven splits."""
    s = skinny.split_k(M, N, K, 16, 32, 32, 16, min_k_tiles=2)       # as if 16 SMs
    wide, narrow = dict(BM=16, BN=32, BK=32, num_warps=4, num_stages=1), dict(BM=16, BN=16, BK=32, num_warps=4, num_stages=1)
    return {WIDE: dict(wide, splits=1), SPLIT32: dict(wide, splits=s, reduce="float32"),
            SPLIT16: dict(wide, splits=s, reduce="out"), NARROW: dict(narrow, splits=1),
            STREAMK: dict(narrow, programs=programs, reduce="out")}


def skinny_contenders(a, b, sms, configs=None) -> dict:
    """``{name: (fn(), config)}`` for A (M, K) @ B (K, N): cuBLAS (torch) and the five contenders of
    ``configs`` (default :func:`tile_configs`); every fn returns C in A's dtype."""
    import torch
    from . import skinny_triton as st
    (M, K), N = a.shape, b.shape[1]
    out = {CUBLAS: (lambda: a @ b, {})}
    for name, cfg in (configs or tile_configs(M, N, K, sms)).items():
        kw = {k: v for k, v in cfg.items() if k != "reduce"}
        red = cfg.get("reduce")
        zeros = (lambda red=red: torch.zeros(M, N, device=a.device, dtype=torch.float32 if red == "float32" else a.dtype))
        if name == STREAMK:
            fn = (lambda kw=kw, z=zeros: st.streamk(a, b, out=z(), **kw))
        elif red is None:
            fn = (lambda kw=kw: st.skinny(a, b, **kw))
        elif red == "float32":
            fn = (lambda kw=kw, z=zeros: st.skinny(a, b, out=z(), **kw).to(a.dtype))
        else:
            fn = (lambda kw=kw, z=zeros: st.skinny(a, b, out=z(), **kw))
        out[name] = (fn, cfg)
    return out


def reduce_adds(name, cfg, M, N, K) -> int:
    """The most reduce-adds one element of C receives under contender ``name``."""
    if name == STREAMK:      # walk streamk_kernel's loop: one piece (one reduce-add) per tile visited
        k_tiles, P = math.ceil(K / cfg["BK"]), cfg["programs"]
        total = skinny.tiles(M, N, cfg["BM"], cfg["BN"]) * k_tiles
        pieces = [0] * (total // k_tiles)
        for p in range(P):
            it, end = p * total // P, (p + 1) * total // P
            while it < end:
                pieces[it // k_tiles] += 1
                it = min(end, (it // k_tiles + 1) * k_tiles)
        return max(pieces)
    return cfg.get("splits", 1)


def check_skinny(name, cfg, c, a, b) -> float:
    """Raise AssertionError unless every element of ``c`` is within the bound of
    :func:`utils.day05.skinny.splitk_bound` of the float64 product; return max |err| / bound."""
    import torch
    (M, K), N = a.shape, b.shape[1]
    if c.dtype != a.dtype or tuple(c.shape) != (M, N):
        raise AssertionError(f"{name}: C is {c.dtype} {tuple(c.shape)}, expected {a.dtype} {(M, N)}")
    a64, b64 = a.double(), b.double()
    ref = a64 @ b64
    mag = a64.abs() @ b64.abs()
    s = reduce_adds(name, cfg, M, N, K)
    dt = str(a.dtype).replace("torch.", "")
    red = {"float32": "float32", "out": dt}.get(cfg.get("reduce"), "float32")
    bound = skinny.splitk_bound(K, s, mag, ref.abs(), out_dtype=dt, reduce_dtype=red)
    err = (c.double() - ref).abs()
    worst = float(torch.nan_to_num(err / bound, nan=0.0, posinf=math.inf).max())   # 0/0 (bound 0, exact): fine
    if not bool(torch.isfinite(c).all()) or worst > 1:
        raise AssertionError(f"{name}: error {float(err.max()):.3g} exceeds the bound at some element "
                             f"(max error/bound = {worst:.2f}; {s} reduce-adds)")
    return worst


def peak_tflops(device_name) -> float | None:
    """The datasheet's dense fp16/bf16 tensor-core peak of ``device_name`` (TFLOP/s; it cannot be
    read off the device), None for a GPU the datasheet table does not know."""
    from ..day01.memory_model import datasheet
    sheet = datasheet(device_name)
    return sheet["fp16_tflops"] if sheet else None


def roofline(rows, device_name) -> list:
    """Copies of skinny rows with the ceiling of :func:`utils.day05.skinny.ceiling`: ``ceiling_ms``
    = max(bytes / the row's ``hbm_gbps`` (day 1's copy), flops / :func:`peak_tflops`), ``bound``
    ("memory" or "compute"), ``of_ceiling`` = ceiling / time. Older recordings stored the memory
    time alone as their ceiling; this recomputes it from the row's shape and bandwidth."""
    peak, out = peak_tflops(device_name), []
    for r in rows:
        M, N, K = r["shape"]
        ms, bound = skinny.ceiling(M, N, K, 2, r["hbm_gbps"], peak)
        out.append(dict(r, ceiling_ms=ms, bound=bound, of_ceiling=ms / r["ms"], peak_tflops=peak))
    return out


def _graphs(a, b, sms, names=None):
    """``(graphs, configs, worst)``: each contender (all, or those in ``names``) captured in a CUDA
    graph, its output poisoned with NaN, replayed and checked (:func:`check_skinny`)."""
    graphs, cfgs, worst = {}, {}, {}
    for name, (fn, cfg) in skinny_contenders(a, b, sms).items():
        if names is not None and name not in names:
            continue
        replay, out = as_graph(fn)
        out.fill_(float("nan"))
        worst[name] = check_skinny(name, cfg, replay(), a, b)
        graphs[name], cfgs[name] = replay, cfg
    return graphs, cfgs, worst


def measure_skinny(shapes=None, dtypes=("float16", "bfloat16"), reps=60, seed=0, flush_by="write") -> list:
    """Rows for every (shape, dtype, contender): time (sustained, interleaved, L2 flushed by
    ``flush_by``, see :func:`utils.core.bench.compare`; every contender a CUDA-graph replay,
    :func:`as_graph`), TFLOP/s, ratio to cuBLAS, the ceiling (:func:`roofline`). Each graph's
    output is poisoned with NaN, the graph replayed and every element checked (:func:`check_skinny`)
    before timing."""
    import torch
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    from ..core.results import device_slug
    name = torch.cuda.get_device_name()
    gbps = skinny.recorded_hbm_gbps(device_slug(name))
    rows = []
    for i, (M, N, K) in enumerate(shapes or SKINNY_SHAPES):
        for dt in dtypes:
            dtype = getattr(torch, dt)
            a = bench.randn((M, K), dtype, "cuda", seed=seed + 2 * i)
            b = bench.randn((K, N), dtype, "cuda", seed=seed + 2 * i + 1)
            graphs, cfgs, worst = _graphs(a, b, sms)
            got = bench.compare(lambda: (), graphs, reference=CUBLAS, metric="TFLOP/s", amount=2 * M * N * K,
                                shape=(M, N, K), dtype=dt, reps=reps, flush_by=flush_by, do_bench=True)
            for r in got:
                cfg = cfgs[r["name"]]
                r.update(launch="CUDA graph replay", config=dict(cfg), hbm_gbps=gbps, err_over_bound=worst[r["name"]],
                         tiles=skinny.tiles(M, N, cfg["BM"], cfg["BN"]) if cfg else None)
            rows += roofline(got, name)
    return rows


def sweep(rows, label, stem, tier, full) -> tuple:
    """``(rows, label)`` over every shape of :data:`SKINNY_SHAPES`: ``rows`` themselves when they
    are the full run (``full``) or a recording (no TMA here), else the full run's recording of
    ``stem`` (this GPU's if it made one), its skinny rows with the ceilings of the GPU that made it."""
    from ..core import results
    if full or not tier.has("tma"):
        return rows, label
    doc = results.recording(stem, tier)
    got = [r for r in doc["rows"] if r["name"] in (CUBLAS, *STEPS)]
    return roofline(got, doc["device"]), f"{results.label(doc)} (the sweep over M and N: COURSE_FULL=1 measures it)"


GAP_SHAPES = [(128, 4096, 4096), (128, 8192, 8192), (128, 16384, 16384)]
FLUSHES = ("write", "read")


def gap_name(name, flush) -> str:
    """The row name of contender ``name`` timed after an L2 flush by ``flush`` (:func:`measure_gap`)."""
    if flush not in FLUSHES:
        raise ValueError(f"flush must be one of {FLUSHES}, got {flush!r}")
    return f"{name}, L2 flushed by a {flush}"


GAP_NAMES = tuple(gap_name(n, f) for f in FLUSHES for n in (CUBLAS, NARROW))


def measure_gap(shapes=None, dtype="float16", reps=60, seed=0) -> list:
    """cuBLAS and the narrow tiles at :data:`GAP_SHAPES`, timed as :func:`measure_skinny` does,
    once after the harness's written L2 flush (which leaves L2 full of dirty lines that the timed
    call must write back) and once after a read flush (clean lines). Rows (``part="gap"``,
    ``flush_by``) carry the ceiling of :func:`roofline` and ``gap_ms``: time - ceiling."""
    import torch
    from ..core.results import device_slug
    sms, name = torch.cuda.get_device_properties(0).multi_processor_count, torch.cuda.get_device_name()
    gbps = skinny.recorded_hbm_gbps(device_slug(name))
    rows = []
    for i, (M, N, K) in enumerate(shapes or GAP_SHAPES):
        a = bench.randn((M, K), getattr(torch, dtype), "cuda", seed=seed + 2 * i)
        b = bench.randn((K, N), getattr(torch, dtype), "cuda", seed=seed + 2 * i + 1)
        graphs, _, worst = _graphs(a, b, sms, names=(CUBLAS, NARROW))
        for flush in FLUSHES:
            got = bench.compare(lambda: (), {gap_name(n, flush): g for n, g in graphs.items()},
                                reference=gap_name(CUBLAS, flush), metric="TFLOP/s", amount=2 * M * N * K,
                                shape=(M, N, K), dtype=dtype, reps=reps, flush_by=flush)
            for r in roofline([dict(r, hbm_gbps=gbps) for r in got], name):
                rows.append(dict(r, part="gap", flush_by=flush, gap_ms=r["ms"] - r["ceiling_ms"],
                                 err_over_bound=max(worst.values())))
    return rows


# ---- grouped (MoE) GEMM ----
MIXES = {  # name: (groups, tokens, top_k, K, N); sizes drawn by mix_sizes
    "64 experts, 512 tokens, top-8 (K 7168, N 2048)": (64, 512, 8, 7168, 2048),
    "64 experts, 4096 tokens, top-8 (K 7168, N 2048)": (64, 4096, 8, 7168, 2048),
    "8 experts, 4096 tokens, top-2 (K 4096, N 14336)": (8, 4096, 2, 4096, 14336),
}
LOOP, GRAPH, GROUPED_MM = "cuBLAS loop (torch.mm per group)", "cuBLAS loop in a CUDA graph", "torch._grouped_mm"
ROW_BY_ROW = "Triton grouped, tiles row by row"            # group_m = 1
TRITON_GROUPED = "Triton grouped, tiles in bands of 8 rows"   # group_m = 8: the one change from ROW_BY_ROW
GROUPED_CFG = dict(BM=128, BN=256, BK=64, num_warps=8, num_stages=3, group_m=8)
LARGE_MIX = "8 experts, 4096 tokens, top-2 (K 4096, N 14336)"
GROUPED_TARGETS = {mix: 1.0 if mix == LARGE_MIX else 1.2 for mix in MIXES}   # x the cuBLAS loop (issue 40)
DRAM_ROWS = {ROW_BY_ROW: "ncu: tiles row by row", TRITON_GROUPED: "ncu: tiles in bands of 8 rows"}


def grouped_config(tier=None) -> dict:
    """:data:`GROUPED_CFG`, or 128 x 128 tiles on a GPU with 99 KB of shared memory per block."""
    return dict(GROUPED_CFG, BN=128) if small_smem(tier) else dict(GROUPED_CFG)


def grouped_sizes(mix, seed=0) -> list:
    """The rows per group of mix ``mix`` of :data:`MIXES`: :func:`mix_sizes` seeded by the mix's
    position, the same draw in every measurement of the notebook."""
    G, tokens, top_k, _, _ = MIXES[mix]
    return mix_sizes(G, tokens, top_k, seed=seed + list(MIXES).index(mix))


def grouped_inputs(mix, seed=0, device="cuda") -> tuple:
    """``(sizes, a, b)`` for mix ``mix`` of :data:`MIXES` in bf16 (:func:`grouped_sizes`)."""
    import torch
    i = list(MIXES).index(mix)
    G, _, _, K, N = MIXES[mix]
    sizes = grouped_sizes(mix, seed)
    a = bench.randn((sum(sizes), K), torch.bfloat16, device, seed=seed + 10 + i)
    b = bench.randn((G, K, N), torch.bfloat16, device, seed=seed + 20 + i)
    return sizes, a, b


def mix_sizes(groups, tokens, top_k, seed=0) -> list:
    """Rows per expert when ``tokens`` tokens each pick ``top_k`` distinct experts of ``groups``,
    with uneven expert popularity (weights u^2 + 0.05, u uniform): a skewed, realistic routing."""
    import torch
    for k, v in (("groups", groups), ("tokens", tokens), ("top_k", top_k)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{k} must be a positive int, got {v!r}")
    if top_k > groups:
        raise ValueError(f"top_k {top_k} > groups {groups}: a token picks distinct experts")
    g = torch.Generator().manual_seed(seed)
    w = torch.rand(groups, generator=g) ** 2 + 0.05
    picks = torch.multinomial((w / w.sum()).repeat(tokens, 1), top_k, replacement=False, generator=g)
    return torch.bincount(picks.flatten(), minlength=groups).tolist()


def check_grouped(name, c, a, b, sizes) -> None:
    """Every element of every group within the fp32-accumulation bound of the float64 product."""
    offs = np.cumsum([0] + list(sizes))
    dt = str(a.dtype).replace("torch.", "")
    for g, m in enumerate(sizes):
        if not m:
            continue
        ag, bg = a[offs[g]:offs[g + 1]].double(), b[g].double()
        ref = ag @ bg
        bound = skinny.splitk_bound(a.shape[1], 1, ag.abs() @ bg.abs(), ref.abs(), out_dtype=dt)
        bad = ~((c[offs[g]:offs[g + 1]].double() - ref).abs() <= bound)     # NaN (a poisoned element) is bad
        if bool(bad.any()):
            raise AssertionError(f"{name}: group {g} ({m} rows) has {int(bad.sum())} elements beyond the bound")


def grouped_contenders(a, b, sizes) -> dict:
    import torch
    from . import skinny_triton as st
    offs = np.cumsum([0] + list(sizes)).tolist()
    out = torch.empty(a.shape[0], b.shape[2], device=a.device, dtype=a.dtype)

    def loop():
        for g, m in enumerate(sizes):
            if m:
                torch.mm(a[offs[g]:offs[g + 1]], b[g], out=out[offs[g]:offs[g + 1]])
        return out
    replay, _ = as_graph(loop)
    cons = {LOOP: loop, GRAPH: replay}
    if hasattr(torch, "_grouped_mm") and a.dtype == torch.bfloat16:
        ends = torch.tensor(offs[1:], device=a.device, dtype=torch.int32)
        cons[GROUPED_MM] = lambda: torch._grouped_mm(a, b, offs=ends)
    cfg = grouped_config()
    plan = st.grouped_plan(sizes, b.shape[2], cfg["BM"], cfg["BN"], a.device)   # routing metadata,
    cons[ROW_BY_ROW] = lambda: st.grouped(a, b, plan=plan, **dict(cfg, group_m=1))   # made once (on the GPU in a model)
    cons[TRITON_GROUPED] = lambda: st.grouped(a, b, plan=plan, **cfg)
    return cons


def measure_grouped(mixes=None, dtype="bfloat16", reps=30, seed=0) -> list:
    """Rows per (mix, contender): time, TFLOP/s (2 x rows x K x N summed over groups), ratio to the
    plain cuBLAS loop. Outputs are poisoned (NaN) before each checked call."""
    if dtype != "bfloat16":
        raise ValueError(f"the grouped mixes are measured in bfloat16 (torch._grouped_mm's dtype), got {dtype!r}")
    rows = []
    for mix in (mixes or MIXES):
        G, _, _, K, N = MIXES[mix]
        sizes, a, b = grouped_inputs(mix, seed)
        cons = grouped_contenders(a, b, sizes)
        for name, fn in cons.items():
            if name in (LOOP, GRAPH):
                fn().fill_(float("nan"))
            check_grouped(name, fn(), a, b, sizes)
        got = bench.compare(lambda: (), cons, reference=LOOP, metric="TFLOP/s", amount=2 * sum(sizes) * K * N,
                            shape=(sum(sizes), N, K), dtype=dtype, reps=reps, do_bench=True)
        for r in got:
            r.update(mix=mix, groups=G, sizes=sizes, launches=G if r["name"] in (LOOP, GRAPH) else 1)
        rows += got
    return rows


def run_grouped_orders(mix=LARGE_MIX, seed=0) -> None:
    """One launch of each tile order on ``mix`` (ROW_BY_ROW first), each output checked: the
    process :func:`measure_grouped_dram` profiles."""
    import torch
    from . import skinny_triton as st
    sizes, a, b = grouped_inputs(mix, seed)
    cfg = grouped_config()
    plan = st.grouped_plan(sizes, b.shape[2], cfg["BM"], cfg["BN"], a.device)
    for group_m in (1, cfg["group_m"]):
        out = torch.full((a.shape[0], b.shape[2]), float("nan"), dtype=a.dtype, device=a.device)
        st.grouped(a, b, plan=plan, out=out, **dict(cfg, group_m=group_m))
        check_grouped(f"group_m={group_m}", out, a, b, sizes)


def measure_grouped_dram(mix=LARGE_MIX, seed=0) -> list:
    """Bytes each tile order reads from DRAM and from L2 in one launch on ``mix`` (Nsight Compute,
    caches flushed before each launch), beside the bytes of A and of B: rows named
    :data:`DRAM_ROWS`, ``value`` the bytes read from DRAM (``dram_read_gb`` in GB), ``times_b``
    (= ``ratio``) that over B's size."""
    import pathlib
    import sys
    from ..core import ncu
    G, _, _, K, N = MIXES[mix]
    sizes = grouped_sizes(mix, seed)
    code = f"from utils.day05 import skinny_measure as m; m.run_grouped_orders({mix!r}, {seed})"
    kernels = ncu.profile([sys.executable, "-c", code], "grouped_kernel", metrics=ncu.L2_DRAM,
                          cwd=pathlib.Path(__file__).resolve().parents[2])
    if len(kernels) != 2:
        raise RuntimeError(f"expected 2 profiled launches of grouped_kernel, ncu reported {len(kernels)}")
    a_bytes, b_bytes = 2 * sum(sizes) * K, 2 * G * K * N
    rows = []
    for name, k in zip((ROW_BY_ROW, TRITON_GROUPED), kernels):
        dram = k["dram__bytes_read.sum"]
        rows.append(dict(name=DRAM_ROWS[name], contender=name, metric="bytes", value=dram, dram_read_gb=dram / 1e9,
                         reference="B's size", reference_value=b_bytes, ratio=dram / b_bytes,
                         l2_read_gb=k["lts__t_sectors_op_read.sum"] * ncu.SECTOR_BYTES / 1e9,
                         dram_write_gb=k["dram__bytes_write.sum"] / 1e9, a_gb=a_bytes / 1e9, b_gb=b_bytes / 1e9,
                         times_b=dram / b_bytes, mix=mix, sizes=sizes, shape=[sum(sizes), N, K], dtype="bfloat16"))
    return rows


PADDED = " (rows padded to whole tiles)"


def padded_sizes(sizes, BM=GROUPED_CFG["BM"]) -> list:
    """Each group's rows rounded up to a multiple of ``BM``: no tile runs past its group's end."""
    return [-(-m // BM) * BM for m in sizes]


def measure_grouped_padded(mix=LARGE_MIX, reps=30, seed=0) -> list:
    """One hypothesis for the large mix's gap, one change: every group padded to whole tiles
    (:func:`padded_sizes`), the cuBLAS loop and the Triton kernel in bands timed on it as in
    :func:`measure_grouped`. Rows are named with :data:`PADDED`; ``padding`` is the MMA work the
    unpadded mix wastes on rows past a group's end (a fraction of the useful work)."""
    import torch
    G, _, _, K, N = MIXES[mix]
    real = grouped_sizes(mix, seed)
    sizes = padded_sizes(real)
    a = bench.randn((sum(sizes), K), torch.bfloat16, "cuda", seed=seed + 30)
    b = bench.randn((G, K, N), torch.bfloat16, "cuda", seed=seed + 31)
    cons = {n: f for n, f in grouped_contenders(a, b, sizes).items() if n in (LOOP, TRITON_GROUPED)}
    for name, fn in cons.items():
        if name == LOOP:
            fn().fill_(float("nan"))
        check_grouped(name, fn(), a, b, sizes)
    rows = bench.compare(lambda: (), cons, reference=LOOP, metric="TFLOP/s", amount=2 * sum(sizes) * K * N,
                         shape=(sum(sizes), N, K), dtype="bfloat16", reps=reps, do_bench=True)
    for r in rows:
        r.update(name=r["name"] + PADDED, reference=r["reference"] + PADDED, contender=r["name"], mix=mix, sizes=sizes,
                 padding=sum(sizes) / sum(real) - 1)
    return rows


LOOP_STEM = "06_skinny_grouped_loop"
NVJET_TILE = re.compile(r"^nvjet_sm\d+a?_\w*?_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)_")


def cublas_tile(kernel: str):
    """``{"height", "width", "bk", "stages", "cluster"}`` of a cuBLAS ``nvjet`` kernel (the CTA's tile of
    C: rows x columns, the K step and stages, the cluster), read from its name
    (``nvjet_sm90_tst_192x208_64x4_1x1_h_bz_coopB_NNN``), or None for any other name.

    The name is cuBLAS's column-major view. torch's row-major ``C = A @ B`` is ``C^T = B^T A^T``
    there, so the name's first number runs along N (our columns) and its second along our rows;
    the cluster keeps the name's order (N first). That reading is ours, not documented. The
    evidence, in 06's recording on the H100: the second number follows each expert's row count
    (an expert of 5 rows gets 8, 11 gets 16, 56 gets 56, 216 gets 216) while the first is 64 for
    every expert under 64 rows whose name ends ``NNT``, as a WGMMA tile's M (a multiple of 64)
    would be. Three names end ``NNN`` (another operand layout; one gives 32 x 64): the reading is
    not checked for those, though there both readings round the expert to the same rows. The rest
    of the name (``coopA``, ``h``/``v``, ``bz``, ``splitK``) is not read here."""
    m = NVJET_TILE.match(kernel)
    if not m:
        return None
    width, height, bk, stages, cx, cy = map(int, m.groups())
    return {"height": height, "width": width, "bk": bk, "stages": stages, "cluster": f"{cx}x{cy}"}


PADDED_STEM = "06_skinny_grouped_padded"       # shown by the lab report 06b


def measure_padded_pair(mix=LARGE_MIX, reps=30, seed=0) -> list:
    """The padding hypothesis in one run: ``mix`` as routed (the cuBLAS loop and the Triton kernel
    in bands, :func:`measure_grouped`'s way) and every group padded to whole tiles
    (:func:`measure_grouped_padded`), so the four times come from the same session."""
    routed = [r for r in measure_grouped([mix], reps=reps, seed=seed) if r["name"] in (LOOP, TRITON_GROUPED)]
    return routed + measure_grouped_padded(mix, reps=reps, seed=seed)


def measure_loop_kernels(mixes=None, seed=0, padded=(LARGE_MIX,)) -> list:
    """What the cuBLAS loop runs: one row per nonempty group of each mix, with the kernels its
    ``torch.mm`` launched (torch.profiler, memsets left out), the tile of the first one whose name
    gives it (:func:`cublas_tile`) and the rows that tile rounds the group up to (``padded_rows``; None
    where the name does not say). The mixes in ``padded`` are listed a second time with every group
    padded to whole tiles of ours (:func:`padded_sizes`, rows named with :data:`PADDED`, ``padded``
    true), the shapes :func:`measure_grouped_padded` times. Names, not times: the profiler's
    durations are not the course's harness, so they are not kept."""
    import torch
    from torch.profiler import ProfilerActivity, profile
    unknown = [m for m in padded if m not in MIXES]
    if unknown:
        raise ValueError(f"unknown mixes to pad {unknown}; the mixes are {list(MIXES)}")
    runs = [(mix, False) for mix in (mixes or MIXES)] + [(mix, True) for mix in padded if mix in (mixes or MIXES)]
    rows = []
    for mix, pad in runs:
        sizes, a, b = grouped_inputs(mix, seed)
        _, _, _, K, N = MIXES[mix]
        if pad:
            sizes = padded_sizes(sizes)
            a = bench.randn((sum(sizes), K), a.dtype, a.device, seed=seed + 30)    # as measure_grouped_padded
            b = bench.randn(tuple(b.shape), b.dtype, b.device, seed=seed + 31)
        offs = np.cumsum([0] + list(sizes)).tolist()
        out = torch.empty((a.shape[0], N), dtype=a.dtype, device=a.device)
        for g, m in enumerate(sizes):
            if not m:
                continue
            lo, hi = offs[g], offs[g + 1]
            torch.mm(a[lo:hi], b[g], out=out[lo:hi])        # cuBLAS picks (and caches) its kernel
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.mm(a[lo:hi], b[g], out=out[lo:hi])
                torch.cuda.synchronize()
            kernels = [e.name for e in prof.events()
                       if e.device_type == torch.autograd.DeviceType.CUDA and "memset" not in e.name.lower()]
            tile = next((t for t in map(cublas_tile, kernels) if t), None)
            rows.append({"name": f"{mix}: group {g}" + (PADDED if pad else ""), "metric": "count", "value": m,
                         "mix": mix, "group": g, "padded": pad, "kernels": kernels, "tile": tile,
                         "padded_rows": -(-m // tile["height"]) * tile["height"] if tile else None,
                         "shape": [m, N, K], "dtype": "bfloat16", "reference": None, "reference_value": None, "ratio": None})
    return rows


CLOCK_STEM = "06_skinny_grouped_clocks"
CLOCK_MIXES = (list(MIXES)[1], LARGE_MIX)       # the two large mixes, whose targets were met narrowly or missed


def power_limit_w() -> float:
    """The board's power limit in watts (``nvidia-smi --query-gpu=power.limit``), this device."""
    import subprocess
    import torch
    out = subprocess.run(["nvidia-smi", "--query-gpu=power.limit", "--format=csv,noheader,nounits",
                          f"--id={torch.cuda.current_device()}"], capture_output=True, text=True, check=True).stdout
    return float(out.strip().splitlines()[0])


def measure_grouped_clocks(mixes=CLOCK_MIXES, seconds: float = 2.5, seed=0) -> list:
    """The SM clock and board power each grouped contender (:data:`LOOP`, :data:`TRITON_GROUPED`,
    :data:`GROUPED_MM` where torch has it) runs at on ``mixes``, each alone and back to back for
    ``seconds`` while ``nvidia-smi`` samples every 50 ms (05's method: ``ladder_measure._sample_gpu``,
    each contender a CUDA-graph replay, two passes, the second in reverse order, averaged; outputs
    checked first). Called from Python instead, the 64-expert loop took 2.7 ms a call here against
    do_bench's 2.0 on an H100 (2026-11-28, not recorded), at full clock and 647 W: the GPU waited,
    for the host's 64 launches a call, we suppose. Rows (metric MHz):
    ``watts``, ``power_limit``, ``tflops`` (the groups' rows only, over the window) and
    ``tflops_per_ghz`` (the work done per clock cycle); ``ratio``: the clock over the loop's."""
    from . import ladder_measure as lm
    lm.check_seconds(seconds)
    unknown = [m for m in mixes if m not in MIXES]
    if unknown:
        raise ValueError(f"unknown mixes {unknown}; the mixes are {list(MIXES)}")
    limit, rows = power_limit_w(), []
    for mix in mixes:
        _, _, _, K, N = MIXES[mix]
        sizes, a, b = grouped_inputs(mix, seed)
        cons = bench.graphed({n: f for n, f in grouped_contenders(a, b, sizes).items()   # the host can't hold
                              if n in (LOOP, TRITON_GROUPED, GROUPED_MM)})               # the GPU back
        for name, fn in cons.items():
            fn().fill_(float("nan"))
            check_grouped(name, fn(), a, b, sizes)
        got = lm.sample_passes(cons, seconds)
        for name, passes in got.items():          # TFLOP/s of the groups' rows only
            rows.append(dict(name=f"{name} ({mix})", contender=name, mix=mix, **lm.clock_fields(passes, 2 * sum(sizes) * K * N),
                             power_limit=limit, sizes=sizes, shape=[sum(sizes), N, K], dtype="bfloat16",
                             seconds=seconds, launch=bench.LAUNCH_GRAPH))
    for r in rows:
        ref = next(q for q in rows if q["contender"] == LOOP and q["mix"] == r["mix"])
        r.update(reference=ref["name"], reference_value=ref["value"], ratio=r["value"] / ref["value"])
    return rows


# ---- raw CUDA: where a descriptor comes from, and what a missing fence does ----
def measure_descriptor_modes(groups=8, reps=20, seed=0) -> list:
    """Per :data:`utils.tma.update_run.MODES`: median clock64 cycles from a CTA's start to its first
    box (32 x 64 fp16) arriving, ``groups`` groups of different shapes, ``reps`` launches. Every
    box is checked against the group's data."""
    import cupy as cp
    from ..tma import update_run
    rng = np.random.default_rng(seed)
    shapes = [(int(rng.integers(32, 300)), int(rng.choice([64, 128, 256, 512]))) for _ in range(groups)]
    arrays = [cp.asarray(rng.standard_normal(s).astype(np.float16)) for s in shapes]
    rows = []
    for mode, what in update_run.MODES.items():
        if mode == 3 and groups > update_run.BYVALUE_MAX:
            continue
        per = []
        for _ in range(reps):
            tiles, cycles = update_run.grouped_load(arrays, (32, 64), mode)
            for g, arr in enumerate(arrays):
                if not bool((tiles[g] == arr[:32, :64]).all()):
                    raise AssertionError(f"mode {mode}: group {g}'s box differs from its data")
            per.append(float(np.median(cycles)))
        rows.append({"name": f"mode {mode}: {what}", "mode": mode, "metric": "cycles", "value": statistics.median(per),
                     "cycles_lo": min(per), "cycles_hi": max(per), "reference": None, "reference_value": None,
                     "ratio": None, "shape": [groups, 32, 64], "dtype": "float16", "launches": reps})
    base = rows[-1]["value"]
    for r in rows:
        r.update(reference=rows[-1]["name"], reference_value=base, ratio=base / r["value"])
    return rows


RACE_CASES = {  # name: (release, acquire, in_flight)
    "replace, no fence": (False, False, False),
    "replace, release only": (True, False, False),
    "replace, acquire only": (False, True, False),
    "replace, release + acquire": (True, True, False),
    "replace during load 1, release + acquire": (True, True, True),
    "replace during load 1, no fence": (False, False, True),
}


def measure_race(ctas=132, launches=20, seed=0) -> list:
    """Per :data:`RACE_CASES`: over ``launches`` x ``ctas`` CTAs, how many loads saw the old
    tensor (x), the new one (y), or neither, before and after the replace."""
    import cupy as cp
    from ..tma import update_run
    rng = np.random.default_rng(seed)
    x = cp.asarray(rng.standard_normal((64, 64)).astype(np.float16))
    y = cp.asarray(rng.standard_normal((64, 64)).astype(np.float16))
    rows = []
    for name, (rel, acq, fly) in RACE_CASES.items():
        tot = {f"{ld}_{k}": 0 for ld in ("load1", "load2") for k in ("x", "y", "other")}
        for _ in range(launches):
            got = update_run.update_race(x, y, (32, 64), release=rel, acquire=acq, in_flight=fly, ctas=ctas)
            for ld, counts in got.items():
                for k, v in counts.items():
                    tot[f"{ld}_{k}"] += v
        rows.append({"name": name, "metric": "count", "value": ctas * launches, "release": rel, "acquire": acq,
                     "in_flight": fly, **tot, "reference": None, "reference_value": None, "ratio": None,
                     "shape": [32, 64], "dtype": "float16"})
    return rows


# ---- pictures ----
def plot_skinny(rows, label=""):
    """Left: ratio to cuBLAS against M (N = K = 8192), one line per contender and dtype. Right:
    the fraction of the ceiling (``of_ceiling``, :func:`roofline`) each contender reached at the ladder shape."""
    import matplotlib.pyplot as plt
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.2))
    colors = {name: f"C{i}" for i, name in enumerate(STEPS)}            # one colour per contender, both dtypes
    for dt, style in (("float16", "-"), ("bfloat16", ":")):
        for name in STEPS:
            pts = sorted((r["shape"][0], r["ratio"]) for r in rows
                         if r["name"] == name and r["dtype"] == dt and r["shape"][1:] == [8192, 8192])
            if pts:
                ax.plot(*zip(*pts), style, marker="o", color=colors[name], label=name if dt == "float16" else None)
    ax.axhline(1.0, color="gray", lw=1)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("M (N = K = 8192); solid fp16, dotted bf16")
    ax.set_ylabel("speed vs cuBLAS (x)")
    ax.legend(fontsize=7)
    ax.set_title(f"skinny GEMM contenders vs cuBLAS\n{label}", fontsize=9)
    lad = [r for r in rows if r["shape"] == list(LADDER_SHAPE)]
    names = [n for n in (CUBLAS, *STEPS) if any(r["name"] == n for r in lad)]
    for i, dt in enumerate(("float16", "bfloat16")):
        vals = [next(r["of_ceiling"] for r in lad if r["name"] == n and r["dtype"] == dt) for n in names]
        bx.barh([y + 0.4 * i for y in range(len(names))], vals, height=0.4, label=dt)
    bx.set_yticks([y + 0.2 for y in range(len(names))], names, fontsize=8)
    bx.axvline(0.9, color="red", ls="--", lw=1, label="target: 90% of the ceiling")
    bx.invert_yaxis()
    bx.set_xlabel("fraction of the ceiling: max(bytes / measured HBM bandwidth, flops / datasheet peak)")
    bx.set_title(f"M = 128, N = K = 8192\n{label}", fontsize=9)
    bx.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_grouped(rows, label=""):
    """TFLOP/s per contender and MoE mix, annotated with the ratio to the plain cuBLAS loop."""
    import matplotlib.pyplot as plt
    mixes = list(dict.fromkeys(r["mix"] for r in rows))
    names = list(dict.fromkeys(r["name"] for r in rows))
    fig, ax = plt.subplots(figsize=(10, 0.6 + 0.35 * len(mixes) * len(names)))
    y = 0
    ticks = []
    for mix in mixes:
        for name in names:
            r = next((r for r in rows if r["mix"] == mix and r["name"] == name), None)
            if r is None:
                continue
            ax.barh(y, r["value"], color="tab:gray" if name == LOOP else "tab:blue")
            ax.text(r["value"], y, f" {r['ratio']:.2f}x", va="center", fontsize=7)
            ticks.append((y, f"{name} | {mix}"))
            y += 1
        y += 0.5
    ax.set_yticks([t for t, _ in ticks], [n for _, n in ticks], fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("TFLOP/s (2 x rows x K x N summed over groups); ratio to the cuBLAS loop")
    ax.set_title(f"grouped GEMM\n{label}", fontsize=9)
    fig.tight_layout()
    return fig
