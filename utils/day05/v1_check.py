"""Exercise 2 of ``day05_tma/03_triton_tma_gemm``: the learner writes the whole v1 kernel
``v1_kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)`` (v0's tiling, A's and B's tiles through
host tensor descriptors) and :func:`check_v1` runs it.

The run: on the GPU, or under the Triton interpreter on the cpu tier, at two shapes that are not
multiples of the blocks, with fresh random inputs (the seed is printed) and C pre-filled with NaN
inside a NaN guard region (an unmasked store lands there and is reported, never in memory the
check does not own). Every element is compared with a float64 (CPU) / float32 (GPU) ``A @ B``; a
wrong C is matched against the slips a learner writes, each emulated in float64 (those of the K
loop, :data:`utils.day05.k_loop_check.K_SLIPS`, and :data:`V1_SLIPS`). Then what the values cannot
show: the K loop reads both operands through their descriptors (the kernel's AST), and the kernel
compiled for ``sm_90a`` with the Hopper configuration issues ``cp.async.bulk.tensor`` and ``wgmma``
(a compile, on any machine: the hardware run of that code happens on Hopper).

On a GPU the kernel runs in a child process (:func:`utils.triton_lang.isolated.launches`): a wrong
TMA coordinate is an illegal instruction that would otherwise stop this process's GPU for good;
then the check fails naming the fault (:func:`explain_error`). On the cpu tier it runs in this
process under the interpreter."""
from __future__ import annotations

import ast
import inspect
import random
import re
import textwrap

from . import gemm
from ..triton_lang import isolated
from .k_loop_check import K_ERROR_HINTS, K_SLIPS, _cancelling, _kernel_source, k_loop_emulated
from ..core.checks import CheckFailed, fail, not_attempted, passed

BLOCKS = {False: (16, 64, 32), True: (64, 128, 32)}         # (BM, BN, BK) by tier.has_gpu: all differ
# no size a multiple of its block; rows of A and B whole multiples of 16 bytes (TMA's rule).
# The first CPU shape is the one the notebook's §3 displays (100 x 72 x 80).
SHAPES = {False: ((100, 72, 80), (56, 136, 72)), True: ((300, 200, 136), (200, 328, 104))}
_ADD = lambda acc, p: acc + p                                   # noqa: E731
NOT_WRITTEN = ("some tiles of C were never written: the grid is (cdiv(M, BM), cdiv(N, BN)); "
               "off_m = program_id(0) * BM, off_n = program_id(1) * BN, and every program stores "
               "its whole BM x BN tile, masked only past M and N")
HARD_CODED = ("right at the first shape, wrong at this one: is a size written as a number (72, 80, "
              "100) where M, N or K belongs, or a block assumed full? Use M, N, K and mask the store")

# The hint for an accumulator kept in fp16: the interpreter runs it and rounds (the result is off
# by rounding); Hopper's compiler may refuse an fp16 accumulator outright (a CompilationError)
FP16_ACC = ("something is rounded to fp16 before the sum ends: keep acc in fp32 "
            "(tl.zeros(..., dtype=tl.float32), acc = tl.dot(a, b, acc)) and convert once, at the store")


FP16_NAMES = {"float16", "fp16", "bfloat16", "bf16", "half"}


def fp16_accumulator(src: str) -> bool:
    """The kernel's source makes a 16-bit float tile with ``tl.zeros`` (or ``tl.full``): a
    ``dtype`` keyword, or the positional dtype (``zeros(shape, dtype)``, ``full(shape, value,
    dtype)``), naming float16 / fp16 / bfloat16. Read with ``ast``: a shape tuple's parentheses
    inside the call cannot hide the dtype."""
    try:
        tree = ast.parse(textwrap.dedent(src or ""))
    except SyntaxError:
        return False

    def sixteen(node) -> bool:
        if isinstance(node, ast.Attribute):
            return node.attr in FP16_NAMES
        if isinstance(node, ast.Name):
            return node.id in FP16_NAMES
        return isinstance(node, ast.Constant) and node.value in FP16_NAMES

    for call in (n for n in ast.walk(tree) if isinstance(n, ast.Call)):
        f = call.func
        fname = f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""
        if fname not in ("zeros", "full"):
            continue
        at = 1 if fname == "zeros" else 2
        dtype = next((k.value for k in call.keywords if k.arg == "dtype"),
                     call.args[at] if len(call.args) > at else None)
        if dtype is not None and sixteen(dtype):
            return True
    return False


