"""Day 5 · 05: a copy at memcpy speed (Hopper only): torch's device copy against the pipelined
TMA copies of ``utils/tma/tma_kernels.cu``, one change at a time.

``COPIES`` lists the contenders in ladder order: notebook 02's 2-D tensor-map copy; the same
pipeline with 1-D bulk copies (``cp.async.bulk``, no tensor map) and the same bytes in flight per
SM; then bigger chunks and more stages; then the 32 KiB round-robin copy with one change: each
CTA copies one contiguous run of chunks instead of every grid-th chunk. Then the 6-stage loop's
stages spread over 6 CTAs per SM, one chunk at a time each, and the same with each CTA taking the
next untaken chunk from a counter instead of a fixed round robin. Last, the copies with no
loop: one tile or chunk per CTA (load, wait, store, exit), as many CTAs resident per SM as their
shared memory allows (the occupancy calculator's count is recorded with each row), and the best of
them with an L2 evict_first cache hint on its loads, or on its stores. A second call
of torch's copy (``MEMCPY_AGAIN``) shows what a ratio reads when nothing changed. Every output
is poisoned and compared exactly with the input before timing; GB/s counts bytes read + written.
``SETTINGS`` times the same contenders in other ways, one change each from the default: the
harness's L2 flush done by reading its 256 MiB buffer instead of writing it, or not done at all;
(``measure_order``) the odd rounds' turns reversed; and (``measure_big``, its own results file)
1 GiB copied instead of 128 MiB, turns fixed and alternating.

``measure_counters`` runs some of the copies once each under Nsight Compute, next to a kernel
that only reads the source and one that only writes the destination: how busy DRAM was, and the
bytes it read and wrote (torch's copy launches no kernel, so ncu cannot see it).
``measure_after_flush`` keeps the caches under ncu and launches a loop/no-loop pair right after
each kind of flush: the DRAM bytes a copy writes while it runs say whether the flush's written
lines reach DRAM inside the next call.
"""
from __future__ import annotations

from ..core import bench
from ..core.args import positive
from ..core.ncu import DRAM_PCT
from ..tma.rules import elem_size

