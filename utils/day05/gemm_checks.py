"""Exercise checks for ``day05_tma/03_triton_tma_gemm``: each tests a learner's answer against
the reference in :mod:`utils.day05.gemm` and rejects wrong ones with a hint. Stubs are reported as
"not attempted" (a Python stub raises ``NotImplementedError``; a kernel stub leaves NaN). A hint
that names a slip is given only when the answer equals that slip's on every case."""
from __future__ import annotations

import math

from . import gemm
from .gemm import MAX_NUMEL
from ..core.checks import NOT_ATTEMPTED, CheckFailed, attempt, fail, is_bool, is_int, not_attempted, passed

# ---- Exercise 2: the K loop -------------------------------------------------------------------

_A, _B = (lambda om, on, k, bk: (om, k)), (lambda om, on, k, bk: (k, on))
_ADD = lambda acc, p: acc + p                                   # noqa: E731
K_SLIPS = [  # (A's tile origin, B's, how acc is updated, what is wrong): emulated, then compared
    (_A, _B, lambda acc, p: p, "accumulate: pass acc as the third argument of tl.dot "
     "(acc = tl.dot(a, b, acc)); C holds only the LAST K step's product"),
    (_A, _B, lambda acc, p: 2 * acc + p, "tl.dot(a, b, acc) already adds acc: write acc = tl.dot(a, "
     "b, acc) or acc += tl.dot(a, b), not acc += tl.dot(a, b, acc)"),
    (lambda om, on, k, bk: (om, 0), lambda om, on, k, bk: (0, on), _ADD, "every step loads the "
     "k = 0 tiles: use the loop's k, A's tile at [off_m, k], B's at [k, off_n]"),
    (lambda om, on, k, bk: (om, k * bk), lambda om, on, k, bk: (k * bk, on), _ADD, "k already "
     "counts elements (the loop steps by BK): A's tile at [off_m, k], B's at [k, off_n], not k * BK"),
    (_A, lambda om, on, k, bk: (on, k), _ADD, "B is K x N: its tile at step k starts at row k, "
     "column off_n: b_desc.load([k, off_n])"),
    (lambda om, on, k, bk: (k, om), _B, _ADD, "A is M x K: its tile at step k starts at row off_m, "
     "column k: a_desc.load([off_m, k])"),
    (lambda om, on, k, bk: (k, om), lambda om, on, k, bk: (on, k), _ADD, "offsets are [row, col]: "
     "A's tile at [off_m, k], B's at [k, off_n]"),
    (_A, lambda om, on, k, bk: (k, om), _ADD, "B's tile starts at column off_n (program_id(1)), "
     "not off_m"),
    (lambda om, on, k, bk: (on, k), _B, _ADD, "A's tile starts at row off_m (program_id(0)), not off_n")]
K_ERROR_HINTS = [  # (a piece of the interpreter's or compiler's message, the hint for it)
    *[(key, "tl.dot(a, b): a is A's BM x BK tile, b is B's BK x BN tile, in that order, untransposed")
      for key in ("reduction dim", "accumulator shape")],       # the interpreter's, the compiler's
    ("_semantic", "load takes ONE argument, the list of the tile's top-left offsets: "
                  "a_desc.load([off_m, k])"),
    ("tensor_descriptor", "a descriptor is read with its own method, a_desc.load([off_m, k]), not "
                          "tl.load"),
    ("shape_compatible", "A's tile is BM x BK and B's BK x BN: their product is tl.dot(a, b) "
                         "(BM x BN, like acc), not a * b"),
    ("is not defined", "a name your loop uses is not defined: the kernel has a_desc, b_desc, off_m, "
                       "off_n, k and acc; load the tiles before using them")]


def _tile(x, r, c, h, w):
    """``x[r:r+h, c:c+w]`` in float64, zero-filled past the edges, as a descriptor load gives it."""
    import torch
    out = torch.zeros(h, w, dtype=torch.float64)
    part = x[r:r + h, c:c + w].double().cpu() if r < x.shape[0] and c < x.shape[1] else out[:0, :0]
    out[:part.shape[0], :part.shape[1]] = part
    return out


def k_loop_emulated(a, b, BM, BN, BK, a_at, b_at, update):
    """C as a one-tile-per-program K loop computes it (float64) when step k loads A's tile at
    ``a_at(off_m, off_n, k, BK)``, B's at ``b_at(...)`` and sets ``acc = update(acc, a @ b)``."""
    import torch
    (M, K), N = a.shape, b.shape[1]
    c = torch.empty(M, N, dtype=torch.float64)
    for om in range(0, M, BM):
        for on in range(0, N, BN):
            acc = torch.zeros(BM, BN, dtype=torch.float64)
            for k in range(0, K, BK):
                a_t, b_t = _tile(a, *a_at(om, on, k, BK), BM, BK), _tile(b, *b_at(om, on, k, BK), BK, BN)
                acc = update(acc, a_t @ b_t)
            c[om:om + BM, on:on + BN] = acc[:min(BM, M - om), :min(BN, N - on)]
    return c


