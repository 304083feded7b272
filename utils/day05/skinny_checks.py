"""Exercise check for skinny GEMMs (issue 15): the split-K count for a shape, graded against
:func:`utils.day05.skinny.split_k` on shapes where the known slips give different answers."""
from __future__ import annotations

import math

from ..core.checks import NOT_ATTEMPTED, CheckFailed, attempt, fail, int_answer, not_attempted, passed
from .skinny import split_k, tiles

# (M, N, K, BM, BN, BK, sms, min_k_tiles): decode shapes on 132 SMs (H100 SXM / H200) and 114
# (H100 PCIe), one with few K tiles, one whose tiles fill the GPU, one with a partial tile row
SPLIT_CASES = [(128, 8192, 8192, 128, 128, 64, 132, 4), (64, 4096, 8192, 64, 128, 64, 132, 4),
               (16, 1024, 512, 64, 128, 64, 132, 4), (256, 8192, 8192, 128, 64, 64, 132, 4),
               (80, 3200, 16384, 64, 128, 64, 132, 4), (128, 4096, 8192, 128, 128, 64, 114, 4),
               (1, 8192, 4096, 64, 256, 64, 132, 8)]


def split_mistakes(M, N, K, BM, BN, BK, sms, min_k_tiles) -> list:
    """(the split count a known slip gives, why it is wrong) for one shape."""
    t, k_tiles = tiles(M, N, BM, BN), math.ceil(K / BK)
    cap = max(1, k_tiles // min_k_tiles)
    naive = min(math.ceil(sms / t), cap)
    return [
        (min(sms // t, cap) if sms >= t else 0, "at least 1 split: when the tiles alone fill the SMs, do not split"),
        (naive, f"{t} tiles x {naive} splits = {t * naive} work units on {sms} SMs starts a second, partial "
                f"wave: {math.ceil(t * naive / sms)} waves x {math.ceil(k_tiles / naive)} K tiles takes longer "
                "than the largest split count that stays in ONE wave"),
        (max(1, sms // t), f"each split must keep at least {min_k_tiles} of the {k_tiles} K tiles "
                           f"(cap: k_tiles // min_k_tiles = {k_tiles // min_k_tiles})"),
        (max(1, min(sms // t, K // min_k_tiles)), f"the cap counts K TILES, ceil(K / BK) = {k_tiles}, not K"),
        (max(1, min(sms // max(1, (M // BM) * (N // BN)), cap)) if M >= BM else -1,
         "a partial tile at the edge is still a tile: tiles = ceil(M/BM) x ceil(N/BN)"),
        (1, f"only {t} of {sms} SMs get work: split K so that more tiles x splits units run at once"),
    ]


def check_split_count(fn) -> None:
    """``fn(M, N, K, BM, BN, BK, sms, min_k_tiles)`` must return the split count of
    :func:`utils.day05.skinny.split_k`: the largest s with tiles x s <= sms (one wave), each split
    keeping >= min_k_tiles K tiles, and 1 when the tiles alone fill the SMs."""
    name = "split_count"
    for case in SPLIT_CASES:
        M, N, K, BM, BN, BK, sms, mk = case
        shape = f"M={M} N={N} K={K}, tiles {BM}x{BN}, BK={BK}, {sms} SMs, min_k_tiles={mk}"
        try:
            got = attempt(fn, *case)
        except CheckFailed:
            raise
        except Exception as e:       # the learner's code raised: say where, never crash
            fail(name, f"for {shape} your function raised {type(e).__name__}: {e}",
                 "M < BM makes M // BM = 0: count the partial tile too, ceil(M / BM)"
                 if isinstance(e, ZeroDivisionError) else "")
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got = int_answer(name, got, f"for {shape}, the split count", "a number of splits")
        want = split_k(*case)
        if got != want:
            hint = next((h for value, h in split_mistakes(*case) if got == value),
                        "s = max(1, min(sms // tiles, k_tiles // min_k_tiles)) with tiles = "
                        "ceil(M/BM) x ceil(N/BN) and k_tiles = ceil(K/BK)")
            fail(name, f"{shape}: got {got}, expected {want} ({tiles(M, N, BM, BN)} tiles, "
                 f"{math.ceil(K / BK)} K tiles)", hint)
    return passed(name, "one wave of tiles x splits, every split long enough to fill its pipeline.")