def explain_error(name, error, src, launched, hints, default) -> None:
    """Fail for a launch's ``error``: a :class:`~utils.triton_lang.isolated.GpuFault` (the kernel
    stopped the GPU in its child process, or hung) with the hint for its cause; a raised
    exception with :data:`FP16_ACC` if its message is about the accumulator's dtype (Hopper's
    compiler refuses an fp16 one), else the hint of the first ``(key, hint)`` of ``hints`` whose
    key is in the message, else :data:`FP16_ACC` if the source accumulates in 16 bits
    (:func:`fp16_accumulator`), else ``default``."""
    if isinstance(error, isolated.GpuFault):
        fail(name, str(error), isolated.fault_hint(error, src), launched)
    words = [line for line in str(error).strip().splitlines() if re.search(r"[A-Za-z]", line)]
    text = (words or [""])[-1][:300]          # the message, not the caret line under the source
    keyed = next((h for key, h in hints if key in text), None)
    fail(name, f"the kernel raised {type(error).__name__}: {text}",
         FP16_ACC if "accumulator dtype" in text or (keyed is None and fp16_accumulator(src)) else
         keyed or default, launched)


def _emulate_loop(a, b, BM, BN, BK, steps):
    """C (float64) when each tile sums ``a[:, k:k+BK] @ b[k:k+BK]`` over ``k in steps(K)``."""
    import torch
    (M, K), a64, b64 = a.shape, a.double().cpu(), b.double().cpu()
    c = torch.zeros(M, b.shape[1], dtype=torch.float64)
    for k in steps(K):
        c += a64[:, k:k + BK] @ b64[k:k + BK]
    return c


