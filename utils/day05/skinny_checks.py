"""Exercise check for skinny GEMMs (issue 15): the split-K count for a shape, graded against
:func:`utils.day05.skinny.split_k` on shapes where the known slips give different answers."""
from __future__ import annotations

import math

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, int_answer, not_attempted, passed
from .skinny import split_k, tiles

# (M, N, K, BM, BN, BK, sms, min_k_tiles): decode shapes on 132 SMs (H100 SXM / H200), 114
# (H100 PCIe) and 108 (A100); one with few K tiles, one whose tiles fill the GPU, partial tile
# rows AND columns, K not a multiple of BK, BK other than 64, K too short to split (one with a
# single tile, where K // min_k_tiles and the cap differ), and min_k_tiles 3, 4 and 8: every
# input the count depends on changes somewhere
SPLIT_CASES = [(128, 8192, 8192, 128, 128, 64, 132, 4), (64, 4096, 8192, 64, 128, 64, 132, 4),
               (16, 1024, 512, 64, 128, 64, 132, 4), (256, 8192, 8192, 128, 64, 64, 132, 4),
               (80, 3200, 16384, 64, 128, 64, 132, 4), (128, 4096, 8192, 128, 128, 64, 114, 4),
               (1, 8192, 4096, 64, 256, 64, 132, 8), (64, 4274, 8192, 64, 128, 64, 132, 4),
               (16, 256, 1000, 64, 128, 64, 132, 4), (32, 1024, 4096, 64, 128, 128, 132, 4),
               (64, 512, 192, 64, 128, 64, 132, 4), (16, 512, 2240, 64, 128, 64, 132, 3),
               (200, 1000, 6000, 128, 128, 32, 108, 4), (16, 128, 128, 64, 128, 64, 132, 4)]


