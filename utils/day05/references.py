"""The cuBLAS reference across the course's recordings, and the two "what TMA buys" steps of day 5
(notebook 03's Triton v0 -> v1 and notebook 04's CuteDSL cp.async -> TMA), read from the
recordings so that notebooks 03 and 04 print them instead of typing them.

Every ratio "x cuBLAS" in a notebook divides by the cuBLAS timed in the SAME run, interleaved with
that notebook's kernels; runs differ (which kernels, how long the GPU has been under load, the
date), and so does cuBLAS's absolute TFLOP/s. :func:`cublas_runs` lists it per recording.
"""
from __future__ import annotations

from ..core import bench, results

CUBLAS = "cuBLAS (torch.matmul)"
RUNS = (  # (notebook stem, how the notebook names it, its cuBLAS row at 8192³ fp16)
    ("01_hierarchy_bandwidth", "day 1 · 01", "matmul fp16 8192^3"),
    ("03_triton_tma_gemm", "day 5 · 03", CUBLAS),
    ("04_cutedsl_tma_gemm", "day 5 · 04", CUBLAS),
    ("05_gemm_ladder", "day 5 · 05", CUBLAS))
TRITON_STEP = ("Triton v0 plain loads", "Triton v1 TMA loads")
CUTE_STEP = ("CuteDSL cp.async+WGMMA, 4 stages", "CuteDSL TMA+WGMMA, 4 stages")


def _device(device: str | None) -> str:
    """One device for every recording read together: ``device``, else the one notebook 03 shows
    (``$COURSE_RESULTS_DEVICE`` or its latest recording), so that no table mixes two GPUs."""
    return device or results.load("03_triton_tma_gemm")["device"]


def _contenders(rows: list, shape: list, dtype: str) -> int:
    return len({r["name"] for r in rows if r.get("shape") == shape and r.get("dtype") == dtype
                and r.get("metric") == "TFLOP/s"})


def cublas_runs(device: str | None = None, n: int = 8192, dtype: str = "float16") -> list:
    """One dict per recording (``device`` as :func:`utils.core.results.load` takes it) of cuBLAS
    at ``n``³: ``notebook``, ``device``, ``date``, ``tflops``, ``harness`` (alone, or interleaved
    with how many kernels over how many rounds) and ``mhz`` (the clock, where the run recorded one,
    else None)."""
    out, shape, device = [], [n] * 3, _device(device)
    for stem, notebook, name in RUNS:
        doc = results.load(stem, device)
        rows = [r for r in doc["rows"] if r["name"] == name and r.get("shape") == shape
                and r.get("dtype") == dtype]
        tf = [r for r in rows if r["metric"] == "TFLOP/s"]
        if len(tf) != 1:
            raise LookupError(f"{doc['path']}: expected one {name!r} TFLOP/s row at {shape} {dtype}, "
                              f"found {len(tf)}")
        mhz = [r["value"] for r in rows if r["metric"] == "MHz"]
        k = _contenders(doc["rows"], shape, dtype)
        harness = (f"interleaved with {k - 1} kernels, {tf[0]['rounds']} rounds" if tf[0].get("rounds")
                   else "timed alone (30 calls)")
        out.append({"notebook": notebook, "device": doc["device"], "date": doc["date"][:10],
                    "tflops": tf[0]["value"], "harness": harness, "mhz": mhz[0] if mhz else None,
                    "mhz_tflops": next((r.get("tflops") for r in rows if r["metric"] == "MHz"), None)})
    return out


def _db_gain(before: dict, after: dict):
    """``after``'s do_bench ratio to cuBLAS over ``before``'s (above 1: a gain), or None without
    do_bench. Each ratio divides by the cuBLAS windows timed around that contender's own window, so
    the GPU's drift between the two windows cancels (``bench.do_bench_rows``)."""
    if before.get("do_bench_ratio") and after.get("do_bench_ratio"):
        return after["do_bench_ratio"] / before["do_bench_ratio"]
    return None


TMA_STEMS = ("03_triton_tma_gemm", "04_cutedsl_tma_gemm")
METHOD_SINCE = bench.BLOCKS_SINCE     # 03 §5 compares recordings timed in blocks (tma_device)


def tma_device(device: str | None = None, since: str | None = None) -> str:
    """The device :func:`tma_steps` reads: ``device`` (else notebook 03's, :func:`_device`), or, where
    its recording of notebook 03 or 04 predates ``since`` (a date, :func:`utils.core.results.since_or_newest`),
    the device of the newest recording of notebook 03 made since then."""
    device = _device(device)
    if since is not None and any(results.load(s, device)["date"][:10] < since for s in TMA_STEMS):
        device = results.since_or_newest(TMA_STEMS[0], results.load(TMA_STEMS[0], device), since)[0]["device"]
    return device




def tma_steps(device: str | None = None, since: str | None = None) -> list:
    """Per dtype and n (4096, 8192): Triton's v1 / v0 and CuteDSL's TMA / cp.async 4-stage kernels
    (each pair from one run), the absolute TFLOP/s of each contender, and each baseline's ratio to
    its own run's cuBLAS (``triton_base_ratio``, ``cute_base_ratio``); the same two gains by do_bench's
    windows (``triton_gain_do_bench``, ``cute_gain_do_bench``: None for rows recorded without it).
    Both recordings come from one device: :func:`tma_device` ``(device, since)``."""
    device = tma_device(device, since)
    tri, cute = (results.load(s, device)["rows"] for s in TMA_STEMS)
    out = []
    for dtype in ("float16", "bfloat16"):
        for n in (4096, 8192):
            def get(rows, name):
                return results.pick(rows, name, dtype=dtype, shape=[n] * 3)
            t0, t1 = (get(tri, s) for s in TRITON_STEP)
            c0, c1 = (get(cute, s) for s in CUTE_STEP)
            out.append({"dtype": dtype, "n": n, "triton": (t0["value"], t1["value"]),
                        "cute": (c0["value"], c1["value"]), "triton_gain": t1["value"] / t0["value"],
                        "cute_gain": c1["value"] / c0["value"], "triton_base_ratio": t0["ratio"],
                        "cute_base_ratio": c0["ratio"],
                        "triton_gain_do_bench": _db_gain(t0, t1), "cute_gain_do_bench": _db_gain(c0, c1)})
    return out


def format_cublas_runs(runs: list) -> str:
    """The rows of :func:`cublas_runs` as a table."""
    lines = [f"{runs[0]['device']}, cuBLAS fp16 8192³ in each recording",
             f"{'notebook':<12}{'recorded':<12}{'cuBLAS TFLOP/s':>15}  {'clock':<26}harness"]
    for r in runs:
        clock = f"{r['mhz']:.0f} MHz (a separate run)" if r["mhz"] else "not recorded"
        lines.append(f"{r['notebook']:<12}{r['date']:<12}{r['tflops']:>15.0f}  {clock:<26}{r['harness']}")
    return "\n".join(lines)
