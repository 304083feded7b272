"""Day 5 · 02, Exercises 3b and 3c: the learner's whole TMA kernels, RUN by the check.

3b, ``tile_x2`` (:data:`TILE`): one CTA per 16 x 32 fp32 box, which it TMA-loads into shared memory
(mbarrier, ``expect_tx``, bounded parity wait), doubles with its threads, fences
(``fence.proxy.async``) and TMA-stores into ``dst``. 3c, ``ring_x2`` (:data:`RING`): the same with
each of two CTAs walking many boxes through a ring of ``STAGES`` buffers, loads in flight while the
threads work. Both are compiled after the course's header (the helpers of ``utils/tma/tma_kernels.cu``,
listed in :data:`HELPERS`).

The check runs the kernel on the course's PTX emulator on every machine (three fresh random tensors
whose sizes are not multiples of the box, output poisoned with NaN, copies landing as late as
possible, at once and at random points; a race, hang or fault becomes the hint for that mistake,
:mod:`.tma_kernel_hints`), and on a GPU with TMA also for real, in a subprocess
(:mod:`.tma_kernel_run`), with every element compared with ``2 * x``.
"""
from __future__ import annotations

import random

import numpy as np

from ..core.checks import fail, not_attempted, passed
from ..tma.store_check import c_tokens
from .tma_kernel_hints import compare, compile_hint, error_hint, hang_hint
from .tma_kernel_run import BOX, Kernel, run_emulated, run_gpu

TILE, RING = Kernel("tile_x2"), Kernel("ring_x2", stages=3)
SIGNATURE = TILE.signature
STUB = SIGNATURE + " {\n}"
"""Exercise 3b as handed out (an empty body): equal to it up to comments and spacing is "not attempted"."""
RING_STUB = RING.signature + " {\n}"
HELPERS = {
    "unsigned char* smem_base()": "the dynamic shared memory, 1024-B aligned (room for the buffers and 128 B more)",
    "unsigned smem_addr(const void* p)": "a pointer to shared memory as the 32-bit shared address the helpers take",
    "void mbar_init(unsigned bar, unsigned count)": "mbarrier.init with `count` arrivals per phase, then fence.mbarrier_init",
    "void mbar_expect_tx(unsigned bar, unsigned bytes)": "mbarrier.arrive.expect_tx: one arrival, and `bytes` still to land",
    "bool mbar_try_wait(unsigned bar, unsigned parity)": "one try_wait.parity: true once the phase of that parity completed",
    "bool mbar_wait_bounded(unsigned bar, unsigned parity, unsigned long long timeout_ns)":
        "try_wait.parity in a loop, false after timeout_ns",
    "unsigned long long now_ns()": "%globaltimer, in ns (to bound a loop of your own)",
    "void tma_load(int rank, unsigned dst, const TensorMap* map, Coords k, unsigned bar)":
        "cp.async.bulk.tensor load of the box at Coords k into shared address dst (rank 2 here)",
    "void tma_store(int rank, const TensorMap* map, Coords k, unsigned src, int reduce)":
        "cp.async.bulk.tensor store of shared address src (reduce = 1: reduce-add), then commit_group",
    "Coords k = {{c0, c1, 0, 0, 0}}": "box coordinates, innermost dimension first, as the descriptor orders them",
    "BOX_X, BOX_Y": "the box: 32 columns, 16 rows of fp32",
}


def header(kernel: Kernel = TILE) -> str:
    """The course's helpers and the box's size (and STAGES for the ring), compiled before ``kernel``."""
    return kernel.header()


def show_helpers(kernel: Kernel = TILE) -> None:
    """Print the kernel's signature and the helpers it may call (names and what each wraps)."""
    print(kernel.signature + " { ... }\n")
    for name, what in HELPERS.items():
        print(f"  {name}\n      {what}")
    if kernel.stages:
        print("  Coords box_at(int t, int tiles_x)\n      the Coords of box t, boxes numbered row by row (as in 3b)")
        print("  void load_box(float* dst, unsigned bar, const TensorMap* map, int t, int tiles_x)\n"
              "      3b's load of box t into dst (a POINTER, unlike tma_load's address): expect_tx, then tma_load")
        print(f"  STAGES\n      the ring's buffers: {kernel.stages} (the grid: 2 CTAs)")


def ran_on_emulator(report) -> str:
    """The one line a cpu-tier cell prints under an emulated launch (never a time)."""
    g, b = report.grid, report.block
    return (f"emulator (values, hangs and races; never a time): {report.kernel}, {g[0] * g[1] * g[2]} CTA(s) x "
            f"{b[0] * b[1] * b[2]} threads, {report.instructions} warp-instructions")