STEM = "05_gemm_ladder_copy"   # its own results file, next to 05_gemm_ladder.json
MEMCPY = "torch copy (memcpy)"
MEMCPY_AGAIN = "torch copy again (nothing changed)"   # the null result: memcpy against itself
TMA_2D = "TMA 2-D, 32 x 256 boxes (16 KiB), 4 stages, 2 CTAs/SM"
SPAN = "1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM, one span per CTA"   # vs round robin: one change
LOOP_32K = "1-D bulk, 32 KiB chunks, 6 stages, 1 CTA/SM"
SERIAL = "1-D bulk, 32 KiB chunks, one at a time, 6 CTAs/SM"          # vs LOOP_32K: stages -> CTAs
COUNTER = "1-D bulk, 32 KiB chunks, one at a time, 6 CTAs/SM, from a counter"   # vs SERIAL: one change
NO_LOOP_32K = "1-D bulk, 32 KiB chunks, one per CTA (no loop)"      # vs LOOP_32K: one change
NO_LOOP_8K = "1-D bulk, 8 KiB chunks, one per CTA (no loop)"
NO_LOOP_2K = "1-D bulk, 2 KiB chunks, one per CTA (no loop)"
TILE_2D = "TMA 2-D, 32 x 256 boxes (16 KiB), one per CTA (no loop)"  # vs TMA_2D: one change
EF_LOADS = "1-D bulk, 2 KiB chunks, one per CTA (no loop), loads evict-first"    # vs NO_LOOP_2K: one change
EF_STORES = "1-D bulk, 2 KiB chunks, one per CTA (no loop), stores evict-first"  # vs NO_LOOP_2K: one change
COPIES = {
    TMA_2D: dict(kind="2d", box_shape=(32, 256), stages=4, ctas_per_sm=2),
    "1-D bulk, 16 KiB chunks, 4 stages, 2 CTAs/SM": dict(kind="bulk", chunk_bytes=16384, stages=4, ctas_per_sm=2),
    "1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM": dict(kind="bulk", chunk_bytes=32768, stages=4, ctas_per_sm=1),
    LOOP_32K: dict(kind="bulk", chunk_bytes=32768, stages=6, ctas_per_sm=1),
    "1-D bulk, 64 KiB chunks, 3 stages, 1 CTA/SM": dict(kind="bulk", chunk_bytes=65536, stages=3, ctas_per_sm=1),
    SPAN: dict(kind="bulk", chunk_bytes=32768, stages=4, ctas_per_sm=1, span=True),
    SERIAL: dict(kind="serial", chunk_bytes=32768, ctas_per_sm=6, dynamic=False),
    COUNTER: dict(kind="serial", chunk_bytes=32768, ctas_per_sm=6, dynamic=True),
    TILE_2D: dict(kind="tile", box_shape=(32, 256)),
    NO_LOOP_32K: dict(kind="chunk", chunk_bytes=32768),
    NO_LOOP_8K: dict(kind="chunk", chunk_bytes=8192),
    NO_LOOP_2K: dict(kind="chunk", chunk_bytes=2048),
    EF_LOADS: dict(kind="chunk", chunk_bytes=2048, evict_first=("loads",)),
    EF_STORES: dict(kind="chunk", chunk_bytes=2048, evict_first=("stores",)),
}
ONE_CHANGE = (   # (contender, the one it changes one thing of)
    (SPAN, "1-D bulk, 32 KiB chunks, 4 stages, 1 CTA/SM"),   # which chunks a CTA takes
    (SERIAL, LOOP_32K),                                      # 6 stages in 1 CTA -> 1 chunk in each of 6 CTAs
    (COUNTER, SERIAL),                                       # fixed round robin -> the next untaken chunk
    (NO_LOOP_32K, LOOP_32K),                                 # the loop: same chunks, same bytes in flight
    (TILE_2D, TMA_2D),                                       # the loop, with a tensor map
    (EF_LOADS, NO_LOOP_2K),                                  # an L2 evict_first hint on the loads
    (EF_STORES, NO_LOOP_2K),                                 # ... or on the stores
)
ONE_PER_CTA = ("tile", "chunk")   # the kinds with no loop: one tile or chunk per CTA
UNFLUSHED = "copy, L2 not flushed"   # timed without the harness's L2 flush: one change
READ_FLUSHED = "copy, L2 flushed by a read"   # the flush reads its buffer instead of writing it: one change
ALTERNATE = "copy, turns alternating"   # odd rounds take their turns in reverse (bench.schedule): one change
BIG = "copy, 1 GiB"                     # the same contenders on a source 8x larger: one change
BIG_ALTERNATE = "copy, 1 GiB, turns alternating"
BIG_STEM = "05_gemm_ladder_copy_1gib"   # their own results file
BIG_SHAPE = (16384, 32768)              # fp16: 1 GiB, against the 256 MiB flush and 50 MB of L2
COUNTERS = "copy counters"           # the part measured under ncu
SETTINGS = {   # part -> (suffix of its row names, how the harness flushes L2 before each call)
    "copy": ("", dict(flush_l2=True, flush_by="write")),
    UNFLUSHED: (", L2 not flushed", dict(flush_l2=False)),
    READ_FLUSHED: (", L2 flushed by a read", dict(flush_l2=True, flush_by="read")),
    ALTERNATE: (", turns alternating", dict(flush_l2=True, flush_by="write", order="alternate")),
    BIG: (", 1 GiB", dict(flush_l2=True, flush_by="write")),
    BIG_ALTERNATE: (", 1 GiB, turns alternating", dict(flush_l2=True, flush_by="write", order="alternate")),
}
READ_ONLY = "read only: torch sum of the source"          # under ncu, next to the copies
WRITE_ONLY = "write only: torch fill of the destination"
COUNTED = (LOOP_32K, NO_LOOP_32K, TMA_2D, TILE_2D, NO_LOOP_2K)   # once each under ncu: two one-change pairs, the best
COUNTER_METRICS = ("gpu__time_duration.sum", DRAM_PCT, "dram__bytes_read.sum", "dram__bytes_write.sum")
AFTER_FLUSH = "copy after a flush, caches kept"   # under ncu --cache-control none: what the flush leaves
AFTER_FLUSH_COPIES = (LOOP_32K, NO_LOOP_32K)       # the one-change pair whose gap moved with the flush
AFTER_FLUSH_ROUNDS = 3                             # each (copy, flush) launched this many times, interleaved
KERNELS = {"2d": "tma_copy_pipelined", "bulk": "bulk_copy_pipelined", "serial": "bulk_copy_serial",
           "tile": "tma_copy_tile", "chunk": "bulk_copy_chunk"}


