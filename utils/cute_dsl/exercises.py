"""Day 5 · 04 exercises: references and checks (see ``utils.core.checks`` for the conventions).

1. :func:`check_stage_tx` — the ``expect_tx`` bytes of one pipeline stage (A tile + B tile).
2. :func:`check_mcast_mask` — the 16-bit multicast mask of a CTA in a cluster.
3. :func:`check_producer` — the producer's acquire / copy / commit step of the TMA GEMM: its
   structure followed while it compiles for sm_90a (any machine) and, on Hopper, the GEMM run
   against torch (in :mod:`utils.cute_dsl.producer_check`, re-exported here).
4. :func:`check_consumer` — the consumer's wait / wgmma / release step, checked the same way
   (in :mod:`utils.cute_dsl.consumer_check`, re-exported here).

The first two call the learner's function on every case first; a hint that names a slip is given
only when the answers equal that slip's on every case (:mod:`utils.core.answers`; a right value of
another integer type, a NumPy int, passes).
"""
from __future__ import annotations

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, is_int, is_number, not_attempted, passed
# Exercise 3, a kernel step compiled and traced, lives in its own module; notebooks reach it here
from .producer_check import COMPILE_HINTS, PRODUCER_CLUSTER, check_producer, producer_problems  # noqa: F401
from .consumer_check import check_consumer, consumer_problems  # noqa: F401
# day 5 · 05's kernel exercise (the warp-specialized rung's role split), re-exported beside them
from .rung_check import check_warp_roles  # noqa: F401


def stage_tx_ref(tile_mnk, itemsize: int, cluster=(1, 1)) -> int:
    """Bytes that complete one stage's mbarrier phase: the whole A tile (M x K) and B tile
    (N x K). With multicast each CTA *issues* only a slice, but receives the full tiles."""
    m, n, k = tile_mnk
    return (m * k + n * k) * itemsize


def mcast_mask_ref(cluster_shape, coord, mode: int) -> int:
    """The multicast mask of the CTA at ``coord`` = (m, n) in a cluster of ``cluster_shape``
    (cm, cn): bit r is set for every CTA rank r (column-major, r = m + n * cm) that shares the
    tile. ``mode=1`` (A tiles): the CTAs of the same row m; ``mode=0`` (B tiles): same column n."""
    cm, cn = cluster_shape
    m, n = coord
    if mode == 1:
        return sum(1 << (m + j * cm) for j in range(cn))
    return sum(1 << (i + n * cm) for i in range(cm))


def _answers(name, fn, cases, launched):
    """The learner's answer for every case (``NOT_ATTEMPTED`` for a stub); an exception their
    function raises is explained, naming the case, never a bare traceback."""
    return answers(name, fn, cases, raised=lambda case, e: (
        f"your function raised {type(e).__name__}: {e}", "it is called with the arguments shown in "
        "'launched'", launched(*case)))


# (tile_mnk, itemsize, cluster): M != N both ways, K and the element size varied, clusters in
# both directions (the right answer does not depend on them; the slips below do)
STAGE_CASES = [((128, 256, 64), 2, (1, 1)), ((128, 128, 64), 1, (1, 1)), ((128, 256, 64), 2, (2, 1)),
               ((256, 128, 32), 2, (1, 2)), ((64, 64, 32), 4, (2, 2)), ((192, 64, 128), 1, (4, 1)),
               ((64, 192, 64), 2, (1, 4)), ((128, 64, 128), 4, (2, 4))]
_ISSUES = ("that is what this CTA ISSUES under multicast (its slice of each tile); its barrier "
           "counts what it RECEIVES: the whole A and B tiles, from every CTA that shares them")
