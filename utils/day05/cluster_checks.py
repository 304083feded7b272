"""Exercises 4 and 5 of ``day05_tma/05_gemm_ladder``, what multicast does in a cluster: the CTAs a
consumer releases a shared-memory stage to (A multicast along the rows, B along the columns), and
the bytes L2 must read to deliver a cluster's data with and without multicast. Re-exported by
:mod:`utils.day05.ladder_checks`."""
from __future__ import annotations

import math

from ..core.answers import answers, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, fail, is_int, is_number, not_attempted, passed
from ..cute_dsl.exercises import mcast_mask_ref

# --- 4. release mask in a cluster ----------------------------------------------------------------
# the notebook's 2 x 2, 1-D clusters both ways, and 2-D clusters that are not square, both ways
# (there row-major and column-major ranks, and cm and cn, differ)
RELEASE_CLUSTERS = [(2, 2), (2, 1), (1, 2), (4, 1), (1, 4), (2, 4), (4, 2), (1, 1)]


def _cluster(cluster_shape, coord=None) -> tuple:
    """``(cm, cn)`` (and ``(m, n)``) as ints, or ValueError naming the rule broken."""
    if not (isinstance(cluster_shape, (tuple, list)) and len(cluster_shape) == 2
            and all(is_int(v) and v >= 1 for v in cluster_shape)):
        raise ValueError(f"cluster_shape must be a pair of ints >= 1 (cm, cn), got {cluster_shape!r}")
    cm, cn = (int(v) for v in cluster_shape)
    if coord is None:
        return cm, cn
    if not (isinstance(coord, (tuple, list)) and len(coord) == 2 and all(is_int(v) for v in coord)
            and 0 <= coord[0] < cm and 0 <= coord[1] < cn):
        raise ValueError(f"coord must be a pair of ints (m, n) with 0 <= m < {cm} and 0 <= n < {cn}, "
                         f"got {coord!r}")
    return (cm, cn), (int(coord[0]), int(coord[1]))


def release_mask_ref(cluster_shape, coord) -> int:
    """The CTAs that the consumer of the CTA at ``coord`` = (m, n) releases a stage to: every CTA
    that wrote into it, i.e. the same row m (A's multicast) and the same column n (B's), itself
    included; bit r for rank r = m' + n' * cm (column-major)."""
    cluster_shape, coord = _cluster(cluster_shape, coord)
    return mcast_mask_ref(cluster_shape, coord, 1) | mcast_mask_ref(cluster_shape, coord, 0)


def release_arrivals_ref(cluster_shape, warps_per_cta: int) -> int:
    """Arrivals each CTA's empty barrier expects per stage: every releasing consumer warp of each
    of the cm + cn - 1 CTAs that share the stage arrives once."""
    cm, cn = _cluster(cluster_shape)
    if not is_int(warps_per_cta) or warps_per_cta < 1:
        raise ValueError(f"warps_per_cta must be an int >= 1, got {warps_per_cta!r}")
    return (cm + cn - 1) * int(warps_per_cta)


def _rank(cluster_shape, coord) -> int:
    return coord[0] + coord[1] * cluster_shape[0]


RELEASE_MISTAKES = [  # (a mask with one slip, the hint); chosen only if it gives every answer
    (lambda cl, xy: release_mask_ref(cl[::-1], xy[::-1]),
     "ranks are column-major: r = m + n * cm (that is the row-major rank)"),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 1),
     "that is only A's peers (the same row m): B's tile came from the CTAs of the same column n"),
    (lambda cl, xy: mcast_mask_ref(cl, xy, 0),
     "that is only B's peers (the same column n): A's tile came from the CTAs of the same row m"),
    (lambda cl, xy: release_mask_ref(cl, xy) & ~(1 << _rank(cl, xy)),
     "the CTA itself wrote into the stage too: set its own bit"),
    (lambda cl, xy: 1 << _rank(cl, xy),
     "that is only the CTA itself: with multicast, the CTAs of its row (A) and of its column (B) "
     "wrote into its stage too"),
    (lambda cl, xy: (1 << cl[0] * cl[1]) - 1,
     "that is every CTA of the cluster: only those of the same row (A) or the same column (B) wrote "
     "into the stage: set bit m' + n' * cm for each (m', n') with m' == m or n' == n"),
    (lambda cl, xy: sum(1 << (i + j * cl[1]) for i in range(cl[0]) for j in range(cl[1])
                        if i == xy[0] or j == xy[1]),
     "the rank multiplies n by cm, the number of CTAs in a column: r = m + n * cm (not n * cn)")]


