"""The emulator against the GPU on the SAME launches (needs Hopper for the GPU half): each case makes
seeded inputs, runs the course's GPU launcher (CuPy) and the emulator's (:mod:`.course`) on them,
and compares the outputs byte for byte. :func:`measure` returns rows for :mod:`utils.core.results`
(metric "bytes": ``value`` bytes compared, ``differing_bytes``, ``agrees``); the lab kernels'
symptoms are :mod:`.fidelity`'s table. :func:`emulator_outputs` runs only the emulator half (any
machine). Known source of a difference: the emulator's ``fma`` rounds twice (float64, then float32),
which can differ from the GPU's fused multiply-add in the last bit.
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


def measure(seed: int = 0, cases=CASES) -> list:
    """Results rows: GPU vs emulator bytes for every case (Hopper only)."""
    i = inputs(seed)
    rows = []
    for c in cases:
        gpu, emu = _bytes(_gpu(c)(i)), _bytes(_emu(c)(i))
        diff = int((gpu != emu).sum()) if gpu.size == emu.size else max(gpu.size, emu.size)
        rows.append({"name": f"emulator == GPU: {c}", "metric": "bytes", "value": int(gpu.size), "reference": None,
                     "reference_value": None, "ratio": None, "shape": None, "dtype": "bytes",
                     "differing_bytes": diff, "agrees": diff == 0, "seed": seed})
    return rows
