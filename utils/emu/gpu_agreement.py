"""The emulator against the GPU on the SAME launches (needs Hopper for the GPU half): each case makes
seeded inputs, runs the course's GPU launcher (CuPy) and the emulator's (:mod:`.course`) on them,
and compares the outputs byte for byte; each debugging-lab kernel runs in a subprocess on the GPU
(:func:`utils.tma.lab_run.run`) and on the emulator at the same small shape, grid and input, and
its symptom is compared (:func:`.fidelity.agrees`: the GPU's symptom or a stricter one).

One command records both for the next GPU session::

    python -m utils.emu.gpu_agreement --record       # results/<device>/08_below_ptx_emu_fidelity.json

Each row: ``name``, ``part`` ("kernel" or "lab"), ``gpu`` and ``emulator`` outcomes, ``differing_bytes``
(None where one side left no output) and ``match``; metric "bytes", ``value`` the bytes compared.
Without a Hopper GPU it refuses (nothing is recorded). :func:`emulator_outputs` runs only the
emulator half (any machine). Known source of a difference: the emulator's ``fma`` rounds twice
(float64, then float32), which can differ from the GPU's fused multiply-add in the last bit.
"""
from __future__ import annotations

import numpy as np

from . import course


def _vec(rng, n=4 * 700):
    return rng.standard_normal(n).astype(np.float32)


def _mat(rng, shape=(37, 92), dtype=np.float32):
    return rng.standard_normal(shape).astype(dtype)


def _bytes(a) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint8).ravel()


def _gpu(name):
    """The GPU launcher for case ``name`` (imports CuPy: Hopper only)."""
    import cupy as cp
    from ..cuda_cpp import day02
    from ..tma import runtime, update_run
    g = cp.asarray

    def ring(i, bulk):
        y = cp.zeros_like(g(i["x"]))
        return day02.ring(g(i["x"]), y, 2, 1, bulk=bulk, blocks=2).get()

    def copy(i, pipelined):
        d = cp.zeros_like(g(i["a"]))
        if pipelined:
            return runtime.copy_pipelined(g(i["a"]), d, (16, 32), stages=3, ctas_per_sm=1).get()
        return runtime.copy_tiles(g(i["a"]), d, (16, 32)).get()

    def store(i, reduce):
        a = g(i["a"])
        runtime.store_box(a, g(i["t"]), (24, 64), reduce=reduce)
        return a.get()

    table = {
        "mbar_phases": lambda i: day02.mbar_phases(3, 64),
        "pc_ring cp.async": lambda i: ring(i, False), "pc_ring bulk": lambda i: ring(i, True),
        "cp_async_pipeline_s3": lambda i: day02.pipeline(g(i["x"]), cp.zeros_like(g(i["x"])), 3, 1, 64).get(),
        "tma_load_dump 128B": lambda i: runtime.load_dump(g(i["h"]), (16, 64), (56, 64), swizzle="128B"),
        "tma_store_box": lambda i: store(i, False), "tma_store_box reduce": lambda i: store(i, True),
        "tma_copy_tile": lambda i: copy(i, False), "tma_copy_pipelined": lambda i: copy(i, True),
        "grouped_load_updated mode 0": lambda i: update_run.grouped_load([g(i["a"]), g(i["b"])], (8, 4), 0)[0].get(),
        "splitk_reduce_add": lambda i: update_run.reduce_add(cp.zeros((32, 48), cp.float32), g(i["p"]), (16, 16)).get(),
    }
    return table[name]


def _emu(name):
    """The emulator's launcher for case ``name``."""
    def store(i, reduce):
        a = i["a"].copy()
        course.store_box(a, i["t"], (24, 64), reduce=reduce)
        return a
    table = {
        "mbar_phases": lambda i: course.mbar_phases(3, 64)[0],
        "pc_ring cp.async": lambda i: course.ring(i["x"], np.zeros_like(i["x"]), 2, 1)[0],
        "pc_ring bulk": lambda i: course.ring(i["x"], np.zeros_like(i["x"]), 2, 1, bulk=True)[0],
        "cp_async_pipeline_s3": lambda i: course.pipeline(i["x"], np.zeros_like(i["x"]), 3, 1)[0],
        "tma_load_dump 128B": lambda i: course.load_dump(i["h"], (16, 64), (56, 64), swizzle="128B")[0],
        "tma_store_box": lambda i: store(i, False), "tma_store_box reduce": lambda i: store(i, True),
        "tma_copy_tile": lambda i: course.copy_tiles(i["a"], np.zeros_like(i["a"]), (16, 32))[0],
        "tma_copy_pipelined": lambda i: course.copy_tiles(i["a"], np.zeros_like(i["a"]), (16, 32), pipelined=True)[0],
        "grouped_load_updated mode 0": lambda i: course.grouped_load([i["a"], i["b"]], (8, 4), 0)[0],
        "splitk_reduce_add": lambda i: course.reduce_add(np.zeros((32, 48), np.float32), i["p"], (16, 16))[0],
    }
    return table[name]