def _cancelling(M, N, K, BK, gen):
    """fp16 A and B whose first two K steps' products nearly cancel (about +-360 each, their sum
    about 6): an fp32 accumulator keeps the difference; rounding to fp16 after a step loses it."""
    import torch
    a, b = torch.randn(M, K, generator=gen), torch.randn(K, N, generator=gen)
    a[:, BK:2 * BK] = -a[:, :BK] + torch.randn(M, BK, generator=gen) / 64
    b[BK:2 * BK] = b[:BK]
    a[:, :2 * BK] *= 8
    b[:2 * BK] *= 8
    return a.half(), b.half()


def _kernel_source(kernel) -> str:
    import inspect
    try:
        return getattr(kernel, "src", None) or inspect.getsource(kernel.fn)
    except Exception:       # no source to read (a kernel built elsewhere): nothing to say
        return ""


def _k_loop_run(name, kernel, a, b, blocks, tier, launched):
    """Launch ``kernel`` on A and B (output poisoned with NaN); return C. A raised error is
    explained with a hint chosen from its message."""
    import torch
    import triton
    from ..triton_lang.compat import tensor_descriptor_class
    TD, (BM, BN, BK) = tensor_descriptor_class(), blocks
    (M, K), N = a.shape, b.shape[1]
    c = torch.full((M, N), float("nan"), dtype=torch.float16, device=tier.device)
    try:
        kernel[(triton.cdiv(M, BM), triton.cdiv(N, BN))](TD.from_tensor(a, [BM, BK]),
                                                         TD.from_tensor(b, [BK, BN]), c, M, N, K,
                                                         BM=BM, BN=BN, BK=BK)
    except Exception as e:  # a learner's kernel that does not compile explains itself
        text = (str(e).strip().splitlines() or [""])[-1][:300]
        fail(name, f"the kernel raised {type(e).__name__}: {text}",
             next((h for key, h in K_ERROR_HINTS if key in text), "the error is in your loop body: "
                  "A's tile (BM x BK) starts at [off_m, k], B's (BK x BN) at [k, off_n]"), launched)
    return c


def _k_loop_verdict(name, c, a, b, blocks, launched):
    """Raise with the hint of the slip C matches (emulated), else a neutral one."""
    import contextlib
    import io

    import torch
    try:
        with contextlib.redirect_stdout(io.StringIO()):     # one verdict line, printed at the end
            gemm.check_gemm(name, c, a, b, launched)
        return
    except CheckFailed as e:
        msg = str(e).split("wrong: ", 1)[-1].split("\n")[0]
    if "never written" in msg:              # the template's store writes every element of C
        fail(name, msg.replace("were never written (still NaN)", "are NaN"), "NaN reached acc: "
             "is every tile you load and add a real one?", launched)
    a, b = a.cpu(), b.cpu()
    tol, got = gemm.tolerance(torch.float16, a.shape[1]), c.double().cpu()
    for a_at, b_at, update, hint in K_SLIPS:
        if torch.allclose(got, k_loop_emulated(a, b, *blocks, a_at, b_at, update), **tol):
            fail(name, msg, hint, launched)
    ref, mag = gemm.matmul_ref(a, b).double().cpu(), a.double().abs() @ b.double().abs()
    if bool(((got - ref).abs() <= tol["atol"] + 2.0 ** -7 * mag).all()):
        fail(name, msg + " (off by rounding, not by a wrong tile)", "something is rounded to fp16 "
             "before the sum ends: keep the products and their sum in fp32 (tl.dot(a, b, acc) "
             "accumulates in fp32 acc)", launched)
    fail(name, msg, "A's tile at step k starts at [off_m, k], B's at [k, off_n] (B is K x N); the "
         "descriptor zero-fills what lies past the edge, so no mask is needed", launched)


