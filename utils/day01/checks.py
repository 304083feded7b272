"""Day 1 exercise checks. References (``*_ref``) are the model functions of
:mod:`utils.day01.memory_model`; each ``check_*`` tries the learner's function on fixed edge
cases and on random cases drawn fresh each call, reports a stub as "not attempted", and rejects
a wrong answer. A hint that names a mistake is given only when the answers match that mistake
on every case; otherwise the hint states the rule.
"""
from __future__ import annotations

import math
import random

import numpy as np

from . import memory_model as mm
from ..core.checks import (NOT_ATTEMPTED, CheckFailed, attempt, check_array, fail, int_answer,
                           not_attempted, number_answer, passed)

gemm_intensity_ref = mm.gemm_intensity
attainable_tflops_ref = mm.roofline_tflops
sectors_per_warp_ref = mm.sectors_touched
bank_of_ref = mm.bank_of
conflict_free_pad_ref = mm.conflict_free_pad


def _answers(name, fn, cases, convert, show=repr, kind="a number"):
    """``convert(fn(*case), case)`` for every case; None if ``fn`` is still a stub. An exception
    raised by ``fn``, or None returned (``kind`` says what was expected), fails naming the call
    (the learner's traceback stays chained)."""
    out = []
    for case in cases:
        try:
            got = attempt(fn, *case)
        except CheckFailed:
            raise
        except Exception as err:
            fail(name, f"{name}{show(case)} raised {type(err).__name__}: {err}")
        if got is NOT_ATTEMPTED:
            return None
        if got is None:
            fail(name, f"{name}{show(case)} returned None; expected {kind}: did the function forget "
                 "to return its result?")
        out.append(convert(got, case))
    return out


def _int(name, got, what, hint=""):
    """An int answer; a float is told to use ``//`` (rounding up would be wrong here)."""
    if isinstance(got, (float, np.floating)):
        fail(name, f"{what} is {type(got).__name__} {got!r}; expected an int: use // (integer "
             "division), not /", hint)
    return int_answer(name, got, what, hint)


def _close(a, b, rel=1e-6):
    return abs(a - b) <= rel * abs(b)


def _named(got_all, want_all, cases, mistakes, same, default):
    """The hint of the first mistake whose answers equal ``got_all`` on every case."""
    for f, hint in mistakes:
        try:
            values = [f(*c) for c in cases]
        except (ArithmeticError, ValueError):
            continue
        if not all(same(v, w) for v, w in zip(values, want_all)) and \
                all(same(g, v) for g, v in zip(got_all, values)):
            return hint
    return default