def buffer_bytes(cfg: dict, itemsize: int = 2) -> int:
    """Bytes of one shared-memory buffer: a chunk, or a box of ``itemsize``-byte elements."""
    elem_size(itemsize, "itemsize")
    return cfg["chunk_bytes"] if "chunk_bytes" in cfg else cfg["box_shape"][0] * cfg["box_shape"][1] * itemsize


def in_flight_per_sm(cfg: dict, itemsize: int = 2, resident: int | None = None) -> int:
    """Bytes a configuration keeps in flight per SM: stages x buffer x CTAs per SM for the loops;
    buffer x ``resident`` (CTAs an SM holds at once, measured on the GPU) for one-per-CTA copies."""
    if cfg["kind"] in ONE_PER_CTA:
        positive("resident", resident, " (a one-per-CTA copy keeps `resident` buffers per SM: pass the CTAs "
                 "an SM holds)")
        return buffer_bytes(cfg, itemsize) * resident
    return cfg.get("stages", 1) * buffer_bytes(cfg, itemsize) * cfg["ctas_per_sm"]


def launcher(x, y, cfg: dict):
    """``launch()`` for one entry of ``COPIES`` on CuPy arrays ``x`` -> ``y`` (descriptors encoded
    once), and the status word its bounded waits write."""
    from ..tma import runtime
    kw = {k: v for k, v in cfg.items() if k != "kind"}
    return {"2d": runtime.pipelined_launcher, "bulk": runtime.bulk_launcher, "serial": runtime.serial_launcher,
            "tile": runtime.tiles_launcher, "chunk": runtime.chunk_launcher}[cfg["kind"]](x, y, **kw)


def resident(cfg: dict, itemsize: int = 2) -> int:
    """CTAs of a one-per-CTA copy that one SM holds at once (the CUDA occupancy calculator)."""
    from ..tma import runtime
    return runtime.resident_ctas(KERNELS[cfg["kind"]], buffer_bytes(cfg, itemsize) + runtime.ALIGN_SLACK)


def ctas_per_sm(name: str, cfg: dict) -> int:
    """The CTAs per SM contender ``name`` runs with: for a one-per-CTA copy, as many as fit (the
    occupancy calculator); otherwise the configured count, which for a serial copy must all fit."""
    if cfg["kind"] in ONE_PER_CTA:
        return resident(cfg)
    if cfg["kind"] == "serial" and (fit := resident(cfg)) < cfg["ctas_per_sm"]:
        raise RuntimeError(f"{name}: only {fit} of its {cfg['ctas_per_sm']} CTAs fit on an SM at once")
    return cfg["ctas_per_sm"]


def copy_rows(rows: list, label: str) -> tuple[list, str]:
    """The ``part="copy"`` rows holding every contender: ``rows`` if they do, else those of the
    most recent recording that does (labelled as such)."""
    from ..core import results
    want = {MEMCPY, MEMCPY_AGAIN, *COPIES}
    got, label = results.rows_or_latest(STEM, rows, label, lambda rs: want <= {r["name"] for r in rs},
                                        "every copy contender", "copy contenders")
    return [r for r in got if r.get("part") == "copy"], label


