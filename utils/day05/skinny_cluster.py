"""The lab report 06b's skinny study: what cuBLAS does at M = 256 that 06's Triton tiles do not.

At M = 256, N = K = 8192 the best Triton contender of notebook 06 (narrow 256 x 64 tiles) stays a few
percent behind cuBLAS, whose kernel name says 128 x 128 tiles in clusters of 2 x 1 CTAs
(:func:`utils.day05.skinny_measure.cublas_tile`). Triton 3.6 cannot make a CTA cluster share a tile
through TMA multicast; notebook 05's warp-specialized CuteDSL GEMM can. :func:`measure_cluster`
runs that kernel with cuBLAS's tile, one change a step (:data:`STEPS`):

1. one CTA per 128 x 128 tile (persistent, a producer warpgroup and two consumers);
2. + clusters of 2 x 1 CTAs, each CTA still loading its own B tile (the cluster alone);
3. + B multicast: the two CTAs of a cluster, on neighbouring rows of C, need the same B tile, and
   one TMA load delivers it to both.

The CuteDSL kernel takes the weight as (N, K), as ``torch.nn.Linear`` stores it, so cuBLAS runs
twice: on B = (K, N) (:data:`~utils.day05.skinny_measure.CUBLAS`, 06's reference) and on the same
(N, K) weight (:data:`CUBLAS_NK`); each kernel is compared with cuBLAS on its own layout.
:func:`measure_clocks` reads the SM clock and board power of cuBLAS (both layouts), the narrow tiles
and the multicast kernel running alone (is the gap the clock, or the work per clock?).
"""
from __future__ import annotations

from ..core import bench
from . import skinny_measure as sm

SHAPE = (256, 8192, 8192)
TILE = (128, 128, 64)                      # cuBLAS's tile at this shape (its kernel name)
CUBLAS_NK = "cuBLAS, weight as (N, K): a @ w.T"
STEPS = {                                  # name: WsGemm keywords (tile TILE, persistent)
    "CuteDSL 128 x 128, one CTA per tile": dict(cluster=(1, 1)),
    "+ clusters of 2 x 1, each CTA loads B": dict(cluster=(2, 1), multicast=False),
    "+ B multicast in the cluster": dict(cluster=(2, 1)),
}
MULTICAST = list(STEPS)[-1]
CHANGES = {name: (prev, what) for prev, name, what in zip(
    [CUBLAS_NK, *STEPS], STEPS,
    ["the baseline: notebook 05's warp-specialized kernel (rung 5) with cuBLAS's 128 x 128 tile",
     "CTAs on neighbouring rows of C run as a cluster (co-scheduled), loads unchanged",
     "each CTA fetches half of each B tile for both (multicast): one fetch per byte per cluster"])}
CLOCK_NAMES = (sm.CUBLAS, CUBLAS_NK, sm.NARROW, MULTICAST)   # each kernel beside cuBLAS on its own layout
COUNTER_NAMES = (CUBLAS_NK, *STEPS)        # the kernels on the (N, K) weight, in the profiled process's order
NAMES = (sm.CUBLAS, CUBLAS_NK, sm.NARROW, *STEPS)
STEM = "06_skinny_grouped_cluster"        # shown by the lab report 06b


def clock_row(name: str) -> str:
    """The row name of contender ``name`` in the clocks part."""
    return f"{name}: clock"


def counter_row(name: str) -> str:
    """The row name of contender ``name`` in the counters part."""
    return f"{name}: ncu"


def _check_shape(shape) -> tuple:
    M, N, K = (int(x) for x in shape)
    if min(M, N, K) < 1 or M % (2 * TILE[0]) or N % TILE[1] or K % 8:
        raise ValueError(f"shape must have M a multiple of {2 * TILE[0]} (a 2 x 1 cluster of {TILE[0]}-row tiles), "
                         f"N a multiple of {TILE[1]} and K of 8, got {tuple(shape)}")
    return M, N, K


