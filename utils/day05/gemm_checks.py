"""Exercise checks for ``day05_tma/03_triton_tma_gemm``: each tests a learner's answer against
the reference in :mod:`utils.day05.gemm` and rejects wrong ones with a hint. Stubs are reported as
"not attempted" (a Python stub raises ``NotImplementedError``; a kernel stub leaves NaN)."""
from __future__ import annotations

import math
import random

from . import gemm
from .gemm import MAX_NUMEL
from ..core.checks import NOT_ATTEMPTED, attempt, fail, is_bool, is_int, not_attempted, passed


def check_k_loop(kernel, tier=None) -> None:
    """Run the learner's ``kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)`` (one C tile per
    program, grid ``(cdiv(M, BM), cdiv(N, BN))``) on sizes that are not multiples of the block,
    the output poisoned with NaN, and compare it with ``A @ B``."""
    import torch
    import triton
    from ..core.tier import current
    from ..triton_lang.compat import tensor_descriptor_class
    name, tier = "k_loop", tier or current()
    if not hasattr(kernel, "run"):
        fail(name, f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    TD = tensor_descriptor_class()
    (M, N, K), (BM, BN, BK) = ((300, 200, 136), (64, 64, 32)) if tier.has_gpu else \
        ((100, 72, 80), (32, 64, 32))
    gen = torch.Generator().manual_seed(random.randrange(2**31))
    a = torch.randn(M, K, generator=gen).half().to(tier.device)
    b = torch.randn(K, N, generator=gen).half().to(tier.device)
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device=tier.device)
    launched = f"{M}x{N}x{K} fp16, blocks BM={BM} BN={BN} BK={BK}, output pre-filled with NaN"
    grid = (triton.cdiv(M, BM), triton.cdiv(N, BN))
    try:
        kernel[grid](TD.from_tensor(a, [BM, BK]), TD.from_tensor(b, [BK, BN]), c, M, N, K,
                     BM=BM, BN=BN, BK=BK)
    except Exception as e:  # a learner's kernel that does not compile explains itself
        fail(name, f"the kernel raised {type(e).__name__}: {str(e).strip().splitlines()[-1][:300]}",
             "a_desc.load([row, col]) takes the tile's top-left element, in elements", launched)
    if torch.isnan(c).all():
        return not_attempted(name)
    last = gemm.matmul_ref(a[:, (K - 1) // BK * BK:], b[(K - 1) // BK * BK:])
    tol = gemm.tolerance(torch.float16, K)
    if not torch.isnan(c).any() and torch.allclose(c.double(), last.double(), **tol):
        fail(name, "C holds only the LAST K step's product", "accumulate: pass acc as the third "
             "argument of tl.dot (acc = tl.dot(a, b, acc))", launched)
    hint = ("A's tile at step k starts at [off_m, k], B's at [k, off_n] (B is K x N); the "
            "descriptor zero-fills what lies past the edge, so no mask is needed")
    try:
        gemm.check_gemm(name, c, a, b, launched)
    except AssertionError as e:
        fail(name, str(e).split("wrong: ", 1)[-1].split("\n")[0], hint, launched)


def tile_order_mistakes(pm: int, pn: int, g: int) -> list:
    """(every pid's (pid_m, pid_n), why) for tile orders that come from a known slip."""
    ref = [gemm.tile_order_ref(p, pm, pn, g) for p in range(pm * pn)]
    per = g * pn
    return [([(p // pn, p % pn) for p in range(pm * pn)],
             "that is plain row-major order: group GROUP_M tile-rows together"),
            ([r[::-1] for r in ref], "(pid_m, pid_n) are swapped"),
            ([(p // per * g + p % per % g, p % per // g) for p in range(pm * pn)],
             "the last group has fewer than group_m rows: rows = min(num_pid_m - first_m, group_m)")]


def check_tile_order(fn) -> None:
    """``fn(pid, num_pid_m, num_pid_n, group_m)`` must return ``(pid_m, pid_n)`` in grouped order."""
    name = "tile_order"
    rng = random.Random()
    cases = [(4, 3, 2), (5, 4, 2), (7, 3, 8), (1, 5, 4)] + [
        (rng.randint(2, 12), rng.randint(1, 9), rng.randint(1, 5)) for _ in range(4)]
    for pm, pn, g in cases:
        got_all = []
        for pid in range(pm * pn):
            got = attempt(fn, pid, pm, pn, g)
            if got is NOT_ATTEMPTED:
                return not_attempted(name)
            if not (isinstance(got, (tuple, list)) and len(got) == 2 and all(is_int(v) for v in got)):
                fail(name, f"tile_order({pid}, {pm}, {pn}, {g}): expected a pair (pid_m, pid_n) of "
                     f"ints, got {got!r}")
            got_all.append(tuple(int(v) for v in got))
        want_all = [gemm.tile_order_ref(pid, pm, pn, g) for pid in range(pm * pn)]
        if got_all != want_all:
            pid = next(p for p, (x, y) in enumerate(zip(got_all, want_all)) if x != y)
            hint = next((h for value, h in tile_order_mistakes(pm, pn, g) if value == got_all),
                        "per_group = group_m * num_pid_n; first_m = pid // per_group * group_m; "
                        "rows = min(num_pid_m - first_m, group_m); pid_m = first_m + "
                        "(pid % per_group) % rows; pid_n = (pid % per_group) // rows")
            fail(name, f"pid {pid} of {pm} x {pn} tiles, group_m={g}: got {got_all[pid]}, "
                 f"expected {want_all[pid]}", hint)
    return passed(name, "consecutive programs now share A's and B's tiles in L2.")


def _pow2(block):
    return all(b & (b - 1) == 0 for b in block)


BLOCK_MISTAKES = [  # (a rule with one slip, what the real rule says)
    (lambda b, s: _pow2(b) and b[-1] * s >= 16 and math.prod(b) < MAX_NUMEL,
     "exactly 2**20 elements is allowed: the limit is numel <= 2**20"),
    (lambda b, s: _pow2(b) and b[-1] * s >= 16 and math.prod(b) <= MAX_NUMEL and max(b) <= 256,
     "256 is TMA's limit per box dimension; Triton splits a larger block into several boxes "
     "itself, so a block dimension may exceed 256"),
    (lambda b, s: _pow2(b) and all(x * s >= 16 for x in b) and math.prod(b) <= MAX_NUMEL,
     "only the LAST dimension needs 16 bytes"),
    (lambda b, s: _pow2(b) and b[-1] >= 16 and math.prod(b) <= MAX_NUMEL,
     "the 16-byte rule counts BYTES of the last dimension: block[-1] * itemsize"),
    (lambda b, s: b[-1] * s >= 16 and math.prod(b) <= MAX_NUMEL,
     "every block dimension must be a power of 2 (Triton's rule, not TMA's)"),
    (lambda b, s: _pow2(b) and b[-1] * s >= 16,
     "a block may hold at most 2**20 elements")]
BLOCK_CASES = [((64, 64), 2), ((128, 8), 2), ((128, 4), 2), ((64, 4), 4), ((48, 64), 2),
               ((64, 24), 2), ((8, 16), 1), ((16, 8), 1), ((4, 8), 2), ((256, 256), 2),
               ((2048, 1024), 2), ((1, 2), 8), ((32, 2), 4), ((96, 32), 4),
               ((1024, 1024), 2), ((4096, 256), 1), ((2, 512, 1024), 4), ((2048, 1024), 1),
               ((512, 64), 2), ((64, 1024), 2), ((1, 2048, 8), 2), ((4, 16), 1)]


def check_block_rules(fn) -> None:
    """``fn(block_shape, itemsize)`` must return True exactly when Triton accepts the block
    (every dimension a power of 2, the last at least 16 bytes, at most 2**20 elements), on
    cases that separate each rule from an almost-right one (exactly 2**20 elements, a
    dimension over 256, 16 bytes counted in elements or on every dimension)."""
    name, got_all = "block_rules", []
    for block, size in BLOCK_CASES:
        got = attempt(fn, block, size)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        if not is_bool(got):
            fail(name, f"block {block} of {size}-byte elements: expected True or False, got {got!r}")
        got_all.append(bool(got))
    want_all = [not gemm.block_violations(b, s) for b, s in BLOCK_CASES]
    if got_all != want_all:
        i = next(i for i, (g, w) in enumerate(zip(got_all, want_all)) if g != w)
        (block, size), why = BLOCK_CASES[i], gemm.block_violations(*BLOCK_CASES[i])
        hint = next((h for rule, h in BLOCK_MISTAKES if [rule(b, s) for b, s in BLOCK_CASES] == got_all),
                    "" if why else "this block keeps every rule: dimensions powers of 2, the last "
                    "at least 16 bytes, at most 2**20 elements")
        fail(name, f"block {block} of {size}-byte elements: got {got_all[i]}, expected {want_all[i]}"
             + (f" ({'; '.join(why)})" if why else ""), hint)
    return passed(name)
