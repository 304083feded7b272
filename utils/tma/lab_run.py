"""Day 5 · 08, the debugging lab on Hopper: run each lab kernel IN A SUBPROCESS.

A TMA bug can lose the CUDA context ("illegal instruction", "misaligned address") or hang the GPU;
in the notebook's own process either would take the Jupyter kernel down with it. :func:`run`
starts ``python -m utils.tma.lab_run NAME`` with a wall-clock timeout and returns what happened as
a dict: exit status, the CUDA error text, whether the bounded wait fired, how many output elements
are wrong. :func:`sanitize` runs the same child under ``compute-sanitizer`` where it is installed;
:func:`measure` turns reports into rows for ``utils.core.results``.
"""
from __future__ import annotations

import glob
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from . import runtime
from .lab import SOURCE, known

ROOT = pathlib.Path(__file__).resolve().parents[2]
BOX, SHAPE, GRID, THREADS = (16, 32), (1000, 1000), 64, 128   # box and tensor (rows, cols) fp32
SMEM = 16 * 32 * 4 + 128 + runtime.ALIGN_SLACK                  # tile + barrier slot + alignment
MARK = "LAB_REPORT "                                             # the child's one line of JSON
TOOLS = ("memcheck", "racecheck", "synccheck", "initcheck")


def lab_input(shape, seed: int) -> np.ndarray:
    """The lab's input for a seeded run: float32 randn of ``shape`` (the GPU child and the
    emulator, :mod:`utils.emu.gpu_agreement`, draw the same one)."""
    return np.random.default_rng(seed).standard_normal(tuple(shape)).astype(np.float32)


def _child(name: str, shape=SHAPE, runs: int = 10, unbounded: bool = False, grid: int = GRID,
           seed: int | None = None, save: str | None = None) -> dict:
    """Launch kernel ``name`` ``runs`` times on a fresh tensor (this process may die doing it);
    with ``seed`` the tensor is :func:`lab_input`'s, with ``save`` the last output goes to that .npy."""
    rep = {"kernel": name, "runs": 0, "cuda_error": None, "wait_timed_out": False, "wrong": 0,
           "undoubled": 0, "unwritten": 0, "elements": 0}
    try:
        import cupy as cp
        from .descriptor import make_spec
        from .encode import encode
        x = (cp.random.standard_normal(shape, dtype=cp.float32) if seed is None
             else cp.asarray(lab_input(shape, seed)))
        opts = ("-std=c++17",) + (("-DCOURSE_UNBOUNDED_WAIT",) if unbounded else ())
        k = cp.RawModule(code=SOURCE, options=opts).get_function(name)
        for _ in range(runs):
            y, status = cp.full(shape, cp.nan, cp.float32), cp.zeros(1, cp.int32)
            k((grid,), (THREADS,), (encode(make_spec(x, BOX)), encode(make_spec(y, BOX)), np.int32(shape[0]),
                                    np.int32(shape[1]), status, np.uint64(runtime.TIMEOUT_NS)), shared_mem=SMEM)
            cp.cuda.Device().synchronize()
            if save:
                np.save(save, y.get())
            timed_out = bool(int(status.get()[0]))
            rep["runs"] += 1
            rep["wait_timed_out"] |= timed_out
            rep["wrong"] += int((y != 2 * x).sum())          # NaN (never written) counts as wrong
            rep["undoubled"] += int((y == x).sum())          # stored before the doubling was seen
            rep["unwritten"] += int(cp.isnan(y).sum())
            rep["elements"] += x.size
            if timed_out:
                break
    except Exception as exc:                                 # CuPy's CUDARuntimeError / CUDADriverError
        rep["cuda_error"] = f"{type(exc).__name__}: {exc}"
    return rep