def _t(M, N, BM, BN, floor_m=False, floor_n=False):
    """Tiles, or the count a slip gets by flooring a partial tile row/column away (at least 1)."""
    return max(1, (M // BM if floor_m else math.ceil(M / BM)) * (N // BN if floor_n else math.ceil(N / BN)))


def _kt(K, BK):
    return math.ceil(K / BK)


SPLIT_SLIPS = [  # (a slip's count for a case, why it is wrong: a function of (your count, the case))
    (lambda M, N, K, BM, BN, BK, sms, mk: min(sms // _t(M, N, BM, BN), _kt(K, BK) // mk),
     lambda s, *c: "at least 1 split: when the tiles alone fill the SMs, or K is too short to "
                   "split, do not split (s = 1)"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(math.ceil(sms / _t(M, N, BM, BN)), _kt(K, BK) // mk)),
     lambda s, *c: _naive_why(s, *c)),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, math.ceil(sms / _t(M, N, BM, BN))),
     lambda s, *c: _naive_why(s, *c)),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, sms // _t(M, N, BM, BN)),
     lambda s, M, N, K, BM, BN, BK, sms, mk: f"each split must keep at least {mk} of the {_kt(K, BK)} "
                                             f"K tiles (cap: k_tiles // min_k_tiles = {_kt(K, BK) // mk})"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _t(M, N, BM, BN), K // mk)),
     lambda s, M, N, K, BM, BN, BK, sms, mk: f"the cap counts K TILES, ceil(K / BK) = {_kt(K, BK)}, not K"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _t(M, N, BM, BN), K // BK // mk)),
     lambda s, M, N, K, BM, BN, BK, sms, mk: f"a partial K tile is still a K tile: k_tiles = "
                                             f"ceil(K / BK) = {_kt(K, BK)}, not K // BK = {K // BK}"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // _t(M, N, BM, BN), math.ceil(_kt(K, BK) / mk))),
     lambda s, M, N, K, BM, BN, BK, sms, mk: f"every split keeps at least {mk} K tiles: the cap rounds "
                                             f"DOWN, k_tiles // min_k_tiles = {_kt(K, BK) // mk}"),
    *[(lambda M, N, K, BM, BN, BK, sms, mk, fm=fm, fn=fn: max(1, min(sms // _t(M, N, BM, BN, fm, fn),
                                                                   _kt(K, BK) // mk)),
       lambda s, *c: "a partial tile at the edge is still a tile: tiles = ceil(M/BM) x ceil(N/BN)")
      for fm, fn in ((True, True), (True, False), (False, True))],
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(round(sms / _t(M, N, BM, BN)), _kt(K, BK) // mk)),
     lambda s, *c: "round DOWN, sms // tiles: rounding to nearest can put more units than SMs"),
    (lambda *c: 1, lambda s, M, N, K, BM, BN, BK, sms, mk: f"only {tiles(M, N, BM, BN)} of {sms} SMs "
                                                          "get work: split K so that more tiles x "
                                                          "splits units run at once")]


def _naive_why(s, M, N, K, BM, BN, BK, sms, mk) -> str:
    """Why ``s`` splits (more than one wave's worth) lose to the one-wave count, in numbers."""
    t, k_tiles, best = tiles(M, N, BM, BN), _kt(K, BK), split_k(M, N, K, BM, BN, BK, sms, mk)
    steps = lambda n: math.ceil(t * n / sms) * math.ceil(k_tiles / n)  # noqa: E731
    cap = "" if s <= k_tiles // mk else f"; and each split must keep at least {mk} of the {k_tiles} K tiles"
    return (f"{t} tiles x {s} splits = {t * s} work units on {sms} SMs start a second, partial "
            f"wave: {math.ceil(t * s / sms)} waves x {math.ceil(k_tiles / s)} K tiles = {steps(s)} "
            f"steps, against {steps(best)} for {best} splits in ONE wave{cap}")


def _shape(M, N, K, BM, BN, BK, sms, mk) -> str:
    return f"M={M} N={N} K={K}, tiles {BM}x{BN}, BK={BK}, {sms} SMs, min_k_tiles={mk}"


def check_split_count(fn) -> None:
    """``fn(M, N, K, BM, BN, BK, sms, min_k_tiles)`` must return the split count of
    :func:`utils.day05.skinny.split_k`: the largest s with tiles x s <= sms (one wave), each split
    keeping >= min_k_tiles K tiles, and 1 when the tiles alone fill the SMs. A hint naming a slip
    is given only when the answers equal that slip's on every case of :data:`SPLIT_CASES`."""
    name = "split_count"

    def raised(case, e):
        M, N, K, BM, BN = case[:5]
        return (f"for {_shape(*case)} your function raised {type(e).__name__}: {e}",
                "" if not isinstance(e, ZeroDivisionError) else
                "something you divide by is 0 here: if it is a tile count, M < BM makes M // BM = 0; "
                "count the partial tile too, ceil(M / BM)" if M < BM or N < BN else
                "something you divide by is 0 here: tiles, k_tiles and s are all at least 1")
    got_all = answers(name, fn, SPLIT_CASES, lambda got, case: int_answer(
        name, got, f"for {_shape(*case)}, the split count", "a number of splits"), raised=raised)
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, SPLIT_CASES):
        want = split_k(*case)
        if got != want:
            M, N, K, BM, BN, BK, sms, mk = case
            why = named_mistake(got_all, SPLIT_CASES, SPLIT_SLIPS)
            hint = why(got, *case) if why else ("s = max(1, min(sms // tiles, k_tiles // min_k_tiles)) with "
                                                "tiles = ceil(M/BM) x ceil(N/BN) and k_tiles = ceil(K/BK)")
            fail(name, f"{_shape(*case)}: got {got}, expected {want} ({tiles(M, N, BM, BN)} tiles, "
                 f"{_kt(K, BK)} K tiles)", hint)
    return passed(name, "one wave of tiles x splits, every split long enough to fill its pipeline.")
