"""Day 5 · 09, exercises 2 and 3 (re-exported by :mod:`utils.day05.blackwell_checks`): the
tensor-memory columns of an accumulator, and the multicast masks of a cluster of CTA pairs. The
references agree with what CuteDSL computes (``tests/test_blackwell.py``, through
:mod:`utils.cute_dsl.sm100_probes`)."""
from __future__ import annotations

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, is_int, not_attempted, passed


# ---- 2. tensor-memory columns --------------------------------------------------------------------

TMEM_COLUMNS, TMEM_LANES = 512, 128


def tmem_columns_ref(tile_m: int, tile_n: int, pair: bool, stages: int = 1):
    """Columns one CTA passes to ``tcgen05.alloc`` for ``stages`` fp32 accumulators of a
    ``tile_m x tile_n`` MMA (the pair's tile when ``pair``), or None when they do not fit in 512.

    Each CTA holds 128 rows (1-CTA M=128, pair M=256: N columns) or 64 rows: a 1-CTA M=64 tile
    uses 16 lanes of each warp's 32 (N columns); a pair's M=128 tile puts its second N/2 columns
    in lanes 64-127 (N/2 columns). The allocation is a power of two, at least 32 columns."""
    if (tile_m, bool(pair)) not in ((64, False), (128, False), (128, True), (256, True)):
        raise ValueError(f"no tcgen05 fp32 MMA of M={tile_m} with pair={pair}")
    need = (tile_n // 2 if (tile_m, pair) == (128, True) else tile_n) * stages
    cols = max(32, 1 << (need - 1).bit_length())
    return cols if cols <= TMEM_COLUMNS else None


# (tile_m, tile_n, pair, stages): all four data-path shapes, N a power of two and not, 1-4 stages
TMEM_CASES = [(128, 256, False, 1), (128, 96, False, 1), (128, 16, False, 1), (128, 256, False, 2),
              (128, 160, False, 2), (128, 192, False, 3), (64, 128, False, 1), (64, 48, False, 2),
              (256, 256, True, 1), (256, 96, True, 2), (256, 256, True, 2), (128, 256, True, 1),
              (128, 64, True, 1), (128, 128, True, 4), (256, 80, True, 2), (64, 24, False, 1),
              (128, 64, False, 3), (64, 32, False, 3)]
_pow2 = lambda n: max(32, 1 << (n - 1).bit_length())  # noqa: E731
_fit = lambda c: c if c <= TMEM_COLUMNS else None      # noqa: E731
_fold = lambda m, n, p: n // 2 if (m, p) == (128, True) else n  # noqa: E731
TMEM_SLIPS = [
    (lambda m, n, p, s: _fold(m, n, p) * s if _fold(m, n, p) * s <= 512 else None,
     "tcgen05.alloc takes a power of two (96 columns is not one: allocate 128)"),
    (lambda m, n, p, s: _fit(-(-_fold(m, n, p) * s // 32) * 32),
     "a multiple of 32 is not enough: the column count must be a power of two (160 -> 256)"),
    (lambda m, n, p, s: _fit(1 << (_fold(m, n, p) * s - 1).bit_length()),
     "the smallest allocation is 32 columns"),
    (lambda m, n, p, s: _fit(_pow2(_fold(m, n, p) * s * 4)),
     "a column is one 32-bit cell in each of the 128 lanes: an fp32 element takes one column, not 4 bytes"),
    (lambda m, n, p, s: _fit(_pow2(n * s)),
     "a pair's M=128 tile leaves each CTA 64 rows, and those fill lanes 64-127 with the second half of "
     "the columns: N/2 columns per CTA"),
    (lambda m, n, p, s: _fit(_pow2(m * n * s // TMEM_LANES)),
     "divide by the rows THIS CTA holds, not by 128 lanes: a 1-CTA M=64 tile still takes N columns "
     "(16 lanes of each warp), and a pair's M=256 tile is 128 rows in each CTA"),
    (lambda m, n, p, s: _fit(_pow2(_fold(m, n, p))),
     "every stage is a whole accumulator: multiply the columns by stages"),
    (lambda m, n, p, s: min(_pow2(_fold(m, n, p) * s), 512),
     "more than 512 columns do not fit: return None, do not clamp"),
    (lambda m, n, p, s: _pow2(_fold(m, n, p) * s),
     "a CTA has 512 columns: an allocation above that does not fit, return None"),
    (lambda m, n, p, s: _fit(_pow2(m * s)),
     "columns hold the tile's N dimension (rows go to lanes): use tile_n, not tile_m"),
    (lambda m, n, p, s: _fit(_pow2(_fold(m, n, p)) * s),
     "round the total: 3 x 64 = 192 is not a power of two (allocate 256), so round stages x columns, "
     "not each stage"),
    (lambda m, n, p, s: _fit(_pow2((n // 2 if p else n) * s)),
     "a pair does not always halve N: its M=256 tile is 128 rows in each CTA (N columns); only its M=128 "
     "tile leaves each CTA 64 rows and N/2 columns"),
]


def check_tmem_columns(fn) -> None:
    """Check ``fn(tile_m, tile_n, pair, stages)`` against :func:`tmem_columns_ref` on :data:`TMEM_CASES`."""
    name = "tmem_columns"
    got_all = answers(name, fn, TMEM_CASES, show=lambda c: "(tile_m={}, tile_n={}, pair={}, stages={})".format(*c))
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, TMEM_CASES):
        if not (got is None or is_int(got)):
            fail(name, f"tmem_columns{case} returned {type(got).__name__} {got!r}",
                 "return an int (a column count), or None when the accumulators do not fit; a float is not a count")
    for got, case in zip(got_all, TMEM_CASES):
        want = tmem_columns_ref(*case)
        if (None if got is None else int(got)) != want:
            fail(name, f"tmem_columns{case} = {got!r}, expected {want!r}", named_mistake(got_all, TMEM_CASES, TMEM_SLIPS) or
                 "columns = tile_n (tile_n / 2 for a pair's M=128) x stages, rounded up to a power of two, at "
                 "least 32; None above 512")
    passed(name, f"all {len(TMEM_CASES)} tiles.")


# ---- 3. a cluster of CTA pairs --------------------------------------------------------------------

def pair_masks_ref(rank: int, cluster) -> tuple:
    """``(mask_a, mask_b, barrier_rank)`` of the CTA of ``rank`` in a cluster of ``cluster`` =
    (CTAs along M, along N), ranks column-major (``rank = x + cm * y``), CTA pairs along M (ranks
    2p, 2p + 1). A's tile (this CTA's rows) goes to the CTAs of the same pair half and pair along
    N; B's (this CTA's half of the columns) to the same half of every pair along M; the pair's
    TMA bytes complete the barrier of its even CTA. As CuteDSL's ``create_tma_multicast_mask``
    (modes 2 and 1 of the cluster's (V, M, N) layout) and CUTLASS's ``Sm100MmaPeerBitMask``."""
    cm, cn = cluster
    v, m, n = rank % 2, (rank // 2) % (cm // 2), rank // cm
    mask_a = sum(1 << (v + 2 * m + cm * j) for j in range(cn))
    mask_b = sum(1 << (v + 2 * i + cm * n) for i in range(cm // 2))
    return mask_a, mask_b, rank - v


PAIR_CLUSTERS = ((2, 1), (2, 2), (4, 1), (4, 2), (2, 4), (4, 4), (8, 2))
PAIR_CASES = [(r, c) for c in PAIR_CLUSTERS for r in range(c[0] * c[1])]


def _hopper(rank, cluster):         # notebook 04's rule, pairs ignored: B to every CTA of the column
    cm, cn = cluster
    a, _, lead = pair_masks_ref(rank, cluster)
    return a, sum(1 << (i + cm * (rank // cm)) for i in range(cm)), lead


def _row_major(rank, cluster):      # the same rules with ranks counted along N first
    cm, cn = cluster
    x, y = rank // cn, rank % cn
    v = x % 2
    return (sum(1 << (j + cn * x) for j in range(cn)),
            sum(1 << (y + cn * (v + 2 * i)) for i in range(cm // 2)), y + cn * (x - v))


PAIR_SLIPS = [
    (_hopper, "B's mask holds the peer: in a pair each CTA loads ITS half of B's columns, and the pair's "
              "MMA reads both halves; multicasting your half into the peer would overwrite the peer's half"),
    (lambda r, c: (pair_masks_ref(r, c)[1], pair_masks_ref(r, c)[0], r - r % 2),
     "A and B are swapped: A's rows are shared along N (same M), B's columns along M (same N)"),
    (lambda r, c: (pair_masks_ref(r, c)[0] | pair_masks_ref(r ^ 1, c)[0], pair_masks_ref(r, c)[1], r - r % 2),
     "A's mask holds the peer: the two CTAs of a pair hold different rows of A (rows 0-127 and 128-255)"),
    (lambda r, c: (1 << r, 1 << r, r - r % 2), "no multicast at all: CTAs of other pairs need the same tiles"),
    (lambda r, c: (*pair_masks_ref(r, c)[:2], r), "each CTA's copies complete the barrier of the pair's even CTA "
     "(its leader, which issues the MMAs): clear the low bit of the rank"),
    (lambda r, c: (*pair_masks_ref(r, c)[:2], r ^ 1), "the barrier belongs to the pair's EVEN CTA, the leader "
     "(rank & ~1), not to the other CTA"),
    (lambda r, c: (*pair_masks_ref(r, c)[:2], 0), "every pair has its own leader: rank & ~1, not the cluster's rank 0"),
    (lambda r, c: _row_major(r, c), "ranks are column-major: rank = x + cm * y (M fastest), not row-major"),
]


def check_pair_masks(fn) -> None:
    """Check ``fn(rank, cluster) -> (mask_a, mask_b, barrier_rank)`` for every CTA of clusters
    2x1, 2x2, 4x1, 4x2, 2x4, 4x4 and 8x2 (:data:`PAIR_CASES`)."""
    name = "pair_masks"
    got_all = answers(name, fn, PAIR_CASES, show=lambda c: f"(rank={c[0]}, cluster={c[1]})")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, PAIR_CASES):
        if not (isinstance(got, (tuple, list)) and len(got) == 3 and all(is_int(x) for x in got)):
            fail(name, f"pair_masks{case} returned {got!r}", "return three ints: (mask_a, mask_b, barrier_rank); "
                 "a mask has bit r set for rank r, e.g. sum(1 << r for r in ranks)")
    for got, case in zip(got_all, PAIR_CASES):
        want = pair_masks_ref(*case)
        if tuple(int(x) for x in got) != want:
            width = case[1][0] * case[1][1]
            shown = lambda t: f"(A {t[0]:0{width}b}, B {t[1]:0{width}b}, barrier {t[2]})"  # noqa: E731
            fail(name, f"rank {case[0]} in cluster {case[1]}: got {shown(got)}, expected {shown(want)}",
                 named_mistake(got_all, PAIR_CASES, PAIR_SLIPS, same=lambda g, w: tuple(int(x) for x in g) == tuple(w)) or
                 "v = rank % 2 (half of the pair), m = rank // 2 % (cm // 2), n = rank // cm: A to the ranks with the "
                 "same v and m, B to those with the same v and n; the barrier of rank - v")
    passed(name, f"all {len(PAIR_CASES)} CTAs of {len(PAIR_CLUSTERS)} clusters.")
