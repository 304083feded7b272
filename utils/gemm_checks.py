"""Exercise checks for ``day05_tma/03_triton_tma_gemm``: each tests a learner's answer against
the reference in :mod:`utils.gemm` and rejects wrong ones with a hint. Stubs are reported as
"not attempted" (a Python stub raises ``NotImplementedError``; a kernel stub leaves NaN)."""
from __future__ import annotations

import random

from . import gemm
from .checks import NOT_ATTEMPTED, attempt, fail, not_attempted, passed


def check_k_loop(kernel, tier=None) -> None:
    """Run the learner's ``kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)`` (one C tile per
    program, grid ``(cdiv(M, BM), cdiv(N, BN))``) on sizes that are not multiples of the block,
    the output poisoned with NaN, and compare it with ``A @ B``."""
    import torch
    import triton
    from .tier import current
    from .triton_compat import tensor_descriptor_class
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
    ref = gemm.matmul_ref(a, b)
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
            try:
                got_all.append(tuple(int(v) for v in got))
            except (TypeError, ValueError):
                fail(name, f"expected a pair (pid_m, pid_n) of ints, got {got!r}")
        want_all = [gemm.tile_order_ref(pid, pm, pn, g) for pid in range(pm * pn)]
        if got_all != want_all:
            pid = next(p for p, (x, y) in enumerate(zip(got_all, want_all)) if x != y)
            if got_all == [(p // pn, p % pn) for p in range(pm * pn)]:
                hint = "that is plain row-major order: group GROUP_M tile-rows together"
            elif got_all == [w[::-1] for w in want_all]:
                hint = "(pid_m, pid_n) are swapped"
            elif pm % g:
                hint = ("the last group has fewer than group_m rows: "
                        "rows = min(num_pid_m - first_m, group_m)")
            else:
                hint = "inside a group consecutive pids go DOWN a column: pid_m changes fastest"
            fail(name, f"pid {pid} of {pm} x {pn} tiles, group_m={g}: got {got_all[pid]}, "
                 f"expected {want_all[pid]}", hint)
    return passed(name, "consecutive programs now share A's and B's tiles in L2.")


def check_block_rules(fn) -> None:
    """``fn(block_shape, itemsize)`` must return True exactly when Triton accepts the block."""
    name = "block_rules"
    cases = [((64, 64), 2), ((128, 8), 2), ((128, 4), 2), ((64, 4), 4), ((48, 64), 2),
             ((64, 24), 2), ((8, 16), 1), ((16, 8), 1), ((4, 8), 2), ((256, 256), 2),
             ((2048, 1024), 2), ((1, 2), 8), ((32, 2), 4), ((96, 32), 4)]
    for block, size in cases:
        got = attempt(fn, block, size)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        want = not gemm.block_violations(block, size)
        if not isinstance(got, bool):
            fail(name, f"expected True or False, got {got!r}")
        if got != want:
            why = gemm.block_violations(block, size)
            if want:
                hint = ("only the LAST dimension needs 16 bytes" if block[0] * size < 16 else
                        "the 16-byte rule counts BYTES of the last dimension: block[-1] * itemsize")
            elif any("power" in w for w in why):
                hint = "every block dimension must be a power of 2 (Triton's rule, not TMA's)"
            elif any("bytes" in w for w in why):
                hint = "the last dimension must hold at least 16 BYTES: block[-1] * itemsize"
            else:
                hint = "a block may hold at most 2**20 elements"
            fail(name, f"block {block} of {size}-byte elements: got {got}, expected {want}"
                 + (f" ({'; '.join(why)})" if why else ""), hint)
    return passed(name)
