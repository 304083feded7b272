"""What a wrong transpose shows, for :mod:`.transpose_check` (Exercise 7 of day 1 · 03): the hint for
each slip, and the slip read off the run: where each wrong value of y came from in x (its own tile at
the wrong place, another tile, x's own order), which elements were never written (the last row or column,
the partial tiles, elsewhere), an emulator error (outside x or y, outside the tile, a hang), and a second
launch at a square shape (is M vs N the slip?).
"""
from __future__ import annotations

import numpy as np

from ..core.checks import fail

NAME, KERNEL = "transpose_kernel", "transpose_kernel"
BLOCK, TILE = (32, 8), 32
WHOLE = (64, 96)                   # whole tiles, M != N: the shape a kernel without edge masks gets right

HINTS = {
    "compile": "the line numbers count from the first line of your source string",
    "unwritten": "the stub writes nothing: read the tile from x (a row per warp), __syncthreads(), "
                 "then write y from the tile",
    "copy": "y holds x in x's own order: y = x.T is N x M, so x[r][c] goes to y[c * M + r]",
    "tile": "every value stays inside its 32 x 32 tile but lands at the wrong place in it: the tile is "
            "read back with another placement than it was written with. Whatever column you store "
            "element (row, col) of the tile at, find it at the same place when reading: the same "
            "function of (row, col) on both sides (when reading, the tile's row is threadIdx.x)",
    "index": "values land in the wrong tile of y: y is N x M (rows of M), and block (bx, by) writes y's "
             "rows 32 bx.. and columns 32 by..",
    "edges": "the last tiles are partial (M and N are not multiples of 32): guard the read of x with "
             "(row < M, column < N) and the write of y with y's bounds (row of y < N, column of y < M), "
             "each with <, not <=",
    "cover": "some elements were never written: each thread moves 4 elements of its tile (rows threadIdx.y, "
             "threadIdx.y + 8, + 16, + 24) on both sides",
    "shape": "right at one shape only: every index and bound must come from M, N and the block's tile, "
             "not from the numbers of one shape; the last tiles are partial",
    "bound": "y's last row or column was never written: a bound off by one? Guard with row < M and "
             "column < N when reading x, row of y < N and column of y < M when writing (not < M - 1, not <= M)",
    "square": "right when M == N only: y has N rows of M elements; index it with M and guard its rows "
              "with N, its columns with M",
    "fault": "an access outside x or y: the last tiles are partial (M and N not multiples of 32), so "
             "guard the read with (row < M, column < N) and the write with (row of y < N, column of y < M)",
    "smem_fault": "an index outside the 32 x 32 tile: whatever placement you use, its row and column must "
                  "stay in 0..31 (use the row within the tile, not the row of the matrix)",
    "twice": "each element of x is read once and each of y written once: one tile per block, each "
             "thread 4 elements of it (rows threadIdx.y, threadIdx.y + 8, + 16, + 24) on each side",
    "no_smem": "your kernel never uses shared memory: that is v0, with a strided side. Stage the tile: "
               "rows of x into the tile, __syncthreads(), rows of y from the tile's columns",
    "barrier": "every thread of the block must reach the same __syncthreads(): not inside an if or a loop "
               "that some threads skip (mask the accesses, not the barrier)",
    "race": "put __syncthreads() after the whole tile is written and before any thread reads it: a "
            "thread reads elements that other warps wrote",
    "coalesce": "neighbouring lanes must take neighbouring elements on both global sides: lane "
                "threadIdx.x reads x[row][32 bx + threadIdx.x] and writes y[row][32 by + threadIdx.x]; "
                "the reordering happens in the tile",
    "conflict": "keep float tile[32][32] and permute each row: store element (row, col) at a column that "
                "depends on its row, so that the 32 elements of any column land in 32 different columns "
                "(hence banks) and a row's 32 elements stay in 32; read each element back from where it "
                "was stored (in v1, a whole column lies in one bank)",
    "budget": "padding (v2) removes the conflicts but costs shared memory; this exercise keeps v1's "
              "float tile[32][32] (4096 B) and permutes each row instead",
}


def launched_text(M, N):
    return (f"{KERNEL} on the emulator: x {M} x {N} fp32, grid ({-(-N // TILE)}, {-(-M // TILE)}) of "
            f"32 x 8 threads, y poisoned with NaN")


def wrong(x, y):
    """Mask of elements of y that differ from x.T (NaN counts as wrong)."""
    return ~(y == x.T)


