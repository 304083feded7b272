"""Day 5 · 05 exercises: references and checks (see ``utils.core.checks`` for the conventions).

1. :func:`check_register_split` — the ``setmaxnreg`` targets of a warp-specialized kernel: the
   most registers per consumer thread that the rules of ``setmaxnreg`` and the CTA's register pool
   allow (the PTX ISA: ``setmaxnreg.inc`` takes registers from a pool kept per CTA, filled only by
   ``.dec``; so all the CTA's threads together never hold more than they got at launch).
2. The role split of rungs 3–4 (``warp_roles``, a CuteDSL kernel step) is checked in
   :mod:`utils.cute_dsl.rung_check` (``check_warp_roles``), which the notebook imports itself; it
   is not re-exported here.
3. :func:`check_pingpong` — the ordering-barrier calls of the two ping-pong consumer warpgroups,
   run in a small discrete-event model of ``PipelineOrder(depth=2, length=2)``
   (:func:`simulate_pingpong`; in :mod:`utils.day05.pingpong_check`).
4. :func:`check_release_mask` — the CTAs a consumer releases a shared-memory stage to in a cluster
   with multicast of A along the rows and of B along the columns (:mod:`utils.day05.cluster_checks`).
5. :func:`check_l2_reads` — the bytes L2 must read to deliver a cluster's data, each CTA loading
   for itself (less what the hardware merged) or through multicast, and so when multicast saves
   L2 reads at all (:mod:`utils.day05.cluster_checks`).

Also here, for the lab report ``05b_ladder_lab_report`` (its Exercise 1, Exercise 4 of 05 before
the split): :func:`check_null_verdict` — whether a copy is faster than memcpy, slower, or no
different, from its per-round times, memcpy's, and those of memcpy timed a second time (the null
result; :mod:`utils.day05.null_check`).

Exercise 1 lives here; the others in the modules named, whose names this module re-exports (the
notebooks call them all as ``ladder_checks.check_*``, except Exercise 2's).
"""
from __future__ import annotations

import numpy as np

from ..core.answers import answers
from ..core.checks import NOT_ATTEMPTED, fail, is_int, not_attempted, passed
from .cluster_checks import (L2_CASES, L2_MISTAKES, L2_MODES, RELEASE_CLUSTERS,  # noqa: F401
                             RELEASE_MISTAKES, check_l2_reads, check_release_mask, l2_reads_ref,
                             release_arrivals_ref, release_mask_ref)
from .null_check import NULL_CASES, NULL_MISTAKES, VERDICTS, check_null_verdict, null_verdict_ref  # noqa: F401
from .pingpong_check import (PINGPONG_CASES, PINGPONG_EVENTS, PINGPONG_TIMES, check_pingpong,  # noqa: F401
                             pingpong_ref, simulate_pingpong)

# --- 1. register split ---------------------------------------------------------------------------
REGISTER_FILE = 65536            # 32-bit registers per SM (one CTA per SM here)
WG_THREADS = 128                 # threads per warpgroup
MIN_REGS, MAX_REGS = 24, 256     # setmaxnreg's range; its values are multiples of 8
# 1 + 2 first (the notebook's kernel); then P and C each varied both ways, up to the 8 warpgroups of
# a CTA, with shares that round-to-nearest or a hard-coded producer count would get wrong
SPLIT_CASES = [(1, 2), (1, 1), (1, 3), (2, 2), (3, 2), (2, 5), (1, 7), (4, 4), (7, 1), (5, 3)]


def _check_wgs(producer_wgs, consumer_wgs) -> None:
    """ValueError unless both counts are ints >= 1 and the CTA has at most 8 warpgroups."""
    for what, n in (("producer_wgs", producer_wgs), ("consumer_wgs", consumer_wgs)):
        if not is_int(n) or n < 1:
            raise ValueError(f"{what} must be an int >= 1, got {n!r}")
    if producer_wgs + consumer_wgs > 8:
        raise ValueError(f"{producer_wgs} + {consumer_wgs} warpgroups: a CTA has at most 1024 threads "
                         "= 8 warpgroups")


