"""Day 5 · 05: a copy at memcpy speed (Hopper only): torch's device copy against the pipelined
TMA copies of ``utils/tma/tma_kernels.cu``, one change at a time.

``COPIES`` lists the contenders in ladder order: notebook 02's 2-D tensor-map copy; the same
pipeline with 1-D bulk copies (``cp.async.bulk``, no tensor map) and the same bytes in flight per
SM; then bigger chunks and more stages; last, the 32 KiB round-robin copy with one change: each
CTA copies one contiguous run of chunks instead of every grid-th chunk. Every output is poisoned
and compared exactly with the input before timing; GB/s counts bytes read + written.
"""
from __future__ import annotations

from ..core import bench

STEM = "05_gemm_ladder_copy"   # its own results file, next to 05_gemm_ladder.json
MEMCPY = "torch copy (memcpy)"
TMA_2D = "TMA 2-D, 32 x 256 boxes (16 KiB), 4 stages, 2 CTAs/SM"
SPAN = "1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM, one span per CTA"   # vs round robin: one change
COPIES = {
    TMA_2D: dict(kind="2d", box_shape=(32, 256), stages=4, ctas_per_sm=2),
    "1-D bulk, 16 KiB chunks, 4 stages, 2 CTAs/SM": dict(kind="bulk", chunk_bytes=16384, stages=4, ctas_per_sm=2),
    "1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM": dict(kind="bulk", chunk_bytes=32768, stages=4, ctas_per_sm=1),
    "1-D bulk, 32 KiB chunks, 6 stages, 1 CTA/SM": dict(kind="bulk", chunk_bytes=32768, stages=6, ctas_per_sm=1),
    "1-D bulk, 64 KiB chunks, 3 stages, 1 CTA/SM": dict(kind="bulk", chunk_bytes=65536, stages=3, ctas_per_sm=1),
    SPAN: dict(kind="bulk", chunk_bytes=32768, stages=4, ctas_per_sm=1, span=True),
}


def in_flight_per_sm(cfg: dict, itemsize: int = 2) -> int:
    """Bytes a configuration keeps in flight per SM (stages x buffer x CTAs per SM)."""
    buf = cfg["chunk_bytes"] if cfg["kind"] == "bulk" else cfg["box_shape"][0] * cfg["box_shape"][1] * itemsize
    return cfg["stages"] * buf * cfg["ctas_per_sm"]


def launcher(x, y, cfg: dict):
    """``launch()`` for one entry of ``COPIES`` on CuPy arrays ``x`` -> ``y`` (descriptors encoded
    once), and the status word its bounded waits write."""
    from ..tma import runtime
    kw = {k: v for k, v in cfg.items() if k != "kind"}
    if cfg["kind"] == "2d":
        return runtime.pipelined_launcher(x, y, **kw)
    return runtime.bulk_launcher(x, y, **kw)


def measure_copies(M: int = 8192, N: int = 8192, reps: int = 50) -> list:
    """Rows (``part="copy"``, GB/s of read + write) for torch's copy and every entry of ``COPIES``."""
    import cupy as cp
    import torch
    x = bench.randn((M, N), torch.float16, "cuda")
    y = torch.empty_like(x)
    cx, cy = cp.asarray(x), cp.asarray(y)
    contenders, statuses = {MEMCPY: lambda: y.copy_(x)}, {}
    for name, cfg in COPIES.items():
        launch, statuses[name] = launcher(cx, cy, cfg)
        contenders[name] = lambda launch=launch: (launch(), y)[1]

    def same(name, out, ref):
        torch.cuda.synchronize()
        if name in statuses and int(statuses[name].get()[0]):
            raise RuntimeError(f"{name}: a pipeline stage never completed (bounded wait fired)")
        assert torch.equal(out, x), f"{name} copied wrong values"
    rows = bench.compare(lambda: (), contenders, reference=MEMCPY, metric="GB/s", amount=2 * M * N * 2,
                         shape=(M, N), dtype="float16", check=same, reset=lambda: y.fill_(float("nan")), reps=reps)
    for r in rows:
        r["part"] = "copy"
        if r["name"] in COPIES:
            r["in_flight_per_sm"] = in_flight_per_sm(COPIES[r["name"]])
    return rows