def _mask_hint(mask) -> str:
    """The hint for a mask that is not an int: a list of ranks, a binary string, or anything else."""
    if isinstance(mask, (list, tuple, set)) and mask and all(is_int(r) for r in mask):
        return "that looks like the list of ranks: return one int, sum(1 << r for r in ranks)"
    if isinstance(mask, str) and mask.strip().lower().startswith("0b"):
        return "that is the mask written as a string: return the int itself (int(text, 2) converts one)"
    return "set bit r with 1 << r and combine with |"


def check_release_mask(fn) -> None:
    """``fn(cluster_shape, coord)`` must return :func:`release_mask_ref` for every CTA of the
    clusters of :data:`RELEASE_CLUSTERS` (2 x 2; 1-D both ways; 2 x 4 and 4 x 2; 1 x 1)."""
    name = "release mask"
    cases = [(cl, (m, n)) for cl in RELEASE_CLUSTERS for n in range(cl[1]) for m in range(cl[0])]

    def int_mask(mask, case):
        if not is_int(mask):
            fail(name, f"expected an int bit mask, got {type(mask).__name__} {mask!r:.80}",
                 _mask_hint(mask), launched=f"cluster={case[0]}, coord={case[1]}")
        return int(mask)
    got = answers(name, fn, cases, int_mask, raised=False)
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    want = [release_mask_ref(*case) for case in cases]
    bad = wrong_cases(got, want)
    if bad:
        i = bad[0]
        hint = named_mistake(got, cases, RELEASE_MISTAKES, "set bit m' + n' * cm for every CTA (m', n') "
                             "with m' == m or n' == n")
        cl, xy = cases[i]
        bits = cl[0] * cl[1]
        shown = lambda v: f"{v:#0{bits + 2}b}" if v >= 0 else f"{v}"     # noqa: E731
        fail(name, f"got {shown(got[i])}, expected {shown(want[i])} ({cl[0]} x {cl[1]} cluster: bit r "
             f"for rank r, {bits} bits)", hint, launched=f"cluster={cl}, coord={xy}")
    return passed(name, "(2 x 2 cluster, CTA (1, 0): 0b1011; its empty barrier expects "
                  f"{release_arrivals_ref((2, 2), 4)} warp arrivals with 4 releasing warps per CTA)")


# --- 5. L2 reads with and without multicast ------------------------------------------------------
L2_MODES = ("each loads", "multicast")


def l2_reads_ref(delivered, R: int, mode: str, merged) -> float:
    """Bytes L2 must read to deliver ``delivered`` bytes into the shared memory of clusters of ``R``
    CTAs that all want the same chunks. *each loads*: every CTA asks for every chunk, and the
    hardware serves the fraction ``merged`` of those requests without reading L2 again (requests
    for the same sectors at nearly the same time), so L2 reads ``delivered * (1 - merged)``.
    *multicast*: one fetch per chunk lands in all ``R`` CTAs, so L2 reads ``delivered / R`` and the
    hardware has nothing left to merge (``merged`` does not apply)."""
    if not is_number(delivered) or not 0 < delivered < math.inf:
        raise ValueError(f"delivered must be a positive number of bytes, got {delivered!r}")
    if not is_int(R) or R < 1:
        raise ValueError(f"R (CTAs per cluster) must be an int >= 1, got {R!r}")
    if mode not in L2_MODES:
        raise ValueError(f"mode must be one of {L2_MODES}, got {mode!r}")
    if not is_number(merged) or not 0 <= merged < 1:
        raise ValueError(f"merged (the fraction of delivered bytes the hardware merged) must be in [0, 1), got {merged!r}")
    return delivered / R if mode == "multicast" else delivered * (1 - merged)


