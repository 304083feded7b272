"""Day 5 · 05: the measurements of the GEMM ablation ladder (Hopper only).

* :func:`measure_ladder`: cuBLAS and every rung of ``cute_dsl.ladder`` (and the tile-order
  variants) on the same fresh randn inputs, each output poisoned with NaN and checked element by
  element against an fp32 reference before timing; then sustained, interleaved timing in the
  course harness (``core.bench.compare``: ratio = median over rounds, with the lowest and highest
  round).
* :func:`measure_counters`: one launch of cuBLAS and of each rung under ``ncu`` (fresh process),
  with the counters of ``cute_dsl.counters.METRICS`` (tensor pipe, warps, registers, bytes, stall
  reasons).
* :func:`measure_clocks`: the SM clock, board power and work per clock of each kernel run alone.

Notebook 05 has one switch, ``FULL``: off (a learner's default), a live run measures ``QUICK``
(one size, one dtype; the clocks of fewer kernels, ``clock_names``, for ``CLOCK_QUICK_SECONDS``) so each cell ends
in about half a minute on an H100, and the cells whose ncu passes cannot be cut that short show
the recording (:func:`recorded`, ``utils.core.results.recorded``); on (what ``COURSE_RECORD=1`` runs), everything as recorded.
"""
from __future__ import annotations

from ..core import bench
from ..core.results import recorded  # noqa: F401  (notebooks 05 and 05b call lm.recorded)

METHOD_SINCE = bench.BLOCKS_SINCE     # 05's claims describe recordings timed in blocks (results.since_or_newest)

CUBLAS = "cuBLAS (torch.matmul)"
SIZES = (4096, 6144, 8192)
DTYPES = ("float16", "bfloat16")
QUICK = dict(sizes=(8192,), dtypes=("float16",))        # FULL = False: the ladder at one size and dtype
CLOCK_SECONDS = 2.5                                      # FULL: each kernel sampled 2 x 2.5 s per size
CLOCK_QUICK_SECONDS = 1.5                                # FULL = False: shorter windows, fewer kernels


def clock_names(full: bool) -> list:
    """The kernels whose clocks notebook 05 samples: all of them (``full``), or cuBLAS's rivals the
    lesson reads, rung 6 and row-major order."""
    from ..cute_dsl import ladder
    return rung_names() if full else [ladder.ORDER_BASE, "tile order: row-major"]


def rung_names() -> list:
    """Every timed kernel: the rungs, then the order variants other than rung 6's own order."""
    from ..cute_dsl import ladder
    return list(ladder.STEPS) + [n for n, o in ladder.ORDERS.items() if o != "grouped"]


def check_close(name: str, out, want, K: int) -> None:
    """Every element of ``out`` within the fp16/bf16 output tolerance of ``want`` (fp32), no NaN."""
    import torch
    from .gemm import tolerance
    tol = tolerance(out.dtype, K)
    bad = ~((out.float() - want).abs() <= tol["atol"] + tol["rtol"] * want.abs())
    n_bad = int(bad.sum().item())
    if n_bad:
        idx = tuple(int(i) for i in torch.nonzero(bad)[0])
        raise AssertionError(f"{name}: {n_bad} of {out.numel()} elements wrong, first at {idx}: "
                             f"{out[idx].item()} vs {want[idx].item()} (tolerance {tol})")


def reference(a, b):
    """a @ b.T in fp32 without TF32 (the correctness reference)."""
    import torch
    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        return a.float() @ b.float().T
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev


def problem(n: int, tdt, names, device: str = "cuda", run=None) -> tuple:
    """One n^3 problem on fresh randn inputs: the shared output ``c``, the fp32 reference, and
    ``{name: call}`` for cuBLAS and each kernel in ``names`` (each call returns its output).
    ``run(a, b, c, name)`` launches a kernel by name (default: a ladder rung)."""
    import torch
    from ..cute_dsl import ladder
    run = ladder.run if run is None else run
    a, b = bench.randn((n, n), tdt, device), bench.randn((n, n), tdt, device)
    c = torch.empty(n, n, dtype=tdt, device=device)
    fns = {CUBLAS: lambda: torch.matmul(a, b.T)}
    fns.update({name: (lambda name=name: run(a, b, c, name)) for name in names})
    return c, reference(a, b), fns


