"""Day 1 exercise checks. References (``*_ref``) are the model functions of
:mod:`utils.day01.memory_model`; each ``check_*`` tries the learner's function on several cases,
reports a stub as "not attempted", and rejects a wrong answer with a hint.
"""
from __future__ import annotations

import math
import random

import numpy as np

from . import memory_model as mm
from ..core.checks import (NOT_ATTEMPTED, attempt, check_array, fail, int_answer, nan_like, not_attempted,
                     number_answer, passed)

gemm_intensity_ref = mm.gemm_intensity
attainable_tflops_ref = mm.roofline_tflops
sectors_per_warp_ref = mm.sectors_touched
bank_of_ref = mm.bank_of
conflict_free_pad_ref = mm.conflict_free_pad


def _number(name, got, case):
    return number_answer(name, got, f"{name}{case}")


def _close(a, b, rel=1e-6):
    return abs(a - b) <= rel * abs(b)


def check_gemm_intensity(fn) -> None:
    """Check ``gemm_intensity(M, N, K, elem_bytes)`` (FLOP per byte of C = A @ B)."""
    name = "gemm_intensity"
    cases = [(8192, 8192, 8192, 2), (8192, 8192, 64, 2), (4096, 1, 4096, 2), (1000, 3000, 70, 4)]
    for M, N, K, e in cases:
        got = attempt(fn, M, N, K, e)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got, want = _number(name, got, (M, N, K, e)), gemm_intensity_ref(M, N, K, e)
        if not _close(got, want):
            flops, elems = 2 * M * N * K, M * K + K * N + M * N
            hint = ("a multiply-add is 2 FLOPs: C has M*N*K of them" if _close(got, want / 2) else
                    "divide by bytes, not elements: multiply element counts by elem_bytes"
                    if _close(got, flops / elems) else
                    "C (M x N) crosses DRAM too: bytes = elem_bytes * (MK + KN + MN)"
                    if _close(got, flops / (e * (M * K + K * N))) else
                    "intensity = 2*M*N*K FLOPs / (elem_bytes * (M*K + K*N + M*N)) bytes")
            fail(name, f"gemm_intensity{(M, N, K, e)} = {got:.4g}, expected {want:.4g}", hint)
    return passed(name, f"e.g. 8192^3 fp16 does {gemm_intensity_ref(*cases[0]):.0f} FLOP per byte.")


def check_attainable_tflops(fn) -> None:
    """Check ``attainable_tflops(intensity, peak_tflops, bandwidth_gbs)`` (the roofline)."""
    name = "attainable_tflops"
    rng = random.Random()
    cases = [(1 / 12, 989.0, 3350.0), (64.0, 989.0, 4800.0), (1000.0, 989.0, 3350.0)] + [
        (rng.uniform(1, 600), rng.uniform(500, 1000), rng.uniform(2000, 5000)) for _ in range(4)]
    for ai, peak, bw in cases:
        got = attempt(fn, ai, peak, bw)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got, want = _number(name, got, (ai, peak, bw)), attainable_tflops_ref(ai, peak, bw)
        if not _close(got, want):
            hint = ("FLOP/B x GB/s = GFLOP/s: divide by 1000 for TFLOP/s" if _close(got, ai * bw)
                    else "no kernel beats the compute roof: take the min with peak_tflops"
                    if _close(got, ai * bw / 1e3) else "the lower roof wins: min, not max"
                    if _close(got, max(peak, ai * bw / 1e3)) else
                    "attainable = min(peak_tflops, intensity * bandwidth_gbs / 1000)")
            fail(name, f"attainable_tflops({ai:.3g}, {peak:.0f}, {bw:.0f}) = {got:.4g}, "
                 f"expected {want:.4g}", hint)
    return passed(name)