# 830 MB and 1 GiB (the notebook's), and an odd byte count; clusters of 2, 3, 4 and 8 (a power of two
# is not enough: d >> (R // 2) is d / R for R = 2 and 4 only); merged on both sides of 1 - 1/R
L2_CASES = [(d, R, m, f) for d in (830472192, 1 << 30, 123456789) for R in (2, 3, 4, 8) for m in L2_MODES
            for f in (0.0, 0.3, 0.57, 0.7, 0.9)]
L2_MISTAKES = [  # (an answer with one slip, the hint); chosen only if it gives every answer
    (lambda d, R, m, f: d / R if m == "multicast" else d,
     "each loads: the hardware served the fraction `merged` without reading L2; L2 reads only the rest"),
    (lambda d, R, m, f: d / R if m == "multicast" else d * f,
     "`merged` is what the hardware served WITHOUT reading L2: L2 reads the other 1 - merged"),
    (lambda d, R, m, f: d if m == "multicast" else d * (1 - f),
     "with multicast one fetch lands in all R CTAs of the cluster: L2 reads each chunk once per cluster"),
    (lambda d, R, m, f: d * (1 - f) / R if m == "multicast" else d * (1 - f),
     "with multicast the hardware has nothing left to merge (the counters show 0 merged): `merged` does not apply"),
    (lambda d, R, m, f: d / R,
     "each loads: every CTA asks for every chunk itself, so the requests are delivered bytes, not delivered / R"),
    (lambda d, R, m, f: d / R if m == "multicast" else d * R * (1 - f),
     "`delivered` already counts the bytes that land in all R CTAs: do not multiply it by R"),
    (lambda d, R, m, f: d * (1 - 1 / R) if m == "multicast" else d * (1 - f),
     "1 - 1/R is the share multicast saves; L2 reads the rest: one fetch per chunk, delivered / R"),
]


def check_l2_reads(fn) -> None:
    """``fn(delivered, R, mode, merged)`` must return :func:`l2_reads_ref` (within 0.1%) for 830 MB,
    1 GiB and an odd byte count, clusters of 2, 3, 4 and 8, both modes, merged 0 to 0.9."""
    name = "L2 reads"

    def number(v, case):
        if not is_number(v):
            fail(name, f"expected a number of bytes, got {type(v).__name__} {v!r:.80}", "return a float or an int",
                 launched=f"delivered, R, mode, merged = {case}")
        return float(v)
    got = answers(name, fn, L2_CASES, number, raised=False)
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    want = [l2_reads_ref(*c) for c in L2_CASES]
    close = lambda g, w: abs(g - w) <= 1e-3 * max(abs(w), 1)         # noqa: E731  (False for NaN)
    bad = wrong_cases(got, want, close)
    if bad:
        i = bad[0]
        hint = named_mistake(got, L2_CASES, L2_MISTAKES, "each loads: delivered * (1 - merged); multicast: "
                             "delivered / R", same=close)
        if not math.isfinite(got[i]):
            hint = f"{got[i]} is not a number of bytes: is something divided by zero, or an input unused?"
        fail(name, f"got {got[i]:.4g} B, expected {want[i]:.4g} B", hint,
             launched=f"delivered, R, mode, merged = {L2_CASES[i]}")
    return passed(name, "In step, multicast saves L2 reads only if the hardware merged less than 1 - 1/R "
                  "of the bytes (50% for R = 2, 75% for R = 4).")
