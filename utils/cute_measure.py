"""Day 5 · 04: the measurements behind the recorded results (Hopper only), in one harness
(``utils.bench.compare``: same inputs, outputs poisoned with NaN and checked first, L2 flushed,
median of 30).
"""
from __future__ import annotations

from . import bench

GEMM_STEPS = {"CuteDSL TMA+WGMMA, 1 stage": dict(stages=1),
              "CuteDSL TMA+WGMMA, 4 stages": dict(stages=4),
              "CuteDSL TMA+WGMMA, 4 stages, cluster 2x1": dict(stages=4, cluster=(2, 1)),
              "CuteDSL TMA+WGMMA, warp-specialized": dict(variant="ws", persistent=False),
              "CuteDSL TMA+WGMMA, warp-specialized persistent": dict(variant="ws", persistent=True),
              "CuteDSL cp.async+WGMMA, 4 stages": dict(variant="cpasync", stages=4)}
CUBLAS = "cuBLAS (torch.matmul)"


def run_step(a, b, c, variant: str = "tma", **kw):
    """One GEMM step by name of its kernel family: ``tma`` (``cute_gemm.run_gemm``), ``ws``
    (``cute_gemm_ws.run_ws``) or ``cpasync`` (``cute_gemm_cpasync.run_cpasync``)."""
    if variant == "tma":
        from .cute_gemm import run_gemm as fn
    elif variant == "ws":
        from .cute_gemm_ws import run_ws as fn
    elif variant == "cpasync":
        from .cute_gemm_cpasync import run_cpasync as fn
    else:
        raise ValueError(f"variant must be 'tma', 'ws' or 'cpasync', got {variant!r}")
    return fn(a, b, c, **kw)


def measure_tile_copy(M: int = 8192, N: int = 8192) -> list:
    """torch's device copy vs the one-tile-per-CTA TMA copy, GB/s of read + write."""
    import torch
    from .cute_tma import run_tile_copy
    x = bench.randn((M, N), torch.float16, "cuda")
    y = torch.empty_like(x)
    contenders = {"torch copy (memcpy)": lambda: y.copy_(x),
                  "CuteDSL TMA tile copy (128 x 64)": lambda: run_tile_copy(x, y)}

    def same(name, out, ref):
        assert torch.equal(out, x), f"{name} copied wrong values"
    return bench.compare(lambda: (), contenders, reference="torch copy (memcpy)", metric="GB/s",
                         amount=2 * M * N * 2, shape=(M, N), dtype="float16", check=same,
                         reset=lambda: y.fill_(float("nan")))


def measure_broadcast(M: int = 4096, N: int = 4096, clusters=(2, 4)) -> list:
    """Copy an M x N tile set into R replicas, with and without multicast. GB/s counts the bytes
    written plus the source once; ``l2_bytes_read`` is what the CTAs asked L2/HBM for."""
    import torch
    from .cute_tma import l2_bytes_read, run_broadcast
    rows = []
    for R in clusters:
        x = bench.randn((M, N), torch.float16, "cuda")
        y = torch.empty(R * M, N, dtype=torch.float16, device="cuda")
        names = {False: f"cluster of {R}, every CTA loads the tile", True: f"cluster of {R}, multicast"}
        contenders = {names[m]: (lambda m=m: run_broadcast(x, y, R, multicast=m)) for m in (False, True)}

        def same(name, out, ref):
            assert torch.equal(out, x.repeat(R, 1)), f"{name} wrote wrong values"
        got = bench.compare(lambda: (), contenders, reference=names[False], metric="GB/s",
                            amount=(R + 1) * M * N * 2, shape=(M, N), dtype="float16", check=same,
                            reset=lambda: y.fill_(float("nan")))
        for row in got:
            row["l2_bytes_read"] = l2_bytes_read((M, N), 2, R, row["name"] == names[True])
            row["cluster"] = R
        rows += got
    return rows


def measure_gemm(sizes=(4096, 8192), dtypes=("float16", "bfloat16"), steps=None) -> list:
    """cuBLAS vs the course's TMA + WGMMA GEMM steps, TFLOP/s = 2MNK / time."""
    import torch
    rows = []
    for dt in dtypes:
        tdt = getattr(torch, dt)
        for n in sizes:
            a, b = bench.randn((n, n), tdt, "cuda", seed=0), bench.randn((n, n), tdt, "cuda", seed=1)
            c = torch.empty(n, n, dtype=tdt, device="cuda")
            want = a @ b.T
            contenders = {CUBLAS: lambda: torch.matmul(a, b.T)}
            for name, kw in (steps or GEMM_STEPS).items():
                contenders[name] = lambda kw=kw: run_step(a, b, c, **kw)

            def close(name, out, ref):
                err = (out.float() - want.float()).abs().max().item()
                assert err <= 0.02 * want.float().abs().max().item(), f"{name}: max error {err}"
            rows += bench.compare(lambda: (), contenders, reference=CUBLAS, metric="TFLOP/s",
                                  amount=2 * n ** 3, shape=(n, n, n), dtype=dt, check=close,
                                  reset=lambda: c.fill_(float("nan")))
    return rows