def measure_copies(M: int = 8192, N: int = 8192, reps: int = 100, part: str = "copy") -> list:
    """Rows (``part``, GB/s of read + write) for torch's copy (twice: the second is the null result)
    and every entry of ``COPIES``, with the L2 flush of ``SETTINGS[part]``. Outside the "copy" part
    the row names end in that setting's suffix, and ``contender`` holds the name without it."""
    if part not in SETTINGS:
        raise ValueError(f"part must be one of {list(SETTINGS)}, got {part!r}")
    suffix, flush = SETTINGS[part]
    import cupy as cp
    import torch
    x = bench.randn((M, N), torch.float16, "cuda")
    y = torch.empty_like(x)
    cx, cy = cp.asarray(x), cp.asarray(y)
    contenders, statuses = {MEMCPY: lambda: y.copy_(x), MEMCPY_AGAIN: lambda: y.copy_(x)}, {}
    per_sm = {}
    for name, cfg in COPIES.items():
        launch, statuses[name] = launcher(cx, cy, cfg)
        contenders[name] = lambda launch=launch: (launch(), y)[1]
        per_sm[name] = ctas_per_sm(name, cfg)

    def same(name, out, ref):
        torch.cuda.synchronize()
        if name in statuses and int(statuses[name].get()[0]):
            raise RuntimeError(f"{name}: a pipeline stage never completed (bounded wait fired)")
        assert torch.equal(out, x), f"{name} copied wrong values"
    rows = bench.compare(lambda: (), contenders, reference=MEMCPY, metric="GB/s", amount=2 * M * N * 2,
                         shape=(M, N), dtype="float16", check=same, reset=lambda: y.fill_(float("nan")), reps=reps,
                         **flush)
    for r in rows:
        r["part"] = part
        if r["name"] in COPIES:
            r["ctas_per_sm"] = per_sm[r["name"]]
            r["in_flight_per_sm"] = in_flight_per_sm(COPIES[r["name"]], resident=r["ctas_per_sm"])
        if suffix:                           # its own names: the gallery shows every part side by side
            r.update(contender=r["name"], name=r["name"] + suffix, reference=r["reference"] + suffix)
    return rows


def _host_source(M: int, N: int):
    """The fp16 source made on the host (copying it to the GPU launches no kernel for ncu to count)."""
    import numpy as np
    import torch
    return torch.from_numpy(np.random.default_rng(0).standard_normal((M, N), dtype=np.float32).astype(np.float16))


def _profiled_arrays(M: int, N: int) -> tuple:
    """``(host, x, y, poison, cx, cy)`` for a profiled process: the host source, its GPU copy
    ``x``, the destination ``y``, a host NaN array to poison ``y`` with, and CuPy views of ``x``
    and ``y``. Made without launching a kernel ncu would count."""
    import cupy as cp
    import torch
    host = _host_source(M, N)
    x = host.cuda()
    y = torch.empty_like(x)
    return host, x, y, torch.full_like(host, float("nan")), cp.asarray(x), cp.asarray(y)


def _under_ncu(call: str, kernels: str, cache_control: str = "all") -> list:
    """ncu's ``COUNTER_METRICS`` for the kernels matching ``kernels`` that ``copy_measure.<call>``
    launches, run in a fresh Python process from the repository root."""
    import pathlib
    import sys
    from ..core import ncu
    return ncu.profile([sys.executable, "-c", f"from utils.day05 import copy_measure as m; m.{call}"], kernels,
                       metrics=COUNTER_METRICS, cache_control=cache_control,
                       cwd=pathlib.Path(__file__).resolve().parents[2])


def _copy_checked(name: str, cx, cy, y, host, poison, before=None) -> None:
    """Launch ``COPIES[name]`` once from ``cx`` into ``cy`` (``y``'s memory): ``y`` poisoned from
    the host first (no kernel), then ``before()`` if given, then the copy, checked on the host."""
    import torch
    launch, status = launcher(cx, cy, COPIES[name])
    y.copy_(poison)
    if before is not None:
        before()
    launch()
    torch.cuda.synchronize()
    if int(status.get()[0]):
        raise RuntimeError(f"{name}: a pipeline stage never completed (bounded wait fired)")
    if not torch.equal(y.cpu(), host):
        raise AssertionError(f"{name} copied wrong values")


def run_once(M: int = 8192, N: int = 8192) -> None:
    """The profiled process: the read-only and write-only kernels, then each of ``COUNTED`` once.
    Every result is checked on the host, so the only kernels launched are the ones counted."""
    import torch
    host, x, y, poison, cx, cy = _profiled_arrays(M, N)
    total = float(x.sum(dtype=torch.float32))                     # READ_ONLY
    want = host.double().sum().item()
    if abs(total - want) > 1e-4 * host.double().abs().sum().item():
        raise AssertionError(f"{READ_ONLY}: {total} != {want}")
    y.fill_(1.0)                                                  # WRITE_ONLY
    if not bool((y.cpu() == 1).all()):
        raise AssertionError(f"{WRITE_ONLY} wrote wrong values")
    for name in COUNTED:
        _copy_checked(name, cx, cy, y, host, poison)


