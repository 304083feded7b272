"""Day 5 · 04: the measurements behind the recorded results (Hopper only), in one harness
(``utils.core.bench.compare``: same inputs, outputs poisoned with NaN and checked first, L2 flushed,
sustained interleaved timing, the median ratio over rounds with its spread).
"""
from __future__ import annotations

from ..core import bench

GEMM_STEPS = {"CuteDSL TMA+WGMMA, 1 stage": dict(stages=1),
              "CuteDSL TMA+WGMMA, 4 stages": dict(stages=4),
              "CuteDSL TMA+WGMMA, 4 stages, cluster 2x1": dict(stages=4, cluster=(2, 1)),
              "CuteDSL TMA+WGMMA, warp-specialized": dict(variant="ws", persistent=False),
              "CuteDSL TMA+WGMMA, warp-specialized persistent": dict(variant="ws", persistent=True),
              "CuteDSL cp.async+WGMMA, 4 stages": dict(variant="cpasync", stages=4)}
CUBLAS = "cuBLAS (torch.matmul)"
# A live run by default (utils.core.results.full_run false): 8192³ fp16 only, about 20 s on an H100
QUICK = dict(sizes=(8192,), dtypes=("float16",))


def run_step(a, b, c, variant: str = "tma", **kw):
    """One GEMM step by name of its kernel family: ``tma`` (``cute_gemm.run_gemm``), ``ws``
    (``cute_gemm_ws.run_ws``) or ``cpasync`` (``cute_gemm_cpasync.run_cpasync``)."""
    if variant == "tma":
        from .gemm import run_gemm as fn
    elif variant == "ws":
        from .gemm_ws import run_ws as fn
    elif variant == "cpasync":
        from .gemm_cpasync import run_cpasync as fn
    else:
        raise ValueError(f"variant must be 'tma', 'ws' or 'cpasync', got {variant!r}")
    return fn(a, b, c, **kw)


TILE_COPIES = ("CuteDSL TMA tile copy (128 x 64)", "CuteDSL TMA tile copy (128 x 64), row-order tiles",
               "raw CUDA TMA tile copy (128 x 64)", "raw CUDA TMA tile copy (64 x 128)")


BURST = " [burst timing]"


def measure_tile_copy(M: int = 8192, N: int = 8192) -> list:
    """torch's device copy vs one-tile-per-CTA TMA copies, GB/s of read + write: the CuteDSL
    kernel (its grid walks the tiles down the columns), the same with row-order tiles (only the
    order differs), day 5 · 02's raw CUDA kernel (row order) with the SAME box (128 rows x 64
    columns), then the raw kernel with notebook 02's box (64 x 128: only the box differs).
    Every row also carries ``host_us`` (``host_us_per_call``); the same contenders are timed a
    second time with ``timing="burst"`` (a GPU spin before each call hides the host's launch work;
    names end in ``BURST``), the one change that tells host overhead from kernel time.
    """
    import cupy as cp
    import torch
    from .tma import TILE, run_tile_copy
    from ..tma import runtime
    x = bench.randn((M, N), torch.float16, "cuda")
    y = torch.empty_like(x)
    def raw_copy(box):                      # descriptors encoded once; each call only launches
        launch = runtime.tiles_launcher(cp.asarray(x), cp.asarray(y), box_shape=box)[0]
        return lambda: (launch(), y)[1]     # returns the output, as compare's check expects
    contenders = {"torch copy (memcpy)": lambda: y.copy_(x),
                  TILE_COPIES[0]: lambda: run_tile_copy(x, y),
                  TILE_COPIES[1]: lambda: run_tile_copy(x, y, row_order=True),
                  TILE_COPIES[2]: raw_copy(TILE), TILE_COPIES[3]: raw_copy(TILE[::-1])}

    def same(name, out, ref):
        assert torch.equal(out, x), f"{name} copied wrong values"
    rows = []
    for suffix, timing in (("", "sustained"), (BURST, "burst")):
        rows += bench.compare(lambda: (), {n + suffix: fn for n, fn in contenders.items()},
                              reference="torch copy (memcpy)" + suffix, metric="GB/s",
                              amount=2 * M * N * 2, shape=(M, N), dtype="float16", check=same,
                              reset=lambda: y.fill_(float("nan")), timing=timing)
    host = {n: bench.host_us_per_call(fn) for n, fn in contenders.items()}
    for r in rows:
        r["host_us"] = host[r["name"].removesuffix(BURST)]
    return rows