TX_SLIPS = [  # (a slip's answer for (tile, itemsize, cluster), what is wrong with it)
    (lambda t, s, c: (t[0] + t[1]) * t[2], "those are elements: times itemsize bytes each"),
    (lambda t, s, c: t[0] * t[2] * s, "that is A's tile alone: the stage also receives B's (N x K)"),
    (lambda t, s, c: t[1] * t[2] * s, "that is B's tile alone: the stage also receives A's (M x K)"),
    (lambda t, s, c: 2 * t[0] * t[2] * s, "B's tile is N x K, not M x K (they differ when M != N)"),
    (lambda t, s, c: 2 * t[1] * t[2] * s, "A's tile is M x K, not N x K (they differ when M != N)"),
    (lambda t, s, c: t[0] * t[1] * s, "M x N is C's tile; a stage holds A's tile (M x K) and B's (N x K)"),
    (lambda t, s, c: (t[0] * t[1] + (t[0] + t[1]) * t[2]) * s, "C's tile (M x N) is not loaded per stage"),
    (lambda t, s, c: stage_tx_ref(t, s) / (c[0] * c[1]), "each CTA *receives* the full tiles even when "
     "it issues only a slice: do not divide by the cluster size"),
    (lambda t, s, c: stage_tx_ref(t, s) / max(c), "each CTA *receives* the full tiles even when it "
     "issues only a slice: do not divide by the cluster size"),
    (lambda t, s, c: (t[0] / c[1] + t[1] / c[0]) * t[2] * s, _ISSUES),
    (lambda t, s, c: (t[0] / c[0] + t[1] / c[1]) * t[2] * s, _ISSUES),
    (lambda t, s, c: stage_tx_ref(t, s) * c[0] * c[1], "each CTA's barrier counts the bytes that "
     "land in its own shared memory, not the whole cluster's"),
    (lambda t, s, c: stage_tx_ref(t, s) * 8, "bytes, not bits")]


def check_stage_tx(fn) -> None:
    """Check ``fn(tile_mnk, itemsize, cluster)`` against :func:`stage_tx_ref` on
    :data:`STAGE_CASES`."""
    name = "stage expect_tx bytes"
    launched = lambda t, s, c: f"tile_mnk={t}, itemsize={s}, cluster={c}"  # noqa: E731
    got_all = _answers(name, fn, STAGE_CASES, launched)
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, case in zip(got_all, STAGE_CASES):
        if not is_number(got):
            fail(name, f"got {type(got).__name__} {got!r}; expected an int number of bytes",
                 "did the function forget to return?" if got is None else
                 "return one int: the bytes of A's tile plus B's", launched(*case))
    want_all = [stage_tx_ref(*case) for case in STAGE_CASES]
    for got, want, case in zip(got_all, want_all, STAGE_CASES):
        if got != want:
            fail(name, f"got {got} B, expected {want} B", named_mistake(got_all, STAGE_CASES, TX_SLIPS) or
                 "A's tile is M x K elements and B's N x K, times itemsize bytes; under multicast a "
                 "CTA still receives both whole", launched=launched(*case))
    for got, case in zip(got_all, STAGE_CASES):
        if not is_int(got):
            fail(name, f"the value is right but it is {type(got).__name__} {got!r}; expected an int "
                 "(a byte count)", "int(...) or integer arithmetic (//)", launched(*case))
    passed(name, "(128 x 256 x 64 fp16: 49152 B per stage)")


MASK_CLUSTERS = ((2, 1), (1, 2), (2, 2), (4, 1), (1, 4), (4, 2), (2, 4))
MASK_CASES = [(cl, (m, n), mode) for cl in MASK_CLUSTERS for mode in (0, 1)
              for m in range(cl[0]) for n in range(cl[1])]


def _peers(cl, crd, mode):
    """The coordinates of the CTAs that share the tile of the CTA at ``crd`` (itself included)."""
    return [(crd[0], j) for j in range(cl[1])] if mode == 1 else [(i, crd[1]) for i in range(cl[0])]


def _mask(ranks):
    return sum(1 << r for r in ranks)


