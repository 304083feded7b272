"""Hints for Exercise 3b of day 5 · 02 (:mod:`.tma_kernel_check`): what the emulator's report, the
GPU's error or the output of the learner's ``tile_x2`` says about the mistake made.

Each hint names the rule the kernel broke, never the kernel itself: a race with no proxy fence, a
hang with bytes still pending, a phase read too early, a store that outlives its CTA, boxes that
miss part of the tensor (coordinates in the wrong order, a tile count rounded down).
"""
from __future__ import annotations

import re

import numpy as np

FENCE = ("fence.proxy.async.shared::cta before the barrier, in every thread that wrote the tile: each "
         "thread fences its own writes, then __syncthreads(), then one thread issues the TMA store")
WAIT = ("every thread that reads the tile must see its phase complete first: each one waits (bounded) "
        "on the parity of that phase before reading: parity 0 for the first phase of a freshly initialised "
        "mbarrier, then 1, 0, ... (a ring's buffer s on its n-th use: parity n & 1, n = i / STAGES)")
STORE_WAIT = ("the storing thread commits the bulk group (tma_store does) and runs "
              "cp.async.bulk.wait_group.read before the buffer is reused (a new load into it) and before it "
              "exits: until then the copy engine may still be reading it")
INIT = ("thread 0 initialises the mbarrier (mbar_init(bar, 1)), then __syncthreads() before any thread "
        "waits on it or a copy completes on it")
COORDS = ("coordinates go innermost first, as the descriptor lists its dimensions: Coords k = {{column, row, "
          "0, 0, 0}}, not {{row, column}}")
ARRIVALS = ("the mbarrier's count is the arrivals per phase: only the thread that calls mbar_expect_tx "
            "arrives, so initialise it with a count of 1")
TILES = ("the number of box columns follows from cols, rounded UP: tiles_x = (cols + BOX_X - 1) / BOX_X; "
         "rounded down, or fixed for one tensor, the last boxes of a tensor that is not a multiple of the box "
         "are never copied")
RULES = [  # (pattern in the emulator's or the GPU's message, hint)
    (r"no fence\.proxy\.async", FENCE),
    (r"exited while|still read", STORE_WAIT),
    (r"before the asynchronous copy that fills it|never saw phase|still being filled", WAIT),
    (r"no mbarrier was initialised", INIT),
    (r"more arrivals than", ARRIVALS),
    (r"[Mm]isaligned|not a multiple of 128 B", "the tile in shared memory must start at a 128-B boundary "
     "(use smem_base(), which is 1024-B aligned), the mbarrier at an 8-B one"),
    (r"start below 0|coordinate|illegal instruction", COORDS + "; a box's start must not be negative"),
    (r"outside|out of bounds|illegal address", "stay inside the launch's shared memory (the tile and 128 B "
     "after smem_base()) and reach global memory only through the two tensor maps"),
    (r"does not model|UnsupportedPTX", "write the steps with the course's helpers (show_helpers()) or the PTX "
     "instructions this notebook shows"),
    (r"instructions|endless", "an endless loop? Bound every wait with timeout_ns (mbar_wait_bounded)"),
]


def error_hint(error) -> str:
    """The hint for an emulator error (exception) or a GPU error text."""
    text = f"{type(error).__name__}: {error}" if isinstance(error, BaseException) else str(error)
    default = ("read the report: it names the PTX line" if isinstance(error, BaseException) else
               "the GPU run failed: the error above names why (it ran in a subprocess, so this notebook's CUDA "
               "context is unharmed)")
    hint = next((h for pat, h in RULES if re.search(pat, text)), default)
    if type(error).__name__ == "Deadlock":       # an unbounded wait: the hang itself
        return "bound the wait (mbar_wait_bounded(bar, parity, timeout_ns)): on a GPU this hang never returns; " \
               + hang_hint(text)[1]
    return hint


