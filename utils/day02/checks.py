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
from ..core.checks import NOT_ATTEMPTED, attempt, fail, int_answer, not_attempted, passed

loads_per_thread_needed_ref = pm.loads_per_thread_needed
stages_needed_ref = pm.stages_needed
slot_and_phase_ref = pm.slot_and_phase
PRODUCER_PARITY_REF = "((k / stages) & 1) ^ 1"
PRODUCER_PARITY_BUG = "(k / stages) & 1"          # the planted bug of the exercise


def _int_answer(name, got, case):
    return int_answer(name, got, f"{name}{tuple(round(c, 1) for c in case)}",
                      "stages and loads come in whole numbers: round up with math.ceil")


def check_loads_per_thread(fn) -> None:
    """Check ``loads_per_thread_needed(latency_ns, bandwidth_gbs, n_sm, threads_per_sm, bytes_per_load)``."""
    name = "loads_per_thread_needed"
    rng = random.Random()
    cases = [(600.0, 4000.0, 132, 128, 16), (600.0, 4000.0, 132, 2048, 16), (800.0, 3350.0, 132, 256, 4),
             (500.0, 3350.0, 132, 128, 16)] + [
        (rng.uniform(300, 900), rng.uniform(1000, 5000), 132, rng.choice([64, 128, 256, 512]), 16)
        for _ in range(4)]
    for case in cases:
        got = attempt(fn, *case)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got, want = _int_answer(name, got, case), loads_per_thread_needed_ref(*case)
        if got != want:
            lat, bw, n_sm, thr, b = case
            raw = lat * bw / n_sm / (thr * b)
            mistakes = [(math.ceil(lat * bw / (thr * b)), "divide by the number of SMs: Little's "
                         "law gives the whole GPU's bytes"),
                        (math.floor(raw), "round UP: a fraction of a load does not exist"),
                        (math.ceil(lat * bw / n_sm / thr), "divide by bytes_per_load: each load "
                         "moves that many bytes")]
            hint = next((h for value, h in mistakes if got == value != want),
                        "loads = ceil(latency x bandwidth / n_sm / (threads_per_sm x bytes_per_load))")
            fail(name, f"loads_per_thread_needed{tuple(round(c, 1) for c in case)} = {got}, "
                 f"expected {want}", hint)
    return passed(name, f"e.g. at 600 ns and 4000 GB/s, 128 threads per SM need "
                  f"{loads_per_thread_needed_ref(*cases[0])} 16-byte loads each in flight; 2048 threads need "
                  f"{loads_per_thread_needed_ref(*cases[1])}. The next cell uses this GPU's numbers.")


def check_stages_needed(fn) -> None:
    """Check ``stages_needed(latency_ns, tile_bytes, bandwidth_gbs)``."""
    name = "stages_needed"
    rng = random.Random()
    cases = [(600.0, 4096, 30.0), (600.0, 16384, 30.0), (500.0, 8192, 100.0), (100.0, 65536, 10.0)] + [
        (rng.uniform(200, 1000), rng.choice([2048, 4096, 8192, 16384]), rng.uniform(10, 60))
        for _ in range(4)]
    for case in cases:
        got = attempt(fn, *case)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got, want = _int_answer(name, got, case), stages_needed_ref(*case)
        if got != want:
            lat, tile, bw = case
            hint = ("one stage too few: round the tiles in flight UP, then add the stage being "
                    "consumed (it is not in flight)" if got == want - 1 else
                    "time per tile = tile_bytes / bandwidth (bytes / (bytes per ns) = ns)"
                    if got > 10 * want else
                    "stages = ceil(latency_ns / (tile_bytes / bandwidth_gbs)) + 1")
            fail(name, f"stages_needed({lat:.0f}, {tile}, {bw:.1f}) = {got}, expected {want}", hint)
    return passed(name, f"e.g. 600 ns with 4 KiB tiles at 30 GB/s per SM: {stages_needed_ref(*cases[0])} stages.")


def slot_phase_mistakes(stages: int, n: int) -> list:
    """(answers for k = 0 .. n-1, why) for slot_and_phase answers that come from a known slip."""
    ks = range(n)
    return [([(k % stages, k % 2) for k in ks], "the parity flips once per pass over the ring, not once per tile"),
            ([(k % stages, k // stages) for k in ks], "the parity is 0 or 1: which use of this slot, mod 2"),
            ([(k % stages, 1 - (k // stages) % 2) for k in ks], "inverted: the first use of a slot "
             "(round 0) waits for phase parity 0"),
            ([(k // stages, (k // stages) % 2) for k in ks], "the slot cycles through 0 .. stages-1: k % stages"),
            ([((k // stages) % 2, k % stages) for k in ks], "return (slot, parity) in that order")]


def check_slot_and_phase(fn) -> None:
    """Check ``slot_and_phase(k, stages)`` -> (slot, parity) on every tile of several rings."""
    name = "slot_and_phase"
    for stages in (1, 2, 3, 4, 5, 8):
        n, got_all = 4 * stages + 3, []
        for k in range(n):
            got = attempt(fn, k, stages)
            if got is NOT_ATTEMPTED:
                return not_attempted(name)
            if not isinstance(got, (tuple, list)) or len(got) != 2:
                fail(name, f"slot_and_phase({k}, {stages}) returned {got!r}; expected a pair (slot, parity)")
            got_all.append(tuple(int_answer(name, g, f"slot_and_phase({k}, {stages})[{i}]")
                                 for i, g in enumerate(got)))
        want_all = [slot_and_phase_ref(k, stages) for k in range(n)]
        if got_all != want_all:
            k = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
            hint = next((h for value, h in slot_phase_mistakes(stages, n) if value == got_all),
                        "slot = k % stages; parity = (k // stages) % 2: which use of this slot")
            fail(name, f"slot_and_phase({k}, {stages}) = {got_all[k]}, expected {want_all[k]}", hint)
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
        return ("a wait passed before the consumer released the slot: the parity must name "
                "the phase of the PREVIOUS use of this slot")
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
    for stages in (1, 2, 3, 4, 8):
        try:
            verdict, k = simulate_ring(stages, 4 * stages + 3, fn)
        except CExprError as err:
            fail(name, f"with {stages} stage(s) your expression is undefined in C: {err}",
                 launched=f"model ring, producer parity {expr!r}")
        if verdict != "ok":
            fail(name, f"with {stages} stage(s) the ring {verdict}s at tile {k}",
                 _phase_hint(verdict, k, stages), launched=f"model ring, producer parity {expr!r} (C rules)")
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
