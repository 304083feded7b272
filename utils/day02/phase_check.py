"""Day 2's phase-bug exercise: the learner fixes the producer's wait parity, a C expression in
``k`` and ``stages``. It is evaluated with C's rules (:mod:`utils.core.c_expr`) and run on a
producer/consumer ring of mbarrier models for 1 to 8 stages (:func:`simulate_ring`), so a phase bug
is found on any machine; with a tier given, the real ``pc_ring`` kernel runs it too: on the GPU, or on
the cpu tier on the course's emulator. Split from
:mod:`utils.day02.checks`, which re-exports it.
"""
from __future__ import annotations

from . import pipeline_model as pm
from ..core.c_expr import CExprError, c_function, tokenize
from ..core.checks import fail, not_attempted, passed

PRODUCER_PARITY_REF = "((k / stages) & 1) ^ 1"
PRODUCER_PARITY_BUG = "(k / stages) & 1"          # the planted bug of the exercise


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
    if tier is not None and tier.has_gpu:
        ran = " The real kernel agrees." if _check_on_gpu(name, expr) else ""
    else:
        ran = " The real kernel agrees on the emulator." if tier is not None and _check_on_emulator(name, expr) else ""
    return passed(name, "every wait names the phase it needs." + ran)


def _check_on_emulator(name, expr) -> bool:
    """The cpu tier's run of ``pc_ring`` with ``expr`` as the producer's parity (see :func:`_check_on_gpu`)."""
    import numpy as np
    from ..cuda_cpp import day02 as cuda_day02
    from ..emu import EmulatorError
    from ..emu import course
    try:
        cuda_day02.with_producer_parity(expr)
    except ValueError as err:
        print(f"[{name}] (not run on the emulator: {err})")
        return False
    x = np.random.default_rng().standard_normal(4 * (5 * cuda_day02.TILE_VEC + 7)).astype(np.float32)
    launched = "pc_ring on the emulator, 1 block, 3 stages"
    try:
        y, _ = course.ring(x, np.full_like(x, np.nan), stages=3, work=4, producer_parity=expr, blocks=1)
    except RuntimeError as err:
        fail(name, f"the kernel timed out: {err}", launched=launched)
    except EmulatorError as err:
        fail(name, f"the kernel raced: {str(err).splitlines()[0]}", "a slot was overwritten before the "
             "consumer read it", launched=launched)
    if not np.allclose(y, cuda_day02.compute_ref(x, 4), atol=1e-5):
        fail(name, "the kernel finished but its output is wrong", "a slot was overwritten before the "
             "consumer read it", launched=launched)
    return True


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
