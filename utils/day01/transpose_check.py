"""Exercise 7 of ``day01_memory_basics/03_shared_memory_banks``: the learner writes v3, a transpose
whose shared-memory tile is conflict-free within v1's 4 KiB, and :func:`check_transpose_kernel` runs it.

The contract is the course's transposes' (:data:`utils.cuda_cpp.day01.TRANSPOSE`): ``extern "C"
__global__ void transpose_kernel(const float* x, float* y, int M, int N)`` leaves y (N x M) = x (M x N).T,
fp32, launched on blocks of 32 x 8 threads, block (bx, by) moving the 32 x 32 tile of x whose first
row is 32 by and first column 32 bx.

The check, in this order; each failure names what was launched and gives the hint for the slip:

1. It compiles (NVRTC, ``sm_90a``) and defines ``transpose_kernel``.
2. Values, on the course's PTX emulator: at 64 x 96 (whole tiles), 70 x 45 and a fresh random shape
   (neither a multiple of 32, M != N), fresh random x, y poisoned with NaN; every element equal to
   NumPy's ``x.T``, no access outside x and y, each element of x read once and of y written once.
   A failure is explained (:mod:`.transpose_hints`) by where the wrong values came from (their source
   in x) and by a second launch at a square shape.
3. How it moves the data, from every access of the emulated runs (:mod:`.smem_trace`): the tile goes
   through shared memory; every thread of a block passes the same ``__syncthreads()`` and reads
   another's tile writes only after one; both global sides are coalesced (a warp access touches no
   more 32-byte sectors than its bytes would as one contiguous run); and every shared store and load
   is conflict-free: its lanes' addresses, computed by the compiled kernel, put no two distinct words
   in one bank (:func:`.memory_model.conflict_ways`: the course's bank model, not a hardware counter).
4. Budget: at most ``smem_budget`` bytes of shared memory (4096, v1's tile: the exercise permutes
   the tile instead of padding it; ``None`` lifts it, and a padded v2 then passes).

On a GPU the kernel then runs for real (CuPy) at 1000 x 1736 and a random shape, poisoned, with NaN
guard zones around y. The bank property is judged on the emulator's addresses on every tier.
"""
from __future__ import annotations

import numpy as np

from ..core.checks import fail, not_attempted, passed
from .transpose_hints import BLOCK, HINTS, KERNEL, NAME, TILE, WHOLE, explain, launched_text, traffic, wrong

BUDGET = 4096                      # bytes of shared memory: v1's float tile[32][32]
STUB = r"""
extern "C" __global__ void transpose_kernel(const float* x, float* y, int M, int N) {
    __shared__ float tile[32][32];      // 4 KiB, v1's tile: your whole shared-memory budget
    // Block (blockIdx.x, blockIdx.y) of 32 x 8 threads moves the 32 x 32 tile of x whose first row is
    // 32 * blockIdx.y and first column 32 * blockIdx.x; y (N x M) = x (M x N) transposed.
}"""
"""The kernel as handed out, up to comments and spacing: "not attempted"."""

