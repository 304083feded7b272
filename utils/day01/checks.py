"""Day 1 exercise checks. References (``*_ref``) are the model functions of
:mod:`utils.day01.memory_model`; each ``check_*`` tries the learner's function on fixed edge
cases and on random cases drawn fresh each call, reports a stub as "not attempted", and rejects
a wrong answer. A hint that names a mistake is given only when the answers match that mistake
on every case (:mod:`utils.core.answers`); otherwise the hint states the rule. The coalescing
exercises are checked in :mod:`utils.day01.coalescing_checks`, the learner's transpose kernel in
:mod:`utils.day01.transpose_check` (both re-exported here).
"""
from __future__ import annotations

import math
import random

import numpy as np

from . import memory_model as mm
from ..core.answers import answers, close, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, ROUND_DOWN, fail, int_answer, not_attempted, number_answer, passed
# the coalescing exercises (sectors per warp, the copy kernel) live in their own module
from .coalescing_checks import check_coalesced_copy, check_sectors_per_warp, sectors_per_warp_ref  # noqa: F401
from .transpose_check import check_transpose_kernel, tile_ways  # noqa: F401  (Exercise 7: the learner's kernel, run)

gemm_intensity_ref = mm.gemm_intensity
attainable_tflops_ref = mm.roofline_tflops
bank_of_ref = mm.bank_of
conflict_free_pad_ref = mm.conflict_free_pad


