"""Day 5 · 06, Exercise 4: group g's TMA descriptor built on the device, in CUDA, and run.

The learner writes the device function ``load_group_box`` (:data:`SIGNATURE`), which the course's
kernel ``group_tile`` (:data:`FRAME`) calls in CTA (t, g) of a (tiles, G) grid: copy the
host-encoded base descriptor of the stacked tensor A into the CTA's own 128-byte slot, replace what
differs for group g (rows ``offsets[g]..offsets[g+1]`` of A), make it visible to the TMA unit
(release, then the loading thread's acquire) and load box (x, y) of the group through it. The
course's half is ``utils/tma/group_tile.cu``: :data:`HELPERS` (``smem_u32``, ``tile_of``,
``init_bar``, ``wait_box``, bounded, and ``save_box``), then :data:`FRAME`; :func:`source` puts the
learner's function between them.

This module holds what both places that run it share: the cases (:func:`cases`: groups of
different sizes, one empty, none a multiple of the box; fresh random values), the NumPy
reference (:func:`expected`, through the course's TMA model), the emulator launch
(``_run_emulator``), a reader of the descriptors the kernel left in its slots
(:func:`slot_fields`, the emulator's own 128-byte layout, :mod:`utils.emu.tensormap`), and
:func:`race_kind`, which names a finding of the emulator in the exercise's terms. The check is
:mod:`.group_desc_check`; the GPU launch (a subprocess) is :mod:`.group_desc_run`.
"""
from __future__ import annotations

import pathlib
import struct
from typing import NamedTuple

import numpy as np

KERNEL, FUNCTION = "group_tile", "load_group_box"
BOX = (8, 16)                      # rows x columns of fp32: the kernel's tile (BOX_ROWS, BOX_COLS)
THREADS = 64
TIMEOUT_NS = 10**9
EMULATOR_LINE = "emulator: values, hangs and races; never a time"

CU = (pathlib.Path(__file__).parents[1] / "tma" / "group_tile.cu").read_text()   # CUDA lives in tma/
MARK = "// ---- load_group_box (the learner's) ----\n"
HELPERS, FRAME = CU.split(MARK)
SIGNATURE = ("__device__ __forceinline__ void load_group_box(const TensorMap& base, TensorMap* slot, "
             "const float* a, int ld, int row0, int rows, int x, int y, float* tile, unsigned bar)")


def source(learner: str) -> str:
    """What is compiled: ``utils/tma/group_tile.cu`` with the learner's function at its MARK line."""
    return HELPERS + learner + "\n" + FRAME