def run(name: str, *, runs: int = 10, timeout_s: float = 60, unbounded: bool = False,
        shape=SHAPE, prefix=(), tail: int = 12, grid: int = GRID, seed: int | None = None,
        save: str | None = None) -> dict:
    """Run lab kernel ``name`` in a subprocess (``runs`` launches of ``grid`` CTAs, stopping at a
    timed-out wait or an error); return the child's report plus ``exit_status`` (None if it was
    killed after ``timeout_s`` seconds), ``killed``, ``seconds`` (wall time) and the last lines of
    its output. ``unbounded`` compiles the waits without their timeout (a real hang); ``prefix`` is
    a command to run the child under (:func:`sanitize`); ``tail`` how many lines of output to keep;
    ``seed`` draws the input from :func:`lab_input`; ``save`` a .npy path for the last output."""
    if not (isinstance(runs, int) and runs >= 1 and timeout_s > 0):
        raise ValueError(f"runs must be an int >= 1 and timeout_s > 0, got {runs!r}, {timeout_s!r}")
    if not (isinstance(grid, int) and grid >= 1) or not (seed is None or isinstance(seed, int)):
        raise ValueError(f"grid must be an int >= 1 and seed an int or None, got {grid!r}, {seed!r}")
    cmd = [*prefix, sys.executable, "-m", "utils.tma.lab_run", known(name), str(runs), str(shape[0]),
           str(shape[1])] + (["--unbounded"] if unbounded else []) + (["--grid", str(grid)] if grid != GRID else []) \
        + (["--seed", str(seed)] if seed is not None else []) + (["--save", str(save)] if save else [])
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, env=env)
        out, status, killed = p.stdout + p.stderr, p.returncode, False
    except subprocess.TimeoutExpired as exc:
        out = (exc.stdout or b"").decode(errors="replace") if isinstance(exc.stdout, bytes) else (exc.stdout or "")
        status, killed = None, True
    found = [ln[len(MARK):] for ln in out.splitlines() if ln.startswith(MARK)]
    rep = json.loads(found[-1]) if found else {"kernel": name, "cuda_error": None, "wait_timed_out": None}
    tail = [ln for ln in out.splitlines() if ln.strip() and not ln.startswith(MARK)][-tail:]
    return dict(rep, exit_status=status, killed=killed, seconds=round(time.perf_counter() - t0, 3),
                output_tail=tail)


def sanitizer_path():
    """``compute-sanitizer`` on PATH or under /usr/local/cuda*/bin, else None."""
    return shutil.which("compute-sanitizer") or next(iter(sorted(glob.glob(
        "/usr/local/cuda*/bin/compute-sanitizer"), reverse=True)), None)


def sanitize(name: str, tool: str = "memcheck", timeout_s: float = 120) -> dict:
    """Run kernel ``name`` once, on a small tensor, under ``compute-sanitizer --tool tool``;
    returns :func:`run`'s report plus ``tool``, ``errors`` (the count in its ERROR SUMMARY, None if
    it printed none) and ``findings`` (its first lines naming a problem)."""
    if tool not in TOOLS:
        raise ValueError(f"tool must be one of {TOOLS}, got {tool!r}")
    path = sanitizer_path()
    if path is None:
        raise RuntimeError("compute-sanitizer is not installed here (it comes with the CUDA toolkit)")
    rep = run(name, runs=1, timeout_s=timeout_s, shape=(100, 200),
              prefix=(path, "--tool", tool, "--report-api-errors", "no", "--print-limit", "4"), tail=400)
    lines = [ln.strip("= ").strip() for ln in rep["output_tail"] if ln.startswith("=====")]
    summary = [ln for ln in lines if ln.startswith(("ERROR SUMMARY", "RACECHECK SUMMARY"))]
    errors = int(re.search(r"(\d+) (error|hazard)", summary[-1]).group(1)) if summary else None
    skip = ("ERROR SUMMARY", "RACECHECK SUMMARY", "COMPUTE-SANITIZER", "at ", "by ", "Saved host",
            "Host Frame", "in ", "0x")
    findings = [ln for ln in lines if ln and not ln.startswith(skip)]
    return dict(rep, tool=tool, errors=errors, findings=findings[:4], output_tail=rep["output_tail"][-12:])


# kernel -> the compute-sanitizer tools the notebook runs on it (memcheck found these two bugs on
# the H200; racecheck found nothing for the other two, which the notebook shows too)
SANITIZER = {"lab_negative": ("memcheck",), "lab_misaligned": ("memcheck",),
             "lab_phase": ("racecheck",), "lab_fence": ("racecheck",)}