def launch_regs(producer_wgs: int, consumer_wgs: int) -> int:
    """Registers per thread at launch: the register file shared by all the CTA's threads, rounded
    down to a multiple of 8, at most 256."""
    _check_wgs(producer_wgs, consumer_wgs)
    return min(MAX_REGS, REGISTER_FILE // (WG_THREADS * (producer_wgs + consumer_wgs)) // 8 * 8)


def pool(producer_wgs: int, consumer_wgs: int) -> int:
    """The registers the CTA's threads hold in all: what they got at launch, 128 x (P + C) x
    :func:`launch_regs`. ``setmaxnreg`` only moves registers within it (PTX ISA, ``setmaxnreg``: the
    pool is per CTA; ``.inc`` blocks until the pool has enough), so after ``.dec`` and ``.inc`` the
    warpgroups together still hold at most this many: fewer than the SM's 65536 when the launch
    allotment was rounded down (1 + 2 warpgroups: 384 x 168 = 64512)."""
    return WG_THREADS * (producer_wgs + consumer_wgs) * launch_regs(producer_wgs, consumer_wgs)


def register_split_problems(split, producer_wgs: int, consumer_wgs: int) -> list[str]:
    """Every rule the split ``(producer_regs, consumer_regs)`` breaks (empty: a valid split):
    ints, multiples of 8 in [24, 256] (``setmaxnreg``); all threads' registers fit in the CTA's
    pool (:func:`pool`); ``setmaxnreg.dec`` may only lower the launch allotment (producer) and
    ``setmaxnreg.inc`` only raise it (consumers)."""
    a = launch_regs(producer_wgs, consumer_wgs)
    if not (isinstance(split, (tuple, list)) and len(split) == 2 and all(is_int(v) for v in split)):
        raise ValueError(f"split must be a pair of ints (producer_regs, consumer_regs), got {split!r}")
    p, c = (int(v) for v in split)
    out = []
    for who, r in (("the producer's", p), ("the consumers'", c)):
        if r % 8:
            out.append(f"{who} {r} registers is not a multiple of 8 (setmaxnreg's rule)")
        if not MIN_REGS <= r <= MAX_REGS:
            out.append(f"{who} {r} registers is outside setmaxnreg's range [24, 256]")
    used, have = WG_THREADS * (producer_wgs * p + consumer_wgs * c), pool(producer_wgs, consumer_wgs)
    if used > have:
        out.append(f"128 x ({producer_wgs} x {p} + {consumer_wgs} x {c}) = {used} registers: more than "
                   f"the CTA's pool, the {have} its threads got at launch (128 x {producer_wgs + consumer_wgs} "
                   f"x {a}): setmaxnreg.inc would wait for registers that never come")
    if p > a:
        out.append(f"the producer's {p} is above the launch allotment {a}: setmaxnreg.dec can only lower it")
    if c < a:
        out.append(f"the consumers' {c} is below the launch allotment {a}: setmaxnreg.inc can only raise it")
    return out


def register_split_ref(producer_wgs: int, consumer_wgs: int) -> tuple:
    """``(producer_regs, consumer_regs)`` giving the consumers the most registers: the producer at
    the minimum (24) leaves ``c`` = the rest of the CTA's pool per consumer thread, rounded down
    to a multiple of 8 (at most 256). Several producer counts may fit with that ``c``; this returns
    the largest one (e.g. (24, 240) for 1 + 2 warpgroups, whose pool of 384 x 168 leaves nothing
    more; (1, 3) gives (32, 160), where 24 is just as right)."""
    a = launch_regs(producer_wgs, consumer_wgs)
    per_position = pool(producer_wgs, consumer_wgs) // WG_THREADS
    c = min(MAX_REGS, (per_position - producer_wgs * MIN_REGS) // consumer_wgs // 8 * 8)
    p = min(a, (per_position - consumer_wgs * c) // producer_wgs // 8 * 8)
    return p, c


def _pair(got):
    """``got`` as two Python ints if it is a pair of integers (tuple, list or 1-D NumPy array of
    :func:`is_int` values), else None."""
    if isinstance(got, np.ndarray) and got.ndim == 1 and got.dtype.kind in "iu":
        got = tuple(got)
    if isinstance(got, (tuple, list)) and len(got) == 2 and all(is_int(v) for v in got):
        return int(got[0]), int(got[1])
    return None


def _judge_split(name: str, got, P: int, C: int) -> None:
    """Fail unless ``got`` is a valid split for ``P`` + ``C`` warpgroups with the most registers per
    consumer thread (judged as soon as it comes, before the next case runs)."""
    launched = f"{P} producer + {C} consumer warpgroups of 128 threads, one CTA per SM"
    pair = _pair(got)
    if pair is None:
        fail(name, f"expected a pair of ints (producer_regs, consumer_regs), got "
             f"{type(got).__name__} {got!r:.80}", "registers per thread are whole numbers, e.g. "
             "return (p, c) with p and c ints (// rounds down; int(...) converts a float)", launched)
    p, c = pair
    a = launch_regs(P, C)
    problems = register_split_problems((p, c), P, C)
    if problems:
        fail(name, f"({p}, {c}): " + "; ".join(problems),
             f"at launch every thread gets {a} registers (65536 / (128 x {P + C}), rounded down to "
             f"a multiple of 8), so the CTA holds 128 x {P + C} x {a} = {pool(P, C)} in all, and "
             "setmaxnreg only moves registers within that pool: the producer lowers its count, the "
             "consumers raise theirs, in multiples of 8 within [24, 256], and 128 x (P*p + C*c) "
             f"must fit in {pool(P, C)}", launched)
    best = register_split_ref(P, C)[1]
    if c != best:
        per_position = pool(P, C) // WG_THREADS
        left = per_position - P * MIN_REGS
        hint = (f"the producer is at the minimum already: the pool leaves {P + C} x {a} - {P} x 24 = {left} "
                f"per thread position for {C} consumer warpgroup(s): {left} / {C}, rounded DOWN to "
                "a multiple of 8, at most 256" if p == MIN_REGS else
                "give the producer the minimum, 24, and the consumers what is left of the CTA's pool "
                "(what its threads got at launch), rounded down to a multiple of 8")
        fail(name, f"({p}, {c}) is a valid split, but the consumers could have {best}", hint, launched)


def check_register_split(fn) -> None:
    """``fn(producer_wgs, consumer_wgs)`` must return a valid ``(producer_regs, consumer_regs)``
    (:func:`register_split_problems`) with the most registers per consumer thread; any producer
    count that fits with it is accepted. Cases: :data:`SPLIT_CASES` (1 to 7 producer and 1 to 7
    consumer warpgroups)."""
    name = "register split"
    if answers(name, fn, SPLIT_CASES, lambda got, case: _judge_split(name, got, *case),
               raised=False) is NOT_ATTEMPTED:
        return not_attempted(name)
    return passed(name, "(1 producer + 2 consumer warpgroups: 240 per consumer thread; the course's "
                  "kernels use 40/232, CUTLASS's default)")