def check_gemm_intensity(fn) -> None:
    """Check ``gemm_intensity(M, N, K, elem_bytes)`` (FLOP per byte of C = A @ B)."""
    name = "gemm_intensity"
    rng = random.Random()
    cases = [(8192, 8192, 8192, 2), (8192, 8192, 64, 2), (4096, 1, 4096, 2), (1000, 3000, 70, 4),
             (64, 4096, 1024, 1), (333, 77, 5000, 8)] + [
        (rng.randint(1, 6000), rng.randint(1, 6000), rng.randint(1, 6000), rng.choice([1, 2, 4, 8]))
        for _ in range(3)]
    got_all = answers(name, fn, cases, lambda g, c: number_answer(name, g, f"{name}{c}"), kind="a number")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [gemm_intensity_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all, close)
    if bad:
        i = bad[0]
        s = lambda M, N, K: M * K + K * N + M * N  # noqa: E731  (elements of A, B and C)
        mistakes = [
            (lambda M, N, K, e: M * N * K / (e * s(M, N, K)), "a multiply-add is 2 FLOPs: C has M*N*K of them"),
            (lambda M, N, K, e: 2 * M * N * K / s(M, N, K), "divide by bytes, not elements: multiply "
             "element counts by elem_bytes"),
            (lambda M, N, K, e: 2 * M * N * K / (2 * s(M, N, K)), "use elem_bytes, not a fixed 2 bytes "
             "(the check tries 1, 2, 4 and 8)"),
            (lambda M, N, K, e: 2 * M * N * K / (e * (M * K + K * N)), "C (M x N) crosses DRAM too: "
             "bytes = elem_bytes * (MK + KN + MN)"),
            (lambda M, N, K, e: 2 * M * N * K / (e * (s(M, N, K) + M * N)), "each matrix crosses DRAM "
             "once: C is written, never read, so count M*N once"),
            (lambda M, N, K, e: 2 * M * N * K // (e * s(M, N, K)), "use /, not //: an intensity is "
             "not rounded down to a whole number")]
        hint = named_mistake(got_all, cases, mistakes, "intensity = 2*M*N*K FLOPs / (elem_bytes * (M*K + K*N "
                             "+ M*N)) bytes", same=close, want_all=want_all)
        fail(name, f"gemm_intensity{cases[i]} = {got_all[i]:.6g}, expected {want_all[i]:.6g} "
             f"({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name, f"e.g. 8192^3 fp16 does {want_all[0]:.0f} FLOP per byte.")


def check_attainable_tflops(fn) -> None:
    """Check ``attainable_tflops(intensity, peak_tflops, bandwidth_gbs)`` (the roofline)."""
    name = "attainable_tflops"
    rng = random.Random()
    cases = [(1 / 12, 989.0, 3350.0), (64.0, 989.0, 4800.0), (1000.0, 989.0, 3350.0),
             (500.0, 756.0, 2000.0), (0.5, 1979.0, 8000.0), (300, 400, 1000)] + [
        (10 ** rng.uniform(-1, 3.3), rng.uniform(100, 2500), rng.uniform(500, 8000)) for _ in range(5)]
    show = lambda c: f"({c[0]:.4g}, {c[1]:.4g}, {c[2]:.4g})"  # noqa: E731
    got_all = answers(name, fn, cases, lambda g, c: number_answer(name, g, f"{name}{show(c)}"), show=show,
                      kind="a number")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [attainable_tflops_ref(*c) for c in cases]
    bad = wrong_cases(got_all, want_all, close)
    if bad:
        i = bad[0]
        mistakes = [
            (lambda a, p, b: min(p, a * b), "FLOP/B x GB/s = GFLOP/s: divide by 1000 for TFLOP/s"),
            (lambda a, p, b: min(p, a * b / 1e6), "FLOP/B x GB/s = GFLOP/s, and 1 TFLOP/s is 1000 "
             "GFLOP/s: divide by 1000, not 1e6"),
            (lambda a, p, b: min(1000 * p, a * b), "that is GFLOP/s: the answer is in TFLOP/s"),
            (lambda a, p, b: a * b / 1e3, "no kernel beats the compute roof: take the min with peak_tflops"),
            (lambda a, p, b: max(p, a * b / 1e3), "the lower roof wins: min, not max"),
            (lambda a, p, b: min(989.0, a * b / 1e3), "use peak_tflops, not a fixed 989 (the check "
             "tries other GPUs)"),
            (lambda a, p, b: min(p, a * 3350.0 / 1e3), "use bandwidth_gbs, not a fixed 3350 (the check "
             "tries other GPUs)"),
            (lambda a, p, b: min(p, b / a / 1e3), "the memory roof is intensity x bandwidth, not "
             "bandwidth / intensity")]
        hint = named_mistake(got_all, cases, mistakes, "attainable = min(peak_tflops, intensity * "
                             "bandwidth_gbs / 1000)", same=close, want_all=want_all)
        fail(name, f"attainable_tflops{show(cases[i])} = {got_all[i]:.6g}, expected {want_all[i]:.6g} "
             f"({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name)


def check_bank_of(fn) -> None:
    """Check ``bank_of(byte_address)`` on fixed and random addresses (up to 228 KiB)."""
    name = "bank_of"
    cases = [0, 4, 5, 6, 7, 124, 128, 132, 200, 4104, 65535, 233471] + random.sample(range(1, 228 * 1024), 6)
    got_all = answers(name, fn, [(a,) for a in cases], lambda g, c: int_answer(name, g, f"bank_of({c[0]})",
                                                                               advice=ROUND_DOWN),
                      show=lambda c: f"({c[0]})", kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [bank_of_ref(a) for a in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
        mistakes = [(lambda a: a % 32, "banks hold 4-byte words: divide the byte address by 4 first"),
                    (lambda a: a % 128, "banks hold 4-byte words: divide the byte address by 4 first"),
                    (lambda a: a // 4, "there are 32 banks: take the word index modulo 32"),
                    (lambda a: a // 4 % 16, "there are 32 banks, not 16"),
                    (lambda a: a // 32 % 32, "a bank holds one 4-byte word of each 128-byte row: "
                     "bank = (byte_address // 4) % 32"),
                    (lambda a: a // 128 % 32, "byte_address // 128 is the 128-byte row; the bank is the "
                     "word within the row"),
                    (lambda a: a // 4 % 32 + 1, "banks are numbered 0 .. 31"),
                    (lambda a: round(a / 4) % 32, "byte 7 is in word 1: use // (it rounds down), not round()"),
                    (lambda a: math.ceil(a / 4) % 32, "byte 7 is in word 1: use // (it rounds down), not "
                     "math.ceil")]
        hint = named_mistake(got_all, [(a,) for a in cases], mistakes, "bank = (byte_address // 4) % 32",
                             want_all=want_all)
        fail(name, f"bank_of({cases[i]}) = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name, "addresses 128 bytes apart share a bank.")


def check_conflict_free_pad(fn) -> None:
    """Check ``conflict_free_pad(tile_cols)``: the smallest pad making a column read conflict-free."""
    name = "conflict_free_pad"
    rows = np.arange(32)
    cases = [32, 33, 64, 16, 31, 24, 8, 48, 65, 1, 2, 96, 100] + random.sample(range(1, 513), 3)
    got_all = answers(name, fn, [(c,) for c in cases],
                      lambda g, c: int_answer(name, g, f"conflict_free_pad({c[0]})", "words of padding: an int >= 0"),
                      show=lambda c: f"({c[0]})", kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for cols, got in zip(cases, got_all):
        if got < 0:
            fail(name, f"conflict_free_pad({cols}) = {got}; expected an int >= 0 (words of padding)")
    want_all = [conflict_free_pad_ref(c) for c in cases]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
        cols, got = cases[i], got_all[i]
        ways = mm.conflict_ways(4 * mm.tile_word(rows, 0, cols, got))
        effect = (f"rows of {cols + got} words: a column read is {ways}-way conflicted" if ways > 1
                  else f"rows of {cols + got} words are conflict-free, but a smaller pad is too")
        mistakes = [(lambda c: 1, "not always 1: a row of an odd number of words needs no pad"),
                    (lambda c: c % 2, "inverted: an odd row length needs no pad, an even one needs 1"),
                    (lambda c: int(c % 32 == 0), "not only multiples of 32: any even row length puts "
                     "two rows of the column in one bank")]
        hint = named_mistake(got_all, [(c,) for c in cases], mistakes,
                             "consecutive rows must start in different banks" if ways > 1 else
                             "conflict-free, but wastes shared memory: the smallest pad is wanted", want_all=want_all)
        fail(name, f"conflict_free_pad({cols}) = {got}, expected {want_all[i]}: {effect}", hint)
    return passed(name, "an odd number of words per row spreads a column over all 32 banks.")
