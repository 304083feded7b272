"""Hardware counters from Nsight Compute (``ncu``), for the few claims a timing cannot settle.

``profile(argv, kernel_regex, metrics)`` runs a command under ``ncu`` and returns one dict per
profiled kernel launch: ``{"kernel": name, metric: value, ...}`` in launch order. Clocks are left
alone (``--clock-control none``). ``available()`` says whether this machine has ``ncu``; reading
counters may still be refused (the profiler needs permission to the GPU's counters), and then
``profile`` raises a ``RuntimeError`` that says so. ``shared_gpu_note()`` names other processes
using the GPU: ``profile`` prints it, because the L2 and DRAM counters belong to the whole GPU
(our reading; on an H100 shared by six test processes on 2026-11-27, notebook 08's L2 counters came
back far from its recording, in two runs, for kernels ncu had picked by name).
"""
from __future__ import annotations

import csv
import io
import shutil
import subprocess

L2_DRAM = ("lts__t_sectors_op_read.sum", "lts__t_sectors_srcunit_tex_op_read.sum",
           "dram__bytes_read.sum", "dram__bytes_write.sum")
SECTOR_BYTES = 32
DRAM_PCT = "dram__throughput.avg.pct_of_peak_sustained_elapsed"   # how busy DRAM was, % of peak


def available() -> bool:
    """True if ``ncu`` is on the PATH."""
    return shutil.which("ncu") is not None


def other_gpu_processes(run=subprocess.run) -> list[int]:
    """Process ids, other than this one, that ``nvidia-smi`` lists as computing on a GPU (empty when
    it cannot say)."""
    import os
    try:
        out = run(["nvidia-smi", "--query-compute-apps=pid", "--format=csv,noheader"],
                  capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    pids = [int(t) for t in out.split() if t.strip().isdigit()]
    return [p for p in pids if p != os.getpid()]


def shared_gpu_note(pids) -> str:
    """One line for a profile taken while the processes ``pids`` also used the GPU ("" if none)."""
    if not pids:
        return ""
    return (f"[other processes are using this GPU (pids {', '.join(map(str, sorted(pids)[:8]))}): the L2 "
            "and DRAM counters belong to the whole GPU and may include their traffic; profile on an "
            "idle GPU before reading them]")


def parse_csv(text: str, metrics) -> list[dict]:
    """The kernels in ``ncu --csv --print-units base`` output, one dict each, launch order. A metric
    ncu prints as ``n/a`` (it does not apply to that kernel or GPU) is None; any other value that is
    not a number raises a RuntimeError naming the metric and the kernel."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    by_id: dict = {}
    for row in csv.DictReader(io.StringIO("\n".join(lines))):
        if row.get("Metric Name") not in metrics:
            continue
        k = by_id.setdefault(int(row["ID"]), {"kernel": row["Kernel Name"]})
        text_value = row["Metric Value"].replace(",", "").strip()
        try:
            k[row["Metric Name"]] = None if text_value.lower() == "n/a" else float(text_value)
        except ValueError:
            raise RuntimeError(f"ncu printed {row['Metric Value']!r} for {row['Metric Name']} on kernel "
                               f"{row['Kernel Name'][:60]!r}: not a number") from None
    return [by_id[i] for i in sorted(by_id)]


CACHE_CONTROL = ("all", "none")   # ncu flushes every cache before each profiled kernel, or keeps them


def profile(argv: list, kernel_regex: str, metrics=L2_DRAM, timeout: int = 600, cwd=None,
            launch_count: int | None = None, cache_control: str = "all") -> list[dict]:
    """Run ``argv`` under ncu, profiling the kernels whose name matches ``kernel_regex`` (only the
    first ``launch_count`` of them, if given). ``cache_control="none"`` keeps the caches as the
    program left them (ncu's default, "all", flushes them before each profiled kernel)."""
    if cache_control not in CACHE_CONTROL:
        raise ValueError(f"cache_control must be one of {CACHE_CONTROL}, got {cache_control!r}")
    if launch_count is not None and (not isinstance(launch_count, int) or launch_count < 1):
        raise ValueError(f"launch_count must be a positive int or None, got {launch_count!r}")
    if not available():
        raise RuntimeError("ncu (Nsight Compute) is not installed on this machine")
    metrics = tuple(metrics)
    cmd = ["ncu", "--csv", "--print-units", "base", "--clock-control", "none",
           "--cache-control", cache_control,
           "--metrics", ",".join(metrics), "-k", f"regex:{kernel_regex}",
           *(["-c", str(launch_count)] if launch_count else []), *map(str, argv)]
    note = shared_gpu_note(other_gpu_processes())
    if note:
        print(note)
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=cwd)
    out = p.stdout + p.stderr
    if "ERR_NVGPUCTRPERM" in out:
        raise RuntimeError("ncu may not read the GPU's counters here (ERR_NVGPUCTRPERM): run as an "
                           "admin or set NVreg_RestrictProfilingToAdminUsers=0")
    kernels = parse_csv(p.stdout, metrics)
    if p.returncode or not kernels:
        raise RuntimeError(f"ncu found no kernel matching {kernel_regex!r} (exit {p.returncode}): "
                           + out[-1500:])
    missing = [m for m in metrics if any(m not in k for k in kernels)]
    if missing:
        raise RuntimeError(f"ncu did not report {missing}; it printed: {out[-800:]}")
    na = [m for m in metrics if any(k[m] is None for k in kernels)]
    if na:
        raise RuntimeError(f"ncu reported n/a for {na} on {sorted({k['kernel'][:40] for k in kernels if any(k[m] is None for m in na)})}: "
                           "those metrics do not apply to these kernels on this GPU; profile other metrics")
    return kernels