host_us = bench.host_us      # a direct call's host cost, per contender (a name the launch cells and tests use)


def measure_ladder(sizes=SIZES, dtypes=DTYPES, names=None, reps: int = 50, run=None, part: str = "ladder") -> list:
    """Rows (``part``) of TFLOP/s = 2 n^3 / time for cuBLAS and each kernel in ``names`` (default: the
    rungs), n^3 GEMMs; ``run`` as in :func:`problem`. Every contender is timed as a CUDA-graph
    replay (:func:`utils.core.bench.compare_replayed`; rows say ``launch``); ``host_us_per_call`` is what one
    direct call costs the host, ``gpu_ms_per_rep`` what a repetition costs the GPU."""
    import torch
    from tqdm.auto import tqdm
    names = rung_names() if names is None else list(names)
    rows = []
    bar = tqdm(total=len(sizes) * len(dtypes) * len(names), desc="compile + check + time", leave=False)
    for dt in dtypes:
        tdt = getattr(torch, dt)
        for n in sizes:
            c, want, contenders = problem(n, tdt, names, run=run)
            for name in names:                           # compile each kernel first: the slow part
                bar.set_postfix_str(f"{n}³ {dt}, {name.split(' · ')[0]}")
                contenders[name]()
                bar.update()

            def check(name, out, ref):
                check_close(name, out, want, n)
            got = bench.compare_replayed(contenders, reference=CUBLAS, metric="TFLOP/s", amount=2 * n ** 3,
                                         shape=(n, n, n), dtype=dt, check=check, reset=lambda: c.fill_(float("nan")),
                                         reps=reps, do_bench=True)          # do_bench's ratio beside ours (issue 40)
            for r in got:
                r["part"] = part
            rows += got
    bar.close()
    return rows


def launch_each(n: int, dtype: str, names, run, cublas_first: bool = False) -> None:
    """The profiled process: (cuBLAS, then) each kernel in ``names`` once through ``run(a, b, c, name)``,
    on the same randn inputs and NaN-filled outputs made on the host (so no other kernel runs
    first); every output checked afterwards."""
    import numpy as np
    import torch
    rng = np.random.default_rng(0)
    tdt = getattr(torch, dtype)
    a = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(tdt).cuda()
    b = torch.from_numpy(rng.standard_normal((n, n), dtype=np.float32)).to(tdt).cuda()
    if cublas_first:
        torch.matmul(a, b.T)
    outs = {}
    for name in names:
        outs[name] = torch.from_numpy(np.full((n, n), np.nan, dtype=np.float32)).to(tdt).cuda()
        run(a, b, outs[name], name)
    torch.cuda.synchronize()
    want = reference(a, b)
    for name, c in outs.items():
        check_close(name, c, want, n)


def launch_once(n: int = 8192, dtype: str = "float16", names=None) -> None:
    """The profiled process of :func:`measure_counters`: cuBLAS, then each kernel of ``names``
    (default: every rung and order variant) once."""
    from ..cute_dsl import ladder
    launch_each(n, dtype, rung_names() if names is None else list(names), ladder.run, cublas_first=True)


def profile_launches(code: str, names, metrics) -> list:
    """Run ``python -c code`` under ncu and return one dict of ``metrics`` per launch, one launch
    per entry of ``names`` (raises if ncu saw another count)."""
    import pathlib
    import sys
    from ..core import ncu
    root = pathlib.Path(__file__).resolve().parents[2]
    kernels = ncu.profile([sys.executable, "-c", code], ".", metrics=metrics, cwd=root, launch_count=len(names))
    if len(kernels) != len(names):
        raise RuntimeError(f"expected {len(names)} GEMM launches, ncu saw {len(kernels)}")
    return kernels