_col = lambda cl, p: p[0] + p[1] * cl[0]     # noqa: E731  (the rank: column-major)
_row = lambda cl, p: p[0] * cl[1] + p[1]     # noqa: E731
MASK_SLIPS = [  # (a slip's mask for (cluster, coord, mode), what is wrong with it)
    (lambda cl, x, md: mcast_mask_ref(cl, x, 1 - md), "the modes are swapped: mode 1 (A's tile) is "
     "shared by the CTAs with the same m, mode 0 (B's) by those with the same n"),
    (lambda cl, x, md: _mask(_row(cl, p) for p in _peers(cl, x, md)),
     "ranks are column-major: r = m + n * cm (yours are row-major, r = m * cn + n)"),
    (lambda cl, x, md: _mask(_row(cl, p) for p in _peers(cl, x, 1 - md)), "ranks are column-major, "
     "r = m + n * cm (yours are row-major), and the modes are swapped (mode 1: the same m)"),
    (lambda cl, x, md: _mask(p[0] + p[1] * cl[1] for p in _peers(cl, x, md)),
     "r = m + n * cm: each n skips a whole column of cm CTAs (cm = cluster_shape[0], not cn)"),
    (lambda cl, x, md: mcast_mask_ref(cl, x, md) & ~(1 << _col(cl, x)),
     "set this CTA's own bit too: it receives its share of the tile like the others"),
    (lambda cl, x, md: 1 << _col(cl, x), "the mask has a bit for EVERY CTA that shares the tile"),
    (lambda cl, x, md: (1 << cl[0] * cl[1]) - 1, "only the CTAs that share the tile (the same m "
     "for mode 1, the same n for mode 0), not the whole cluster"),
    (lambda cl, x, md: sum(_col(cl, p) for p in _peers(cl, x, md)),
     "set bit r for rank r (1 << r); the sum of the ranks is not a mask"),
    (lambda cl, x, md: _mask(_col(cl, p) + 1 for p in _peers(cl, x, md)),
     "rank r is bit r, counting from 0: 1 << r, not 1 << (r + 1)"),
    (lambda cl, x, md: _mask(x[0] + j * cl[0] for j in range(cl[0])) if md == 1 else
     _mask(i + x[1] * cl[0] for i in range(cl[1])), "mode 1 walks the cn CTAs of a row "
     "(j in range(cn)), mode 0 the cm CTAs of a column (i in range(cm))")]


def _bits(v, width):
    v = int(v)
    if v < 0:
        return str(v)
    ranks = [r for r in range(v.bit_length()) if v >> r & 1]
    return f"{v} = {v:#0{width + 2}b} (ranks {ranks})"


def _mask_type_problem(got, want):
    """(what, hint) when ``got`` is not an int mask, else None."""
    if is_int(got):
        return None
    if got is None:
        return "got None", "did the function forget to return the mask?"
    if isinstance(got, str):
        try:
            right = int(got, 0) == want
        except ValueError:
            right = False
        return (f"got the string {got!r}" + (": the right mask, written as text" if right else ""),
                "return the int itself (the copy takes a number): e.g. int(text, 2), or "
                "sum(1 << r for r in ranks)")
    if isinstance(got, (list, tuple, set, frozenset)):
        ranks = [r for r in range(int(want).bit_length()) if want >> r & 1]
        right = all(is_int(r) for r in got) and sorted(int(r) for r in got) == ranks
        return (f"got {type(got).__name__} {got!r}" + (": the right ranks, but not a mask" if right else ""),
                "return one int with bit r set for every rank r: sum(1 << r for r in ranks)")
    return (f"got {type(got).__name__} {got!r}", "return an int (a bit mask), e.g. "
            "sum(1 << r for r in ranks); a float or a bool is not one")


def check_mcast_mask(fn) -> None:
    """Check ``fn(cluster_shape, coord, mode)`` against :func:`mcast_mask_ref` for every CTA of
    clusters 2x1, 1x2, 2x2, 4x1, 1x4, 4x2 and 2x4, both modes (:data:`MASK_CASES`)."""
    name = "multicast mask"
    launched = lambda cl, x, md: f"cluster={cl}, coord={x}, mode={md}"  # noqa: E731
    got_all = _answers(name, fn, MASK_CASES, launched)
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [mcast_mask_ref(*case) for case in MASK_CASES]
    for got, want, case in zip(got_all, want_all, MASK_CASES):
        problem = _mask_type_problem(got, want)
        if problem:
            fail(name, problem[0] + "; expected an int bit mask", problem[1], launched(*case))
    for got, want, case in zip(got_all, want_all, MASK_CASES):
        if got != want:
            width = max(4, case[0][0] * case[0][1])
            fail(name, f"got {_bits(got, width)}, expected {_bits(want, width)}",
                 named_mistake(got_all, MASK_CASES, MASK_SLIPS) or "bit r is set for every rank r = m + n * cm "
                 "that shares the tile: mode 1 the CTAs with the same m, mode 0 the same n",
                 launched(*case))
    passed(name)
