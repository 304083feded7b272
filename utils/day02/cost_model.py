"""A small cost model of moving tiles: who issues the instructions, and how many bytes must be
in flight to reach full bandwidth (Little's law). Used by ``day05_tma/01_tma_concepts``.

Each reference function (``*_ref``) has a ``check_*`` that tests a learner's version on fresh
random inputs and rejects wrong ones with a hint.
"""
from __future__ import annotations

import random

from ..core.answers import answers, close, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, ROUND_DOWN, fail, int_answer, not_attempted, number_answer, passed

WARP = 32


def _positive(**values):
    for name, v in values.items():
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            raise ValueError(f"{name} must be a positive number, got {v!r}")


def bytes_in_flight_ref(latency_ns: float, bandwidth_gbs: float) -> float:
    """Little's law: bytes that must be in flight = latency x bandwidth (ns x GB/s = bytes)."""
    _positive(latency_ns=latency_ns, bandwidth_gbs=bandwidth_gbs)
    return latency_ns * 1e-9 * bandwidth_gbs * 1e9


def warp_instructions_per_tile_ref(rows: int, cols: int, elem_bytes: int, vector_bytes: int = 16) -> int:
    """Warp-level load + store instructions a thread-driven copy of one tile issues, when every
    thread moves ``vector_bytes`` per instruction (16 B = ``ld.global.v4.b32``)."""
    for name, v in dict(rows=rows, cols=cols, elem_bytes=elem_bytes, vector_bytes=vector_bytes).items():
        if isinstance(v, bool) or not isinstance(v, int) or v <= 0:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    tile = rows * cols * elem_bytes
    per_warp_instr = WARP * vector_bytes
    if tile % per_warp_instr:
        raise ValueError(f"tile of {tile} B is not a multiple of {per_warp_instr} B (one warp-wide access)")
    return 2 * tile // per_warp_instr


def registers_to_hold(bytes_per_sm: float, reg_bytes: int = 4) -> float:
    """32-bit registers needed to hold ``bytes_per_sm`` of loads in flight (thread-driven copy).
    A TMA copy lands those bytes in shared memory instead: zero registers."""
    _positive(bytes_per_sm=bytes_per_sm, reg_bytes=reg_bytes)
    return bytes_per_sm / reg_bytes


def predicted_bandwidth_gbs(bytes_in_flight_per_sm: float, n_sm: int, latency_ns: float,
                            peak_gbs: float) -> float:
    """Little's law the other way: bandwidth reached with a given amount in flight, capped at peak."""
    _positive(bytes_in_flight_per_sm=bytes_in_flight_per_sm, n_sm=n_sm, latency_ns=latency_ns,
              peak_gbs=peak_gbs)
    return min(peak_gbs, bytes_in_flight_per_sm * n_sm / latency_ns)