def hang_hint(report: str) -> tuple:
    """(what the first hung mbarrier shows, hint) from a deadlock report."""
    m = re.search(r"phase \d+ \(parity \d\) incomplete, (\d+) of (\d+) arrivals pending, tx-count (-?\d+) B", report)
    if not m:
        return "", "every wait must be for a phase that completes: parity 0 for the first phase of a new mbarrier"
    arrivals, count, tx = (int(v) for v in m.groups())
    what = f": its mbarrier still has {arrivals} of {count} arrivals and {tx} B pending"
    if tx < 0:
        return what, ("expect_tx counts BYTES: a box is BOX_Y x BOX_X fp32 elements, 4 bytes each; more bytes "
                      "landed than yours declared")
    if tx > 0:
        return what, ("expect_tx declared more bytes than one box delivers (BOX_Y rows x BOX_X fp32 columns, "
                      "4 bytes each); an edge box delivers the full box too")
    if arrivals and arrivals == count:
        return what, ("nothing armed this phase (no expect_tx, no load), so nothing will complete it: is the wait "
                      "for the right phase (a ring's buffer on its n-th use: parity n & 1, n = i / STAGES), and is a "
                      "load issued for every box a thread waits on? A ring's prologue fills every stage")
    if arrivals:
        return what, ARRIVALS
    return what, "every wait must be for a phase that completes: parity 0 for the first phase of a new mbarrier"


def _covered(shape, box, origin) -> np.ndarray:
    """Which elements the boxes at ``origin(t, tiles_x)`` (t < one per box) write."""
    rows, cols = shape
    tx, n = -(-cols // box[1]), -(-rows // box[0]) * -(-cols // box[1])
    mask = np.zeros(shape, bool)
    for t in range(n):
        r, c = origin(t, tx, cols)
        if r >= 0 and c >= 0:
            mask[r:r + box[0], c:c + box[1]] = True
    return mask


def _slip_origins(box):
    by, bx = box
    floor = lambda t, tx, cols: ((t // max(cols // bx, 1)) * by, (t % max(cols // bx, 1)) * bx)   # noqa: E731
    swapped = lambda t, tx, cols: ((t % tx) * bx, (t // tx) * by)                                # noqa: E731
    return [(floor, TILES), (swapped, COORDS)]


def compare(runs, box, ring: bool = False):
    """None if ``y == 2 * x`` everywhere in every run ``(x, y)``, else (what is wrong in the first
    wrong run, hint). A slip is named only when it explains every run (tensors of different sizes)."""
    bad = [(x, y) for x, y in runs if not np.array_equal(y, 2 * x)]
    if not bad:
        return None
    x, y = bad[0]
    want, unwritten = 2 * x, np.isnan(y)
    if unwritten.any():
        i, j = (int(v) for v in np.argwhere(unwritten)[0])
        what = (f"{int(unwritten.sum())} of {y.size} elements were never written (still NaN), first at "
                f"({i}, {j})")
        for origin, hint in _slip_origins(box):
            if all(np.array_equal(~np.isnan(yy), _covered(yy.shape, box, origin)) for _, yy in runs):
                return what, hint
        if unwritten.all():
            return what, "nothing was stored: one thread TMA-stores the doubled tile to dst at the box's coordinates"
        return what, ("CTA b copies box b of the tensor's boxes, numbered row by row, their count computed from "
                      "rows and cols: every box of a tensor whose size is not a multiple of the box must be stored")
    wrong = y != want
    i, j = (int(v) for v in np.argwhere(wrong)[0])
    what = (f"{int(wrong.sum())} of {y.size} elements differ; first at ({i}, {j}): yours {y[i, j]}, "
            f"expected {want[i, j]}")
    if np.array_equal(y[wrong], x[wrong]):
        return what, ("those elements were stored undoubled: double the tile in shared memory after the wait "
                      "and before the fence, the barrier and the store")
    if np.array_equal(y[wrong], 4 * x[wrong]):
        return what, "doubled twice: each element must be doubled by exactly one thread"
    if ring:
        return what, ("a buffer must hold the tile its iteration stores: refill buffer s with tile "
                      "blockIdx.x + (i + STAGES) * gridDim.x, the one iteration i + STAGES stores")
    return what, "each CTA loads its box, doubles it in shared memory and stores it at the SAME coordinates"


def compile_hint(message: str) -> str:
    """The hint for an NVRTC error in the learner's kernel."""
    if re.search(r"cannot open source file|could not open source file", message):
        return "no #include: the course's header (show_helpers()) is already compiled before your kernel"
    if re.search(r"identifier .* is undefined", message):
        return "a name is not defined: the helpers are listed by show_helpers(); the box is BOX_X x BOX_Y"
    return "the error names the line of your kernel as your_kernel.cu(N), counted from the first line of your cell's kernel text; fix it and run again"