CASES = ("mbar_phases", "pc_ring cp.async", "pc_ring bulk", "cp_async_pipeline_s3", "tma_load_dump 128B",
         "tma_store_box", "tma_store_box reduce", "tma_copy_tile", "tma_copy_pipelined",
         "grouped_load_updated mode 0", "splitk_reduce_add")


def inputs(seed: int = 0) -> dict:
    """The seeded inputs every case draws from (small shapes, not multiples of the tiles)."""
    rng = np.random.default_rng(seed)
    return {"x": _vec(rng), "a": _mat(rng), "b": _mat(rng, (20, 12)), "t": _mat(rng, (16, 32)),
            "h": _mat(rng, (60, 128), np.float16),
            "p": rng.integers(-64, 64, (3, 32, 48)).astype(np.float32)}   # integers: any order of adds is exact


def emulator_outputs(seed: int = 0, cases=CASES) -> dict:
    """Case name -> the emulator's output bytes (runs anywhere)."""
    i = inputs(seed)
    return {c: _bytes(_emu(c)(i)) for c in cases}


def _outcome(exc) -> str:
    return "ok" if exc is None else f"{type(exc).__name__}: {str(exc).splitlines()[0][:160]}"


def _run(f, i):
    """(output bytes or None, exception or None) of one launcher on inputs ``i``."""
    try:
        return _bytes(f(i)), None
    except Exception as exc:          # a GPU or emulator error is a finding, recorded as such
        return None, exc


def _row(name: str, part: str, gpu: str, emu: str, gpu_b, emu_b, match_kinds: bool, seed: int, **more) -> dict:
    """One results row; the bytes count toward ``match`` only where both sides ran clean."""
    if gpu_b is None or emu_b is None:
        diff = None
    else:
        diff = int((gpu_b != emu_b).sum()) if gpu_b.size == emu_b.size else max(gpu_b.size, emu_b.size)
    clean = gpu in ("ok", "none") and emu == "ok"
    size = next((b.size for b in (gpu_b, emu_b) if b is not None), 0)
    return dict({"name": name, "metric": "bytes", "value": max(int(size), 1), "reference": None,
                 "reference_value": None, "ratio": None, "shape": None, "dtype": "bytes", "part": part,
                 "gpu": gpu, "emulator": emu, "differing_bytes": diff,
                 "match": bool(match_kinds and (diff == 0 if clean else True)), "seed": seed}, **more)


def kernel_row(case: str, gpu_b, emu_b, gpu_exc=None, emu_exc=None, seed: int = 0) -> dict:
    """The row of one course kernel: both sides must run clean and leave the same bytes."""
    gpu, emu = _outcome(gpu_exc), _outcome(emu_exc)
    return _row(case, "kernel", gpu, emu, gpu_b, emu_b, gpu == emu == "ok", seed)


def measure(seed: int = 0, cases=CASES) -> list:
    """Rows (:func:`kernel_row`): GPU vs emulator bytes for every course kernel case (Hopper only)."""
    i, rows = inputs(seed), []
    for c in cases:
        (gb, ge), (eb, ee) = _run(_gpu(c), i), _run(_emu(c), i)
        rows.append(kernel_row(c, gb, eb, ge, ee, seed))
    return rows


def emulate_lab(name: str, x: np.ndarray, seed: int = 0):
    """Lab kernel ``name`` on the emulator with input ``x`` (:func:`.course.lab_report`'s launch,
    the GPU child's grid): (report dict, output array)."""
    from ..tma import lab, lab_run
    from .api import device_empty, launch, tensor_map, to_device
    from .course import LAB_GRID, TIMEOUT_NS
    from .errors import EmulatorError
    xd = to_device(x)
    y, st = device_empty(x.shape, np.float32, np.nan), device_empty(1, np.int32, 0)
    rep = {"error": None, "message": None, "deadlocks": [], "elements": int(x.size)}
    try:
        r = launch(lab.SOURCE, lab.known(name), LAB_GRID, lab_run.THREADS,
                   [tensor_map(xd, lab_run.BOX), tensor_map(y, lab_run.BOX), x.shape[0], x.shape[1], st, TIMEOUT_NS],
                   shared_bytes=lab_run.SMEM, seed=seed)
        rep["deadlocks"] = list(r.deadlocks)
    except EmulatorError as e:
        rep["error"], rep["message"] = type(e).__name__, str(e)
    rep["wait_timed_out"], rep["wrong"] = bool(st[0]), int((y != 2 * x).sum())
    return rep, y.copy()


