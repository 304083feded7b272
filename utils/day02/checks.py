"""Day 2 exercise checks. References live in :mod:`utils.day02.pipeline_model`; each ``check_*``
tries the learner's answer on several cases, reports a stub as "not attempted", and rejects a
wrong answer with a hint. :func:`simulate_ring` runs a producer/consumer ring on mbarrier
models, so a phase bug is found on any machine (and on a GPU, in the real kernel too).
"""
from __future__ import annotations

import math
import random

from . import pipeline_model as pm
from ..core.c_expr import CExprError, c_function, tokenize
from ..core.checks import fail, int_answer, not_attempted, passed
from .cost_model import answers, int_floor_div, named_mistake

loads_per_thread_needed_ref = pm.loads_per_thread_needed
stages_needed_ref = pm.stages_needed
slot_and_phase_ref = pm.slot_and_phase
PRODUCER_PARITY_REF = "((k / stages) & 1) ^ 1"
PRODUCER_PARITY_BUG = "(k / stages) & 1"          # the planted bug of the exercise


def _int_answer(name, got, case):
    return int_answer(name, got, f"{name}{_show(case)}",
                      "stages and loads come in whole numbers: round up with math.ceil")


def _show(case):
    return "(" + ", ".join(f"{c:.4g}" if isinstance(c, float) else str(c) for c in case) + ")"


def _not_whole(x):
    """False for a ratio within 1e-6 of a whole number: float noise could round it either way."""
    return abs(x - round(x)) > 1e-6