class Case(NamedTuple):
    """One launch: A (``offsets[-1]`` rows of ``ld`` fp32, the first ``K`` columns used) and the
    groups' row ``offsets`` (G + 1 of them)."""
    a: np.ndarray
    offsets: np.ndarray
    K: int

    @property
    def sizes(self) -> list:
        return np.diff(self.offsets).tolist()

    @property
    def grid(self) -> tuple:
        """(boxes per group, at most; G): one CTA per box of the largest group and per group."""
        tiles_x = -(-self.K // BOX[1])
        return max(1, max(-(-s // BOX[0]) for s in self.sizes) * tiles_x), len(self.sizes)

    def describe(self) -> str:
        return (f"{KERNEL}<<<{self.grid}, {THREADS}>>>: groups of {self.sizes} rows of A "
                f"({self.offsets[-1]} x {self.a.shape[1]} fp32, K = {self.K} columns used), box {BOX[0]} x {BOX[1]}")


def _case(rng, sizes, K, ld) -> Case:
    offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int32)
    return Case(rng.standard_normal((int(offsets[-1]), ld)).astype(np.float32), offsets, K)


def cases(rng=None) -> list:
    """The shown case (rows 13, 0, 21, 6; K = 36 of ld = 40) and a random one (other sizes, K and
    row pitch): a kernel right only at the shown shape fails the second. Fresh values each call."""
    rng = np.random.default_rng() if rng is None else rng
    K = int(rng.choice([20, 28, 44]))
    sizes = [int(rng.integers(9, 30))] + [int(s) for s in rng.integers(1, 30, 2)]   # one group spans 2+ box rows,
    rng.shuffle(sizes)                                                                # so some CTA has no box
    sizes.insert(int(rng.integers(0, 4)), int(rng.choice([0, 3])))
    return [_case(rng, [13, 0, 21, 6], 36, 40), _case(rng, sizes, K, K + 4 * int(rng.integers(1, 3)))]


def group_view(case: Case, g: int) -> np.ndarray:
    """Group g: rows offsets[g]..offsets[g+1] of A, its first K columns."""
    return case.a[case.offsets[g]:case.offsets[g + 1], :case.K]


def tile_xy(case: Case, g: int, t: int):
    """(x, y) of CTA t's box in group g, or None when it has none (as HELPERS' tile_of)."""
    tiles_x = -(-case.K // BOX[1])
    x, y = (t % tiles_x) * BOX[1], (t // tiles_x) * BOX[0]
    return (x, y) if y < case.sizes[g] else None


def expected(case: Case) -> np.ndarray:
    """(G, tiles, BOX) fp32: each CTA's box of its group as TMA loads it (zeros past the group's
    rows and K columns); NaN where a CTA has no box (it saves nothing)."""
    from ..tma import model
    T, G = case.grid
    out = np.full((G, T, *BOX), np.nan, np.float32)
    for g in range(G):
        for t in range(T):
            xy = tile_xy(case, g, t)
            if xy:
                out[g, t] = model.tma_load(group_view(case, g), BOX, (xy[1], xy[0]))
    return out


def buffers(case: Case) -> dict:
    """The launch's device buffers, 256-byte aligned like cudaMalloc memory: ``a`` (a copy of
    A), ``out`` (NaN: a box never saved shows), ``slots`` (zeros: one 128-B slot per CTA) and
    ``status`` (1 once a bounded wait timed out)."""
    from ..emu import device_empty, to_device
    T, G = case.grid
    return {"a": to_device(case.a), "out": device_empty((G, T, *BOX), np.float32, np.nan),
            "slots": device_empty((G * T, 128), np.uint8, 0), "status": device_empty(1, np.int32, 0)}


def _run_emulator(src: str, case: Case, bufs: dict, seed: int = 0):
    """Launch the learner's ``src`` (compiled as :func:`source`) on the emulator into ``bufs``
    (:func:`buffers`), strict: the first race raises, as do its other findings. Returns its report."""
    from ..emu import launch, tensor_map, to_device
    a = bufs["a"]
    return launch(source(src), KERNEL, case.grid, THREADS,
                  [tensor_map(a[:, :case.K], BOX), a, case.K, a.shape[1], to_device(case.offsets), bufs["slots"],
                   bufs["out"], bufs["status"], TIMEOUT_NS], seed=seed)


def slot_fields(raw) -> dict | None:
    """The fields of one 128-byte slot in the emulator's layout, read without the descriptor rules
    (a misaligned address is reported, not refused); None when it is not a descriptor at all."""
    b = bytes(np.asarray(raw, np.uint8).reshape(-1)[:128])
    from ..emu.tensormap import MAGIC
    r = b[112]
    if b[:8] != MAGIC or not 1 <= r <= 5:
        return None
    return {"address": struct.unpack_from("<Q", b, 8)[0], "dims": struct.unpack_from("<5I", b, 16)[:r],
            "strides": struct.unpack_from("<4Q", b, 40)[:max(r - 1, 0)], "box": struct.unpack_from("<5I", b, 72)[:r]}


RACES = (  # (words in the emulator's message, kind): the first that matches names it
    ("which this thread never acquired", "no_acquire"),
    ("after it changed, without", "acquire_early"),
    ("with no release to the tensormap proxy", "no_release"),
    ("that uses it is still in flight", "in_flight"),
    ("the tensor map is in shared memory", "shared_desc"),
    ("is not a tensor map made by", "not_copied"),
    ("no mbarrier was initialised", "bar_init"),
    ("is known complete", "early_read"),
    ("has not finished filling", "early_read"),
)


def race_kind(message: str) -> str | None:
    """The exercise's name for an emulator finding about descriptors or the box (None: another)."""
    for words, kind in RACES:
        if words in message:
            return kind
    return None


STUB = SIGNATURE + " {\n}"
"""The function as handed out: a source equal to it up to comments and spacing is "not attempted"
(``tests/test_group_desc_check.py`` keeps it equal to the notebook's generated cell)."""


RACE_WORDS = {"no_acquire": "no acquire before the load", "acquire_early": "no acquire after the change",
              "no_release": "no release after the change", "in_flight": "changed while a load through it was in flight"}


def race_names(report) -> list:
    """The descriptor races an emulator :class:`~utils.emu.Report` (launched with ``strict=False``)
    recorded, in words, each once, in the order found."""
    out = []
    for r in report.races:
        words = RACE_WORDS.get(race_kind(r), r.split("\n")[0])
        if words not in out:
            out.append(words)
    return out