def lab_row(name: str, gpu_report: dict, gpu_y, emu_report: dict, emu_y, seed: int = 0) -> dict:
    """The row of one lab kernel: the GPU's symptom (:func:`.fidelity.gpu_kind` of the child's
    report), the emulator's finding, and the output bytes compared where both ran clean."""
    from . import fidelity
    gpu, emu = fidelity.gpu_kind(gpu_report), fidelity.emulator_kind(emu_report)
    if gpu_report.get("cuda_error") and gpu not in ("illegal", "misaligned"):
        gpu = "error"                 # the GPU run itself failed (no driver, a compile error): no symptom
    return _row(name, "lab", gpu, emu, None if gpu_y is None else _bytes(gpu_y),
                None if emu_y is None else _bytes(emu_y), gpu != "error" and fidelity.agrees(name, gpu, emu), seed,
                cuda_error=gpu_report.get("cuda_error"), emulator_detail=fidelity.detail(emu_report))


def lab_rows(seed: int = 0, names=None) -> list:
    """Rows (:func:`lab_row`) for every lab kernel: a subprocess on the GPU (Hopper only) and the
    emulator, at :data:`.course.LAB_SHAPE` with :data:`.course.LAB_GRID` CTAs on one seeded input."""
    import tempfile
    from ..tma import lab, lab_run
    from .course import LAB_GRID, LAB_SHAPE
    x, rows = lab_run.lab_input(LAB_SHAPE, seed), []
    with tempfile.TemporaryDirectory() as tmp:
        for name in names or lab.KERNELS:
            out = f"{tmp}/{name}.npy"
            rep = lab_run.run(name, runs=1, shape=LAB_SHAPE, grid=LAB_GRID, seed=seed, save=out, timeout_s=120)
            gpu_y = np.load(out) if rep.get("runs") and not rep.get("cuda_error") else None
            rows.append(lab_row(name, rep, gpu_y, *emulate_lab(name, x, seed), seed=seed))
    return rows


def require_hopper(tier=None):
    """The tier, if it runs the course's sm_90a kernels on a GPU; else SystemExit saying why
    nothing was recorded (the recording compares a GPU with the emulator: it needs the GPU)."""
    from ..core.tier import detect
    tier = tier or detect()
    if not tier.has("sm90a"):
        raise SystemExit(f"gpu_agreement --record runs every course kernel and lab kernel on a Hopper GPU "
                         f"(compute capability 9.0, sm_90a) and on the emulator; this machine is tier "
                         f"{tier.name} ({tier.reason}): nothing was run or recorded. The emulator half alone: "
                         "utils.emu.gpu_agreement.emulator_outputs() or utils.emu.fidelity.lab_table().")
    return tier


def record(seed: int = 0) -> str:
    """Run :func:`measure` and :func:`lab_rows` on this Hopper GPU and save them with
    ``utils.core.results.save`` under :data:`.fidelity.STEM`; returns the file's path."""
    from ..core import results
    from .fidelity import RECORD, STEM
    require_hopper()
    rows = measure(seed) + lab_rows(seed)
    path = results.save(STEM, rows, command=RECORD + (f" --seed {seed}" if seed else ""))
    for r in rows:
        print(f"{r['name']:<30} GPU {r['gpu'][:40]:<40} emulator {r['emulator'][:20]:<20} "
              f"differing bytes {r['differing_bytes']}  match {r['match']}")
    print(f"{sum(r['match'] for r in rows)} of {len(rows)} rows match; saved {path}")
    return str(path)


def main(argv=None) -> int:
    import argparse
    p = argparse.ArgumentParser(prog="python -m utils.emu.gpu_agreement",
                                description="Record the emulator against the GPU on the same launches (Hopper).")
    p.add_argument("--record", action="store_true", help="run both and save results/<device>/"
                   "08_below_ptx_emu_fidelity.json")
    p.add_argument("--seed", type=int, default=0)
    args = p.parse_args(argv)
    if not args.record:
        p.print_help()
        return 2
    record(args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