def check_sectors_per_warp(fn) -> None:
    """Check ``sectors_per_warp(byte_addresses, access_bytes)`` (distinct 32-B sectors)."""
    name = "sectors_per_warp"
    rng = np.random.default_rng()
    cases = [(mm.warp_addresses(1), 4), (mm.warp_addresses(2), 4), (mm.warp_addresses(8), 4),
             (mm.warp_addresses(1, offset=1), 4), (mm.warp_addresses(1, elem_bytes=2), 2),
             (np.full(32, 4096), 4), (24 + 64 * np.arange(32), 16),
             (8 * rng.integers(0, 512, 32), 8)]
    for addrs, nbytes in cases:
        got = attempt(fn, addrs.copy(), nbytes)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        want = sectors_per_warp_ref(addrs, nbytes)
        got = int_answer(name, got, f"sectors_per_warp({nbytes}-byte accesses)", "a count of sectors")
        if got != want:
            a = np.asarray(addrs)
            hint = ("sectors are 32 bytes (a 128-byte line holds four)" if got == np.unique(a // 128).size
                    else "an access covers bytes a .. a+access_bytes-1 and may cross into the next "
                    "sector" if got == np.unique(a // 32).size else
                    "count distinct sectors: threads reading the same sector share it"
                    if got == a.size else
                    "distinct values of byte // 32 over every byte each thread touches")
            fail(name, f"{nbytes}-byte accesses at {a[:4].tolist()}... -> {got}, expected {want}", hint)
    return passed(name, "stride 1: 4 sectors per warp of fp32; stride 8: 32.")


def check_coalesced_copy(kernel, device: str, block: int = 128) -> None:
    """Launch ``kernel[grid](x, y, where, n, BLOCK=block)`` at two sizes; check ``y == x`` and
    that the offsets it recorded in ``where`` make each warp touch as few sectors as possible."""
    import torch
    import triton
    name = "copy_coalesced"
    for n in (1000, 2 * block * 4):
        grid = triton.cdiv(n, block)
        x = torch.randn(n, device=device)
        y, where = nan_like(x), torch.full((grid * block,), -1, dtype=torch.int32, device=device)
        launched = f"kernel[({grid},)](x, y, where, n={n}, BLOCK={block}), fp32"
        kernel[(grid,)](x, y, where, n, BLOCK=block)
        if bool(torch.isnan(y).all()):
            return not_attempted(name)
        if not torch.equal(y, x):
            check_array(name, y, x, launched=launched,
                        hint="each element once: offsets pid*BLOCK + t, masked with offs < n")
        w = where.cpu().numpy().reshape(-1, 32)
        if (w < 0).all():
            fail(name, "where[] was not written", "keep the last line: it records offs", launched)
        got = sum(mm.sectors_touched(4 * r[(r >= 0) & (r < n)]) for r in w)
        best = sum(math.ceil(int(((r >= 0) & (r < n)).sum()) * 4 / 32) for r in w)
        if got > best:
            fail(name, f"values are right, but warps touch {got} sectors in all, {got / len(w):.1f} "
                 f"per warp; a coalesced copy needs {best}", "make neighbouring lanes read "
                 "neighbouring elements: lane t of program pid reads pid*BLOCK + t", launched)
    return passed(name, f"4 sectors per full warp, as few as possible, for n = 1000 (not a "
                  f"multiple of BLOCK={block}) and n = {n}.")


def check_bank_of(fn) -> None:
    """Check ``bank_of(byte_address)`` on fixed and random addresses."""
    name = "bank_of"
    cases = [0, 4, 7, 124, 128, 132, 4104, 65535] + random.sample(range(1, 1 << 16), 6)
    got_all = []
    for addr in cases:
        got = attempt(fn, addr)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got_all.append(int_answer(name, got, f"bank_of({addr})"))
    want_all = [bank_of_ref(a) for a in cases]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        mistakes = [([a % 32 for a in cases], "banks hold 4-byte words: divide the byte address by 4 first"),
                    ([a // 4 for a in cases], "there are 32 banks: take the word index modulo 32"),
                    ([a // 4 % 16 for a in cases], "there are 32 banks, not 16"),
                    ([a // 32 % 32 for a in cases], "a bank holds one 4-byte word of each 128-byte "
                     "row: bank = (byte_address // 4) % 32")]
        hint = next((h for value, h in mistakes if value == got_all), "bank = (byte_address // 4) % 32")
        fail(name, f"bank_of({cases[i]}) = {got_all[i]}, expected {want_all[i]}", hint)
    return passed(name, "addresses 128 bytes apart share a bank.")


def check_conflict_free_pad(fn) -> None:
    """Check ``conflict_free_pad(tile_cols)``: the smallest pad making a column read conflict-free."""
    name = "conflict_free_pad"
    rows = np.arange(32)
    for cols in (32, 33, 64, 16, 31, 24, 8, 48, 65):
        got = attempt(fn, cols)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        want = conflict_free_pad_ref(cols)
        got = int_answer(name, got, f"conflict_free_pad({cols})", "words of padding: an int >= 0")
        if got < 0:
            fail(name, f"conflict_free_pad({cols}) = {got}; expected an int >= 0 (words of padding)")
        if got != want:
            ways = mm.conflict_ways(4 * mm.tile_word(rows, 0, cols, int(got)))
            hint = (f"that gives rows of {cols + got} words: a column read is {ways}-way conflicted; "
                    "consecutive rows must start in different banks" if ways > 1 else
                    "conflict-free, but wastes shared memory: the smallest pad is wanted")
            fail(name, f"conflict_free_pad({cols}) = {got}, expected {want}", hint)
    return passed(name, "an odd number of words per row spreads a column over all 32 banks.")