def measure(names, tools=None, runs: int = 10) -> list:
    """Results rows (:func:`symptom_row`) for lab kernels ``names``, each run in a subprocess, plus
    what compute-sanitizer reports where it is installed (``tools``: ``{kernel: (tool, ...)}``,
    default :data:`SANITIZER`)."""
    rows = []
    for name in names:
        rep = run(name, runs=runs)
        wanted = (SANITIZER if tools is None else tools).get(name, ())
        if wanted and sanitizer_path():
            rep["sanitizer"] = {t: {k: v for k, v in sanitize(name, t).items() if k in (
                "errors", "findings", "exit_status", "cuda_error", "killed")} for t in wanted}
        rows.append(symptom_row(rep))
    return rows


def symptom_row(report: dict) -> dict:
    """A results row (``utils.core.results``) for one :func:`run` report: metric ms is the child's
    wall time; the symptom itself rides along in the row's other keys."""
    keep = ("exit_status", "killed", "cuda_error", "wait_timed_out", "wrong", "undoubled", "unwritten",
            "elements", "runs", "sanitizer")
    return dict({"name": report["kernel"], "metric": "ms", "value": max(report["seconds"] * 1e3, 1e-3),
                 "reference": None, "reference_value": None, "ratio": None, "shape": list(SHAPE),
                 "dtype": "float32"}, **{k: report.get(k) for k in keep})


def describe(row: dict) -> str:
    """One line saying what a kernel did, from a :func:`run` report or a recorded row."""
    if row.get("killed"):
        return "killed by the wall-clock timeout: the child never answered (a real hang)"
    parts = [f"exit status {row['exit_status']}", f"CUDA error: {row['cuda_error'] or 'none'}",
             "bounded wait fired" if row["wait_timed_out"] else "no wait timed out"]
    if row["elements"]:
        parts.append(f"{row['wrong']:,} of {row['elements']:,} elements wrong in {row['runs']} run(s) "
                     f"({row['unwritten']:,} never written, {row['undoubled']:,} stored un-doubled)")
    return "; ".join(parts)


def sanitizer_lines(row: dict) -> list:
    """What compute-sanitizer said about the kernel of ``row``, one line per tool (CuPy's probes
    of driver entry points, "cuGetProcAddress" API errors, are left out of the findings)."""
    out = []
    for tool, res in (row.get("sanitizer") or {}).items():
        found = [f for f in res["findings"] if "cuGetProcAddress" not in f]
        out.append(f"compute-sanitizer --tool {tool}: {res['errors']} errors" +
                   (f"; CUDA error: {res['cuda_error']}" if res.get("cuda_error") else "") +
                   "".join(f"\n    {f}" for f in found))
    return out


def symptom(stem: str, name: str, tier) -> dict:
    """Kernel ``name``'s row: measured now in a subprocess on Hopper (:func:`measure`), else the
    recording in ``results/``; prints where it comes from and :func:`describe`. The notebook
    asserts the symptoms seen on the H100 and H200 (which error, how many elements): on another
    GPU with TMA they are unknown, so it shows Hopper's recording (needs ``sm90a``: Hopper)."""
    from ..core import results
    rows, label = results.record_or_load(stem, lambda: measure((known(name),)), tier, names=(name,),
                                         needs="sm90a")
    row = results.pick(rows, name)
    print(f"{name} ({label}):\n  {describe(row)}")
    return row


def _option(args: list, flag: str):
    """The value after ``flag`` in ``args``, or None."""
    return args[args.index(flag) + 1] if flag in args else None


if __name__ == "__main__":   # the child: python -m utils.tma.lab_run NAME RUNS ROWS COLS [--unbounded]
    args = sys.argv[1:]      #            [--grid N] [--seed S] [--save PATH.npy]
    seed_ = _option(args, "--seed")
    report = _child(known(args[0]), (int(args[2]), int(args[3])), int(args[1]), "--unbounded" in args,
                    int(_option(args, "--grid") or GRID), None if seed_ is None else int(seed_),
                    _option(args, "--save"))
    print(MARK + json.dumps(report), flush=True)
    sys.exit(1 if report["cuda_error"] else 0)