def check_k_loop(kernel, tier=None) -> None:
    """Run the learner's ``kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)`` (one C tile per
    program, grid ``(cdiv(M, BM), cdiv(N, BN))``), the output poisoned with NaN, and compare it
    with ``A @ B`` twice: on random data, then on data whose K steps nearly cancel (an fp16
    accumulation shows); M, N and K are not multiples of the block in either run."""
    import torch
    from ..core.tier import current
    name, tier = "k_loop", tier or current()
    if not hasattr(kernel, "run"):
        fail(name, f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    blocks = (64, 64, 32) if tier.has_gpu else (32, 64, 32)
    # no size a multiple of its block; rows of A and B whole multiples of 16 bytes (TMA's rule)
    shapes = ((300, 200, 136), (200, 328, 104)) if tier.has_gpu else ((100, 72, 80), (48, 136, 72))
    gen = torch.Generator().manual_seed(35)
    for run, (M, N, K) in enumerate(shapes):
        a, b = ((torch.randn(M, K, generator=gen).half(), torch.randn(K, N, generator=gen).half())
                if run == 0 else _cancelling(M, N, K, blocks[2], gen))
        a, b = a.to(tier.device), b.to(tier.device)
        launched = (f"{M}x{N}x{K} fp16{' (K steps 1 and 2 nearly cancel)' if run else ''}, blocks "
                    f"BM={blocks[0]} BN={blocks[1]} BK={blocks[2]}, output pre-filled with NaN")
        c = _k_loop_run(name, kernel, a, b, blocks, tier, launched)
        if run == 0 and bool(torch.isnan(c).all()):
            src = _kernel_source(kernel)
            if "nan" in src.replace("'", '"') and ".load(" in src:
                fail(name, "every element is still NaN, yet your loop loads tiles", "delete the "
                     "stub's line acc += float(\"nan\"): it makes every sum NaN", launched)
            return not_attempted(name)
        _k_loop_verdict(name, c, a, b, blocks, launched)
    return passed(name, "C = A @ B on both runs, accumulated in fp32.")


# ---- Exercise 3: the grouped tile order --------------------------------------------------------

def _grouped(pid, pm, pn, g, first=None, rows=None, n_rows=None):
    """The grouped order with one of its parts replaced (a slip)."""
    per = g * pn
    first = pid // per * g if first is None else first(pid, per, g)
    rows = min(pm - first, g) if rows is None else rows(pm, first, g)
    return first + pid % per % rows, pid % per // (rows if n_rows is None else n_rows(rows, g))


def _same(got_all, rule, cases, calls) -> bool:
    """Whether ``rule`` answers as the learner did on every call of every case (a rule that
    raises somewhere is not the learner's, whose function returned)."""
    try:
        return all(got == [rule(*args) for args in calls(*case)] for got, case in zip(got_all, cases))
    except Exception:
        return False


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
    name, got_all = "tile_order", []
    for pm, pn, g in TILE_CASES:
        got_case = []
        for pid in range(pm * pn):
            try:
                got = attempt(fn, pid, pm, pn, g)
            except CheckFailed:
                raise
            except Exception as e:  # the learner's code raised: say for which arguments
                fail(name, f"tile_order({pid}, {pm}, {pn}, {g}) raised {type(e).__name__}: {e}",
                     "the grouped order divides by per_group = group_m * num_pid_n and by rows = "
                     "min(num_pid_m - first_m, group_m), never 0" if isinstance(e, ZeroDivisionError) else "")
            if got is NOT_ATTEMPTED:
                return not_attempted(name)
            pair = _pair(got)
            if pair is None:
                fail(name, f"tile_order({pid}, {pm}, {pn}, {g}): expected a pair (pid_m, pid_n) of "
                     f"ints, got {got!r}", "did the function forget to return?" if got is None else "")
            got_case.append(pair)
        got_all.append(got_case)
    for (pm, pn, g), got_case in zip(TILE_CASES, got_all):
        want_case = [gemm.tile_order_ref(pid, pm, pn, g) for pid in range(pm * pn)]
        if got_case != want_case:
            pid = next(p for p, (x, y) in enumerate(zip(got_case, want_case)) if x != y)
            hint = next((h for rule, h in TILE_SLIPS if _same(
                got_all, rule, TILE_CASES, lambda pm, pn, g: [(p, pm, pn, g) for p in range(pm * pn)])),
                "per_group = group_m * num_pid_n; first_m = pid // per_group * group_m; "
                "rows = min(num_pid_m - first_m, group_m); pid_m = first_m + "
                "(pid % per_group) % rows; pid_n = (pid % per_group) // rows")
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
    name, got_all = "block_rules", []
    for block, size in BLOCK_CASES:
        try:
            got = attempt(fn, block, size)
        except CheckFailed:
            raise
        except Exception as e:  # the learner's code raised: say for which block
            fail(name, f"block {block} of {size}-byte elements: your function raised "
                 f"{type(e).__name__}: {e}", f"a block has 1 to 5 dimensions (this one {len(block)}): "
                 "use block_shape[-1] and the product of all of them" if len(block) != 2 else "")
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        if not is_bool(got):
            fail(name, f"block {block} of {size}-byte elements: expected True or False, got {got!r}",
                 "did every path return? A function that ends without return gives None"
                 if got is None else "")
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