def measure_counters(n: int = 8192, dtype: str = "float16", names=None) -> list:
    """One row per kernel (cuBLAS first, then ``names``, default the rungs and order variants;
    ``part="counters"``): ``value`` = its duration in ms under ncu, ``ratio`` = cuBLAS's duration /
    this one's, counters as extra keys."""
    from ..cute_dsl import counters
    kernels_ = rung_names() if names is None else list(names)
    unknown = sorted(set(kernels_) - set(rung_names()))
    if unknown:
        raise ValueError(f"names must be rungs or order variants (rung_names()), got {unknown}")
    names = [CUBLAS, *kernels_]
    kernels = profile_launches(f"from utils.day05 import ladder_measure as m; m.launch_once({n}, {dtype!r}, "
                               f"{kernels_!r})", names, counters.METRICS)
    rows = [counters.gemm_row(name, k, n, dtype, part="counters") for name, k in zip(names, kernels)]
    return counters.with_reference(rows, CUBLAS)


def measure(sizes=SIZES, dtypes=DTYPES) -> list:
    """Everything notebook 05 records: the ladder at every size and dtype, then the counters."""
    return measure_ladder(sizes, dtypes) + measure_counters()


def gains(rows: list) -> dict:
    """Each rung over the rung before (cuBLAS-relative ratios divided, so both came from the same
    interleaved rounds), per (size, dtype): ``{(n, dtype): {rung: (median, lo, hi)}}``."""
    from ..core.spread import ratio_between
    from ..cute_dsl import ladder
    out = {}
    names = list(ladder.STEPS)
    for n, dt in sorted({(r["shape"][0], r["dtype"]) for r in rows}):
        by = {r["name"]: r for r in rows if r["shape"][0] == n and r["dtype"] == dt}
        out[(n, dt)] = {b: tuple(ratio_between(by[b], by[a])[k] for k in ("ratio", "lo", "hi"))
                        for a, b in zip(names, names[1:]) if a in by and b in by}
    return out


