"""The GEMM tiling primer of ``day05_tma/03_triton_tma_gemm`` (days 3-4, which taught it, are not
part of this course): output tiles of BM x BN, a K loop over BK-wide slices, the bytes one program
loads and its arithmetic intensity; a picture (:func:`show_tiling`) and the warm-up exercise's
check (:func:`check_tile_bytes`).

``C = A @ B``, A (M, K) and B (K, N): one program computes one BM x BN tile of C; at each step of
its K loop it loads A's BM x BK slice and B's BK x BN slice (a descriptor load moves the whole
block, zero-filled past the edge, so the last slice is a full BK wide even when K is not a
multiple of BK).
"""
from __future__ import annotations

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, is_int, is_number, not_attempted, passed


def _positive_ints(**kw) -> None:
    for name, v in kw.items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")


def tile_bytes_ref(BM: int, BN: int, BK: int, K: int, itemsize: int) -> int:
    """Bytes one program's K loop loads for its BM x BN tile of C: ``cdiv(K, BK)`` steps, each
    A's BM x BK block and B's BK x BN block of ``itemsize``-byte elements."""
    _positive_ints(BM=BM, BN=BN, BK=BK, K=K, itemsize=itemsize)
    return -(-K // BK) * (BM + BN) * BK * itemsize


def intensity(BM: int, BN: int, BK: int, K: int, itemsize: int) -> float:
    """Flops per byte loaded for one tile: ``2 * BM * BN * K`` over :func:`tile_bytes_ref`
    (about ``2 * BM * BN / ((BM + BN) * itemsize)`` when BK divides K: independent of BK)."""
    return 2 * BM * BN * K / tile_bytes_ref(BM, BN, BK, K, itemsize)


def show_tiling(M: int = 8, N: int = 12, K: int = 10, BM: int = 2, BN: int = 3, BK: int = 4,
                tile: tuple = (1, 2), step: int = 1):
    """Draw A (M x K), B (K x N) and C (M x N) cut into blocks: program ``tile = (pid_m, pid_n)``
    owns the dark tile of C; at K step ``step`` it loads the dark blocks of A and B; the pale ones
    are its other K steps (the hatched part of the last is past K: zero-filled). Returns the figure."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    _positive_ints(M=M, N=N, K=K, BM=BM, BN=BN, BK=BK)
    pm, pn = tile
    steps = -(-K // BK)
    if not (0 <= pm < -(-M // BM) and 0 <= pn < -(-N // BN) and 0 <= step < steps):
        raise ValueError(f"tile {tile} / step {step} outside the grid ({-(-M // BM)} x {-(-N // BN)} "
                         f"tiles, {steps} K steps)")
    fig, axes = plt.subplots(1, 3, figsize=(11, 3.6), gridspec_kw={"width_ratios": [K, N, N]})
    panels = [("A (M x K)", M, K, [(pm * BM, s * BK, BM, BK, s == step) for s in range(steps)]),
              ("B (K x N)", K, N, [(s * BK, pn * BN, BK, BN, s == step) for s in range(steps)]),
              ("C (M x N)", M, N, [(pm * BM, pn * BN, BM, BN, True)])]
    for ax, (title, rows, cols, blocks) in zip(axes, panels):
        ax.add_patch(Rectangle((0, 0), cols, rows, fill=False, lw=1.5))
        for r, c, h, w, now in blocks:
            ax.add_patch(Rectangle((c, r), w, h, color="tab:blue", alpha=0.75 if now else 0.2))
            if c + w > cols or r + h > rows:          # the part of the last slice past K
                ax.add_patch(Rectangle((c, r), w, h, fill=False, hatch="//", ls="--"))
        ax.set(xlim=(-0.5, cols + BN), ylim=(rows + BN, -0.5), title=title, aspect="equal")
        ax.set_xticks(range(0, cols + 1, BK if "A" in title else BN))
        ax.set_yticks(range(0, rows + 1, BK if "B" in title else BM))
        ax.grid(True, lw=0.4)
    fig.suptitle(f"program (pid_m={pm}, pid_n={pn}) computes one {BM} x {BN} tile of C; "
                 f"K step {step} of {steps} (BK = {BK})")
    fig.tight_layout()
    return fig


# ---- the warm-up exercise: bytes loaded per output tile -------------------------------------

# (BM, BN, BK, K, itemsize): BM != BN both ways, K a multiple of BK and not, K < BK, 1-8 byte items
TILE_CASES = [(128, 256, 64, 4096, 2), (256, 128, 64, 4096, 2), (128, 256, 64, 1000, 2),
              (64, 64, 32, 80, 4), (32, 64, 32, 20, 2), (128, 128, 128, 8192, 1),
              (64, 128, 16, 72, 8), (16, 32, 64, 200, 2)]
TILE_SLIPS = [  # (a slip's answer for (BM, BN, BK, K, itemsize), what is wrong with it)
    (lambda bm, bn, bk, k, s: -(-k // bk) * (bm + bn) * bk, "those are elements: times itemsize bytes each"),
    (lambda bm, bn, bk, k, s: (bm + bn) * k * s, "the last K slice is a whole BK wide (the descriptor "
     "zero-fills past K): cdiv(K, BK) steps of BK, not K columns"),
    (lambda bm, bn, bk, k, s: k // bk * (bm + bn) * bk * s, "K // BK drops the last, partial slice: "
     "the loop takes cdiv(K, BK) steps"),
    (lambda bm, bn, bk, k, s: (bm + bn) * bk * s, "that is ONE K step: the program loads a slice of "
     "A and of B at every one of its cdiv(K, BK) steps"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * bm * bn * s, "BM x BN is C's tile, which the program "
     "stores; it LOADS A's BM x BK and B's BK x BN slices at each K step"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * bm * bk * s, "that is A's slices alone: each step also "
     "loads B's BK x BN slice"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * bn * bk * s, "that is B's slices alone: each step also "
     "loads A's BM x BK slice"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * bm * bn * bk * s, "BM x BN x BK is the step's "
     "multiply-adds, not bytes: the step loads BM x BK + BK x BN elements"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * 2 * bm * bk * s, "B's slice is BK x BN, not BK x BM "
     "(they differ when BM != BN)"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * 2 * bn * bk * s, "A's slice is BM x BK, not BN x BK "
     "(they differ when BM != BN)"),
    (lambda bm, bn, bk, k, s: (-(-k // bk) * (bm + bn) * bk + bm * bn) * s, "C's tile is stored, "
     "not loaded: count A's and B's slices only"),
    (lambda bm, bn, bk, k, s: -(-k // bk) * (bm + bn) * bk * s * 8, "bytes, not bits")]


def check_tile_bytes(fn) -> None:
    """``fn(BM, BN, BK, K, itemsize)`` must return :func:`tile_bytes_ref` (an int) on
    :data:`TILE_CASES`; a wrong answer that equals a slip of :data:`TILE_SLIPS` on every case gets
    that slip's hint."""
    name = "tile_bytes"
    show = lambda case: "(BM={}, BN={}, BK={}, K={}, itemsize={})".format(*case)  # noqa: E731
    got_all = answers(name, fn, TILE_CASES, show=show, kind="an int number of bytes")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, TILE_CASES):
        if not is_number(got):
            fail(name, f"{name}{show(case)} returned {type(got).__name__} {got!r}; expected an int "
                 "number of bytes", "return one int: the bytes of A's and B's slices over the K loop")
    want_all = [tile_bytes_ref(*case) for case in TILE_CASES]
    for got, want, case in zip(got_all, want_all, TILE_CASES):
        if got != want:
            fail(name, f"{name}{show(case)}: got {got} B, expected {want} B",
                 named_mistake(got_all, TILE_CASES, TILE_SLIPS) or "cdiv(K, BK) steps, each A's "
                 "BM x BK slice and B's BK x BN slice, itemsize bytes per element")
    for got, case in zip(got_all, TILE_CASES):
        if not is_int(got):
            fail(name, f"{name}{show(case)}: the value is right but it is {type(got).__name__} "
                 f"{got!r}; expected an int", "integer arithmetic: -(-K // BK) or triton.cdiv")
    return passed(name, "bytes per tile: cdiv(K, BK) x (BM + BN) x BK x itemsize.")