def measure_broadcast(M: int = 4096, N: int = 4096, clusters=(2, 4)) -> list:
    """Copy an M x N tile set into R replicas, with and without multicast. GB/s counts the bytes
    written plus the source once; ``l2_bytes_read`` is what the CTAs asked L2/HBM for. Each
    contender is timed as a CUDA-graph replay (``launch``; ``host_us_per_call``: a direct call's
    host cost, about what the copy takes; the H100's 2026-11-27 recording called them directly,
    and its rows read ``host_bound``)."""
    import torch
    from .tma import l2_bytes_read, run_broadcast
    rows = []
    for R in clusters:
        x = bench.randn((M, N), torch.float16, "cuda")
        y = torch.empty(R * M, N, dtype=torch.float16, device="cuda")
        names = {False: f"cluster of {R}, every CTA loads the tile", True: f"cluster of {R}, multicast"}
        contenders = {names[m]: (lambda m=m: run_broadcast(x, y, R, multicast=m)) for m in (False, True)}

        def same(name, out, ref):
            assert torch.equal(out, x.repeat(R, 1)), f"{name} wrote wrong values"
        got = bench.compare_replayed(contenders, reference=names[False], metric="GB/s",   # a launch from
                                     amount=(R + 1) * M * N * 2, shape=(M, N), dtype="float16",  # Python costs
                                     check=same, reset=lambda: y.fill_(float("nan")))       # more than a copy
        for row in got:
            row["l2_bytes_read"] = l2_bytes_read((M, N), 2, R, row["name"] == names[True])
            row["cluster"] = R
        rows += got
    return rows


TRAFFIC = {f"counters: cluster of {R}, {w}": (R, w == "multicast") for R in (2, 4)
           for w in ("every CTA loads the tile", "multicast")}


def broadcast_once(M: int = 4096, N: int = 4096) -> None:
    """Launch the broadcast kernel once per entry of ``TRAFFIC``, in order (the target that
    ``measure_multicast_traffic`` profiles; compiling happens before each launch)."""
    import torch
    from .tma import run_broadcast
    x = bench.randn((M, N), torch.float16, "cuda")
    for R, mc in TRAFFIC.values():
        y = torch.empty(R * M, N, dtype=torch.float16, device="cuda")
        run_broadcast(x, y, R, multicast=mc)
        torch.cuda.synchronize()
        assert torch.equal(y, x.repeat(R, 1)), f"broadcast R={R} multicast={mc} wrote wrong values"


def profile_broadcast(metrics, M: int = 4096, N: int = 4096) -> list:
    """``broadcast_once`` in a fresh process under ncu: one dict of ``metrics`` per ``TRAFFIC``
    launch, in order."""
    import pathlib
    import sys
    from ..core import ncu
    root = pathlib.Path(__file__).resolve().parents[2]
    kernels = ncu.profile([sys.executable, "-c", f"from utils.cute_dsl import measure; "
                           f"measure.broadcast_once({M}, {N})"], "broadcast_kernel", metrics=metrics, cwd=root)
    if len(kernels) != len(TRAFFIC):
        raise RuntimeError(f"expected {len(TRAFFIC)} broadcast launches, ncu saw {len(kernels)}")
    return kernels


def measure_multicast_traffic(M: int = 4096, N: int = 4096) -> list:
    """Hardware counters (ncu) of the broadcast kernel: sectors read at L2 and bytes read from /
    written to DRAM, for every CTA loading its tile vs multicast, clusters of 2 and 4. One row per
    launch, ``value`` = bytes read at L2, ratio against the same cluster without multicast."""
    from ..core import ncu
    from .tma import l2_bytes_read
    kernels = profile_broadcast(ncu.L2_DRAM, M, N)
    rows = []
    for (name, (R, mc)), k in zip(TRAFFIC.items(), kernels):
        rows.append(dict(name=name, metric="count", value=k["lts__t_sectors_op_read.sum"] * ncu.SECTOR_BYTES,
                         unit="bytes read at L2", cluster=R, multicast=mc, shape=[M, N], dtype="float16",
                         l2_tex_read_bytes=k["lts__t_sectors_srcunit_tex_op_read.sum"] * ncu.SECTOR_BYTES,
                         dram_read_bytes=k["dram__bytes_read.sum"], dram_write_bytes=k["dram__bytes_write.sum"],
                         requested_bytes=l2_bytes_read((M, N), 2, R, mc), kernel=k["kernel"]))
    for r in rows:
        ref = next(q for q in rows if q["cluster"] == r["cluster"] and not q["multicast"])
        r.update(reference=ref["name"], reference_value=ref["value"], ratio=r["value"] / ref["value"])
    return rows


def measure_gemm(sizes=(4096, 8192), dtypes=("float16", "bfloat16"), steps=None) -> list:
    """cuBLAS vs the course's TMA + WGMMA GEMM steps, TFLOP/s = 2MNK / time, each contender timed as
    a CUDA-graph replay (``bench.graphed``; rows carry ``launch`` and ``host_us_per_call``, what one
    direct call costs the host: a CuteDSL launch from Python costs about as long as a 4096³ GEMM)."""
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
            rows += bench.compare_replayed(contenders, reference=CUBLAS, metric="TFLOP/s", amount=2 * n ** 3,
                                           shape=(n, n, n), dtype=dt, check=close,
                                           reset=lambda: c.fill_(float("nan")), do_bench=True)
    return rows