def plot_ladder(rows: list, label: str = ""):
    """Ratio to cuBLAS of every rung (and order variant), one panel per dtype, one line per size;
    bars span the lowest to the highest round."""
    import matplotlib.pyplot as plt
    names = [n for n in rung_names() if any(r["name"] == n for r in rows)]
    dtypes = sorted({r["dtype"] for r in rows})
    fig, axes = plt.subplots(1, len(dtypes), figsize=(6.5 * len(dtypes), 4.2), squeeze=False, sharey=True)
    for ax, dt in zip(axes[0], dtypes):
        for k, n in enumerate(sorted({r["shape"][0] for r in rows if r["dtype"] == dt})):
            sel = {r["name"]: r for r in rows if r["dtype"] == dt and r["shape"][0] == n}
            xs = [i + 0.1 * (k - 1) for i, name in enumerate(names) if name in sel]
            ys = [sel[name]["ratio"] for name in names if name in sel]
            err = [[y - sel[name]["ratio_lo"] for y, name in zip(ys, names)],
                   [sel[name]["ratio_hi"] - y for y, name in zip(ys, names)]]
            ax.errorbar(xs, ys, yerr=err, fmt="o-", ms=4, capsize=2, label=f"{n}³")
        ax.axhline(1.0, color="gray", lw=1)
        for target, style in ((1.05, "--"), (1.10, ":")):
            ax.axhline(target, color="tab:red", lw=0.8, ls=style)
        ax.set_xticks(range(len(names)), [n.split(" · ")[0] if " · " in n else n.replace("tile order: ", "order: ")
                                          for n in names], fontsize=7, rotation=30)
        ax.set_ylabel("speed vs cuBLAS (x)")
        ax.set_title(f"{dt}: each rung vs cuBLAS (targets dashed: 1.05x, 1.10x)\n{label}", fontsize=8)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_orders(n: int = 8192, sms: int = 132, cluster=(2, 1), tile=(128, 256)):
    """The first wave of clusters on the C tile grid for each tile order (a picture of
    ``ladder.order_ref``): dark = visited by the first wave, numbered by start order."""
    import matplotlib.pyplot as plt
    import numpy as np
    from ..cute_dsl import ladder
    cm, cn = cluster
    grid = (n // (tile[0] * cm), n // (tile[1] * cn))
    fig, axes = plt.subplots(1, 3, figsize=(12, 3.6))
    for ax, order in zip(axes, ("row", "grouped", "serpentine")):
        img = np.full(grid, np.nan)
        for i, (m, j) in enumerate(ladder.order_ref(order, *grid)[: sms // (cm * cn)]):
            img[m, j] = i
        ax.imshow(img, cmap="viridis", aspect="auto")
        fp = ladder.wave_footprint(order, n, sms, cluster, tile)
        ax.set_title(f"{order}: first wave touches {fp['a_panels']} A + {fp['b_panels']} B panels\n"
                     f"= {fp['bytes'] / 2**20:.0f} MiB of operands", fontsize=8)
        ax.set_xlabel("cluster column (N)")
        ax.set_ylabel("cluster row (M)")
    fig.tight_layout()
    return fig


def _run_for(fn, seconds: float) -> tuple:
    """Call ``fn`` back to back (10 at a time, then synchronize) for ``seconds``: ``(calls, elapsed s)``."""
    import time
    import torch
    torch.cuda.synchronize()
    t0, calls = time.perf_counter(), 0
    while time.perf_counter() - t0 < seconds:
        for _ in range(10):
            fn()
        calls += 10
        torch.cuda.synchronize()
    return calls, time.perf_counter() - t0


def _sample_gpu(fn, seconds: float, interval_ms: int = 50) -> dict:
    """Run ``fn`` back to back for ``seconds`` while ``nvidia-smi`` samples the SM clock and the
    board power every ``interval_ms``; the medians of the middle half of the samples, and the
    calls completed per second over the whole window."""
    import statistics
    import subprocess
    import torch
    cmd = ["nvidia-smi", "--query-gpu=clocks.sm,power.draw", "--format=csv,noheader,nounits",
           f"-lms={interval_ms}", f"--id={torch.cuda.current_device()}"]
    smi = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    calls, elapsed = _run_for(fn, seconds)
    smi.terminate()
    out = smi.communicate(timeout=10)[0]
    samples = [tuple(float(x) for x in line.split(",")) for line in out.splitlines() if line.count(",") == 1]
    mid = samples[len(samples) // 4: len(samples) * 3 // 4]
    if len(mid) < 5:
        raise RuntimeError(f"nvidia-smi gave {len(samples)} samples in {seconds} s: too few to read a clock")
    return {"mhz": statistics.median(s[0] for s in mid), "watts": statistics.median(s[1] for s in mid),
            "calls_per_s": calls / elapsed, "samples": len(mid)}


def check_seconds(seconds) -> None:
    """The one rule for a clock-sampling window (every ``measure_clocks`` of days 5 and the launch
    cell): a number of seconds, at least 1, since nvidia-smi samples every 50 ms; bools refused."""
    if isinstance(seconds, bool) or not (isinstance(seconds, (int, float)) and seconds >= 1):
        raise ValueError(f"seconds must be >= 1 (nvidia-smi samples every 50 ms), got {seconds!r}")


def sample_passes(fns: dict, seconds: float, after=None) -> dict:
    """``{key: [pass 1, pass 2]}``: each of ``fns`` run alone for 0.5 s to settle the clock, then
    sampled by :func:`_sample_gpu` for ``seconds``, in two passes, the second in reverse order (so
    no kernel always follows the same neighbour); ``after()`` runs after each sample (a progress bar)."""
    got = {key: [] for key in fns}
    for order in (list(fns), list(fns)[::-1]):
        for key in order:
            _run_for(fns[key], 0.5)                          # settle the clock on this kernel (no sampling)
            got[key].append(_sample_gpu(fns[key], seconds))
            if after is not None:
                after()
    return got


def clock_fields(passes: list, flops: float) -> dict:
    """:func:`_sample_gpu` passes of one kernel doing ``flops`` a call, averaged: ``value`` (the
    clock, MHz), ``watts``, TFLOP/s over the windows, TFLOP/s per GHz and each pass's clock."""
    s = {k: sum(p[k] for p in passes) / len(passes) for k in ("mhz", "watts", "calls_per_s")}
    tflops = flops * s["calls_per_s"] / 1e12
    return dict(metric="MHz", value=s["mhz"], watts=s["watts"], tflops=tflops,
                tflops_per_ghz=tflops / (s["mhz"] / 1e3), passes=[p["mhz"] for p in passes])


def clock_row(name: str, passes: list, n: int, dtype: str, seconds: float, **keys) -> dict:
    """One row (metric MHz) from :func:`_sample_gpu` passes of an n³ GEMM (:func:`clock_fields`);
    ``keys`` (``part``, ``launch``, ...) added."""
    return dict(name=name, **clock_fields(passes, 2 * n ** 3), shape=[n, n, n], dtype=dtype, seconds=seconds, **keys)


def measure_clocks(sizes=(4096, 8192), dtype: str = "float16", seconds: float = 3.0, names=None) -> list:
    """Rows (``part="clocks"``, metric MHz): the SM clock and board power each kernel runs at when it
    runs alone, back to back, for ``seconds`` (cuBLAS and ``names``, default the rungs and the order
    variants, each a CUDA-graph replay, :func:`utils.core.bench.graphed`; two passes, the second in
    reverse order, averaged), with its TFLOP/s over that window
    and TFLOP/s per GHz (the work it does per clock cycle). ``ratio``: clock over cuBLAS's clock."""
    import torch
    from tqdm.auto import tqdm
    check_seconds(seconds)
    names = [CUBLAS, *(rung_names() if names is None else names)]
    rows = []
    tdt = getattr(torch, dtype)
    bar = tqdm(total=len(sizes) * 2 * len(names), desc=f"clock sampling, {seconds + 0.5:.1f} s per kernel", leave=False)
    for n in sizes:
        c, want, fns = problem(n, tdt, names[1:])
        fns = bench.graphed(fns)                                    # the host can't hold the GPU back
        for name in names[1:]:                                  # compiled and checked before sampling
            c.fill_(float("nan"))
            check_close(name, fns[name](), want, n)
        got = sample_passes({name: fns[name] for name in names}, seconds, after=bar.update)
        rows += [clock_row(name, got[name], n, dtype, seconds, part="clocks", launch=bench.LAUNCH_GRAPH)
                 for name in names]
    bar.close()
    for r in rows:
        ref = next(q for q in rows if q["name"] == CUBLAS and q["shape"] == r["shape"])
        r.update(reference=CUBLAS, reference_value=ref["value"], ratio=r["value"] / ref["value"])
    return rows


LAUNCH_STEM = "05_gemm_ladder_launch"
LAUNCHES = ("direct", bench.LAUNCH_GRAPH)


def measure_launch(n: int = 4096, dtype: str = "float16", seconds: float = 2.5, names=None) -> list:
    """One change, the launch path: cuBLAS and ``names`` (default rung 6) run alone as in
    :func:`measure_clocks`, each called directly from Python and as a CUDA-graph replay (two passes,
    the second in reverse order, averaged). Rows (``part="launch"``, metric MHz, ``launch`` says
    which) carry the clock, the power, TFLOP/s, TFLOP/s per GHz and ``host_us_per_call``: what a
    direct call costs the host. :func:`_run_for` synchronizes every 10 calls, so a direct launcher
    leaves the GPU idle while its first call of each ten is issued; idle cycles still tick the clock."""
    from ..cute_dsl import ladder
    import torch
    check_seconds(seconds)
    names = [ladder.ORDER_BASE] if names is None else list(names)
    c, want, direct = problem(n, getattr(torch, dtype), names)
    host = host_us(direct)                                # also the first call of each (compiles)
    fns = {(name, LAUNCHES[0]): f for name, f in direct.items()}
    fns.update({(name, LAUNCHES[1]): f for name, f in bench.graphed(direct).items()})
    for (name, how), f in fns.items():                    # every output checked, both launch paths
        c.fill_(float("nan"))
        check_close(f"{name} ({how})", f(), want, n)
    got = sample_passes(fns, seconds)
    rows = [clock_row(name, passes, n, dtype, seconds, part="launch", launch=how, host_us_per_call=host[name])
            for (name, how), passes in got.items()]
    for r in rows:                       # ratio: clock over cuBLAS's clock, launched the same way
        ref = next(q for q in rows if q["name"] == CUBLAS and q["launch"] == r["launch"])
        r.update(reference=CUBLAS, reference_value=ref["value"], ratio=r["value"] / ref["value"])
    return rows


def launch_pair(rows: list, name: str) -> dict:
    """``{launch: row}`` of ``name`` in :func:`measure_launch` rows."""
    got = {r["launch"]: r for r in rows if r.get("part") == "launch" and r["name"] == name}
    if set(got) != set(LAUNCHES):
        raise KeyError(f"no launch rows of {name!r} for both {LAUNCHES}; have {sorted(got)}")
    return got


PEAK_FLOPS_PER_SM_CLOCK = 4096      # dense fp16/bf16 wgmma, per SM per cycle (datasheet, not measured)


def per_clock(clocks: list, n: int, name: str, sms: int = 132) -> dict:
    """``name`` against cuBLAS at ``n``³ in ``clocks`` (rows of :func:`measure_clocks`): TFLOP/s =
    clock x work per clock, so ``{"tflops", "clock", "per_ghz"}`` are this kernel's ratios to cuBLAS
    (``tflops == clock * per_ghz``), plus ``"of_peak"`` and ``"cublas_of_peak"``: work per clock
    as a share of the datasheet's ``sms`` x 4096 flops per cycle."""
    sel = {r["name"]: r for r in clocks if r.get("part", "clocks") == "clocks" and r["shape"][0] == n}
    if CUBLAS not in sel or name not in sel:
        raise KeyError(f"no clock rows for {name!r} and cuBLAS at {n}³; have {sorted(sel)}")
    me, ref = sel[name], sel[CUBLAS]
    peak = sms * PEAK_FLOPS_PER_SM_CLOCK / 1e3                        # TFLOP/s per GHz
    return {"tflops": me["tflops"] / ref["tflops"], "clock": me["value"] / ref["value"],
            "per_ghz": me["tflops_per_ghz"] / ref["tflops_per_ghz"], "of_peak": me["tflops_per_ghz"] / peak,
            "cublas_of_peak": ref["tflops_per_ghz"] / peak}


def plot_clocks(rows: list, n: int = 8192, label: str = ""):
    """Each kernel at ``n``³ as a point: SM clock (x) against work per clock (y). Throughput is
    their product, so the dashed curves of equal TFLOP/s (through cuBLAS's point and 5% above it)
    show what a kernel must move to beat cuBLAS by 5%."""
    import matplotlib.pyplot as plt
    import numpy as np
    sel = [r for r in rows if r["shape"][0] == n]
    ref = next(r for r in sel if r["name"] == CUBLAS)
    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for r in sel:
        ax.scatter(r["value"], r["tflops_per_ghz"], color="tab:gray" if r["name"] == CUBLAS else "tab:blue")
        ax.annotate(r["name"].split(" · ")[0] if " · " in r["name"] else r["name"].replace("tile order: ", ""),
                    (r["value"], r["tflops_per_ghz"]), fontsize=7, xytext=(3, 3), textcoords="offset points")
    mhz = np.linspace(min(r["value"] for r in sel) * 0.97, max(r["value"] for r in sel) * 1.05, 50)
    for k, style in ((1.0, "--"), (1.05, ":")):
        ax.plot(mhz, k * ref["tflops"] * 1e3 / mhz, style, color="tab:red", lw=0.8, label=f"{k:.2f}x cuBLAS's TFLOP/s")
    ax.set_xlabel("SM clock under sustained load (MHz, nvidia-smi)")
    ax.set_ylabel("work per clock (TFLOP/s per GHz)")
    ax.set_title(f"{n}³ {sel[0]['dtype']}: throughput = clock x work per clock\n{label}", fontsize=8)
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