def run_step(a, w, c, name: str):
    """c = a @ w.T (a: M x K, w: N x K, c: M x N, torch CUDA) with step ``name`` of :data:`STEPS`
    (:func:`utils.cute_dsl.gemm_ws.run_ws` with cuBLAS's tile)."""
    from ..cute_dsl.gemm_ws import run_ws
    if name not in STEPS:
        raise ValueError(f"unknown step {name!r}; the steps are {list(STEPS)}")
    return run_ws(a, w, c, persistent=True, tile=TILE, **STEPS[name])


def contenders(a, w, b, sms: int) -> dict:
    """``{name: fn()}``: cuBLAS on B (K, N) and on w (N, K), 06's narrow tiles on B, the steps on w;
    each fn returns its own C."""
    import torch
    M, N = a.shape[0], w.shape[0]
    fns = {sm.CUBLAS: lambda: a @ b, CUBLAS_NK: lambda: a @ w.T}
    fn, _ = sm.skinny_contenders(a, b, sms)[sm.NARROW]
    fns[sm.NARROW] = fn
    for name in STEPS:
        c = torch.empty(M, N, dtype=a.dtype, device=a.device)
        fns[name] = (lambda name=name, c=c: run_step(a, w, c, name))
    return fns


def _inputs(shape, dt, seed):
    import torch
    M, N, K = shape
    tdt = getattr(torch, dt)
    a = bench.randn((M, K), tdt, "cuda", seed=seed)
    w = bench.randn((N, K), tdt, "cuda", seed=seed + 1)
    return a, w, w.T.contiguous()


def _graphed_checked(a, w, b, sms) -> dict:
    """Each contender captured in a CUDA graph, its output poisoned with NaN, replayed and checked
    element by element against the float64 product (:func:`skinny_measure.check_skinny`)."""
    graphs = {}
    for name, fn in contenders(a, w, b, sms).items():
        replay, out = bench.as_graph(fn)
        out.fill_(float("nan"))
        sm.check_skinny(name, {}, replay(), a, b)
        graphs[name] = replay
    return graphs


def measure_cluster(shape=SHAPE, dtypes=("float16", "bfloat16"), reps=60, seed=0) -> list:
    """Rows (``part="cluster"``) for every contender of :func:`contenders`, timed as
    :func:`skinny_measure.measure_skinny` times (graph replays, L2 flushed by a write, interleaved
    rounds, do_bench beside), ratios against cuBLAS on B (K, N); ``ratio_nk``: against cuBLAS on the
    (N, K) weight, the same layout as the CuteDSL steps (the harness's medians)."""
    import torch
    M, N, K = _check_shape(shape)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    rows = []
    for i, dt in enumerate(dtypes):
        a, w, b = _inputs((M, N, K), dt, seed + 2 * i)
        got = bench.compare(lambda: (), _graphed_checked(a, w, b, sms), reference=sm.CUBLAS, metric="TFLOP/s",
                            amount=2 * M * N * K, shape=(M, N, K), dtype=dt, reps=reps, do_bench=True)
        nk = next(r for r in got if r["name"] == CUBLAS_NK)
        for r in got:
            r.update(part="cluster", launch=bench.LAUNCH_GRAPH, ratio_nk=r["value"] / nk["value"],
                     weight="(N, K)" if r["name"] in (CUBLAS_NK, *STEPS) else "(K, N)")
        rows += got
    return rows


