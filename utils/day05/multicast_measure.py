"""Day 5 · 05, §7: where cluster multicast pays and where it costs (Hopper only).

Two experiments, one change at a time:

* **The feed** (``utils/tma/feed.py``): a cluster of R CTAs reads the same chunks, each CTA
  loading them itself; or loading them itself but freeing each buffer cluster-wide as multicast
  must (the coupling alone), first with cluster-scope release arrives, then with the plain ones
  CUTLASS uses; or through multicast (L2 serves each chunk once). Sources that stay
  in L2 (16 MiB) and that come from DRAM (1 GiB). GB/s counts the bytes delivered to shared memory.
* **The intake** and **out of step** (``intake_measure``): the feed with consumers that barely
  read, so each SM only receives; and with the CTAs of a cluster out of step, where multicast pays.
* **The GEMM**: ``TmaGemm`` with 128 x 128 and 128 x 256 tiles in clusters (2, 1) and (1, 2),
  with and without multicast (same cluster, same tile order: only the loads change), and the
  (1, 1) kernel; sustained timing against cuBLAS, then the L2 counters under ncu.
* **The persistent GEMM** (``persistent_names``, its own results file ``PERSISTENT_STEM``): rung 5 of
  the ladder, the same kernel in a 2 x 1 cluster without multicast, and rung 6 (with it): rung 6's
  two changes one at a time, timed and counted.
"""
from __future__ import annotations

from ..core import bench
from . import intake_measure
from .intake_measure import L2_PCT, STEM  # noqa: F401  (STEM: this section's results file)

REGIMES = {"L2-resident source (16 MiB)": 16 << 20, "DRAM source (1 GiB)": 1 << 30}
FEED = dict(chunk_bytes=16384, stages=4, per_cta=32)
FEED_MODES = ("each loads", "cluster release, fenced arrive", "cluster release", "multicast")   # one change each
GEMM_TILES = ((128, 128, 64), (128, 256, 64))
GEMM_CLUSTERS = ((2, 1), (1, 2))


def feed_name(R: int, mode: str) -> str:
    return f"cluster of {R}, {mode}"


def gemm_variants() -> dict:
    """``{name: (tile, cluster, multicast)}``: per tile the (1, 1) kernel, then each cluster
    without and with multicast."""
    out = {}
    for t in GEMM_TILES:
        out[gemm_name(t, (1, 1), False)] = (t, (1, 1), False)
        for c in GEMM_CLUSTERS:
            for mc in (False, True):
                out[gemm_name(t, c, mc)] = (t, c, mc)
    return out


def gemm_name(tile, cluster, multicast: bool) -> str:
    what = "" if cluster == (1, 1) else (", multicast" if multicast else ", each CTA loads")
    return f"{tile[0]}x{tile[1]} tile, cluster {cluster[0]}x{cluster[1]}{what}"


