"""Day 5 · 05: the GEMM ablation ladder, one change per step (kernels of ``gemm``, ``gemm_ws`` and
``gemm_pingpong``).

``STEPS`` names each rung and the kernel it builds; ``CHANGES`` says the one thing it changes
from the rung before. ``ORDERS`` are the tile-order variants of rung 6 (only the order differs).
Every rung runs the grouped tile order unless it is about the order.

Why the rungs come in this order (the issue's list has register reallocation before the producer
warpgroup): ``setmaxnreg`` moves registers *from* the producer warpgroup *to* the consumers, so it
needs a producer warpgroup to exist; the ladder adds the warpgroup first, then the reallocation.
"""
from __future__ import annotations

STEPS = {
    "1 · 128x128 tile": ("tma", dict(tile=(128, 128, 64))),
    "2 · 128x256 tile": ("tma", dict()),
    "3 · + producer warpgroup": ("ws", dict(persistent=False, realloc=False)),
    "4 · + setmaxnreg 40/232": ("ws", dict(persistent=False)),
    "5 · + persistent, stores overlapped": ("ws", dict(persistent=True)),
    "6 · + cluster 2x1, B multicast": ("ws", dict(persistent=True, cluster=(2, 1))),
    "7 · ping-pong consumers": ("pingpong", dict(cluster=(2, 1))),
}
CHANGES = {
    "1 · 128x128 tile": "the baseline: TMA ring as deep as shared memory allows, two consumer "
                                   "warpgroups of 64 x 128 each, warp 0 also issues the loads",
    "2 · 128x256 tile": "the C tile doubles along N (each warpgroup 64 x 256: m64n256k16); "
                                   "fewer stages fit",
    "3 · + producer warpgroup": "a third warpgroup only issues TMA loads; the two others only compute",
    "4 · + setmaxnreg 40/232": "the producer gives registers back (40) and the consumers take them (232)",
    "5 · + persistent, stores overlapped": "one CTA per SM walks tiles: the producer loads the next tile while "
                                            "the consumers' TMA stores of this one drain",
    "6 · + cluster 2x1, B multicast": "two CTAs on M-neighbour tiles share each B tile through multicast",
    "7 · ping-pong consumers": "each consumer warpgroup owns whole 64 x 256 tiles and they take turns, "
                               "so one's epilogue runs under the other's wgmma",
}
ORDER_BASE = "6 · + cluster 2x1, B multicast"
# Rung 6 with one change: the cluster without multicast (every CTA loads its own B tile). Between
# rungs 5 and 6 it splits rung 6's two changes: the cluster alone, then multicast alone.
CLUSTER_ONLY = "5 + cluster 2x1, each CTA loads"
VARIANTS = {CLUSTER_ONLY: ("ws", dict(persistent=True, cluster=(2, 1), multicast=False))}
ORDERS = {"tile order: row-major": "row", "tile order: grouped (rung 6)": "grouped",
          "tile order: serpentine": "serpentine"}


def _step(name: str):
    if name in STEPS:
        return STEPS[name]
    if name in ORDERS:
        family, kw = STEPS[ORDER_BASE]
        return family, {**kw, "order": ORDERS[name]}
    if name in VARIANTS:
        return VARIANTS[name]
    raise ValueError(f"unknown rung {name!r}; have {list(STEPS) + list(ORDERS) + list(VARIANTS)}")


def make(name: str, sms: int | None = None):
    """The kernel object of rung (or order variant) ``name``; ``sms``: SMs of the persistent
    grid (default: the H100's 132, enough to compile)."""
    from .gemm import TmaGemm
    from .gemm_pingpong import PingpongGemm
    from .gemm_ws import H100_SMS, WsGemm
    family, kw = _step(name)
    sms = H100_SMS if sms is None else sms
    if family == "tma":
        return TmaGemm(None, **kw)
    if family == "ws":
        return WsGemm(sms=sms, **kw)
    return PingpongGemm(sms=sms, **kw)


def run(a, b, c, name: str):
    """c = a @ b.T with rung ``name`` on torch CUDA tensors (a: M x K, b: N x K). Returns c."""
    from .gemm import check_operands, operands, run_cached
    from .gemm_ws import check_grid, sm_count
    family, kw = _step(name)
    if family == "ws":
        check_grid(a.shape[0], b.shape[0], kw.get("persistent", True), kw.get("cluster", (1, 1)))
    check_operands(a, b, c)                       # on the CPU, before the GPU is asked anything
    sms = sm_count()
    key = ("ladder", name, str(a.dtype), tuple(a.shape), tuple(b.shape), sms)
    run_cached(key, lambda: make(name, sms), operands(a, b, c))
    return c


def ptx_of(name: str, mnk=(4096, 4096, 4096), dtype: str = "float16") -> str:
    """PTX of rung ``name`` compiled for sm_90a with fake tensors (any machine)."""
    from .gemm import ptx_of as gemm_ptx
    return gemm_ptx(mnk=mnk, dtype=dtype, gemm=make(name))


def order_ref(order: str, clusters_m: int, clusters_n: int, group_m: int = 8) -> list:
    """The (cid_m, cid_n) sequence of :func:`gemm.ordered_tile`, in Python, for plots and tests."""
    if order not in ("row", "grouped", "serpentine"):
        raise ValueError(f"order must be 'row', 'grouped' or 'serpentine', got {order!r}")
    if order == "row":
        return [(i // clusters_n, i % clusters_n) for i in range(clusters_m * clusters_n)]
    out, full = [], clusters_m // group_m * group_m
    for g0 in range(0, clusters_m, group_m):
        rows = group_m if g0 < full else clusters_m - full
        cols = range(clusters_n)
        if order == "serpentine" and (g0 // group_m) % 2 == 1:
            cols = range(clusters_n - 1, -1, -1)
        out += [(g0 + i, j) for j in cols for i in range(rows)]
    return out


def wave_footprint(order: str, n: int, sms: int = 132, cluster=(2, 1), tile=(128, 256), itemsize: int = 2) -> dict:
    """What the first wave of an n x n x n persistent GEMM touches (a count, not a measurement):
    the ``sms // (cm * cn)`` clusters that start together take the first tiles of ``order``;
    returns the distinct A row panels (``tile[0]`` x K) and B panels (``tile[1]`` x K) among
    them and their bytes, the data that wave wants in L2 at once."""
    cm, cn = cluster
    if n % (tile[0] * cm) or n % (tile[1] * cn):
        raise ValueError(f"n = {n} must be a multiple of the cluster's tile ({tile[0] * cm} x {tile[1] * cn})")
    first = order_ref(order, n // (tile[0] * cm), n // (tile[1] * cn))[: sms // (cm * cn)]
    a_panels = {m * cm + i for m, _ in first for i in range(cm)}
    b_panels = {j * cn + k for _, j in first for k in range(cn)}
    return {"clusters": len(first), "a_panels": len(a_panels), "b_panels": len(b_panels),
            "bytes": (len(a_panels) * tile[0] + len(b_panels) * tile[1]) * n * itemsize}