def measure_clocks(shape=SHAPE, dtype="float16", seconds: float = 2.0, seed=0) -> list:
    """Rows (``part="clocks"``, metric MHz) for :data:`CLOCK_NAMES`, each a graph replay running
    alone and back to back for ``seconds`` while ``nvidia-smi`` samples (05's method,
    :func:`utils.day05.ladder_measure._sample_gpu`; two passes, the second in reverse order,
    averaged; outputs checked first): the clock, ``watts``, ``power_limit``, ``tflops`` and
    ``tflops_per_ghz``; ``ratio``: the clock over cuBLAS's."""
    import torch
    from . import ladder_measure as lm
    lm.check_seconds(seconds)
    M, N, K = _check_shape(shape)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a, w, b = _inputs((M, N, K), dtype, seed)
    cons = {n: f for n, f in _graphed_checked(a, w, b, sms).items() if n in CLOCK_NAMES}
    got = lm.sample_passes(cons, seconds)
    limit = sm.power_limit_w()
    rows = [dict(name=clock_row(n), contender=n, part="clocks", **lm.clock_fields(p, 2 * M * N * K), power_limit=limit, shape=[M, N, K],
                 dtype=dtype, seconds=seconds, launch=bench.LAUNCH_GRAPH) for n, p in got.items()]
    ref = next(r for r in rows if r["contender"] == sm.CUBLAS)
    for r in rows:
        r.update(reference=ref["name"], reference_value=ref["value"], ratio=r["value"] / ref["value"])
    return rows


def run_each(seed=0) -> None:
    """The process :func:`measure_counters` profiles: cuBLAS on the (N, K) weight, then each step,
    one launch each into a NaN-filled C, every output checked afterwards."""
    import torch
    a, w, b = _inputs(SHAPE, "float16", seed)
    outs = {}
    for name in COUNTER_NAMES:
        c = torch.full((SHAPE[0], SHAPE[1]), float("nan"), dtype=a.dtype, device=a.device)
        outs[name] = torch.matmul(a, w.T, out=c) if name == CUBLAS_NK else run_step(a, w, c, name)
    for name, c in outs.items():
        sm.check_skinny(name, {}, c, a, b)


def measure_counters(seed=0) -> list:
    """Rows (``part="counters"``, named :func:`counter_row`): one launch of each of
    :data:`COUNTER_NAMES` under Nsight Compute (caches flushed first), fp16: the bytes the L2
    request coalescer delivered to the SMs and how it got them (read from L2, merged by hardware,
    served by multicast: :data:`utils.cute_dsl.counters.LRC`), bytes read from DRAM, the duration
    under the profiler; ``requested_bytes``: what the tiles ask for (every 128 x 128 tile streams
    its rows of A and its columns of B); ``ratio``: bytes read from L2 over the first step's."""
    import pathlib
    import sys
    from ..core import ncu
    from ..cute_dsl import counters
    M, N, K = SHAPE
    code = f"from utils.day05 import skinny_cluster as sc; sc.run_each({seed})"
    kernels = ncu.profile([sys.executable, "-c", code], "WsGemm|nvjet", cwd=pathlib.Path(__file__).resolve().parents[2],
                          metrics=("gpu__time_duration.sum", "dram__bytes_read.sum", *counters.LRC.values()))
    if len(kernels) != len(COUNTER_NAMES):
        raise RuntimeError(f"expected {len(COUNTER_NAMES)} profiled GEMMs, ncu reported "
                           f"{[k['kernel'][:40] for k in kernels]}")
    requested = (M // TILE[0]) * (N // TILE[1]) * K * (TILE[0] + TILE[1]) * 2
    rows = []
    for name, k in zip(COUNTER_NAMES, kernels):
        b = counters.lrc_bytes(k)
        rows.append(dict(name=counter_row(name), contender=name, part="counters", metric="bytes",
                         value=b["read_from_l2_bytes"], **b, requested_bytes=requested, kernel=k["kernel"],
                         dram_read_bytes=k["dram__bytes_read.sum"], ncu_us=k["gpu__time_duration.sum"] / 1e3,
                         shape=[M, N, K], dtype="float16", tool="ncu"))
    first = next(r for r in rows if r["contender"] == list(STEPS)[0])
    for r in rows:
        r.update(reference=first["name"], reference_value=first["value"], ratio=r["value"] / first["value"])
    return rows


def measure(shape=SHAPE, reps=60, seed=0) -> list:
    """The three parts, for one recording: :func:`measure_cluster`, :func:`measure_clocks`,
    :func:`measure_counters` (at :data:`SHAPE`)."""
    return measure_cluster(shape, reps=reps, seed=seed) + measure_clocks(shape, seed=seed) + measure_counters(seed)