def slip_of(x, y):
    """Which mistake the wrong elements of y show, from where each wrong value came from in x:
    "copy", "tile" (the right tile, the wrong place in it), "index" (another tile, or no value of x),
    "edges" (only never-written elements, all in partial tiles) or "cover" (never-written elsewhere)."""
    M, N = x.shape
    bad = wrong(x, y)
    got = ~np.isnan(y) & bad
    if not got.any():
        i, j = np.nonzero(bad)
        if ((i == N - 1) | (j == M - 1)).all():
            return "bound"                # y's last row or column: a bound off by one
        return "edges" if ((i >= N // TILE * TILE) | (j >= M // TILE * TILE)).all() else "cover"
    if (y[got] == x.reshape(y.shape)[got]).all():
        return "copy"
    flat = x.ravel()
    order = np.argsort(flat, kind="stable")
    i, j = np.nonzero(got)
    src = order[np.clip(np.searchsorted(flat[order], y[i, j]), 0, flat.size - 1)]
    r, c = src // N, src % N                       # y[i, j] came from x[r, c]; x[j, i] was due
    same_tile = (flat[src] == y[i, j]) & (r // TILE == j // TILE) & (c // TILE == i // TILE)
    return "tile" if same_tile.all() else "index"


def traffic(trace, x, y):
    """'' if each element of x is read once and each of y written once, else what went wrong."""
    for op, arr, what in (("ld", x, "x[{}][{}] was read"), ("st", y, "y[{}][{}] was written")):
        base = arr.ctypes.data
        hits = np.concatenate([a.addresses for a in trace.of(op, "global")] or [np.zeros(0, np.int64)])
        hits = hits[(hits >= base) & (hits < base + arr.nbytes)]
        counts = np.bincount((hits - base) // 4, minlength=arr.size)
        if counts.max() > 1 or counts.min() < 1:
            k = int(np.argmax(counts != 1))
            return f"{what.format(*(int(v) for v in np.unravel_index(k, arr.shape)))} {counts[k]} times (once is right)"
    return ""


def explain(ptx, x, y, trace, err, k, rerun):
    """Fail with what a wrong run shows: an emulator error, wrong values or wrong traffic at the check's
    ``k``-th shape. ``rerun(M, N)`` launches again (x, y, trace, error): the square-shape experiment."""
    from ..emu import Deadlock, MemoryFault
    M, N = x.shape
    launched = launched_text(M, N) + (f" (right at {WHOLE[0]} x {WHOLE[1]}, whole tiles)" if k > 0 else "")
    msg = str(err).splitlines()[0][len("emulator: "):] if err is not None else ""
    outside = isinstance(err, MemoryFault) and "global address" in msg          # outside x and y
    if err is not None and not outside:
        hint = (HINTS["smem_fault"] if isinstance(err, MemoryFault) else HINTS["barrier"] if isinstance(err, Deadlock)
                else "the emulator stopped your kernel: see its message")
        fail(NAME, msg, hint, launched)
    bad = wrong(x, y)
    if err is None and not bad.any():
        fail(NAME, f"right values, but {traffic(trace, x, y)}", HINTS["twice"], launched)
    if err is None and np.isnan(y).all():
        fail(NAME, "y was never written (still all NaN)", HINTS["unwritten"], launched)
    slip = "fault" if err is not None else slip_of(x, y)
    if err is None and trace.split_barrier():
        slip = "barrier"
    elif err is None and (trace.race or not any(b in ptx for b in ("bar.sync", "barrier.sync"))):
        slip = "race"
    elif slip in ("index", "edges", "cover", "fault", "bound"):       # a second launch, square: is M vs N the slip?
        sx, sy, _, e2 = rerun(min(M, N), min(M, N))
        if e2 is None and not wrong(sx, sy).any():
            slip = "square"
        elif k > 0 and slip in ("index", "cover"):
            slip = "shape" if slip == "index" else "edges"
    if outside:
        fail(NAME, msg, HINTS[slip], launched)
    i = tuple(int(v) for v in np.argwhere(bad)[0])
    nan = int(np.isnan(y[bad]).sum())
    what = f"{nan} never written (NaN), " if nan else ""
    fail(NAME, f"{int(bad.sum())} of {y.size} elements of y wrong: {what}first at y{list(i)}: "
         f"yours {float(y[i])!r}, expected x[{i[1]}][{i[0]}] = {float(x[i[1], i[0]])!r}", HINTS[slip], launched)
