"""Exercise check for the lab report 06b §1: the bytes a tiled GEMM asks L2 for.

``tile_bytes(M, N, K, BM, BN, itemsize)``: C = A (M x K) @ B (K x N) cut into BM x BN output tiles,
each computed by one CTA that streams its BM rows of A (BM x K) and its BN columns of B (K x BN),
nothing shared between CTAs. The answer is what the SMs must receive in bytes; notebook 06b holds it
against what Nsight Compute counted arriving (the L2 request coalescer's delivered bytes). Shapes
are whole tiles (no partial tile at an edge). A hint naming a slip is given only when the answers
equal that slip's on every case of :data:`CASES`.
"""
from __future__ import annotations

import math

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, int_answer, not_attempted, passed

# (M, N, K, BM, BN, itemsize): 06b's skinny shape with cuBLAS's tile, the narrow tile, a square
# GEMM with 128 x 256 tiles, Mixtral's expert (bf16), fp32 and fp8 operands, BM > BN and BM < BN,
# M = BM (one row of tiles) and N = BN (one column): every input the count depends on changes
CASES = [(256, 8192, 8192, 128, 128, 2), (256, 8192, 8192, 256, 64, 2), (4096, 4096, 4096, 128, 256, 2),
         (1024, 14336, 4096, 128, 128, 2), (64, 1024, 512, 64, 128, 4), (512, 2048, 7168, 256, 64, 1),
         (384, 256, 96, 128, 256, 2)]


def tile_bytes_ref(M, N, K, BM, BN, itemsize) -> int:
    """Every one of the (M / BM) x (N / BN) tiles streams BM x K of A and K x BN of B."""
    return (M // BM) * (N // BN) * K * (BM + BN) * itemsize


def _tiles(M, N, BM, BN):
    return (M // BM) * (N // BN)


SLIPS = [  # (a slip's answer for a case, why it is wrong)
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * K * (BM + BN),
     "those are elements: multiply by itemsize for bytes"),
    (lambda M, N, K, BM, BN, s: (M * K + K * N) * s,
     "that is A and B read once each, the ideal no tiled kernel reaches when nothing is shared: "
     "every tile streams its own BM x K slice of A and K x BN slice of B"),
    (lambda M, N, K, BM, BN, s: M * N * s,       # = the C tiles summed
     "M x N is C, which the tiles WRITE (a BM x BN tile each); count what they read: BM x K of A and K x BN of B"),
    (lambda M, N, K, BM, BN, s: (M * K + _tiles(M, N, BM, BN) * K * BN) * s,
     "A is not read once: every tile of a row of tiles streams those BM rows of A again (N / BN times)"),
    (lambda M, N, K, BM, BN, s: (_tiles(M, N, BM, BN) * BM * K + K * N) * s,
     "B is not read once: every tile of a column of tiles streams those BN columns of B again (M / BM times)"),
    (lambda M, N, K, BM, BN, s: (M // BN) * (N // BM) * K * (BM + BN) * s,
     "the tile counts are swapped: M / BM tiles along M, N / BN along N"),
    (lambda M, N, K, BM, BN, s: math.ceil(M / BN) * math.ceil(N / BM) * K * (BM + BN) * s,
     "the tile counts are swapped: M / BM tiles along M, N / BN along N"),
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * BM * K * s,
     "that is A's slices alone: each tile also streams K x BN of B"),
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * K * BN * s,
     "that is B's slices alone: each tile also streams BM x K of A"),
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * K * (BM + BN) * s * 8,
     "bytes, not bits"),
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * K * (BM + BN) * s // 2 ** 20,
     "the answer is in bytes, not MiB"),
    (lambda M, N, K, BM, BN, s: tile_bytes_ref(M, N, K, BM, BN, s) + M * N * s,
     "C is what the tiles write, not what they ask L2 for: count only A's and B's slices"),
    (lambda M, N, K, BM, BN, s: _tiles(M, N, BM, BN) * K * BM * BN * s,
     "BM x BN per K step is a product, not what is loaded: a CTA loads BM + BN rows/columns of K elements"),
]


def _show(case) -> str:
    M, N, K, BM, BN, s = case
    return f"(M={M}, N={N}, K={K}, BM={BM}, BN={BN}, itemsize={s})"


def _as_int(name, got, case) -> int:
    """The answer as an int; a float that is the right count in MiB or MB is told its unit first."""
    want = tile_bytes_ref(*case)
    if isinstance(got, float) and any(math.isclose(got, want / unit) for unit in (2 ** 20, 1e6, 2 ** 30, 1e9)):
        fail(name, f"tile_bytes{_show(case)}: got {got!r}", "the answer is in bytes, not MiB (or MB, GiB): "
             "return the byte count as an int")
    return int_answer(name, got, f"tile_bytes{_show(case)}", "a number of bytes is an int")


def check_tile_bytes(fn) -> None:
    """``fn(M, N, K, BM, BN, itemsize)`` must return :func:`tile_bytes_ref` (an int) on every case."""
    name = "tile_bytes"
    got_all = answers(name, fn, CASES, lambda got, case: _as_int(name, got, case), show=_show, kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, CASES):
        want = tile_bytes_ref(*case)
        if got != want:
            M, N, K, BM, BN, s = case
            hint = named_mistake(got_all, CASES, SLIPS) or (
                "count the bytes ONE tile streams over the whole K loop (its rows of A, its columns of B), "
                "then multiply by the number of tiles")
            fail(name, f"tile_bytes{_show(case)}: got {got}, expected {want} "
                       f"({_tiles(M, N, BM, BN)} tiles of {BM} x {BN})", hint)
    return passed(name, "every tile streams its own slices of A and B; what the cluster and the hardware "
                        "share among tiles is what the counters below subtract from it.")
