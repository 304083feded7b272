"""Day 1 coalescing exercises: how many 32-byte sectors a warp's accesses touch
(:func:`check_sectors_per_warp`), and a Triton copy kernel whose warps must touch as few as
possible (:func:`check_coalesced_copy`). Split from :mod:`utils.day01.checks`, which re-exports
them; the conventions are the same. On a GPU the learner's copy kernel runs in a child process
(:func:`utils.triton_lang.isolated.launches`): an access far outside its tensor stops the GPU,
which then fails the check instead of this process's GPU.
"""
from __future__ import annotations

import math

import numpy as np

from . import memory_model as mm
from ..core.answers import answers, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, check_array, fail, int_answer, not_attempted, passed
from ..triton_lang import isolated

sectors_per_warp_ref = mm.sectors_touched


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
    got_all = answers(name, fn, [(a.copy(), n) for a, n in cases],
                      lambda g, c: int_answer(name, g, f"sectors_per_warp{show(c)}", "a count of sectors"),
                      show=show, kind="an int")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [sectors_per_warp_ref(a, n) for a, n in cases]
    bad = wrong_cases(got_all, want_all)
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
        hint = named_mistake(got_all, cases, mistakes, "distinct values of byte // 32 over every byte each "
                             "thread touches", want_all=want_all)
        a, n = cases[i]
        fail(name, f"{a.size} {n}-byte accesses at {a[:4].tolist()}... -> {got_all[i]}, expected "
             f"{want_all[i]} ({len(bad)} of {len(cases)} cases wrong)", hint)
    return passed(name, "stride 1: 4 sectors per warp of fp32; stride 8: 32.")


def _copy_buffers(device, n, block):
    """(x, y, where, the launch's (grid, args, kwargs), x and y with their guard zones)."""
    import torch
    grid = -(-n // block)
    x_all = torch.randn(n + 2 * block, device=device)
    y_all = torch.full((n + 2 * block,), float("nan"), device=device)
    x, y = x_all[block:block + n], y_all[block:block + n]
    where = torch.full((grid * block,), -1, dtype=torch.int32, device=device)
    return x, y, where, ((grid,), (x, y, where, n), {"BLOCK": block}), y_all


def _source(kernel) -> str:
    import inspect
    try:
        return getattr(kernel, "src", None) or inspect.getsource(kernel.fn)
    except Exception:       # no source to read: the hint goes without it
        return ""


def check_coalesced_copy(kernel, device: str, block: int = 128) -> None:
    """Launch ``kernel[grid](x, y, where, n, BLOCK=...)`` at three sizes (n = 1000 with BLOCK =
    ``block`` and ``2*block``, n = 8*block); check ``y == x``, no write outside ``y``, each
    element read once, and that the offsets it recorded in ``where`` make each warp touch as few
    sectors as possible."""
    import torch
    name = "copy_coalesced"
    sizes = ((1000, block), (8 * block, block), (1000, 2 * block))
    runs = [_copy_buffers(device, n, b) for n, b in sizes]
    outcomes = isolated.launches(kernel, [r[3] for r in runs], device=device)
    for i, ((n, b), (x, y, where, _, y_all), done) in enumerate(zip(sizes, runs, outcomes)):
        launched = f"kernel[({-(-n // b)},)](x, y, where, n={n}, BLOCK={b}), fp32"
        if isinstance(done.error, isolated.GpuFault):
            fail(name, str(done.error), isolated.fault_hint(done.error, _source(kernel)), launched)
        if done.error is not None:
            raise done.error            # a compile error explains itself, as when it ran here
        guards = bool(torch.isnan(y_all[:b]).all()) and bool(torch.isnan(y_all[b + n:]).all())
        where = where.cpu().numpy()
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
