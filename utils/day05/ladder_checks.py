"""Day 5 · 05 exercises: references and checks (see ``utils.core.checks`` for the conventions).

1. :func:`check_register_split` — the ``setmaxnreg`` targets of a warp-specialized kernel: the
   most registers per consumer thread that the rules of ``setmaxnreg`` and the register file allow.
2. :func:`check_pingpong` — the ordering-barrier calls of the two ping-pong consumer warpgroups,
   run in a small discrete-event model of ``PipelineOrder(depth=2, length=2)``
   (:func:`simulate_pingpong`).
3. :func:`check_release_mask` — the CTAs a consumer releases a shared-memory stage to in a cluster
   with multicast of A along the rows and of B along the columns.
4. :func:`check_null_verdict` — whether a copy is faster than memcpy, slower, or no different,
   from its per-round times, memcpy's, and those of memcpy timed a second time (the null result).
5. :func:`check_l2_reads` — the bytes L2 must read to deliver a cluster's data, each CTA loading
   for itself (less what the hardware merged) or through multicast, and so when multicast saves
   L2 reads at all.
"""
from __future__ import annotations

import math

import numpy as np

from ..core.checks import NOT_ATTEMPTED, attempt, fail, is_int, is_number, not_attempted, passed
from ..cute_dsl.exercises import mcast_mask_ref

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