def _pid_swapped(ref, BM, BN):
    """C when off_m comes from program_id(1) and off_n from program_id(0) (masked store)."""
    import torch
    (M, N), c = ref.shape, torch.full(ref.shape, float("nan"), dtype=torch.float64)
    for i in range(-(-M // BM)):            # program_id(0), which should walk M
        for j in range(-(-N // BN)):        # program_id(1)
            r, col = j * BM, i * BN
            c[r:r + BM, col:col + BN] = ref[r:r + BM, col:col + BN]
    return c


V1_SLIPS = [  # (C the slip gives, from (a, b, ref, BM, BN, BK), what is wrong with it)
    (lambda a, b, ref, bm, bn, bk: _emulate_loop(a, b, bm, bn, bk, lambda K: range(0, K // bk * bk, bk)),
     "the last, partial K slice is missing: loop over every BK step up to K (range(0, K, BK), i.e. "
     "cdiv(K, BK) steps); the descriptor zero-fills the columns past K"),
    (lambda a, b, ref, bm, bn, bk: _emulate_loop(a, b, bm, bn, bk, lambda K: range(0, K, bn)),
     "the K loop steps by BN: each step loads a BK-wide slice (the descriptor's block is BM x BK "
     "and BK x BN), so step by BK"),
    (lambda a, b, ref, bm, bn, bk: _emulate_loop(a, b, bm, bn, bk, lambda K: range(0, K, bm)),
     "the K loop steps by BM: each step loads a BK-wide slice (the descriptor's block is BM x BK "
     "and BK x BN), so step by BK"),
    (lambda a, b, ref, bm, bn, bk: ref.t().reshape(ref.shape),
     "C is row-major M x N: element (r, c) is at c_ptr + r * N + c (strides N, 1), not r + c * M"),
    (lambda a, b, ref, bm, bn, bk: _pid_swapped(ref, bm, bn),
     "grid axis 0 walks M: off_m = program_id(0) * BM and off_n = program_id(1) * BN"),
]


def _same(got, want, tol) -> bool:
    """``got`` matches ``want`` within ``tol``, NaN where ``want`` is NaN."""
    import torch
    nan = torch.isnan(want)
    if not torch.equal(torch.isnan(got), nan):
        return False
    return bool(torch.allclose(got[~nan], want[~nan], **tol))


def _guarded_output(M, N, BM, BN, device):
    """(buffer, C): C is an M x N view in the middle of a NaN buffer whose guard on each side
    holds any store a missing mask or a swapped stride can make."""
    import torch
    Mp, Np = -(-M // BM) * BM, -(-N // BN) * BN
    guard = -(-(2 * Mp * Np + 4096) // 8) * 8                  # 16-byte aligned in fp16
    buf = torch.full((2 * guard + M * N,), float("nan"), dtype=torch.float16, device=device)
    return buf, guard, buf[guard:guard + M * N].view(M, N)


def _call(a, b, c, blocks):
    """(grid, args, kwargs) of one v1 launch: host descriptors of A and B, C's pointer."""
    import triton
    (M, K), N, (BM, BN, BK) = a.shape, b.shape[1], blocks
    return ((triton.cdiv(M, BM), triton.cdiv(N, BN)),
            (isolated.Desc(a, (BM, BK)), isolated.Desc(b, (BK, BN)), c, M, N, K), dict(BM=BM, BN=BN, BK=BK))


def _outside(buf, guard, n) -> bool:
    """A store landed in the NaN guard around C (``n`` elements after ``guard``)."""
    import torch
    return bool((~torch.isnan(torch.cat([buf[:guard], buf[guard + n:]]))).any())


def mismatch(name, c, a, b, launched):
    """None if C = A @ B within fp16's tolerance; else ``(msg, got, ref, tol, a, b)`` on the CPU in
    float64, for matching C against emulated slips (shared with :mod:`.persistent_check`)."""
    import contextlib
    import io

    import torch
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            gemm.check_gemm(name, c, a, b, launched)
        return None
    except CheckFailed as e:
        msg = str(e).split("wrong: ", 1)[-1].split("\n")[0]
    a, b = a.cpu(), b.cpu()
    tol, got = gemm.tolerance(torch.float16, a.shape[1]), c.double().cpu()
    return msg, got, gemm.matmul_ref(a, b).double().cpu(), tol, a, b


def _verdict(name, c, a, b, blocks, launched, passed_before):
    """Raise with the hint of the slip C matches (emulated), else a neutral one."""
    import torch
    found = mismatch(name, c, a, b, launched)
    if found is None:
        return
    msg, got, ref, tol, a, b = found
    for make, hint in V1_SLIPS:
        if _same(got, make(a, b, ref, *blocks), tol):
            fail(name, msg, hint, launched)
    for a_at, b_at, update, hint in K_SLIPS:
        if torch.allclose(got, k_loop_emulated(a, b, *blocks, a_at, b_at, update), **tol):
            fail(name, msg, hint, launched)
    mag = a.double().abs() @ b.double().abs()
    if bool(((got - ref).abs() <= tol["atol"] + 2.0 ** -7 * mag).all()):
        fail(name, msg + " (off by rounding, not by a wrong tile)", FP16_ACC, launched)
    if passed_before:
        fail(name, msg, HARD_CODED, launched)
    if bool(torch.isnan(got).any()):
        fail(name, msg, NOT_WRITTEN, launched)
    fail(name, msg, "A's tile at step k starts at [off_m, k], "
         "B's at [k, off_n] (B is K x N); C's element (r, c) at c_ptr + r * N + c, masked past M "
         "and N", launched)


def _loads_in_loop(src: str, params: list) -> bool:
    """The kernel's source has a loop whose body calls ``.load`` on its first two parameters
    (A's and B's descriptors). True when no source can be read (nothing to say)."""
    try:
        tree = ast.parse(textwrap.dedent(src))
    except SyntaxError:
        return True
    for loop in (n for n in ast.walk(tree) if isinstance(n, (ast.For, ast.While))):
        called = {n.func.value.id for n in ast.walk(loop) if isinstance(n, ast.Call)
                  and isinstance(n.func, ast.Attribute) and n.func.attr == "load"
                  and isinstance(n.func.value, ast.Name)}
        if set(params[:2]) <= called:
            return True
    return False


def compile_for_hopper(name, kernel, step: str, consts: tuple, blocks_said: str, hint: str) -> str:
    """The learner's GEMM kernel (A's and B's descriptors, C, M, N, K, then ``consts`` as its
    constexprs in order) compiled for sm_90a with ladder step ``step``'s Hopper configuration (no
    GPU needed); a compile error fails check ``name`` with ``hint``. Shared with
    :mod:`.persistent_check`."""
    from ..triton_lang.compile import triton_compile
    cfg = gemm.GPU_CONFIGS[(step, "float16")]
    params = list(inspect.signature(kernel.fn).parameters)
    types = [f"tensordesc<fp16[{cfg['BM']}, {cfg['BK']}]>", f"tensordesc<fp16[{cfg['BK']}, {cfg['BN']}]>",
             "*fp16", "i32", "i32", "i32"] + ["constexpr"] * len(consts)
    try:
        return triton_compile(kernel, dict(zip(params, types)), dict(zip(params[6:], consts)),
                              num_warps=cfg["num_warps"], num_stages=cfg["num_stages"]).asm["ptx"]
    except Exception as e:
        fail(name, f"compiling your kernel for sm_90a with {blocks_said} (128 x 256 x 64) raised "
             f"{type(e).__name__}: {(str(e).strip().splitlines() or [''])[-1][:200]}", hint)


def _hopper_ptx(name, kernel) -> str:
    """The kernel compiled for sm_90a with v1's Hopper configuration (no GPU needed)."""
    cfg = gemm.GPU_CONFIGS[("v1", "float16")]
    return compile_for_hopper(name, kernel, "v1", (cfg["BM"], cfg["BN"], cfg["BK"]), "v1's Hopper blocks",
                              "the interpreter accepted it at small blocks; on Hopper the tiles are 128 x 256 x 64: "
                              "use tl.dot on the two tiles (a 3-D broadcast product is too large to compile)")


def check_v1(kernel, tier=None, seed=None) -> None:
    """Run the learner's ``kernel(a_desc, b_desc, c_ptr, M, N, K, BM, BN, BK)`` (one C tile per
    program, grid ``(cdiv(M, BM), cdiv(N, BN))``, host descriptors of blocks [BM, BK] and
    [BK, BN]) at two shapes, then check its structure (see the module doc). ``seed``: the inputs'
    seed (default: a fresh one, printed on failure)."""
    import torch
    from ..core import ptx
    from ..core.tier import current
    name, tier = "v1_kernel", tier or current()
    if not hasattr(kernel, "run") or not hasattr(kernel, "fn"):
        fail(name, f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    params = list(inspect.signature(kernel.fn).parameters)
    if len(params) != 9:
        fail(name, f"your kernel takes {len(params)} arguments {params}", "keep the signature "
             "v1_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, "
             "BK: tl.constexpr): the check launches it with these")
    blocks, src = BLOCKS[tier.has_gpu], _kernel_source(kernel)
    seed = random.SystemRandom().randrange(2**31) if seed is None else seed
    gen = torch.Generator().manual_seed(seed)
    runs = []
    for run, (M, N, K) in enumerate(SHAPES[tier.has_gpu]):
        a, b = ((torch.randn(M, K, generator=gen).half(), torch.randn(K, N, generator=gen).half())
                if run == 0 else _cancelling(M, N, K, blocks[2], gen))
        a, b = a.to(tier.device), b.to(tier.device)
        buf, guard, c = _guarded_output(M, N, blocks[0], blocks[1], tier.device)
        launched = (f"{M}x{N}x{K} fp16{' (K steps 1 and 2 nearly cancel)' if run else ''}, seed "
                    f"{seed}, blocks BM={blocks[0]} BN={blocks[1]} BK={blocks[2]}, C pre-filled with NaN")
        runs.append((a, b, buf, guard, c, launched))
    outcomes = isolated.launches(kernel, [_call(a, b, c, blocks) for a, b, _, _, c, _ in runs], device=tier.device)
    for run, ((a, b, buf, guard, c, launched), done) in enumerate(zip(runs, outcomes)):
        if done.error is not None:      # a learner's kernel that does not compile explains itself
            explain_error(name, done.error, src, launched, K_ERROR_HINTS, "read the message: A's tile "
                          "(BM x BK) comes from its descriptor, a_desc.load([off_m, k]), and B's (BK x BN) "
                          "from b_desc.load([k, off_n])")
        if _outside(buf, guard, c.numel()):
            fail(name, "your kernel stored outside C (the NaN guard around it changed)", "a pointer "
                 "store is not clipped like a descriptor load: mask it with (rm[:, None] < M) & "
                 "(rn[None, :] < N)", launched)
        if run == 0 and bool(torch.isnan(c).all()):
            if ".load(" not in src.replace(" ", "") and "tl.store" not in src:
                return not_attempted(name)
            fail(name, "every element of C is still NaN", "store each program's tile: tl.store("
                 "c_ptr + rm[:, None] * N + rn[None, :], acc.to(...), mask=...); is acc ever "
                 "NaN (a leftover stub line)?", launched)
        _verdict(name, c.clone(), a, b, blocks, launched, passed_before=run > 0)
    if src and not _loads_in_loop(src, params):
        fail(name, "C is right, but the K loop does not read A and B through their descriptors",
             f"inside the loop, {params[0]}.load([off_m, k]) and {params[1]}.load([k, off_n])")
    n = ptx.count(_hopper_ptx(name, kernel))
    if not n["cp.async.bulk.tensor"] or not n["wgmma"]:
        fail(name, f"C is right, but compiled for sm_90a your kernel has {n['cp.async.bulk.tensor']} "
             f"cp.async.bulk.tensor and {n['wgmma']} wgmma", "load the tiles with the descriptors' "
             ".load and multiply them with tl.dot (which becomes wgmma on Hopper)")
    return passed(name, f"C = A @ B at {len(SHAPES[tier.has_gpu])} shapes (seed {seed}); for sm_90a "
                  f"it compiles to {n['cp.async.bulk.tensor']} cp.async.bulk.tensor and {n['wgmma']} "
                  "wgmma.")
