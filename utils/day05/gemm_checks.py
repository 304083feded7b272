"""Exercise checks for ``day05_tma/03_triton_tma_gemm``: each tests a learner's answer against
the reference in :mod:`utils.day05.gemm` and rejects wrong ones with a hint. Stubs are reported as
"not attempted" (a Python stub raises ``NotImplementedError``; a kernel stub leaves NaN). A hint
that names a slip is given only when the answer equals that slip's on every case
(:mod:`utils.core.answers`). Exercise 2, the K loop, is checked in :mod:`utils.day05.k_loop_check`
(re-exported here)."""
from __future__ import annotations

import math

from . import gemm
from .gemm import MAX_NUMEL
from ..core.answers import answers, named_mistake, wrong_cases
from ..core.checks import NOT_ATTEMPTED, fail, is_bool, is_int, not_attempted, passed
# Exercise 2, the K loop (a kernel run), lives in its own module; notebooks and tests reach it here
from .k_loop_check import K_ERROR_HINTS, K_SLIPS, check_k_loop, k_loop_emulated  # noqa: F401


# ---- Exercise 3: the grouped tile order --------------------------------------------------------

def _grouped(pid, pm, pn, g, first=None, rows=None, n_rows=None):
    """The grouped order with one of its parts replaced (a slip)."""
    per = g * pn
    first = pid // per * g if first is None else first(pid, per, g)
    rows = min(pm - first, g) if rows is None else rows(pm, first, g)
    return first + pid % per % rows, pid % per // (rows if n_rows is None else n_rows(rows, g))


