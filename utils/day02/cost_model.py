"""A small cost model of moving tiles: who issues the instructions, and how many bytes must be
in flight to reach full bandwidth (Little's law). Used by ``day05_tma/01_tma_concepts``.

Each reference function (``*_ref``) has a ``check_*`` that tests a learner's version on fresh
random inputs and rejects wrong ones with a hint.
"""
from __future__ import annotations

import random

from ..core.checks import NOT_ATTEMPTED, attempt, fail, int_answer, not_attempted, number_answer, passed

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
    """Check a learner's ``bytes_in_flight(latency_ns, bandwidth_gbs)`` on random inputs."""
    name = "bytes_in_flight"
    rng = random.Random()
    cases = [(600.0, 3350.0)] + [(rng.uniform(100, 1000), rng.uniform(500, 5000)) for _ in range(5)]
    for lat, bw in cases:
        got = attempt(fn, lat, bw)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        want = bytes_in_flight_ref(lat, bw)
        got = number_answer(name, got, f"bytes_in_flight({lat:.1f}, {bw:.1f})", "a number of bytes")
        if abs(got - want) > 1e-6 * want:
            ratio = got / want if want else float("nan")
            hint = ("off by 1e9: ns is 1e-9 s and GB/s is 1e9 B/s, so they cancel"
                    if abs(ratio - 1e9) < 1e3 or abs(ratio - 1e-9) < 1e-12
                    else "bytes in flight = latency (s) x bandwidth (B/s)")
            fail(name, f"bytes_in_flight({lat:.1f}, {bw:.1f}) = {got!r}, expected {want:.1f}", hint)
    return passed(name, f"e.g. {cases[0][0]:.0f} ns x {cases[0][1]:.0f} GB/s needs "
                  f"{bytes_in_flight_ref(*cases[0]) / 1e6:.2f} MB in flight.")


def check_warp_instructions(fn) -> None:
    """Check a learner's ``warp_instructions_per_tile(rows, cols, elem_bytes, vector_bytes)``."""
    name = "warp_instructions_per_tile"
    cases = [(64, 128, 2, 16), (128, 64, 4, 16), (64, 64, 2, 8), (256, 32, 1, 4), (32, 64, 4, 8)]
    got_all = []
    for case in cases:
        got = attempt(fn, *case)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got_all.append(int_answer(name, got, f"warp_instructions_per_tile{case}", "a count of instructions"))
    want_all = [warp_instructions_per_tile_ref(*case) for case in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        mistakes = [(lambda r, c, e, v: r * c * e // (WARP * v), "count loads AND stores"),
                    (lambda r, c, e, v: 2 * r * c * e // v, "count warp instructions: 32 threads share one"),
                    (lambda r, c, e, v: 2 * r * c * e // (WARP * 16), "use vector_bytes (8 or 4 in some "
                     "cases), not always 16"),
                    (lambda r, c, e, v: 2 * r * c // (WARP * v), "multiply by elem_bytes: the tile has "
                     "rows x cols x elem_bytes bytes")]
        hint = next((h for f, h in mistakes if [f(*c) for c in cases] == got_all),
                    "tile bytes / (32 threads x vector_bytes) per direction, times 2 directions")
        fail(name, f"{cases[i]} -> {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name)