def check_loads_per_thread(fn) -> None:
    """Check ``loads_per_thread_needed(latency_ns, bandwidth_gbs, n_sm, threads_per_sm, bytes_per_load)``
    on fixed cases (one whose ratio is exactly a whole number) and random ones (other GPUs too)."""
    name = "loads_per_thread_needed"
    rng = random.Random()
    raw = lambda lat, bw, n_sm, thr, b: lat * bw / n_sm / (thr * b)  # noqa: E731
    cases = [(600.0, 4000.0, 132, 128, 16), (600.0, 4000.0, 132, 2048, 16), (800.0, 3350.0, 132, 256, 4),
             (500.0, 3350.0, 132, 128, 16), (660.0, 4096.0, 132, 128, 16), (700.0, 2000.0, 114, 512, 8),
             (450.0, 4800.0, 78, 1024, 16)]
    while len(cases) < 11:
        case = (rng.uniform(300, 900), rng.uniform(1000, 5000), rng.choice([16, 78, 108, 114, 132, 144]),
                rng.choice([64, 128, 256, 512, 1024, 2048]), rng.choice([4, 8, 16]))
        if _not_whole(raw(*case)):
            cases.append(case)
    got_all = answers(name, fn, cases, lambda g, c: _int_answer(name, g, c), _show, "an int")
    if got_all is None:
        return not_attempted(name)
    want_all = [loads_per_thread_needed_ref(*c) for c in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        mistakes = [(lambda lat, bw, n, t, b: math.ceil(lat * bw / (t * b)), "divide by the number of SMs: "
                     "Little's law gives the whole GPU's bytes"),
                    (lambda lat, bw, n, t, b: math.ceil(lat * bw / 132 / (t * b)), "use n_sm, not a fixed "
                     "132 (the check tries other GPUs)"),
                    (lambda *c: math.floor(raw(*c)), "round UP: a fraction of a load does not exist"),
                    (lambda *c: round(raw(*c)), "round UP, not to the nearest: a fraction of a load "
                     "still needs a whole load"),
                    (lambda *c: int(raw(*c)) + 1, "round UP with math.ceil: int(x) + 1 is one too many "
                     "when x is a whole number"),
                    (lambda lat, bw, n, t, b: math.ceil(lat * bw / n / t), "divide by bytes_per_load: "
                     "each load moves that many bytes"),
                    (lambda lat, bw, n, t, b: math.ceil(lat * bw / n / t * b), "divide by bytes_per_load "
                     "(do not multiply): each load moves that many bytes"),
                    (lambda lat, bw, n, t, b: math.ceil(lat * bw / n / (32 * b)), "divide by threads_per_sm: "
                     "every resident thread of the SM shares its bytes, not one warp of 32"),
                    (lambda *c: math.ceil(raw(*c) * 1e9), "ns x GB/s is already bytes: 1e-9 s x 1e9 B/s cancel")]
        hint = named_mistake(got_all, want_all, cases, mistakes, lambda g, v: g == v,
                             "loads = ceil(latency x bandwidth / n_sm / (threads_per_sm x bytes_per_load))")
        fail(name, f"loads_per_thread_needed{_show(cases[i])} = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name, f"e.g. at 600 ns and 4000 GB/s, 128 threads per SM need "
                  f"{want_all[0]} 16-byte loads each in flight; 2048 threads need "
                  f"{want_all[1]}. The next cell uses this GPU's numbers.")


def check_stages_needed(fn) -> None:
    """Check ``stages_needed(latency_ns, tile_bytes, bandwidth_gbs)`` on fixed cases (one whose
    ratio is exactly a whole number) and random ones."""
    name = "stages_needed"
    rng = random.Random()
    x = lambda lat, tile, bw: lat * bw / tile  # noqa: E731  (tiles in flight)
    cases = [(600.0, 4096, 30.0), (600.0, 16384, 30.0), (500.0, 8192, 100.0), (100.0, 65536, 10.0),
             (640.0, 4096, 32.0), (1000.0, 2048, 64.0), (350.0, 24576, 50.0)]
    while len(cases) < 11:
        case = (rng.uniform(100, 1500), rng.choice([1024, 2048, 4096, 8192, 12288, 16384, 24576, 32768]),
                rng.uniform(5, 120))
        if _not_whole(x(*case)):
            cases.append(case)
    got_all = answers(name, fn, cases, lambda g, c: _int_answer(name, g, c), _show, "an int")
    if got_all is None:
        return not_attempted(name)
    want_all = [stages_needed_ref(*c) for c in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        mistakes = [(lambda *c: math.ceil(x(*c)), "one stage too few: add the stage being consumed "
                     "(it is not in flight)"),
                    (lambda *c: math.floor(x(*c)) + 1, "round the tiles in flight UP: int() and // round down"),
                    (lambda *c: round(x(*c)) + 1, "round the tiles in flight UP, not to the nearest"),
                    (lambda *c: math.floor(x(*c)) + 2, "round UP with math.ceil: int(x) + 1 is one too many "
                     "when x is a whole number"),
                    (lambda *c: math.ceil(x(*c)) + 2, "one stage too many: the tiles in flight plus ONE "
                     "being consumed"),
                    (lambda lat, tile, bw: math.ceil(lat / (tile * bw)) + 1, "time per tile = tile_bytes / "
                     "bandwidth (bytes / (bytes per ns) = ns)"),
                    (lambda lat, tile, bw: math.ceil(lat * tile / bw) + 1, "time per tile = tile_bytes / "
                     "bandwidth (bytes / (bytes per ns) = ns)"),
                    (lambda lat, tile, bw: math.ceil(tile / bw / lat) + 1, "tiles in flight = latency / "
                     "time per tile, not time per tile / latency")]
        hint = named_mistake(got_all, want_all, cases, mistakes, lambda g, v: g == v,
                             "stages = ceil(latency_ns / (tile_bytes / bandwidth_gbs)) + 1")
        fail(name, f"stages_needed{_show(cases[i])} = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name, f"e.g. 600 ns with 4 KiB tiles at 30 GB/s per SM: {want_all[0]} stages.")


def slot_phase_mistakes() -> list:
    """(formula (k, stages) -> (slot, parity), why) for slot_and_phase answers from a known slip."""
    return [(lambda k, s: (k % s, k % 2), "the parity flips once per pass over the ring, not once per tile"),
            (lambda k, s: (k % s, k // s), "the parity is 0 or 1: which use of this slot, mod 2"),
            (lambda k, s: (k % s, 1 - (k // s) % 2), "inverted: the first use of a slot (round 0) "
             "waits for phase parity 0"),
            (lambda k, s: (k // s, (k // s) % 2), "the slot cycles through 0 .. stages-1: k % stages"),
            (lambda k, s: ((k // s) % 2, k % s), "return (slot, parity) in that order"),
            (lambda k, s: (k // s, k % s), "divmod(k, stages) is (k // stages, k % stages): the slot is "
             "the remainder, the parity the quotient mod 2"),
            (lambda k, s: (k % s, (k % s) % 2), "the parity counts the uses of the slot (k // stages), "
             "not the slot number"),
            (lambda k, s: (k & (s - 1), (k // s) % 2), "k & (stages - 1) is k % stages "
             "only when stages is a power of 2 (the check tries 3, 5, 6, 7, 12)"),
            (lambda k, s: (k % s, (k >> int(math.log2(s))) & 1), "k >> log2(stages) is k // stages only "
             "when stages is a power of 2 (the check tries 3, 5, 6, 7, 12)")]


def _pair(name, got, k, stages):
    what = f"slot_and_phase({k}, {stages})"
    if hasattr(got, "tolist") and getattr(got, "ndim", None) == 1:
        got = tuple(got.tolist() if got.dtype.kind in "iu" else got)
    if not isinstance(got, (tuple, list)) or len(got) != 2:
        extra = ": did the function forget to return?" if got is None else ""
        fail(name, f"{what} returned {got!r}; expected a pair (slot, parity){extra}")
    return tuple(int_floor_div(name, g, f"{what}[{i}]") for i, g in enumerate(got))


def check_slot_and_phase(fn) -> None:
    """Check ``slot_and_phase(k, stages)`` -> (slot, parity) on every tile of several rings (six
    rounds and more, stages not a power of 2 too) and on random large tiles, in random order."""
    name = "slot_and_phase"
    rng = random.Random()
    cases = [(k, s) for s in (1, 2, 3, 4, 5, 6, 7, 8, 12) for k in range(6 * s + 3)]
    extra = [(rng.randrange(10 ** 7), rng.randint(1, 16)) for _ in range(12)]
    cases += extra + [(k, s) for k, s in rng.sample(cases, len(cases))[:20]]
    got_all = answers(name, fn, cases, lambda g, c: _pair(name, g, *c), _show, "a pair (slot, parity)")
    if got_all is None:
        return not_attempted(name)
    want_all = [slot_and_phase_ref(*c) for c in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        hint = named_mistake(got_all, want_all, cases, slot_phase_mistakes(), lambda g, v: g == v,
                             "slot = k % stages; parity = (k // stages) % 2: which use of this slot")
        fail(name, f"slot_and_phase{cases[i]} = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name)


def parity_fn(expr: str):
    """A Python function ``f(k, stages)`` computing the C parity expression ``expr`` with C's
    rules (:mod:`utils.core.c_expr`: ``/`` truncates toward zero, ``!`` works, nothing is executed)."""
    return c_function(expr, ("k", "stages"))


def simulate_ring(stages: int, n_tiles: int, producer_parity) -> tuple[str, int]:
    """Run a producer (eager, goes first) and a consumer around ``stages`` slots guarded by
    mbarrier models; ``producer_parity(k, stages)`` is the producer's wait parity on the
    "empty" barrier. Returns ``("ok", n_tiles)``, ``("deadlock", k)`` or ``("overwrite", k)``."""
    full = [pm.MBarrier(1) for _ in range(stages)]
    empty = [pm.MBarrier(1) for _ in range(stages)]
    data, p, c = [None] * stages, 0, 0
    while c < n_tiles:
        progress = False
        while p < n_tiles and empty[p % stages].test_wait(int(producer_parity(p, stages)) & 1):
            if data[p % stages] is not None:
                return "overwrite", p
            data[p % stages] = p
            full[p % stages].arrive()
            p, progress = p + 1, True
        s = c % stages
        if c < p and full[s].test_wait((c // stages) & 1):
            data[s] = None
            empty[s].arrive()
            c, progress = c + 1, True
        if not progress:
            return "deadlock", c
    return "ok", n_tiles


def _phase_hint(verdict: str, k: int, stages: int) -> str:
    if verdict == "overwrite":
        r = k // stages
        return (f"tile {k} is use {r} of slot {k % stages}: its wait passed before the consumer "
                f"released use {r - 1}. The parity must name the phase of the PREVIOUS use of this "
                f"slot (parity {(r - 1) & 1} here)")
    if k < stages:
        return ("the producer waits for a phase that only the consumer can complete, and the "
                "consumer waits for the producer. In round 0 the slots are free: that wait "
                "must pass at once")
    return (f"tile {k} is round {k // stages} of slot {k % stages}: its wait must pass once the "
            f"consumer released round {k // stages - 1}, the phase of parity {(k // stages - 1) & 1}")


def check_phase_fix(expr, tier=None) -> None:
    """Check the producer's wait parity ``expr`` (a C expression in ``k`` and ``stages``),
    evaluated with C's rules: on the ring model for several depths, and with a GPU tier, in the
    real ``pc_ring`` kernel."""
    name = "fix_the_phase_bug"
    if not isinstance(expr, str):
        fail(name, f"expected a C expression as a string, got {type(expr).__name__} {expr!r}")
    try:
        same_as_stub = tokenize(expr) == tokenize(PRODUCER_PARITY_BUG)
        fn = parity_fn(expr)
    except CExprError as err:
        fail(name, f"cannot read {expr!r} as C: {err}", "write it in C with k, stages, integers and "
             "operators such as / % & ^ ! ( )")
    if same_as_stub:
        return not_attempted(name)
    for stages in range(1, 9):            # 1 to 8 stages, as the notebook says; 8 rounds each
        n_tiles = 8 * stages + 3
        try:
            values = [fn(k, stages) for k in range(n_tiles)]
        except CExprError as err:
            fail(name, f"with {stages} stage(s) your expression is undefined in C: {err}",
                 launched=f"model ring, producer parity {expr!r}")
        k = next((k for k, v in enumerate(values) if v not in (0, 1)), None)
        if k is not None:
            fail(name, f"at k = {k}, stages = {stages} your expression gives {values[k]}; a phase "
                 "parity is 0 or 1 (the only values mbarrier.try_wait.parity accepts)",
                 "keep one bit: & 1, % 2, or a comparison", launched=f"producer parity {expr!r} (C rules)")
        verdict, k = simulate_ring(stages, n_tiles, fn)
        if verdict != "ok":
            fail(name, f"with {stages} stage(s) the ring {verdict}s at tile {k} (your parity there: "
                 f"{values[k]})", _phase_hint(verdict, k, stages),
                 launched=f"model ring, producer parity {expr!r} (C rules)")
    ran = tier is not None and tier.has_gpu and _check_on_gpu(name, expr)
    return passed(name, "every wait names the phase it needs." + (" The real kernel agrees." if ran else ""))


def _check_on_gpu(name, expr) -> bool:
    """Run ``pc_ring`` with ``expr`` as the producer's parity; False if the kernel's macro does
    not accept the expression's characters (the model already judged it)."""
    import cupy as cp
    from ..cuda_cpp import day02 as cuda_day02
    try:
        cuda_day02.with_producer_parity(expr)
    except ValueError as err:
        print(f"[{name}] (not run on the GPU: {err})")
        return False
    x = cp.random.standard_normal(4 * (5 * cuda_day02.TILE_VEC + 7), dtype=cp.float32)
    y = cp.full_like(x, cp.nan)
    try:
        cuda_day02.ring(x, y, stages=3, work=4, producer_parity=expr, blocks=1, timeout_ns=200_000_000)
    except RuntimeError as err:
        fail(name, f"the kernel timed out: {err}", launched="pc_ring, 1 block, 3 stages")
    if not bool(cp.allclose(y, cuda_day02.compute_ref(x, 4), atol=1e-5)):
        fail(name, "the kernel finished but its output is wrong", "a slot was overwritten "
             "before the consumer read it", launched="pc_ring, 1 block, 3 stages")
    return True
