"""Day 2 exercise checks. References live in :mod:`utils.day02.pipeline_model`; each ``check_*``
tries the learner's answer on several cases, reports a stub as "not attempted", and rejects a
wrong answer with a hint (:mod:`utils.core.answers`). The phase-bug exercise,
:func:`check_phase_fix`, is in :mod:`utils.day02.phase_check` (re-exported here): its
:func:`simulate_ring` runs a producer/consumer ring on mbarrier models, so a phase bug is found on
any machine (and on a GPU, in the real kernel too). The kernel exercises, :func:`check_pipeline_kernel`
and :func:`check_ring_kernel`, are in :mod:`.pipeline_check` and :mod:`.ring_check` (re-exported).
"""
from __future__ import annotations

import math
import random

from . import pipeline_model as pm
from ..core.answers import answers, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, ROUND_DOWN, ROUND_UP, fail, int_answer, not_attempted, passed
# the phase-bug exercise (a C expression run on a ring model, and on the GPU) lives in its own module
from .phase_check import (PRODUCER_PARITY_BUG, PRODUCER_PARITY_REF, check_phase_fix, parity_fn,  # noqa: F401
                          simulate_ring)
# the two kernel exercises: the learner's CUDA kernel run on the emulator (and on a GPU)
from .pipeline_check import check_pipeline_kernel  # noqa: F401
from .ring_check import check_ring_kernel  # noqa: F401

loads_per_thread_needed_ref = pm.loads_per_thread_needed
stages_needed_ref = pm.stages_needed
slot_and_phase_ref = pm.slot_and_phase


def _int_answer(name, got, case):
    return int_answer(name, got, f"{name}{_show(case)}",
                      "stages and loads come in whole numbers: round up with math.ceil", ROUND_UP)


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
    got_all = answers(name, fn, cases, lambda g, c: _int_answer(name, g, c), show=_show, kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [loads_per_thread_needed_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
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
        hint = named_mistake(got_all, cases, mistakes, "loads = ceil(latency x bandwidth / n_sm / "
                             "(threads_per_sm x bytes_per_load))", want_all=want_all)
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
    got_all = answers(name, fn, cases, lambda g, c: _int_answer(name, g, c), show=_show, kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [stages_needed_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
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
        hint = named_mistake(got_all, cases, mistakes, "stages = ceil(latency_ns / (tile_bytes / "
                             "bandwidth_gbs)) + 1", want_all=want_all)
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
    return tuple(int_answer(name, g, f"{what}[{i}]", advice=ROUND_DOWN) for i, g in enumerate(got))


def check_slot_and_phase(fn) -> None:
    """Check ``slot_and_phase(k, stages)`` -> (slot, parity) on every tile of several rings (six
    rounds and more, stages not a power of 2 too) and on random large tiles, in random order."""
    name = "slot_and_phase"
    rng = random.Random()
    cases = [(k, s) for s in (1, 2, 3, 4, 5, 6, 7, 8, 12) for k in range(6 * s + 3)]
    extra = [(rng.randrange(10 ** 7), rng.randint(1, 16)) for _ in range(12)]
    cases += extra + [(k, s) for k, s in rng.sample(cases, len(cases))[:20]]
    got_all = answers(name, fn, cases, lambda g, c: _pair(name, g, *c), show=_show, kind="a pair (slot, parity)")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [slot_and_phase_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
        hint = named_mistake(got_all, cases, slot_phase_mistakes(), "slot = k % stages; parity = "
                             "(k // stages) % 2: which use of this slot", want_all=want_all)
        fail(name, f"slot_and_phase{cases[i]} = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name)