def check_bytes_in_flight(fn) -> None:
    """Check a learner's ``bytes_in_flight(latency_ns, bandwidth_gbs)`` on fixed and random inputs."""
    name = "bytes_in_flight"
    rng = random.Random()
    cases = [(600.0, 3350.0), (450, 2000), (1000.0, 4800.0), (73.5, 812.25)] + [
        (rng.uniform(50, 2000), rng.uniform(100, 8000)) for _ in range(5)]
    show = lambda c: f"({c[0]:.1f}, {c[1]:.1f})"  # noqa: E731
    got_all = answers(name, fn, cases, lambda g, c: number_answer(name, g, f"{name}{show(c)}",
                                                                   "a number of bytes"), show=show, kind="a number")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [bytes_in_flight_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all, lambda g, w: close(g, w, atol=1.0))
    if bad:                                 # (within 1 byte: rounding to whole bytes is right too)
        i = bad[0]
        factors = [(1e9, "off by 1e9: ns is 1e-9 s and GB/s is 1e9 B/s, so they cancel"),
                   (1e-9, "off by 1e9: ns is 1e-9 s and GB/s is 1e9 B/s, so they cancel"),
                   (1e18, "off by 1e18: ns is 1e-9 s (not 1e9 s) and GB/s is 1e9 B/s"),
                   (1e-18, "off by 1e18: ns is 1e-9 s and GB/s is 1e9 B/s (not 1e-9 B/s)"),
                   (1e3, "off by 1000: ns is 1e-9 s and GB/s is 1e9 B/s, so ns x GB/s = bytes"),
                   (1e-3, "off by 1000: ns is 1e-9 s and GB/s is 1e9 B/s, so ns x GB/s = bytes"),
                   (1e-6, "that is MB: return bytes"),
                   (2 ** 30 / 1e9, "GB/s is 1e9 B/s, not 2^30 B/s (that is GiB/s)"),
                   (8.0, "that is bits: return bytes")]
        mistakes = [(lambda lat, bw, c=c: c * bytes_in_flight_ref(lat, bw), h) for c, h in factors] + [
            (lambda lat, bw: lat / bw, "latency x bandwidth, not latency / bandwidth: bytes in flight "
             "= latency (s) x bandwidth (B/s)"),
            (lambda lat, bw: bw / lat, "latency x bandwidth, not bandwidth / latency: bytes in flight "
             "= latency (s) x bandwidth (B/s)")]
        hint = named_mistake(got_all, cases, mistakes, "bytes in flight = latency (s) x bandwidth (B/s)",
                             same=close, want_all=want_all)
        fail(name, f"bytes_in_flight{show(cases[i])} = {got_all[i]!r}, expected {want_all[i]:.1f} "
             f"({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name, f"e.g. {cases[0][0]:.0f} ns x {cases[0][1]:.0f} GB/s needs "
                  f"{want_all[0] / 1e6:.2f} MB in flight.")


def _tile_case(rng):
    while True:
        case = (rng.choice([16, 32, 48, 64, 96, 128, 192, 256]), rng.choice([16, 24, 32, 64, 80, 128, 256]),
                rng.choice([1, 2, 4, 8]), rng.choice([4, 8, 16]))
        if case[0] * case[1] * case[2] % (WARP * case[3]) == 0:
            return case


def check_warp_instructions(fn) -> None:
    """Check a learner's ``warp_instructions_per_tile(rows, cols, elem_bytes, vector_bytes)``."""
    name = "warp_instructions_per_tile"
    rng = random.Random()
    cases = [(64, 128, 2, 16), (128, 64, 4, 16), (64, 64, 2, 8), (256, 32, 1, 4), (32, 64, 4, 8),
             (48, 80, 2, 16), (96, 40, 4, 8), (16, 16, 8, 16)] + [_tile_case(rng) for _ in range(3)]
    got_all = answers(name, fn, cases, lambda g, c: int_answer(name, g, f"{name}{c}", "a count of instructions",
                                                               ROUND_DOWN), kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [warp_instructions_per_tile_ref(*case) for case in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
        mistakes = [(lambda r, c, e, v: r * c * e // (WARP * v), "count loads AND stores"),
                    (lambda r, c, e, v: 2 * r * c * e // v, "count warp instructions: 32 threads share one"),
                    (lambda r, c, e, v: 2 * r * c * e // (WARP * 16), "use vector_bytes (8 or 4 in some "
                     "cases), not always 16"),
                    (lambda r, c, e, v: 2 * r * c // (WARP * v), "multiply by elem_bytes: the tile has "
                     "rows x cols x elem_bytes bytes"),
                    (lambda r, c, e, v: 2 * r * c * 2 // (WARP * v), "use elem_bytes, not a fixed 2 "
                     "(the check tries 1, 2, 4 and 8)"),
                    (lambda r, c, e, v: 2 * r * c * e // WARP, "each thread moves vector_bytes per "
                     "instruction: divide by 32 x vector_bytes"),
                    (lambda r, c, e, v: 2 * r * c * e // (4 * WARP * v), "a warp is 32 threads: count one "
                     "instruction per warp, not per 128-thread block"),
                    (lambda r, c, e, v: 2 * r * c // WARP, "one instruction moves vector_bytes per thread, "
                     "not one element")]
        hint = named_mistake(got_all, cases, mistakes, "tile bytes / (32 threads x vector_bytes) per "
                             "direction, times 2 directions", want_all=want_all)
        fail(name, f"{cases[i]} -> {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name)