def register_split_problems(split, producer_wgs: int, consumer_wgs: int) -> list[str]:
    """Every rule the split ``(producer_regs, consumer_regs)`` breaks (empty: a valid split):
    ints, multiples of 8 in [24, 256] (``setmaxnreg``); all threads' registers fit in the register
    file; ``setmaxnreg.dec`` may only lower the launch allotment (producer) and
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
    used = WG_THREADS * (producer_wgs * p + consumer_wgs * c)
    if used > REGISTER_FILE:
        out.append(f"128 x ({producer_wgs} x {p} + {consumer_wgs} x {c}) = {used} registers: more than "
                   f"the SM's register file ({REGISTER_FILE})")
    if p > a:
        out.append(f"the producer's {p} is above the launch allotment {a}: setmaxnreg.dec can only lower it")
    if c < a:
        out.append(f"the consumers' {c} is below the launch allotment {a}: setmaxnreg.inc can only raise it")
    return out


def register_split_ref(producer_wgs: int, consumer_wgs: int) -> tuple:
    """``(producer_regs, consumer_regs)`` giving the consumers the most registers: the producer at
    the minimum (24) leaves ``c`` = the rest of the register file per consumer thread, rounded down
    to a multiple of 8 (at most 256). Several producer counts may fit with that ``c``; this returns
    the largest one (e.g. (32, 240) for 1 + 2 warpgroups, where (24, 240) is just as right)."""
    a = launch_regs(producer_wgs, consumer_wgs)
    c = min(MAX_REGS, (REGISTER_FILE // WG_THREADS - producer_wgs * MIN_REGS) // consumer_wgs // 8 * 8)
    p = min(a, (REGISTER_FILE // WG_THREADS - consumer_wgs * c) // producer_wgs // 8 * 8)
    return p, c


def _pair(got):
    """``got`` as two Python ints if it is a pair of integers (tuple, list or 1-D NumPy array of
    :func:`is_int` values), else None."""
    if isinstance(got, np.ndarray) and got.ndim == 1 and got.dtype.kind in "iu":
        got = tuple(got)
    if isinstance(got, (tuple, list)) and len(got) == 2 and all(is_int(v) for v in got):
        return int(got[0]), int(got[1])
    return None


def check_register_split(fn) -> None:
    """``fn(producer_wgs, consumer_wgs)`` must return a valid ``(producer_regs, consumer_regs)``
    (:func:`register_split_problems`) with the most registers per consumer thread; any producer
    count that fits with it is accepted. Cases: :data:`SPLIT_CASES` (1 to 7 producer and 1 to 7
    consumer warpgroups)."""
    name = "register split"
    for P, C in SPLIT_CASES:
        got = attempt(fn, P, C)
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return not_attempted(name)
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
                 "a multiple of 8); the producer lowers its count, the consumers raise theirs, in "
                 "multiples of 8 within [24, 256], and 128 x (P*p + C*c) must fit in 65536", launched)
        best = register_split_ref(P, C)[1]
        if c != best:
            left = REGISTER_FILE // WG_THREADS - P * MIN_REGS
            hint = (f"the producer is at the minimum already: that leaves 512 - {P} x 24 = {left} "
                    f"per thread position for {C} consumer warpgroup(s): {left} / {C}, rounded DOWN to "
                    "a multiple of 8, at most 256" if p == MIN_REGS else
                    "give the producer the minimum, 24, and the consumers what is left of the register "
                    "file, rounded down to a multiple of 8")
            fail(name, f"({p}, {c}) is a valid split, but the consumers could have {best}", hint, launched)
    return passed(name, "(1 producer + 2 consumer warpgroups: 240 per consumer thread; the course's "
                  "kernels use 40/232, CUTLASS's default)")


# --- 2. ping-pong ordering barrier ---------------------------------------------------------------
PINGPONG_EVENTS = ("wait", "arrive", "mainloop", "epilogue")
# (warpgroup 0's tiles, warpgroup 1's tiles): WG0 takes the first tile, so it has as many or one more;
# up to 8 + 7 so that turns that drift apart over many tiles show
PINGPONG_CASES = [(1, 1), (2, 2), (3, 3), (3, 2), (2, 1), (5, 4), (8, 8), (8, 7)]
# (mainloop, epilogue) durations: the barrier must order the sections whatever they take; an
# epilogue longer than the mainloop shows an epilogue left outside the ordered sections
PINGPONG_TIMES = [(10, 3), (10, 12), (4, 9)]


def pingpong_ref(cw: int, tiles: int) -> list:
    """The events of consumer warpgroup ``cw`` for its ``tiles`` tiles: the mainloop and the
    epilogue are each an ordered section (wait for the turn, work, hand the turn on)."""
    return ["wait", "mainloop", "arrive", "wait", "epilogue", "arrive"] * tiles


def _overlap(a, b) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def _span(iv) -> str:
    return f"{iv[0]:g}-{iv[1]:g}"


def _static_problems(events, w, tiles) -> list:
    """(what, hint) for the phases and barrier calls of warpgroup ``w`` read from its list."""
    out = []
    phases = [e for e in events if e in ("mainloop", "epilogue")]
    n_ml, n_epi = phases.count("mainloop"), phases.count("epilogue")
    n = tiles if tiles is not None else n_ml
    if (n_ml, n_epi) != (n, n):
        out.append((f"warpgroup {w} runs {n_ml} mainloop(s) and {n_epi} epilogue(s) for {n} tile(s)",
                    "exactly one mainloop and one epilogue per tile"))
    elif phases != ["mainloop", "epilogue"] * n:
        out.append((f"warpgroup {w} runs an epilogue before its tile's mainloop",
                    "a tile's epilogue stores what its mainloop computed: mainloop first"))
    n_wait, n_arrive = events.count("wait"), events.count("arrive")
    if n_wait != n_arrive:
        out.append((f"warpgroup {w} has {n_wait} wait(s) and {n_arrive} arrive(s)",
                    "each ordered section is wait, work, arrive: the arrive hands the turn to the "
                    "other warpgroup"))
    return out


def simulate_pingpong(events0, events1, mainloop=10, epilogue=3, tiles=None) -> dict:
    """Run the two consumer warpgroups' event lists side by side, as ``PipelineOrder(depth=2,
    length=2)`` orders them (the course's kernel counts its turns per tile): a warpgroup's i-th
    "wait" is on section i % 2, its i-th "arrive" signals section i % 2 to the other warpgroup.
    The turns of a section go WG0, WG1, WG0, ...: WG0's k-th wait on section s passes once WG1
    arrived k times on s, WG1's once WG0 arrived k + 1 times. "mainloop" and "epilogue" take
    ``mainloop`` and ``epilogue`` time units, wait and arrive none. ``tiles``: (tiles of WG0,
    tiles of WG1) or one int for both, to check the number of phases.

    Returns ``{"mainloop": (WG0's intervals, WG1's), "epilogue": (...), "finish": time or None
    (deadlock), "problems": [(what, hint), ...]}`` (no problems: a working ping-pong)."""
    if not all(is_number(d) and 0 < d < math.inf for d in (mainloop, epilogue)):
        raise ValueError(f"mainloop and epilogue must be positive durations, got {mainloop!r}, {epilogue!r}")
    if not (tiles is None or (is_int(tiles) and tiles >= 0) or (
            isinstance(tiles, (tuple, list)) and len(tiles) == 2 and all(is_int(t) and t >= 0 for t in tiles))):
        raise ValueError(f"tiles must be None, an int >= 0 or a pair of them (WG0's, WG1's), got {tiles!r}")
    ev = []
    for w, events in enumerate((events0, events1)):
        if not (isinstance(events, (list, tuple)) or (isinstance(events, np.ndarray) and events.ndim == 1)):
            raise ValueError(f"events{w} must be a list of event names, got {type(events).__name__}")
        ev.append(list(events))
    per_wg = (tiles, tiles) if tiles is None or is_int(tiles) else tuple(tiles)
    result = {"mainloop": ([], []), "epilogue": ([], []), "finish": None, "problems": []}
    problems = result["problems"]
    for w in (0, 1):
        bad = next(((i, e) for i, e in enumerate(ev[w]) if not (isinstance(e, str) and e in PINGPONG_EVENTS)), None)
        if bad:
            problems.append((f"warpgroup {w}'s event {bad[0]} is {bad[1]!r}",
                             f"each event is one of {PINGPONG_EVENTS}"))
    if problems:
        return result
    pc, now, waits, arrives = [0, 0], [0, 0], [0, 0], [0, 0]
    arrived = {(w, s): [] for w in (0, 1) for s in (0, 1)}      # times WG w arrived on section s
    moved = True
    while moved:                  # a dataflow graph: any order that respects the waits gives the same times
        moved = False
        for w in (0, 1):
            while pc[w] < len(ev[w]):
                e = ev[w][pc[w]]
                if e == "wait":
                    s, k = waits[w] % 2, waits[w] // 2
                    need = k if w == 0 else k + 1
                    if need:
                        times = arrived[(1 - w, s)]
                        if len(times) < need:
                            break
                        now[w] = max(now[w], times[need - 1])
                    waits[w] += 1
                elif e == "arrive":
                    arrived[(w, arrives[w] % 2)].append(now[w])
                    arrives[w] += 1
                else:
                    end = now[w] + (mainloop if e == "mainloop" else epilogue)
                    result[e][w].append((now[w], end))
                    now[w] = end
                pc[w] += 1
                moved = True
    blocked = [w for w in (0, 1) if pc[w] < len(ev[w])]
    for w in blocked:
        s, k = waits[w] % 2, waits[w] // 2
        need = k if w == 0 else k + 1
        problems.append((f"deadlock: warpgroup {w} waits forever at its wait #{waits[w] + 1} (event {pc[w]}, "
                         f"section {s}): it needs warpgroup {1 - w}'s arrive #{need} on that section, "
                         f"which never comes", "every wait needs the other warpgroup's matching arrive: "
                         "end each ordered section (the mainloop, the epilogue) with an arrive"))
    if not blocked:
        result["finish"] = max(now)
    for w in (0, 1):
        problems.extend(_static_problems(ev[w], w, per_wg[w]))
    (ml0, ml1), (epi0, epi1) = result["mainloop"], result["epilogue"]
    for what, first, second, hint in (
            ("mainloops", ml0, ml1, "the two warpgroups' mainloops contend for the tensor cores: wait for "
             "the turn before the mainloop and hand it on (arrive) only after it"),
            ("epilogues", epi0, epi1, "the epilogues take turns too: wait before the epilogue, arrive "
             "after it (the second section of the ordering barrier)")):
        pair = next(((i, j) for i, a in enumerate(first) for j, b in enumerate(second) if _overlap(a, b)), None)
        if pair:
            i, j = pair
            problems.append((f"the {what} overlap: warpgroup 0's tile {i} ({_span(first[i])}) and warpgroup "
                             f"1's tile {j} ({_span(second[j])})", hint))
    hides = any(_overlap(e, m) for epi, ml in ((epi0, ml1), (epi1, ml0)) for e in epi for m in ml)
    if ml0 and ml1 and (epi0 or epi1) and not hides and not blocked:
        problems.append(("the epilogue never hides under the other warpgroup's mainloop: that is what "
                         "ping-pong is for", "arrive right after the mainloop, before the epilogue: the "
                         "other warpgroup's mainloop then runs while you store"))
    return result


def check_pingpong(fn) -> None:
    """``fn(cw, tiles)`` must return the events (:data:`PINGPONG_EVENTS`) of consumer warpgroup
    ``cw`` for its ``tiles`` tiles, as a list (a tuple or 1-D array of the names is accepted too);
    both warpgroups run in :func:`simulate_pingpong` for every tile pair of
    :data:`PINGPONG_CASES` (1 to 8 tiles each, some with WG0 one tile ahead) and every duration
    pair of :data:`PINGPONG_TIMES` (epilogue shorter and longer than the mainloop)."""
    name = "ping-pong order"
    runs = []
    for t0, t1 in PINGPONG_CASES:
        got = []
        for cw, t in ((0, t0), (1, t1)):
            events = attempt(fn, cw, t)
            if isinstance(events, str) and events == NOT_ATTEMPTED:
                return not_attempted(name)
            if not (isinstance(events, (list, tuple)) or (isinstance(events, np.ndarray) and events.ndim == 1)):
                fail(name, f"fn({cw}, {t}) returned {type(events).__name__} {events!r:.80}",
                     f"return a list of event names, each one of {PINGPONG_EVENTS}" +
                     (": a string is one name, split it into a list" if isinstance(events, str) else ""))
            got.append(list(events))
        runs.append(((t0, t1), got))
    for times in PINGPONG_TIMES:
        for (t0, t1), got in runs:
            sim = simulate_pingpong(*got, *times, tiles=(t0, t1))
            if sim["problems"]:
                what, hint = sim["problems"][0]
                fail(name, what, hint, launched=f"warpgroup 0: {t0} tile(s), warpgroup 1: {t1} tile(s); "
                     f"mainloop {times[0]} time units, epilogue {times[1]}")
    serial = 13 * sum(PINGPONG_CASES[2])
    return passed(name, f"(mainloops take turns on the tensor cores, each epilogue runs under the other "
                  f"warpgroup's mainloop: 3 + 3 tiles in {_ref_finish(3, 3):g} time units, not {serial})")


def _ref_finish(t0: int, t1: int) -> float:
    """The finish time of :func:`pingpong_ref` for ``t0`` and ``t1`` tiles in the model."""
    return simulate_pingpong(pingpong_ref(0, t0), pingpong_ref(1, t1))["finish"]


# --- 3. release mask in a cluster ----------------------------------------------------------------
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
    got = []
    for cl, xy in cases:
        mask = attempt(fn, cl, xy)
        if isinstance(mask, str) and mask == NOT_ATTEMPTED:
            return not_attempted(name)
        if not is_int(mask):
            fail(name, f"expected an int bit mask, got {type(mask).__name__} {mask!r:.80}",
                 _mask_hint(mask), launched=f"cluster={cl}, coord={xy}")
        got.append(int(mask))
    want = [release_mask_ref(*case) for case in cases]
    if got != want:
        i = next(i for i, (g, w) in enumerate(zip(got, want)) if g != w)
        hint = next((h for slip, h in RELEASE_MISTAKES if [slip(*c) for c in cases] == got),
                    "set bit m' + n' * cm for every CTA (m', n') with m' == m or n' == n")
        cl, xy = cases[i]
        bits = cl[0] * cl[1]
        shown = lambda v: f"{v:#0{bits + 2}b}" if v >= 0 else f"{v}"     # noqa: E731
        fail(name, f"got {shown(got[i])}, expected {shown(want[i])} ({cl[0]} x {cl[1]} cluster: bit r "
             f"for rank r, {bits} bits)", hint, launched=f"cluster={cl}, coord={xy}")
    return passed(name, "(2 x 2 cluster, CTA (1, 0): 0b1011; its empty barrier expects "
                  f"{release_arrivals_ref((2, 2), 4)} warp arrivals with 4 releasing warps per CTA)")


# --- 4. faster than memcpy, against the null result ------------------------------------------------
VERDICTS = ("faster", "slower", "no difference")


def _rounds(name: str, ms) -> list:
    if isinstance(ms, (str, bytes)) or not hasattr(ms, "__len__") or len(ms) < 1:
        raise ValueError(f"{name} must be a non-empty list of per-round times in ms, got {ms!r}")
    if not all(is_number(t) and 0 < t < math.inf for t in ms):
        raise ValueError(f"{name} must hold positive times in ms, got {list(ms)!r}")
    return [float(t) for t in ms]


def null_verdict_ref(copy_ms, memcpy_ms, again_ms) -> str:
    """"faster" if the copy took less time than BOTH calls of memcpy (the first, and the same call
    timed again, the null result) in every round; "slower" if it took more than both in every
    round; otherwise "no difference". Each argument is a list of per-round times in ms, one per
    round, the rounds interleaved (round i of each list ran together)."""
    copy_ms, memcpy_ms, again_ms = (_rounds(n, v) for n, v in
                                    (("copy_ms", copy_ms), ("memcpy_ms", memcpy_ms), ("again_ms", again_ms)))
    if not len(copy_ms) == len(memcpy_ms) == len(again_ms):
        raise ValueError(f"the three lists must have one time per round each, got {len(copy_ms)}, "
                         f"{len(memcpy_ms)} and {len(again_ms)}")
    rounds = list(zip(copy_ms, memcpy_ms, again_ms))
    if all(c < min(m, a) for c, m, a in rounds):
        return "faster"
    if all(c > max(m, a) for c, m, a in rounds):
        return "slower"
    return "no difference"


_M = [94.0, 93.8, 94.1, 93.9, 94.2]           # memcpy, ms per round
_A = [93.1, 92.9, 93.3, 93.0, 93.2]           # memcpy again: 1% "faster" with nothing changed
_UP = [92.0 + 0.4 * i for i in range(8)]      # 8 rounds whose clock drifts: each round 0.4 ms slower
NULL_CASES = [  # (copy_ms, memcpy_ms, again_ms): every verdict, and each slip below, appears
    ([92.6, 92.5, 92.8, 92.6, 92.7], _M, _A),     # faster than both, every round
    ([93.4, 93.3, 93.5, 93.4, 93.6], _M, _A),     # faster than memcpy every round, not than again
    ([95.0, 94.9, 95.2, 95.0, 95.3], _M, _A),     # slower than both, every round
    ([92.6, 92.5, 92.8, 94.5, 92.7], _M, _A),     # faster than both at the median, one round slower
    ([95.0, 94.9, 93.0, 95.0, 95.3], _M, _A),     # slower at the median, one round faster
    ([93.5, 93.5, 93.5, 93.5, 93.5], _M, _A),     # between the two calls of memcpy
    ([93.2, 93.0, 93.4, 93.1, 93.3], _M, _A),     # 0.1% slower than again, every round: no tolerance
    ([92.6, 92.5], [94.0, 93.8], [95.1, 95.0]),   # again "slower" this time: faster than both
    ([94.5, 94.4], [94.0, 93.8], [95.1, 95.0]),   # slower than memcpy, faster than again
    # drift: every round faster (slower) than both calls OF ITS ROUND, though the copy's late rounds
    # are slower (its early rounds faster) than memcpy's early (late) ones
    ([t - 0.2 for t in _UP], [t + 0.1 for t in _UP], _UP),
    ([t + 0.3 for t in _UP[::-1]], _UP[::-1], [t - 0.1 for t in _UP[::-1]]),
    ([92.6, 92.5, 92.8, 93.0, 92.7], _M, _A),     # a tie with memcpy again in one round: not faster
    ([95.0, 94.9, 95.2, 93.9, 95.3], _M, _A),     # a tie with memcpy in one round: not slower
    ([92.6, 92.5, 92.8, 99.0, 92.7], _M, _A),     # one round far slower: faster at the median, not on average
    ([94.5, 92.5, 92.8, 92.6, 92.7], _M, _A),     # slower in the first round only
    ([92.6, 92.5, 92.8, 94.5, 94.6], _M, _A),     # slower in the last two rounds
    ([93.0], [93.5], [93.4]),                     # one round
    ([91.5, 92.5, 93.5, 94.5], [95.0, 94.0, 93.0, 92.0], [94.9, 93.9, 92.9, 91.9]),  # faster, then not
]
_med = lambda x: sorted(x)[len(x) // 2]          # noqa: E731
_mean = lambda x: sum(x) / len(x)                # noqa: E731
NULL_MISTAKES = [  # (an answer with one slip, the hint); chosen only if it gives every answer
    (lambda c, m, a: "faster" if all(x < y for x, y in zip(c, m)) else
     "slower" if all(x > y for x, y in zip(c, m)) else "no difference",
     "compare with memcpy's second call too: with nothing changed it reads about 1% faster than the first"),
    (lambda c, m, a: "faster" if _med(c) < min(_med(m), _med(a)) else
     "slower" if _med(c) > max(_med(m), _med(a)) else "no difference",
     "a claim must hold in EVERY round, not at the median"),
    (lambda c, m, a: "slower" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else
     "faster" if all(x > max(y, z) for x, y, z in zip(c, m, a)) else "no difference",
     "these are times in ms: less time is faster"),
    (lambda c, m, a: "faster" if all(x < min(y, z) for x, y, z in zip(c, m, a)) else "slower",
     "when the rounds disagree, or the copy falls between the two calls of memcpy, the answer is \"no difference\""),
    (lambda c, m, a: "faster" if max(c) < min(m + a) else "slower" if min(c) > max(m + a) else "no difference",
     "compare round by round: round i of the three lists ran together, and the clock drifts between "
     "rounds; the copy's round i must beat both calls of memcpy's round i, not every round of memcpy"),
    (lambda c, m, a: "faster" if all(x <= min(y, z) for x, y, z in zip(c, m, a)) else
     "slower" if all(x >= max(y, z) for x, y, z in zip(c, m, a)) else "no difference",
     "a tie is no difference: faster means LESS time than both calls (<, not <=) in every round"),
    (lambda c, m, a: "faster" if _mean(c) < min(_mean(m), _mean(a)) else
     "slower" if _mean(c) > max(_mean(m), _mean(a)) else "no difference",
     "a claim must hold in EVERY round, not on average"),
]


def _verdict_hint(got) -> str:
    """The hint for an answer that is not one of :data:`VERDICTS`."""
    if isinstance(got, str) and " ".join(got.strip().lower().replace("_", " ").split()) in VERDICTS:
        return f"almost: return exactly one of {VERDICTS}, lower-case, words separated by one space"
    if isinstance(got, (bool, np.bool_)):
        return "a bool cannot say which of the three: return the string \"faster\", \"slower\" or \"no difference\""
    return "return one of the three strings"


def check_null_verdict(fn) -> None:
    """``fn(copy_ms, memcpy_ms, again_ms)`` must return :func:`null_verdict_ref` on every case of
    ``NULL_CASES``: per-round times (1 to 8 rounds) where the copy beats both calls of memcpy, only
    the first, loses to both, ties one in a round, wins or loses at the median or on average but
    not in every round, or where the clock drifts from round to round."""
    name = "faster than memcpy?"
    answers = []
    for case in NULL_CASES:
        got = attempt(fn, *[list(x) for x in case])
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return not_attempted(name)
        if not (isinstance(got, str) and got in VERDICTS):
            fail(name, f"expected one of {VERDICTS}, got {type(got).__name__} {got!r:.80}", _verdict_hint(got),
                 launched=f"copy_ms, memcpy_ms, again_ms = {case}")
        answers.append(str(got))
    for case, got in zip(NULL_CASES, answers):
        want = null_verdict_ref(*case)
        if got != want:
            hint = next((h for slip, h in NULL_MISTAKES if [slip(*c) for c in NULL_CASES] == answers),
                        "faster: less time than both calls of memcpy in every round; slower: more than both "
                        "in every round; otherwise no difference")
            fail(name, f"got {got!r}, expected {want!r}", hint, launched=f"copy_ms, memcpy_ms, again_ms = {case}")
    return passed(name, "A copy is faster than memcpy only if it beats memcpy's second call too, in every round.")


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
    got = []
    for case in L2_CASES:
        v = attempt(fn, *case)
        if isinstance(v, str) and v == NOT_ATTEMPTED:
            return not_attempted(name)
        if not is_number(v):
            fail(name, f"expected a number of bytes, got {type(v).__name__} {v!r:.80}", "return a float or an int",
                 launched=f"delivered, R, mode, merged = {case}")
        got.append(float(v))
    want = [l2_reads_ref(*c) for c in L2_CASES]
    close = lambda g, w: abs(g - w) <= 1e-3 * max(abs(w), 1)         # noqa: E731  (False for NaN)
    bad = [i for i, (g, w) in enumerate(zip(got, want)) if not close(g, w)]
    if bad:
        i = bad[0]
        hint = next((h for slip, h in L2_MISTAKES if all(close(g, slip(*c)) for c, g in zip(L2_CASES, got))),
                    "each loads: delivered * (1 - merged); multicast: delivered / R")
        if not math.isfinite(got[i]):
            hint = f"{got[i]} is not a number of bytes: is something divided by zero, or an input unused?"
        fail(name, f"got {got[i]:.4g} B, expected {want[i]:.4g} B", hint,
             launched=f"delivered, R, mode, merged = {L2_CASES[i]}")
    return passed(name, "In step, multicast saves L2 reads only if the hardware merged less than 1 - 1/R "
                  "of the bytes (50% for R = 2, 75% for R = 4).")
