"""Exercise 3 of ``day05_tma/05_gemm_ladder``: the ordering-barrier calls of the two ping-pong
consumer warpgroups, run in a small discrete-event model of ``PipelineOrder(depth=2, length=2)``
(:func:`simulate_pingpong`): the mainloops must take turns, the epilogues too, and each epilogue
must hide under the other warpgroup's mainloop. Re-exported by :mod:`utils.day05.ladder_checks`."""
from __future__ import annotations

import math

import numpy as np

from ..core.answers import answers
from ..core.checks import NOT_ATTEMPTED, fail, is_int, is_number, not_attempted, passed

# --- 3. ping-pong ordering barrier ---------------------------------------------------------------
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

    def event_list(events, case):
        if not (isinstance(events, (list, tuple)) or (isinstance(events, np.ndarray) and events.ndim == 1)):
            fail(name, f"fn{case} returned {type(events).__name__} {events!r:.80}",
                 f"return a list of event names, each one of {PINGPONG_EVENTS}" +
                 (": a string is one name, split it into a list" if isinstance(events, str) else ""))
        return list(events)
    calls = [(cw, t) for pair in PINGPONG_CASES for cw, t in enumerate(pair)]   # (0, WG0's tiles), (1, WG1's)
    got_all = answers(name, fn, calls, event_list, raised=False)
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    runs = [(pair, got_all[2 * i:2 * i + 2]) for i, pair in enumerate(PINGPONG_CASES)]
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
