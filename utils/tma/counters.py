"""Bank conflicts of each swizzle mode, computed by the NumPy model and counted by the hardware.

One warp reads one 16-byte column of a TMA-loaded fp16 box (thread ``t`` reads chunk ``chunk``
of row ``t``), for each layout in ``LAYOUTS``: each swizzle mode with the widest rows it allows,
and no swizzle with rows of 32, 64 and 128 bytes. The model says where
each chunk sits in shared memory (``swizzle.smem_offsets``) and how many wavefronts the read
needs (``predicted_wavefronts``: 16-byte loads are served 8 threads a time, each phase costs as
many wavefronts as its worst bank holds distinct words). On Hopper the kernel
``shared_read_at`` (``tma_kernels.cu``) reads at exactly those offsets: the values it returns
check the placement, and Nsight Compute counts the wavefronts
(``l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld``) and bank conflicts the reads cost.
"""
from __future__ import annotations

import numpy as np

from .swizzle import SWIZZLE_MODES, bank_conflict_ways, smem_offsets, swizzle_span

ROWS = 32                       # one warp, one row per thread
REPS = 64                       # warp-wide reads per launch
BANK_METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",
                "smsp__sass_inst_executed_op_shared_ld.sum")


LAYOUTS = (("none", 32), ("none", 64), ("none", 128), ("32B", 32), ("64B", 64), ("128B", 128))


def box_shape(mode: str, row_bytes: int | None = None) -> tuple:
    """(32, elements per row) of an fp16 box with ``row_bytes`` per row (default: as wide as
    ``mode`` allows, 128 B without swizzle)."""
    if mode not in SWIZZLE_MODES:
        raise ValueError(f"swizzle mode must be one of {SWIZZLE_MODES}, got {mode!r}")
    span = swizzle_span(mode)
    row_bytes = (span or 128) if row_bytes is None else row_bytes
    if row_bytes not in (16, 32, 64, 128) or (span and row_bytes > span):
        raise ValueError(f"rows of {row_bytes!r} B: expected 16, 32, 64 or 128"
                         + (f", at most the {span}-B span of swizzle {mode}" if span else ""))
    return (ROWS, row_bytes // 2)


def label(mode: str, row_bytes: int) -> str:
    """The result row's name for one layout, e.g. ``"column read, swizzle none, 128-B rows"``."""
    return f"column read, swizzle {mode}, {row_bytes}-B rows"


def column_offsets(mode: str, chunk: int = 0, row_bytes: int | None = None) -> np.ndarray:
    """Byte offset in the box image of logical chunk ``chunk`` of each of the 32 rows."""
    rows, cols = box_shape(mode, row_bytes)
    if not 0 <= chunk < cols // 8:
        raise ValueError(f"chunk must be in [0, {cols // 8}) for {mode} rows of {cols * 2} B, got {chunk}")
    return smem_offsets((rows, cols), 2, mode)[:, chunk * 8].astype(np.int32)


def predicted_wavefronts(mode: str, chunk: int = 0, row_bytes: int | None = None) -> int:
    """Wavefronts one warp-wide 16-B column read needs: the sum over its four 8-thread phases."""
    offs = column_offsets(mode, chunk, row_bytes).astype(np.int64)
    total = 0
    for phase in offs.reshape(4, 8):
        total += bank_conflict_ways((phase[:, None] + np.arange(0, 16, 4)[None, :]).ravel())
    return total


def read_column(mode: str, chunk: int = 0, row_bytes: int | None = None, reps: int = REPS) -> None:
    """On Hopper: TMA-load a fresh random box with ``mode``, read the column ``reps`` times at the
    model's offsets, and check that every thread read its row's chunk (raises if not)."""
    import cupy as cp
    from .descriptor import make_spec
    from .encode import encode
    from .runtime import ALIGN_SLACK, TIMEOUT_NS, _raise_on_timeout, _status, coords_arg, kernel, smem_image_bytes
    shape = box_shape(mode, row_bytes)
    x = cp.random.standard_normal(shape, dtype=cp.float32).astype(cp.float16)
    spec = make_spec(x, shape, swizzle=mode)
    offs = cp.asarray(column_offsets(mode, chunk, row_bytes))
    out, status = cp.full((ROWS, 8), cp.nan, dtype=cp.float16), _status()
    smem = smem_image_bytes(spec) + ALIGN_SLACK
    kernel("shared_read_at", smem)((1,), (ROWS,), (
        encode(spec), np.int32(2), coords_arg((0, 0)), np.uint32(spec.box_bytes), offs,
        np.int32(reps), out, status, np.uint64(TIMEOUT_NS)), shared_mem=smem)
    _raise_on_timeout(status, f"the {shape} box never arrived")
    want = x[:, chunk * 8:(chunk + 1) * 8]
    if not bool(cp.array_equal(out, want)):
        bad = int(cp.argmax(cp.any(out != want, axis=1)))
        raise AssertionError(f"{mode}: row {bad} read {out[bad].get()}, expected {want[bad].get()}: "
                             "the model's offset for this row is not where TMA put the chunk")


def read_all(chunk: int = 0) -> None:
    """``read_column`` for every layout, in ``LAYOUTS`` order (what ncu profiles)."""
    for mode, row_bytes in LAYOUTS:
        read_column(mode, chunk, row_bytes)
    import cupy as cp
    cp.cuda.Device().synchronize()


def measure_bank_conflicts(chunk: int = 0) -> list:
    """Rows for ``results``: per layout, wavefronts per warp-wide read counted by ncu
    (``value``), next to the model's prediction, the bank conflicts counted, and the load count."""
    import pathlib
    import sys
    from ..core import ncu
    root = pathlib.Path(__file__).resolve().parents[2]
    kernels = ncu.profile([sys.executable, "-c", f"from utils.tma import counters; counters.read_all({chunk})"],
                          "shared_read_at", metrics=BANK_METRICS, cwd=root)
    if len(kernels) != len(LAYOUTS):
        raise RuntimeError(f"expected {len(LAYOUTS)} launches of shared_read_at, ncu saw {len(kernels)}")
    rows = []
    for (mode, row_bytes), k in zip(LAYOUTS, kernels):
        loads = k["smsp__sass_inst_executed_op_shared_ld.sum"]
        if loads != REPS:
            raise RuntimeError(f"{mode}: ncu counted {loads:.0f} shared loads, the kernel issues {REPS}")
        rows.append(dict(name=label(mode, row_bytes), metric="count", swizzle=mode, row_bytes=row_bytes,
                         value=k["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"] / loads,
                         unit="wavefronts per warp-wide 16-B read (ncu)",
                         predicted=predicted_wavefronts(mode, chunk, row_bytes),
                         bank_conflicts_per_read=k["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"] / loads,
                         chunk=chunk, reference=None, reference_value=None, ratio=None,
                         shape=list(box_shape(mode, row_bytes)), dtype="float16", tool="ncu"))
    return rows
