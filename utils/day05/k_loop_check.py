"""Exercise 2 of ``day05_tma/03_triton_tma_gemm``, the K loop: the learner's Triton kernel runs
(on the GPU, or in the interpreter) with its output poisoned with NaN and is compared with ``A @ B``;
a wrong C is matched against the known slips (wrong tile origins, no accumulation, fp16
accumulation), each emulated in float64. Split from :mod:`utils.day05.gemm_checks`, which
re-exports it. On a GPU the kernel runs in a child process
(:func:`utils.triton_lang.isolated.launches`): a kernel that stops the GPU fails the check and
leaves this process's GPU working."""
from __future__ import annotations

from . import gemm
from ..triton_lang import isolated
from ..core.checks import CheckFailed, fail, not_attempted, passed

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


def _k_loop_call(a, b, c, blocks):
    """(grid, args, kwargs) of one launch: host descriptors of A and B, the output's pointer."""
    import triton
    (M, K), N, (BM, BN, BK) = a.shape, b.shape[1], blocks
    return ((triton.cdiv(M, BM), triton.cdiv(N, BN)),
            (isolated.Desc(a, (BM, BK)), isolated.Desc(b, (BK, BN)), c, M, N, K), dict(BM=BM, BN=BN, BK=BK))


def _k_loop_error(name, error, src, launched):
    """Fail for a launch's error: a GPU fault with its hint, a raised error with the hint chosen
    from its message."""
    if isinstance(error, isolated.GpuFault):
        fail(name, str(error), isolated.fault_hint(error, src), launched)
    text = (str(error).strip().splitlines() or [""])[-1][:300]
    fail(name, f"the kernel raised {type(error).__name__}: {text}",
         next((h for key, h in K_ERROR_HINTS if key in text), "the error is in your loop body: "
              "A's tile (BM x BK) starts at [off_m, k], B's (BK x BN) at [k, off_n]"), launched)


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
    runs = []
    for run, (M, N, K) in enumerate(shapes):
        a, b = ((torch.randn(M, K, generator=gen).half(), torch.randn(K, N, generator=gen).half())
                if run == 0 else _cancelling(M, N, K, blocks[2], gen))
        a, b = a.to(tier.device), b.to(tier.device)
        c = torch.full((M, N), float("nan"), dtype=torch.float16, device=tier.device)
        runs.append((a, b, c, f"{M}x{N}x{K} fp16{' (K steps 1 and 2 nearly cancel)' if run else ''}, blocks "
                     f"BM={blocks[0]} BN={blocks[1]} BK={blocks[2]}, output pre-filled with NaN"))
    outcomes = isolated.launches(kernel, [_k_loop_call(a, b, c, blocks) for a, b, c, _ in runs], device=tier.device)
    for run, ((a, b, c, launched), done) in enumerate(zip(runs, outcomes)):
        if done.error is not None:      # a learner's kernel that does not compile explains itself
            _k_loop_error(name, done.error, _kernel_source(kernel), launched)
        if run == 0 and bool(torch.isnan(c).all()):
            src = _kernel_source(kernel)
            if "nan" in src.replace("'", '"') and ".load(" in src:
                fail(name, "every element is still NaN, yet your loop loads tiles", "delete the "
                     "stub's line acc += float(\"nan\"): it makes every sum NaN", launched)
            return not_attempted(name)
        _k_loop_verdict(name, c, a, b, blocks, launched)
    return passed(name, "C = A @ B on both runs, accumulated in fp32.")