def check_gemm_intensity(fn) -> None:
    """Check ``gemm_intensity(M, N, K, elem_bytes)`` (FLOP per byte of C = A @ B)."""
    name = "gemm_intensity"
    rng = random.Random()
    cases = [(8192, 8192, 8192, 2), (8192, 8192, 64, 2), (4096, 1, 4096, 2), (1000, 3000, 70, 4),
             (64, 4096, 1024, 1), (333, 77, 5000, 8)] + [
        (rng.randint(1, 6000), rng.randint(1, 6000), rng.randint(1, 6000), rng.choice([1, 2, 4, 8]))
        for _ in range(3)]
    got_all = _answers(name, fn, cases, lambda g, c: number_answer(name, g, f"{name}{c}"))
    if got_all is None:
        return not_attempted(name)
    want_all = [gemm_intensity_ref(*c) for c in cases]
    bad = [i for i, (g, w) in enumerate(zip(got_all, want_all)) if not _close(g, w)]
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
        hint = _named(got_all, want_all, cases, mistakes, _close,
                      "intensity = 2*M*N*K FLOPs / (elem_bytes * (M*K + K*N + M*N)) bytes")
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
    got_all = _answers(name, fn, cases, lambda g, c: number_answer(name, g, f"{name}{show(c)}"), show)
    if got_all is None:
        return not_attempted(name)
    want_all = [attainable_tflops_ref(*c) for c in cases]
    bad = [i for i, (g, w) in enumerate(zip(got_all, want_all)) if not _close(g, w)]
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
        hint = _named(got_all, want_all, cases, mistakes, _close,
                      "attainable = min(peak_tflops, intensity * bandwidth_gbs / 1000)")
        fail(name, f"attainable_tflops{show(cases[i])} = {got_all[i]:.6g}, expected {want_all[i]:.6g} "
             f"({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name)


def _sector_set(a, first_off, last_off):
    return np.unique(np.concatenate([(a + first_off) // 32, (a + last_off) // 32])).size


def check_sectors_per_warp(fn) -> None:
    """Check ``sectors_per_warp(byte_addresses, access_bytes)`` (distinct 32-B sectors), also on
    partial warps (the last warp of a masked launch) and on misaligned, scattered addresses."""
    name = "sectors_per_warp"
    rng = np.random.default_rng()
    cases = [(mm.warp_addresses(1), 4), (mm.warp_addresses(2), 4), (mm.warp_addresses(8), 4),
             (mm.warp_addresses(1, offset=1), 4), (mm.warp_addresses(1, elem_bytes=2), 2),
             (np.full(32, 4096), 4), (24 + 64 * np.arange(32), 16), (mm.warp_addresses(1)[:20], 4),
             (mm.warp_addresses(1, offset=992)[:8], 4), (np.arange(32), 1), (30 + 4 * np.arange(32), 4),
             (30 + 32 * np.arange(32), 2),
             (8 * rng.integers(0, 512, 32), 8), (8 + 16 * rng.integers(0, 256, 32), 16),
             (rng.permutation(mm.warp_addresses(1, offset=int(rng.integers(0, 64)), elem_bytes=8)), 8),
             (4 * rng.integers(0, 4096, int(rng.integers(1, 32))), 4)]
    show = lambda c: f"({len(c[0])} addresses {c[0][:3].tolist()}..., {c[1]})"  # noqa: E731
    got_all = _answers(name, fn, [(a.copy(), n) for a, n in cases],
                       lambda g, c: int_answer(name, g, f"sectors_per_warp{show(c)}", "a count of sectors"),
                       show, "an int")
    if got_all is None:
        return not_attempted(name)
    want_all = [sectors_per_warp_ref(a, n) for a, n in cases]
    bad = [i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w]
    if bad:
        i = bad[0]
        mistakes = [
            (lambda a, n: np.unique(a // 128).size, "sectors are 32 bytes (a 128-byte line holds four)"),
            (lambda a, n: np.unique(a // 32).size, "an access covers bytes a .. a+access_bytes-1 and may "
             "cross into the next sector"),
            (lambda a, n: _sector_set(a, 0, n), "the last byte of an access is a + access_bytes - 1, "
             "not a + access_bytes"),
            (lambda a, n: _sector_set(a, 0, 3), "use access_bytes, not a fixed 4 bytes per access"),
            (lambda a, n: a.size, "count distinct sectors: threads reading the same sector share it"),
            (lambda a, n: int(np.sum((a + n - 1) // 32 - a // 32 + 1)), "count distinct sectors: "
             "threads reading the same sector share it"),
            (lambda a, n: math.ceil(a.size * n / 32), "count the sectors the addresses touch, not the "
             "bytes requested / 32: scattered or misaligned accesses touch more"),
            (lambda a, n: int((a.max() + n - 1) // 32 - a.min() // 32 + 1), "count distinct sectors, "
             "not the span from the lowest to the highest: sectors in between may be untouched")]
        hint = _named(got_all, want_all, cases, mistakes, lambda g, v: g == v,
                      "distinct values of byte // 32 over every byte each thread touches")
        a, n = cases[i]
        fail(name, f"{a.size} {n}-byte accesses at {a[:4].tolist()}... -> {got_all[i]}, expected "
             f"{want_all[i]} ({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name, "stride 1: 4 sectors per warp of fp32; stride 8: 32.")


def _copy_launch(kernel, device, n, block):
    """Launch the copy with guard zones around x and y; return (x, y, guards intact, where)."""
    import torch
    grid = -(-n // block)
    x_all = torch.randn(n + 2 * block, device=device)
    y_all = torch.full((n + 2 * block,), float("nan"), device=device)
    x, y = x_all[block:block + n], y_all[block:block + n]
    where = torch.full((grid * block,), -1, dtype=torch.int32, device=device)
    kernel[(grid,)](x, y, where, n, BLOCK=block)
    guards = bool(torch.isnan(y_all[:block]).all()) and bool(torch.isnan(y_all[block + n:]).all())
    return x, y, guards, where.cpu().numpy()


def check_coalesced_copy(kernel, device: str, block: int = 128) -> None:
    """Launch ``kernel[grid](x, y, where, n, BLOCK=...)`` at three sizes (n = 1000 with BLOCK =
    ``block`` and ``2*block``, n = 8*block); check ``y == x``, no write outside ``y``, each
    element read once, and that the offsets it recorded in ``where`` make each warp touch as few
    sectors as possible."""
    import torch
    name = "copy_coalesced"
    for i, (n, b) in enumerate(((1000, block), (8 * block, block), (1000, 2 * block))):
        launched = f"kernel[({-(-n // b)},)](x, y, where, n={n}, BLOCK={b}), fp32"
        x, y, guards, where = _copy_launch(kernel, device, n, b)
        if bool(torch.isnan(y).all()):
            return not_attempted(name)
        hint = (f"it worked with BLOCK={block} but not with BLOCK={b}: use BLOCK, not a fixed size"
                if i == 2 else "each element once: offsets pid*BLOCK + t, masked with offs < n")
        if not guards:
            fail(name, f"the kernel wrote outside y (y has {n} elements)", "mask every access with "
                 "offs < n (and no offset below 0)" if i < 2 else hint, launched)
        if not torch.equal(y, x):
            check_array(name, y, x, launched=launched, hint=hint)
        w = where.reshape(-1, 32)
        if (w < 0).all():
            fail(name, "where[] was not written", "keep the last line: it records offs", launched)
        read = w[(w >= 0) & (w < n)]
        if read.size != n:
            fail(name, f"values are right, but the lanes read {read.size} elements for {n}: "
                 f"{read.size - np.unique(read).size} were read twice", hint, launched)
        got = sum(mm.sectors_touched(4 * r[(r >= 0) & (r < n)]) for r in w)
        best = sum(math.ceil(int(((r >= 0) & (r < n)).sum()) * 4 / 32) for r in w)
        if got > best:
            fail(name, f"values are right, but warps touch {got} sectors in all, {got / len(w):.1f} "
                 f"per warp; a coalesced copy needs {best}", "make neighbouring lanes read "
                 "neighbouring elements: lane t of program pid reads pid*BLOCK + t", launched)
    return passed(name, f"4 sectors per full warp, as few as possible, for n = 1000 (not a "
                  f"multiple of BLOCK) and n = {8 * block}, with BLOCK = {block} and {2 * block}.")


def check_bank_of(fn) -> None:
    """Check ``bank_of(byte_address)`` on fixed and random addresses (up to 228 KiB)."""
    name = "bank_of"
    cases = [0, 4, 5, 6, 7, 124, 128, 132, 200, 4104, 65535, 233471] + random.sample(range(1, 228 * 1024), 6)
    got_all = _answers(name, fn, [(a,) for a in cases], lambda g, c: _int(name, g, f"bank_of({c[0]})"),
                       lambda c: f"({c[0]})", "an int")
    if got_all is None:
        return not_attempted(name)
    want_all = [bank_of_ref(a) for a in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
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
        hint = _named(got_all, want_all, [(a,) for a in cases], mistakes, lambda g, v: g == v,
                      "bank = (byte_address // 4) % 32")
        fail(name, f"bank_of({cases[i]}) = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name, "addresses 128 bytes apart share a bank.")


def check_conflict_free_pad(fn) -> None:
    """Check ``conflict_free_pad(tile_cols)``: the smallest pad making a column read conflict-free."""
    name = "conflict_free_pad"
    rows = np.arange(32)
    cases = [32, 33, 64, 16, 31, 24, 8, 48, 65, 1, 2, 96, 100] + random.sample(range(1, 513), 3)
    got_all = _answers(name, fn, [(c,) for c in cases],
                       lambda g, c: int_answer(name, g, f"conflict_free_pad({c[0]})",
                                               "words of padding: an int >= 0"), lambda c: f"({c[0]})",
                       "an int")
    if got_all is None:
        return not_attempted(name)
    for cols, got in zip(cases, got_all):
        if got < 0:
            fail(name, f"conflict_free_pad({cols}) = {got}; expected an int >= 0 (words of padding)")
    want_all = [conflict_free_pad_ref(c) for c in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        cols, got = cases[i], got_all[i]
        ways = mm.conflict_ways(4 * mm.tile_word(rows, 0, cols, got))
        effect = (f"rows of {cols + got} words: a column read is {ways}-way conflicted" if ways > 1
                  else f"rows of {cols + got} words are conflict-free, but a smaller pad is too")
        mistakes = [(lambda c: 1, "not always 1: a row of an odd number of words needs no pad"),
                    (lambda c: c % 2, "inverted: an odd row length needs no pad, an even one needs 1"),
                    (lambda c: int(c % 32 == 0), "not only multiples of 32: any even row length puts "
                     "two rows of the column in one bank")]
        hint = _named(got_all, want_all, [(c,) for c in cases], mistakes, lambda g, v: g == v,
                      "consecutive rows must start in different banks" if ways > 1 else
                      "conflict-free, but wastes shared memory: the smallest pad is wanted")
        fail(name, f"conflict_free_pad({cols}) = {got}, expected {want_all[i]}: {effect}", hint)
    return passed(name, "an odd number of words per row spreads a column over all 32 banks.")
