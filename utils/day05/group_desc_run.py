"""Exercise 4 of day 5 · 06 on a GPU: the learner's ``group_tile`` run in a SUBPROCESS.

A descriptor with a bad field stops the kernel with an illegal instruction or a misaligned
address, and that loses the CUDA context; in the notebook's own process it would take the Jupyter
kernel with it. :func:`gpu_outputs` writes the source and the cases to a temporary folder, runs
``python -m utils.day05.group_desc_run FOLDER`` with a timeout, and reads back each case's ``out``
(poisoned with NaN before the launch) and status. The launch follows
:mod:`utils.tma.update_run`: CuPy's ``RawModule`` for this GPU's architecture-specific target, the
base descriptor from ``cuTensorMapEncodeTiled`` (:func:`utils.tma.encode.encode`) passed by value.
"""
from __future__ import annotations

import json
import os
import pathlib
import subprocess
import sys
import tempfile

import numpy as np

from . import group_desc as gd

ROOT = pathlib.Path(__file__).resolve().parents[2]


def gpu_outputs(source: str, cases, timeout_s: float = 300) -> dict:
    """Run ``HELPERS + source`` on this GPU for each case. Returns ``{"outs": [...], "status":
    [...], "error": None or what went wrong (a CUDA error, a crash, a timeout)}``."""
    if not isinstance(source, str) or not cases:
        raise ValueError("gpu_outputs takes the kernel's source (str) and a non-empty list of group_desc.Case")
    with tempfile.TemporaryDirectory(prefix="group_tile_") as d:
        folder = pathlib.Path(d)
        (folder / "kernel.cu").write_text(gd.source(source))
        for i, c in enumerate(cases):
            np.savez(folder / f"case{i}.npz", a=c.a, offsets=c.offsets, K=c.K)
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
        try:
            p = subprocess.run([sys.executable, "-m", "utils.day05.group_desc_run", str(folder), str(len(cases))],
                               capture_output=True, text=True, timeout=timeout_s, cwd=ROOT, env=env)
        except subprocess.TimeoutExpired:
            return {"outs": [], "status": [], "error": f"the GPU run did not finish in {timeout_s} s (a hang?)"}
        report = folder / "report.json"
        if p.returncode or not report.exists():
            tail = "\n".join((p.stdout + p.stderr).strip().splitlines()[-8:])
            return {"outs": [], "status": [], "error": f"the child process ended with status {p.returncode}:\n{tail}"}
        rep = json.loads(report.read_text())
        outs = [np.load(folder / f"out{i}.npy") for i in range(len(cases))] if not rep["error"] else []
        return {"outs": outs, "status": rep["status"], "error": rep["error"]}


def _launch_all(folder: pathlib.Path, n: int) -> dict:
    """In the child: compile, launch every case, save each ``out``; CUDA errors are reported."""
    rep = {"status": [], "error": None}
    try:
        import cupy as cp
        from ..core.features import arch_target
        from ..tma.descriptor import make_spec
        from ..tma.encode import encode
        cc = cp.cuda.Device().compute_capability
        arch = arch_target((int(cc[:-1]), int(cc[-1])))
        mod = cp.RawModule(code=(folder / "kernel.cu").read_text(), options=("-std=c++17", f"-arch={arch}"))
        k = mod.get_function(gd.KERNEL)
        for i in range(n):
            z = np.load(folder / f"case{i}.npz")
            case = gd.Case(z["a"], z["offsets"], int(z["K"]))
            a = cp.asarray(case.a)
            T, G = case.grid
            out = cp.full((G, T, *gd.BOX), cp.nan, cp.float32)
            slots, status = cp.zeros((G * T, 128), cp.uint8), cp.zeros(1, cp.int32)
            k((T, G), (gd.THREADS,), (encode(make_spec(a[:, :case.K], gd.BOX)), a, np.int32(case.K),
                                      np.int32(a.shape[1]), cp.asarray(case.offsets), slots, out, status,
                                      np.uint64(gd.TIMEOUT_NS)))
            cp.cuda.Device().synchronize()
            np.save(folder / f"out{i}.npy", out.get())
            rep["status"].append(int(status.get()[0]))
    except Exception as exc:                      # CuPy's compile, runtime and driver errors
        rep["error"] = f"{type(exc).__name__}: {exc}"
    return rep


if __name__ == "__main__":
    _dir = pathlib.Path(sys.argv[1])
    (_dir / "report.json").write_text(json.dumps(_launch_all(_dir, int(sys.argv[2]))))