def measure_feed(clusters=(2, 4), reps: int = 50) -> list:
    """Rows (``part="feed"``, GB/s delivered to shared memory), per regime and cluster size R:
    the four modes, ratio against "each loads" of the same R; each output checked first."""
    import cupy as cp
    import torch
    rows = []
    for regime, nbytes in REGIMES.items():
        src = cp.asarray(bench.randn((nbytes // 2,), torch.float16, "cuda"))
        for R in clusters:
            got = intake_measure.compare_modes(src, R, FEED_MODES, FEED, lambda m, R=R: feed_name(R, m), reps)
            for r in got:
                r.update(part="feed", regime=regime)
            rows += got
    return rows


def run_gemm(a, b, c, name: str):
    """c = a @ b.T with GEMM variant ``name`` (torch CUDA tensors, a: M x K, b: N x K)."""
    from ..cute_dsl.gemm import TmaGemm, operands, run_cached
    tile, cluster, mc = gemm_variants()[name]
    key = ("multicast", name, str(a.dtype), tuple(a.shape), tuple(b.shape))
    run_cached(key, lambda: TmaGemm(None, cluster, tile=tile, multicast=mc), operands(a, b, c))
    return c


def measure_gemm(n: int = 8192, dtype: str = "float16", reps: int = 50) -> list:
    """Rows (``part="gemm multicast"``, TFLOP/s) for cuBLAS and every ``gemm_variants`` entry."""
    from .ladder_measure import measure_ladder
    return measure_ladder((n,), (dtype,), names=list(gemm_variants()), reps=reps, run=run_gemm,
                          part="gemm multicast")


def gemm_once(n: int = 8192) -> None:
    """The profiled process: each ``gemm_variants`` kernel once on host-made randn inputs, then checked."""
    from .ladder_measure import launch_each
    launch_each(n, "float16", list(gemm_variants()), run_gemm)


def measure_gemm_counters(n: int = 8192) -> list:
    """One row per ``gemm_variants`` kernel (``part="gemm multicast counters"``; ``value`` = ms under
    ncu): the ladder's counters plus how busy L2 is (``l2_busy_pct``); ratio against the (1, 1) kernel
    of the same tile."""
    from ..cute_dsl import counters
    from .ladder_measure import profile_launches
    names = list(gemm_variants())
    kernels = profile_launches(f"from utils.day05 import multicast_measure as m; m.gemm_once({n})", names,
                               (*counters.METRICS, L2_PCT))
    rows = [counters.gemm_row(name, k, n, "float16", part="gemm multicast counters", l2_busy_pct=k[L2_PCT])
            for name, k in zip(names, kernels)]
    for r in rows:
        tile, _, _ = gemm_variants()[r["name"]]
        base = next(q for q in rows if q["name"] == gemm_name(tile, (1, 1), False))
        r.update(reference=base["name"], reference_value=base["value"], ratio=base["value"] / r["value"])
    return rows


PERSISTENT_PART = "persistent cluster"
PERSISTENT_STEM = "05_gemm_ladder_persistent"


def persistent_names() -> list:
    """Rung 5, rung 5 in a 2 x 1 cluster with every CTA loading (one change), rung 6 (multicast: one more)."""
    from ..cute_dsl import ladder
    return [list(ladder.STEPS)[4], ladder.CLUSTER_ONLY, ladder.ORDER_BASE]


def measure_persistent(n: int = 8192, dtype: str = "float16", reps: int = 50) -> list:
    """Rows (``part=PERSISTENT_PART``, TFLOP/s) for cuBLAS and ``persistent_names()``, interleaved."""
    from .ladder_measure import measure_ladder
    return measure_ladder((n,), (dtype,), names=persistent_names(), reps=reps, part=PERSISTENT_PART)


def persistent_once(n: int = 8192) -> None:
    """The profiled process: each ``persistent_names()`` kernel once on host-made randn inputs, then checked."""
    from ..cute_dsl import ladder
    from .ladder_measure import launch_each
    launch_each(n, "float16", persistent_names(), ladder.run)


def measure_persistent_counters(n: int = 8192) -> list:
    """One row per ``persistent_names()`` kernel under ncu (``part=PERSISTENT_PART + " counters"``;
    ``value`` = ms): the ladder's counters (L2 reads, merged by hardware, served by multicast) and
    how busy L2 is; ratio against rung 5."""
    from ..cute_dsl import counters
    from .ladder_measure import profile_launches
    names = persistent_names()
    kernels = profile_launches(f"from utils.day05 import multicast_measure as m; m.persistent_once({n})", names,
                               (*counters.METRICS, L2_PCT))
    rows = [counters.gemm_row(name, k, n, "float16", part=f"{PERSISTENT_PART} counters", l2_busy_pct=k[L2_PCT])
            for name, k in zip(names, kernels)]
    for r in rows:
        r.update(reference=rows[0]["name"], reference_value=rows[0]["value"], ratio=rows[0]["value"] / r["value"])
    return rows


def measure_persistent_all(n: int = 8192) -> list:
    """Everything ``PERSISTENT_STEM`` records: the three kernels timed, then under ncu."""
    return measure_persistent(n) + measure_persistent_counters(n)


def measure() -> list:
    """Everything §7 records in ``STEM``."""
    return measure_feed() + intake_measure.measure_all() + measure_gemm() + measure_gemm_counters()


def plot(feed_rows: list, gemm_rows: list, label: str = ""):
    """Left: the feed's GB/s per mode, per regime and cluster size. Right: the GEMM variants'
    TFLOP/s (cuBLAS dashed). Draws recorded or fresh rows."""
    import matplotlib.pyplot as plt
    import numpy as np
    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(13, 4.2), gridspec_kw={"width_ratios": [1, 1.4]})
    groups = sorted({(r["regime"], r["R"]) for r in feed_rows}, key=lambda g: (g[0] not in REGIMES, g))
    x = np.arange(len(groups))
    for i, mode in enumerate(FEED_MODES):
        vals = [next((r["value"] for r in feed_rows if (r["regime"], r["R"]) == g and r["mode"] == mode), np.nan)
                for g in groups]
        w = 0.8 / len(FEED_MODES)
        ax1.bar(x + (i - (len(FEED_MODES) - 1) / 2) * w, np.array(vals) / 1e3, w, label=mode)
    ax1.set_xticks(x, [f"{g[0].split(' (')[0]}\nR = {g[1]}" for g in groups], fontsize=8)
    ax1.set_ylabel("TB/s delivered to shared memory")
    ax1.set_title("the feed: same bytes delivered, L2 reads / R with multicast", fontsize=9)
    ax1.legend(fontsize=8)
    names = [n for n in gemm_variants() if any(r["name"] == n for r in gemm_rows)]
    vals = [next(r["value"] for r in gemm_rows if r["name"] == n) for n in names]
    colors = ["tab:gray" if "cluster 1x1" in n else "tab:orange" if "multicast" in n else "tab:blue" for n in names]
    ax2.barh(np.arange(len(names)), vals, color=colors)
    ax2.set_yticks(np.arange(len(names)), names, fontsize=7)
    ax2.invert_yaxis()
    cublas = [r["reference_value"] for r in gemm_rows][:1]
    if cublas:
        ax2.axvline(cublas[0], ls="--", color="k", lw=1, label="cuBLAS")
        ax2.legend(fontsize=8)
    ax2.set_xlabel("TFLOP/s (blue: each CTA loads, orange: multicast)")
    ax2.set_title(f"the GEMM: one change (multicast) per pair  {label}", fontsize=9)
    fig.tight_layout()
    return fig