def _emu_run(unit, M, N, rng, seed=0):
    """(x, y, trace or None, error or None): one traced emulated launch at M x N."""
    from ..emu import EmulatorError, device_empty, to_device
    from .smem_trace import traced_launch
    x = rng.standard_normal((M, N)).astype(np.float32)
    while np.unique(x).size < x.size:                 # distinct values: a wrong one's source is then known
        x = rng.standard_normal((M, N)).astype(np.float32)
    x = to_device(x)
    y = device_empty((N, M), np.float32, np.nan)
    grid = (-(-N // TILE), -(-M // TILE))
    try:
        return x, y, traced_launch(unit, KERNEL, grid, BLOCK, [x, y, M, N], seed=seed, max_instructions=400_000), None
    except EmulatorError as err:
        return x, y, None, err


def _worst(accesses, cost):
    """(access, (cost, need)) of the access whose cost most exceeds its need."""
    return max(((a, cost(a)) for a in accesses), key=lambda t: t[1][0] / t[1][1], default=(None, (0, 1)))


def _judge_trace(trace, M, N):
    """Fail on the first property of how the data moved that the trace breaks (see module docstring)."""
    launched = launched_text(M, N)
    where = lambda a: f"CTA {a.cta[:2]}, warp {a.warp}, PTX `{a.text.strip()}`"  # noqa: E731
    st, ld = trace.of("st", "shared"), trace.of("ld", "shared")
    if not st or not ld:
        fail(NAME, "right values, but no access to shared memory", HINTS["no_smem"], launched)
    split = trace.split_barrier()
    if split:
        fail(NAME, f"right values here, but in CTA {split['cta'][:2]} threads passed different numbers of "
             f"__syncthreads() ({', '.join(f'{n} threads: {b}' for b, n in split['counts'].items())})",
             HINTS["barrier"], launched)
    if trace.race:
        r = trace.race
        fail(NAME, f"right values here, but thread {r['reader']} of CTA {r['cta'][:2]} reads tile byte "
             f"{r['offset']} that thread {r['writer']} wrote, with no __syncthreads() between (the emulator "
             f"runs a warp in lockstep; a GPU need not)", HINTS["race"], launched)
    for op, side in (("ld", "read of x"), ("st", "write of y")):
        a, (got, need) = _worst(trace.of(op, "global"), lambda a: a.sectors())
        if got > need:
            fail(NAME, f"right values, but the {side} is not coalesced: one warp access ({a.addresses.size} lanes "
                 f"of 4 bytes, {where(a)}) touches {got} sectors where {need} would do", HINTS["coalesce"], launched)
    for accs, side in ((st, "store to the tile"), (ld, "load from the tile")):
        a, (got, need) = _worst(accs, lambda a: a.wavefronts())
        if got > need:
            banks = (a.addresses // 4) % 32
            b = int(np.bincount(banks, minlength=32).argmax())
            lanes = np.flatnonzero(banks == b)[:6].tolist()
            fail(NAME, f"right values, but your {side} is {got // need}-way bank-conflicted: {got} wavefronts "
                 f"where {need} would do ({where(a)}: lanes {lanes}... all in bank {b}; the warp's words fall "
                 f"in {len(np.unique(banks))} of the 32 banks)", HINTS["conflict"], launched)


def check_transpose_kernel(source, tier=None, smem_budget: int | None = BUDGET) -> None:
    """Compile and run the learner's ``transpose_kernel`` (see module docstring); on a GPU (``tier``),
    also run it there. ``smem_budget``: most bytes of shared memory allowed (None: no limit)."""
    from ..cuda_cpp import kernel_runs as kr
    from ..emu.program import program
    source = kr.need_source(NAME, source)
    if kr.same_as_stub(source, STUB):
        return not_attempted(NAME)
    if smem_budget is not None and (isinstance(smem_budget, bool) or not isinstance(smem_budget, int)
                                    or smem_budget < 1):
        raise ValueError(f"smem_budget must be a positive int (bytes) or None, got {smem_budget!r}")
    ptx = _compile(source)
    if f".entry {KERNEL}(" not in ptx:
        fail(NAME, f"no kernel named {KERNEL} in your source", f'keep the signature: extern "C" __global__ void '
             f"{KERNEL}(const float* x, float* y, int M, int N)")
    rng = np.random.default_rng()
    shapes = [WHOLE, (70, 45), _random_shape(rng)]
    traces = []
    for k, (M, N) in enumerate(shapes):
        x, y, trace, err = _emu_run(ptx, M, N, rng, seed=k)
        if err is not None or wrong(x, y).any() or traffic(trace, x, y):
            explain(ptx, x, y, trace, err, k, lambda m, n: _emu_run(ptx, m, n, rng))
        traces.append((trace, M, N))
    for trace, M, N in traces:
        _judge_trace(trace, M, N)
    smem = program(ptx, KERNEL).static_smem
    if smem_budget is not None and smem > smem_budget:
        fail(NAME, f"right values, no bank conflicts, but {smem} B of shared memory per block, over the "
             f"budget of {smem_budget} B", HINTS["budget"])
    where = "on the emulator"
    if tier is not None and tier.has("gpu"):
        _check_on_gpu(source, rng)
        where += " and on this GPU (1000 x 1736 and a random shape)"
    sizes = ", ".join(f"{M} x {N}" for M, N in shapes)
    return passed(NAME, f"{sizes}: every element right {where}; every tile store and load conflict-free "
                  f"(the bank model on the addresses your compiled kernel computed), both global sides "
                  f"coalesced, {smem} B of shared memory.")


def tile_ways(source: str, kernel: str = KERNEL, M: int = 64, N: int = 64) -> dict:
    """``{"store": ways, "load": ways}``: the worst bank-conflict ways of the kernel's shared-memory
    stores and loads, from one emulated launch of ``kernel`` (a transpose with the exercise's
    contract) at M x N: the compiled kernel's addresses priced by the bank model (0: none made)."""
    from ..emu import device_empty, to_device
    from .smem_trace import traced_launch
    if not isinstance(source, str) or not isinstance(kernel, str):
        raise TypeError("tile_ways(source, kernel): CUDA C++ source and the kernel's name, as strings")
    x = to_device(np.random.default_rng(0).standard_normal((M, N)).astype(np.float32))
    y = device_empty((N, M), np.float32, np.nan)
    trace = traced_launch(source, kernel, (-(-N // TILE), -(-M // TILE)), BLOCK, [x, y, M, N])
    ways = lambda accs: max((a.wavefronts()[0] // a.wavefronts()[1] for a in accs), default=0)  # noqa: E731
    return {"store": ways(trace.of("st", "shared")), "load": ways(trace.of("ld", "shared"))}


def _random_shape(rng):
    while True:
        M, N = (int(v) for v in rng.integers(33, 100, 2))
        if M % TILE and N % TILE and M != N:
            return M, N


def _compile(source: str) -> str:
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    try:
        return nvrtc_ptx(source, arch="sm_90a", name="your_kernel.cu")
    except RuntimeError as err:
        lines = [l for l in str(err).splitlines()[1:] if l.strip()][:8]
        fail(NAME, "NVRTC could not compile your kernel:\n    " + "\n    ".join(lines), HINTS["compile"])


def _check_on_gpu(source, rng) -> None:
    """Run the kernel with CuPy at 1000 x 1736 and a random shape: poisoned y inside NaN guard zones."""
    import cupy as cp
    fn = cp.RawModule(code=source).get_function(KERNEL)
    for M, N in ((1000, 1736), tuple(int(v) for v in rng.integers(500, 3000, 2))):
        guard = 4096
        x = cp.random.standard_normal((M, N), dtype=cp.float32)
        y_all = cp.full(N * M + 2 * guard, cp.nan, cp.float32)
        y = y_all[guard:guard + N * M].reshape(N, M)
        fn((-(-N // TILE), -(-M // TILE)), BLOCK, (x, y, np.int32(M), np.int32(N)))
        cp.cuda.Device().synchronize()
        launched = f"{KERNEL} on this GPU: x {M} x {N} fp32, blocks of 32 x 8 threads"
        if not (bool(cp.isnan(y_all[:guard]).all()) and bool(cp.isnan(y_all[-guard:]).all())):
            fail(NAME, "on the GPU, the kernel wrote outside y", HINTS["fault"], launched)
        bad = ~(y == x.T)
        if bool(bad.any()):
            i = tuple(int(v) for v in cp.argwhere(bad)[0].get())
            fail(NAME, f"on the GPU: {int(bad.sum())} of {y.size} elements of y wrong, first at y{list(i)}",
                 "the emulator passed it: is a __syncthreads() missing, or does your kernel depend on the "
                 "order in which warps run?", launched)