TILE_SLIPS = [  # (a slip's (pid_m, pid_n) for (pid, num_pid_m, num_pid_n, group_m), what is wrong)
    (lambda p, pm, pn, g: (p // pn, p % pn), "that is plain row-major order: group GROUP_M tile-rows "
     "together"),
    (lambda p, pm, pn, g: gemm.tile_order_ref(p, pm, pn, g)[::-1], "(pid_m, pid_n) are swapped"),
    (lambda p, pm, pn, g: _grouped(p, pm, pn, g, rows=lambda pm, f, g: g), "the last group has fewer "
     "than group_m rows: rows = min(num_pid_m - first_m, group_m)"),
    (lambda p, pm, pn, g: (p % pm, p // pm), "that is plain column-major order: go down a column "
     "only within a group of group_m tile-rows"),
    (lambda p, pm, pn, g: _grouped(p, pm, pn, g, first=lambda p, per, g: 0, rows=lambda pm, f, g:
                                   min(pm - p // (g * pn) * g, g)),
     "add the group's first tile-row: pid_m = first_m + ..., first_m = (pid // per_group) * group_m"),
    (lambda p, pm, pn, g: _grouped(p, pm, pn, g, first=lambda p, per, g: p // per),
     "first_m counts tile-rows: the group's index times group_m"),
    (lambda p, pm, pn, g: _grouped(p, pm, pn, g, n_rows=lambda rows, g: g), "pid_n divides by "
     "rows too: in the last group, rows < group_m"),
    (lambda p, pm, pn, g: _grouped(p, pm, pn, g, rows=lambda pm, f, g: pm - f), "rows = "
     "min(num_pid_m - first_m, group_m): every group but the last has group_m rows")]
# (num_pid_m, num_pid_n, group_m): full groups, a short last group (1, 2 or 3 rows, starting on
# a pid that is not a multiple of its rows), group_m above num_pid_m, group_m = 1, one tile column
TILE_CASES = [(4, 3, 2), (5, 4, 2), (7, 3, 8), (1, 5, 4), (6, 1, 4), (7, 5, 4), (9, 4, 3),
              (8, 5, 1), (3, 6, 3), (11, 2, 4), (10, 7, 3)]


def _pair(got):
    """``got`` as a (pid_m, pid_n) tuple of Python ints, or None if it is not a pair of ints."""
    if type(got).__module__ == "numpy" and getattr(got, "shape", None) == (2,):
        got = list(got)
    if isinstance(got, (tuple, list)) and len(got) == 2 and all(is_int(v) for v in got):
        return tuple(int(v) for v in got)
    return None


def check_tile_order(fn) -> None:
    """``fn(pid, num_pid_m, num_pid_n, group_m)`` must return ``(pid_m, pid_n)`` in grouped order
    (a tuple, a list or a NumPy pair of ints) for every pid of :data:`TILE_CASES`."""
    name = "tile_order"
    calls = [(pid, pm, pn, g) for pm, pn, g in TILE_CASES for pid in range(pm * pn)]

    def pair(got, case):
        ints = _pair(got)
        if ints is None:
            fail(name, f"tile_order{case}: expected a pair (pid_m, pid_n) of ints, got {got!r}",
                 "did the function forget to return?" if got is None else "")
        return ints
    got_calls = answers(name, fn, calls, pair, raised=lambda case, e: (
        f"tile_order{case} raised {type(e).__name__}: {e}", "the grouped order divides by per_group = "
        "group_m * num_pid_n and by rows = min(num_pid_m - first_m, group_m), never 0"
        if isinstance(e, ZeroDivisionError) else ""))
    if got_calls is NOT_ATTEMPTED:
        return not_attempted(name)
    it = iter(got_calls)
    got_all = [[next(it) for _ in range(pm * pn)] for pm, pn, _ in TILE_CASES]
    for (pm, pn, g), got_case in zip(TILE_CASES, got_all):
        want_case = [gemm.tile_order_ref(pid, pm, pn, g) for pid in range(pm * pn)]
        if got_case != want_case:
            pid = next(p for p, (x, y) in enumerate(zip(got_case, want_case)) if x != y)
            hint = named_mistake(got_calls, calls, TILE_SLIPS, "per_group = group_m * num_pid_n; first_m = "
                                 "pid // per_group * group_m; rows = min(num_pid_m - first_m, group_m); "
                                 "pid_m = first_m + (pid % per_group) % rows; pid_n = (pid % per_group) // rows")
            fail(name, f"pid {pid} of {pm} x {pn} tiles, group_m={g}: got {got_case[pid]}, "
                 f"expected {want_case[pid]}", hint)
    return passed(name, "consecutive programs now share A's and B's tiles in L2.")


# ---- Exercise 1: which blocks a descriptor takes -------------------------------------------------

def _pow2(block):
    return all(b & (b - 1) == 0 for b in block)


def _rule(pow2=_pow2, last_ok=lambda b, s: b[-1] * s >= 16, numel_ok=lambda b, s: math.prod(b) <= MAX_NUMEL,
          extra=lambda b, s: True):
    """Triton's block rule with one part replaced (a slip)."""
    return lambda b, s: pow2(b) and last_ok(b, s) and numel_ok(b, s) and extra(b, s)


BLOCK_MISTAKES = [  # (a rule with one slip, what the real rule says)
    (_rule(numel_ok=lambda b, s: math.prod(b) < MAX_NUMEL),
     "exactly 2**20 elements is allowed: the limit is numel <= 2**20"),
    (_rule(extra=lambda b, s: max(b) <= 256),
     "256 is TMA's limit per box dimension; Triton splits a larger block into several boxes "
     "itself, so a block dimension may exceed 256"),
    (_rule(last_ok=lambda b, s: all(x * s >= 16 for x in b)), "only the LAST dimension needs 16 bytes"),
    (_rule(last_ok=lambda b, s: b[-1] >= 16),
     "the 16-byte rule counts BYTES of the last dimension: block[-1] * itemsize"),
    (_rule(pow2=lambda b: True), "every block dimension must be a power of 2 (Triton's rule, not TMA's)"),
    (_rule(numel_ok=lambda b, s: True), "a block may hold at most 2**20 elements"),
    (_rule(numel_ok=lambda b, s: math.prod(b) * s <= MAX_NUMEL),
     "the 2**20 limit counts elements, not bytes"),
    (_rule(numel_ok=lambda b, s: math.prod(b[:2]) <= MAX_NUMEL),
     "count the elements of every dimension: math.prod(block_shape), not only the first two"),
    (_rule(pow2=lambda b: all(x % 2 == 0 for x in b)), "even is not a power of 2 (24 and 48 are "
     "even), and 1 = 2**0 is one: x & (x - 1) == 0"),
    (_rule(last_ok=lambda b, s: b[0] * s >= 16),
     "the 16 bytes are for the LAST dimension, block_shape[-1] (the contiguous one)"),
    (_rule(last_ok=lambda b, s: b[min(1, len(b) - 1)] * s >= 16),
     "block_shape[1] is the last dimension only for 2-D blocks: use block_shape[-1]"),
    (_rule(last_ok=lambda b, s: b[-1] * s > 16), "exactly 16 bytes is enough: block[-1] * itemsize >= 16"),
    (_rule(last_ok=lambda b, s: 16 <= b[-1] * s <= 128),
     "128 bytes is the 128-byte swizzle's limit per box; Triton splits a wider block into boxes "
     "itself, so the last dimension may hold more")]
BLOCK_CASES = [((64, 64), 2), ((128, 8), 2), ((128, 4), 2), ((64, 4), 4), ((48, 64), 2),
               ((64, 24), 2), ((8, 16), 1), ((16, 8), 1), ((4, 8), 2), ((256, 256), 2),
               ((2048, 1024), 2), ((1, 2), 8), ((32, 2), 4), ((96, 32), 4),
               ((1024, 1024), 2), ((4096, 256), 1), ((2, 512, 1024), 4), ((2048, 1024), 1),
               ((512, 64), 2), ((64, 1024), 2), ((1, 2048, 8), 2), ((4, 16), 1),
               ((64,), 2), ((4,), 2), ((4,), 4), ((4, 512, 1024), 2), ((8, 16, 4), 2),
               ((64, 4, 16), 2), ((2, 4, 8, 64), 2), ((8, 8, 128, 256), 2),
               ([32, 24], 2), ([16, 64], 2), ([128, 128], 4)]     # lists too, as the notebook writes them


def check_block_rules(fn) -> None:
    """``fn(block_shape, itemsize)`` must return True exactly when Triton accepts the block
    (every dimension a power of 2, the last at least 16 bytes, at most 2**20 elements), on
    cases that separate each rule from an almost-right one (exactly 2**20 elements, a
    dimension over 256, 16 bytes counted in elements or on every dimension, 1-D to 4-D blocks)."""
    name = "block_rules"

    def yes_no(got, case):
        if not is_bool(got):
            fail(name, f"block {case[0]} of {case[1]}-byte elements: expected True or False, got {got!r}",
                 "did every path return? A function that ends without return gives None"
                 if got is None else "")
        return bool(got)
    got_all = answers(name, fn, BLOCK_CASES, yes_no, raised=lambda case, e: (
        f"block {case[0]} of {case[1]}-byte elements: your function raised {type(e).__name__}: {e}",
        f"a block has 1 to 5 dimensions (this one {len(case[0])}): use block_shape[-1] and the product "
        "of all of them" if len(case[0]) != 2 else ""))
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    want_all = [not gemm.block_violations(b, s) for b, s in BLOCK_CASES]
    bad = wrong_cases(got_all, want_all)
    if bad:
        i = bad[0]
        (block, size), why = BLOCK_CASES[i], gemm.block_violations(*BLOCK_CASES[i])
        hint = named_mistake(got_all, BLOCK_CASES, BLOCK_MISTAKES, "" if why else "this block keeps every "
                             "rule: dimensions powers of 2, the last at least 16 bytes, at most 2**20 elements")
        fail(name, f"block {block} of {size}-byte elements: got {got_all[i]}, expected {want_all[i]}"
             + (f" ({'; '.join(why)})" if why else ""), hint)
    return passed(name)
# Exercise 2, the whole v1 kernel (a kernel run with a structural check), in its own module too
from .v1_check import V1_SLIPS, check_v1  # noqa: F401,E402