def shapes(rng: random.Random, n: int = 3, big: bool = False, ring: bool = False) -> list:
    """``n`` (rows, cols) that are not multiples of the box, with different numbers of box columns
    (a kernel that hard-codes one tensor's tile count fails); cols a multiple of 4 (16-B rows). For a
    ``ring``, at least 9 boxes: each of the two CTAs reuses a buffer."""
    out, scale, low = [], 4 if big else 1, 2 if ring else 1
    for k in rng.sample(range(low, 6 * scale), n):
        rows = rng.randrange(low * BOX[0] + 1, 4 * BOX[0] * scale) | 1
        out.append((rows, k * BOX[1] + 4 * rng.randrange(1, BOX[1] // 4)))
    return out


def _hung(name, kernel, status, shape, where, rep=None):
    """Fail with the right hint if a run's bounded wait timed out."""
    if status or (rep is not None and rep.deadlocks):
        what, hint = hang_hint(rep.deadlocks[0] if rep is not None and rep.deadlocks else "")
        fail(name, f"{where}: the bounded wait timed out (status = 1){what}", hint, kernel.launched(shape))


def _judge(name, kernel, runs, shapes_run, where):
    """Fail with the right hint if a run left a wrong element (runs: [(x, y)])."""
    problem = compare(runs, BOX, ring=bool(kernel.stages))
    if problem:
        k = next(i for i, (x, y) in enumerate(runs) if not np.array_equal(y, 2 * x))
        fail(name, f"{where}: {problem[0]}", problem[1], kernel.launched(shapes_run[k]))


BOUNDED = ("the wait must be bounded, as the brief says: mbar_wait_bounded(bar, parity, timeout_ns), and when it "
           "times out one thread sets *status = 1 (atomicExch(status, 1)) and every thread returns: a copy that never "
           "lands must end in a message, not a hang")


def _times_out(name, kernel, ptx, shape, seed) -> None:
    """One more emulated launch in which no copy ever lands (a fault injected): the kernel must end
    with ``*status == 1`` through its bounded wait, not hang."""
    from ..emu import Deadlock
    try:
        _, _, status, _ = run_emulated(kernel, ptx, shape, "never", seed)
    except Deadlock as exc:
        fail(name, f"with a copy that never lands (a fault the emulator injects), it hangs: {str(exc)[:400]}",
             BOUNDED, kernel.launched(shape))
    if status != 1:
        fail(name, f"with a copy that never lands, it ended with *status = {status}, not 1", BOUNDED,
             kernel.launched(shape))


def check_tile_kernel(source, tier=None, kernel: Kernel = TILE) -> None:
    """The learner's kernel (CUDA C++ text; ``tile_x2`` by default, ``kernel=RING`` for ``ring_x2``) must
    store ``2 * src`` into ``dst``, every element, with no race, hang or fault on the emulator (three
    tensors, copies landing late, at once, and at random points), and, with a ``tier`` that has TMA,
    on the GPU too (in a subprocess)."""
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    from ..emu import EmulatorError
    name = "ring_kernel" if kernel.stages else "tile_kernel"
    if not isinstance(source, str) or "__global__" not in source:
        fail(name, f"expected the kernel's CUDA C++ source as a string, got {type(source).__name__}")
    if c_tokens(source) == c_tokens(kernel.signature + " {\n}"):
        return not_attempted(name)
    try:
        ptx = nvrtc_ptx(kernel.header() + '\n#line 1 "your_kernel.cu"\n' + source, name=f"{kernel.name}.cu")
    except RuntimeError as exc:
        fail(name, f"it does not compile:\n{str(exc)[-1500:]}", compile_hint(str(exc)))
    if f".entry {kernel.name}(" not in ptx:
        fail(name, f"no kernel named {kernel.name} with C linkage", f"keep the signature: {kernel.signature}")
    rng, runs = random.Random(), []
    emu_shapes = shapes(rng, ring=bool(kernel.stages))
    for shape, completion in zip(emu_shapes, ("lazy", "eager", "adversarial")):
        try:
            x, y, status, rep = run_emulated(kernel, ptx, shape, completion, rng.randrange(1 << 16))
        except EmulatorError as exc:
            fail(name, f"the emulator stopped it: {str(exc)[:900]}", error_hint(exc), kernel.launched(shape))
        _hung(name, kernel, status, shape, f"on the emulator (copies landing {completion})", rep)
        runs.append((x, y))
    _judge(name, kernel, runs, emu_shapes, "on the emulator")
    _times_out(name, kernel, ptx, emu_shapes[0], rng.randrange(1 << 16))
    ran = tier is not None and getattr(tier, "has_tma", False)
    if ran:
        gpu_shapes = shapes(rng, 2, big=True)
        gpu = run_gpu(kernel, source, gpu_shapes)
        for shape, run in zip(gpu_shapes, gpu):
            if isinstance(run[0], str):
                fail(name, f"on the GPU: {run[1][:900]}", error_hint(run[1]), kernel.launched(shape))
            _hung(name, kernel, run[2], shape, "on the GPU")
        _judge(name, kernel, [r[:2] for r in gpu], gpu_shapes, "on the GPU")
    return passed(name, "every element of every box came back doubled, with no race or hang on the emulator"
                  + (" and on this GPU." if ran else " (a GPU with TMA also runs it for real)."))


def check_ring_kernel(source, tier=None) -> None:
    """Exercise 3c: :func:`check_tile_kernel` for ``ring_x2`` (two CTAs, a ring of STAGES buffers each)."""
    return check_tile_kernel(source, tier, RING)