def counter_rows(kernels: list, M: int = 8192, N: int = 8192) -> list:
    """Rows (``part=COUNTERS``) from ncu's kernels of one ``run_once``: the read-only kernel
    (torch's reduce), the write-only one (its fill), then ``COUNTED`` in launch order. ``value`` is
    the kernel's ncu duration in ms (no ratio: the kernels move different bytes); ``gb_per_s`` the
    bytes its job moves (read + written) over that duration."""
    names = [k["kernel"] for k in kernels]
    copies = [k for k in kernels if "copy" in k["kernel"]]
    reads = [k for k in kernels if "reduce" in k["kernel"]]
    writes = [k for k in kernels if "Fill" in k["kernel"]]
    if len(copies) != len(COUNTED) or len(reads) != 1 or len(writes) != 1:
        raise RuntimeError(f"expected one reduce kernel, one fill and {len(COUNTED)} copies; ncu saw {names}")
    launched = [c["kernel"] for c in copies]
    if launched != [KERNELS[COPIES[n]["kind"]] for n in COUNTED]:
        raise RuntimeError(f"the copies ncu saw ({launched}) are not COUNTED's kernels in order")
    nbytes = M * N * 2
    rows = []
    for name, k, moved in [(READ_ONLY, reads[0], nbytes), (WRITE_ONLY, writes[0], nbytes),
                           *[(n, c, 2 * nbytes) for n, c in zip(COUNTED, copies)]]:
        s = k["gpu__time_duration.sum"] * 1e-9
        rows.append(dict(name=name, metric="ms", value=s * 1e3, reference=None, reference_value=None, ratio=None,
                         part=COUNTERS, shape=[M, N], dtype="float16", kernel=k["kernel"][:80], moved_bytes=moved,
                         gb_per_s=moved / s / 1e9, dram_busy_pct=k[DRAM_PCT], dram_read_bytes=k["dram__bytes_read.sum"],
                         dram_write_bytes=k["dram__bytes_write.sum"]))
    return rows


def measure_counters(M: int = 8192, N: int = 8192) -> list:
    """``counter_rows`` of one ``run_once`` under Nsight Compute (Hopper with ncu)."""
    return counter_rows(_under_ncu(f"run_once({M}, {N})", "copy|reduce_kernel|elementwise_kernel"), M, N)


def run_after_flush(M: int = 8192, N: int = 8192, rounds: int = AFTER_FLUSH_ROUNDS) -> None:
    """The profiled process for ``measure_after_flush``: ``rounds`` times, each of
    ``AFTER_FLUSH_COPIES`` right after the harness's flush written, then right after it read
    (``bench.CudaClock.flush``). The destination is poisoned before the flush and checked on the
    host after each copy, so the only kernels named *copy* are the ones counted."""
    host, x, y, poison, cx, cy = _profiled_arrays(M, N)
    clocks = {f: bench.CudaClock(flush_by=f) for f in bench.FLUSH_BY}
    for _ in range(rounds):
        for name in AFTER_FLUSH_COPIES:
            for flush in bench.FLUSH_BY:
                _copy_checked(name, cx, cy, y, host, poison, before=clocks[flush].flush)


def after_flush_rows(kernels: list, M: int = 8192, N: int = 8192, rounds: int = AFTER_FLUSH_ROUNDS) -> list:
    """Rows (``part=AFTER_FLUSH``), one per copy and flush, from ncu's copies of one
    ``run_after_flush``: ``value`` the median ncu duration in ms (``ms_rounds`` each launch's),
    ``dram_write_bytes`` and ``dram_read_bytes`` the medians of what each launch moved to and
    from DRAM. ``flush_by`` says which flush ran right before."""
    import statistics
    order = [(n, f) for _ in range(rounds) for n in AFTER_FLUSH_COPIES for f in bench.FLUSH_BY]
    launched = [k["kernel"] for k in kernels]
    if launched != [KERNELS[COPIES[n]["kind"]] for n, _ in order]:
        raise RuntimeError(f"expected {len(order)} copies ({rounds} rounds of {list(AFTER_FLUSH_COPIES)}, "
                           f"each after a write and a read flush); ncu saw {launched}")
    rows = []
    for name in AFTER_FLUSH_COPIES:
        for flush in bench.FLUSH_BY:
            ks = [k for k, o in zip(kernels, order) if o == (name, flush)]
            ms = [k["gpu__time_duration.sum"] * 1e-6 for k in ks]
            med = lambda m: statistics.median(k[m] for k in ks)   # noqa: E731
            rows.append(dict(name=f"{name}, after a {flush} flush", contender=name, flush_by=flush, metric="ms",
                             value=statistics.median(ms), ms_rounds=ms, reference=None, reference_value=None,
                             ratio=None, part=AFTER_FLUSH, shape=[M, N], dtype="float16", kernel=ks[0]["kernel"][:80],
                             dram_busy_pct=med(DRAM_PCT), dram_read_bytes=med("dram__bytes_read.sum"),
                             dram_write_bytes=med("dram__bytes_write.sum")))
    return rows


def measure_after_flush(M: int = 8192, N: int = 8192) -> list:
    """``after_flush_rows`` of one ``run_after_flush`` under Nsight Compute with the caches kept
    (``--cache-control none``): does the copy write the flush's lines to DRAM while it runs?"""
    return after_flush_rows(_under_ncu(f"run_after_flush({M}, {N})", "copy", cache_control="none"), M, N)


def measure_settings() -> list:
    """The same contenders without the L2 flush, then with a flush that reads instead of writes."""
    return measure_copies(part=UNFLUSHED) + measure_copies(part=READ_FLUSHED)


def measure_order() -> list:
    """The same contenders with the odd rounds' turns reversed, so memcpy does not always run right
    after the same copy: does the null row's ratio move?"""
    return measure_copies(part=ALTERNATE)


def measure_big() -> list:
    """The same contenders copying 1 GiB (``BIG_SHAPE``) instead of 128 MiB, turns fixed and
    alternating: the flush's written lines are then a small part of what each call moves."""
    return measure_copies(*BIG_SHAPE, part=BIG) + measure_copies(*BIG_SHAPE, part=BIG_ALTERNATE)


def part_or_latest(rows: list, label: str, part: str) -> tuple[list, str]:
    """The rows of ``part`` (a part of ``SETTINGS``, ``COUNTERS`` or ``AFTER_FLUSH``) in ``rows``, or
    those of the latest recording that has them (labelled as such)."""
    from ..core import results
    got, label = results.rows_or_latest(STEM, rows, label, lambda rs: any(r.get("part") == part for r in rs),
                                        f"the {part!r} rows", part)
    return [r for r in got if r.get("part") == part], label


def plot(rows: list, label: str = ""):
    """Each copy's ratio to memcpy (median, with a bar from its lowest to its highest round), in
    ladder order: memcpy against itself in gray, copies that loop in blue, those without a loop in
    green; a line at 1.0."""
    import matplotlib.pyplot as plt
    if not any(r["name"] in COPIES for r in rows):
        raise ValueError("no copy contender in rows")
    shown = [r for r in rows if r["name"] in COPIES or r["name"] == MEMCPY_AGAIN]
    fig, ax = plt.subplots(figsize=(9, 0.6 + 0.42 * len(shown)))
    y = range(len(shown))
    ratio = [r["ratio"] for r in shown]
    err = [[r["ratio"] - r.get("ratio_lo", r["ratio"]) for r in shown],
           [r.get("ratio_hi", r["ratio"]) - r["ratio"] for r in shown]]
    colors = ["tab:gray" if r["name"] not in COPIES else "tab:green" if COPIES[r["name"]]["kind"] in ONE_PER_CTA
              else "tab:blue" for r in shown]
    ax.errorbar(ratio, y, xerr=err, fmt="none", ecolor="black", capsize=3)
    ax.scatter(ratio, y, c=colors, zorder=3)
    ax.axvline(1.0, color="gray", ls="--", lw=1)
    ax.set_yticks(list(y), [r["name"] for r in shown], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("ratio to memcpy (median; bar: lowest to highest round)")
    where = label.split("; also")[0]                     # the recording shown, not the others
    ax.set_title(f"05 §6: TMA copies against memcpy\n(gray: nothing changed; blue: a loop; green: one per CTA)\n{where}",
                 fontsize=10)
    fig.tight_layout()
    return fig
