"""Run day 2's CUDA kernels (``day02.cu``) from Python with CuPy; read their PTX anywhere.

* :func:`chase`: pointer chase (``ld.global.ca`` / ``.cg`` / ``ld.shared``), cycles per load.
* :func:`read_inflight`: a read-only stream where each thread keeps ``u`` 16-byte loads in flight.
* :func:`pipeline`: a tiled kernel with 1, 2, 3, 4 or 8 shared-memory stages filled by cp.async.
* :func:`mbar_phases`: what ``mbarrier.test_wait.parity`` answers during and after each phase.
* :func:`ring`: a producer warp and a consumer warp around a ring of mbarrier-guarded stages
  (cp.async, or with ``bulk`` one TMA bulk copy + ``expect_tx``). Waits are bounded: a wrong
  phase raises ``RuntimeError`` after ``timeout_ns`` instead of hanging.

* :data:`HELPERS` and :func:`learner_unit`: the helpers at the top of ``day02.cu`` (cp.async, mbarrier,
  ``compute``) and the compile unit of a learner's kernel (day 2's kernel exercises, run by
  :mod:`utils.day02.pipeline_check` and :mod:`utils.day02.ring_check`).

Arrays are CuPy arrays or torch CUDA tensors (viewed without a copy).
"""
from __future__ import annotations

import functools
import pathlib
import re

import numpy as np

SOURCE = pathlib.Path(__file__).with_name("day02.cu").read_text()
STAGES = (1, 2, 3, 4, 8)              # the compiled cp_async_pipeline_s<S> variants
LOADS = (1, 2, 4, 8, 16)              # the compiled read_inflight_u<U> variants
MODES = {"ca": 0, "cg": 1, "shared": 2}
TILE_VEC = 128                        # float4 per pc_ring tile (2 KiB)
TIMEOUT_NS = 500_000_000              # bounded waits: 0.5 s
PARITY_RULE = re.compile(r"[\sk()/%&^|+\-*0-9<>!~]|stages")


def ptx(arch: str = "sm_90a") -> str:
    """PTX of every day-2 kernel, compiled by NVRTC (no GPU needed)."""
    from .nvrtc import nvrtc_ptx
    return nvrtc_ptx(SOURCE, arch=arch, name="day02.cu")


def kernel_source(name: str) -> str:
    """The CUDA source of one kernel or helper of ``day02.cu``, comment block included."""
    start = SOURCE.find(f" {name}(")
    if start < 0 or not re.fullmatch(r"\w+", name):
        raise ValueError(f"no kernel or function named {name!r} in day02.cu")
    begin = SOURCE.rfind("\n\n", 0, start) + 2
    return SOURCE[begin:SOURCE.find("\n}\n", start) + 2]


def with_producer_parity(expr: str) -> str:
    """The source with the producer's empty-barrier parity replaced by C expression ``expr``
    (in ``k`` and ``stages``)."""
    if not isinstance(expr, str) or not expr.strip():
        raise TypeError(f"the parity must be a C expression string in k and stages, got {expr!r}")
    bad = PARITY_RULE.sub("", expr)
    if bad:
        raise ValueError(f"parity expression {expr!r} may use only k, stages, integers and "
                         f"C operators; it also contains {bad!r}")
    return f"#define PRODUCER_PARITY(k, stages) ({expr})\n" + SOURCE


@functools.lru_cache(maxsize=None)
def _module(parity: str | None = None):
    import cupy as cp
    return cp.RawModule(code=SOURCE if parity is None else with_producer_parity(parity),
                        options=("-std=c++17",))


def _cp(a):
    import cupy as cp
    return a if isinstance(a, cp.ndarray) else cp.from_dlpack(a)


def _sms() -> int:
    import cupy as cp
    return cp.cuda.Device().attributes["MultiProcessorCount"]


def _vec(x, y=None):
    """float32 arrays as float4 counts; y (if given) must match x."""
    x = _cp(x)
    if x.dtype != np.float32 or not x.flags.c_contiguous or x.size % 4:
        raise ValueError(f"x must be contiguous float32 with a size divisible by 4 (16-byte "
                         f"vectors), got {x.dtype} size {x.size}")
    if y is not None and (_cp(y).shape != x.shape or _cp(y).dtype != x.dtype):
        raise ValueError(f"y must match x: {tuple(x.shape)} float32, got {tuple(_cp(y).shape)}")
    return x, x.size // 4


def chase_launcher(nxt, steps: int, mode: str = "ca"):
    """Prepare a one-thread pointer chase over the int32 cycle ``nxt`` from slot 0.
    Returns ``(launch, read)``: ``launch()`` only enqueues the kernel (what a benchmark times);
    ``read()`` returns (final slot, clock cycles per load) of the last launch."""
    import cupy as cp
    if mode not in MODES:
        raise ValueError(f"mode must be one of {list(MODES)}, got {mode!r}")
    nxt = _cp(nxt)
    if nxt.dtype != np.int32 or isinstance(steps, bool) or not isinstance(steps, int) or not 1 <= steps < 2**31:
        raise ValueError(f"need an int32 cycle and an int 1 <= steps < 2^31, got {nxt.dtype}, {steps!r}")
    smem = nxt.nbytes if mode == "shared" else 0
    if smem > 48 * 1024:
        raise ValueError(f"a shared-memory chase holds the cycle in 48 KiB at most, got {smem} B")
    out, cycles = cp.zeros(1, cp.int32), cp.zeros(1, cp.int64)
    k = _module().get_function("chase")
    args = (nxt, np.int32(nxt.size), np.int32(steps), np.int32(MODES[mode]), out, cycles)
    launch = lambda: k((1,), (256 if mode == "shared" else 32,), args, shared_mem=smem)  # noqa: E731
    return launch, lambda: (int(out.get()[0]), float(cycles.get()[0]) / steps)


def chase(nxt, steps: int, mode: str = "ca") -> tuple[int, float]:
    """Run the chase once: (final slot, clock cycles per load)."""
    launch, read = chase_launcher(nxt, steps, mode)
    launch()
    return read()


def read_inflight(src, out, u: int, blocks_per_sm: int, threads: int = 128):
    """Stream ``src`` (float32, size divisible by 4) with ``u`` loads in flight per thread;
    ``out`` (uint32, one per thread) gets each thread's XOR. Returns ``out``."""
    if u not in LOADS:
        raise ValueError(f"u (loads in flight per thread) must be one of {LOADS}, got {u!r}")
    src, n_vec = _vec(src)
    grid = _sms() * blocks_per_sm
    if _cp(out).size < grid * threads:
        raise ValueError(f"out needs one uint32 per thread: {grid * threads}, has {_cp(out).size}")
    _module().get_function(f"read_inflight_u{u}")((grid,), (threads,), (src, _cp(out), np.int64(n_vec)))
    return out


def pipeline(x, y, stages: int, work: int = 0, threads: int = 256, blocks_per_sm: int = 1):
    """y = compute(x) through a ring of ``stages`` shared-memory tiles (``threads`` x 16 B each)
    filled by cp.async; ``work`` FMAs per value. Returns ``y``."""
    if stages not in STAGES:
        raise ValueError(f"stages must be one of {STAGES} (compiled variants), got {stages!r}")
    if threads % 32 or not 64 <= threads <= 1024:
        raise ValueError(f"threads must be a multiple of 32 in 64..1024, got {threads}")
    x, n_vec = _vec(x, y)
    smem = stages * threads * 16
    k = _module().get_function(f"cp_async_pipeline_s{stages}")
    if smem > 48 * 1024:
        k.max_dynamic_shared_size_bytes = smem
    k((_sms() * blocks_per_sm,), (threads,), (x, _cp(y), np.int64(n_vec), np.int32(work)), shared_mem=smem)
    return y


def mbar_phases(rounds: int = 3, threads: int = 64) -> np.ndarray:
    """Run ``mbar_phases``: rows of (parity-0 complete?, parity-1 complete?) before any arrival,
    then after half and after all of the ``threads`` arrivals of each round."""
    import cupy as cp
    if not 1 <= rounds <= 16 or threads % 64 or not 64 <= threads <= 1024:
        raise ValueError(f"need 1 <= rounds <= 16 and threads a multiple of 64, got {rounds}, {threads}")
    probe = cp.full(2 + 4 * rounds, -1, dtype=cp.int32)
    _module().get_function("mbar_phases")((1,), (threads,), (np.int32(rounds), probe))
    return probe.get().reshape(-1, 2)


def ring(x, y, stages: int, work: int = 0, *, bulk: bool = False, producer_parity: str | None = None,
         blocks: int | None = None, timeout_ns: int = TIMEOUT_NS, check: bool = True):
    """y = compute(x) by a producer warp and a consumer warp per block around ``stages``
    buffers. ``producer_parity`` replaces the producer's wait parity (a C expression in ``k`` and
    ``stages``). With ``check`` (default) it synchronises and raises ``RuntimeError`` if any wait
    timed out; ``check=False`` only enqueues (for timing). Returns ``y``."""
    import cupy as cp
    if not (isinstance(stages, int) and 1 <= stages <= 8):
        raise ValueError(f"stages must be an int in 1..8 (8 barrier pairs), got {stages!r}")
    if bulk and int(cp.cuda.Device().compute_capability) < 90:
        raise ValueError("bulk=True uses cp.async.bulk (TMA), which needs compute capability >= 9.0")
    x, n_vec = _vec(x, y)
    status = cp.zeros(1, cp.int32)
    k = _module(producer_parity).get_function("pc_ring")
    k((blocks or _sms(),), (64,), (x, _cp(y), np.int64(n_vec), np.int32(stages), np.int32(work),
                                   np.int32(bool(bulk)), status, np.uint64(timeout_ns)),
      shared_mem=stages * TILE_VEC * 16)
    if check and int(status.get()[0]):
        raise RuntimeError(f"an mbarrier wait timed out after {timeout_ns / 1e9:g} s: a phase "
                           "that never completes (producer and consumer wait for each other)")
    return y


def xor_all(a) -> int:
    """XOR of every 32-bit word of ``a`` (CuPy array or torch CUDA tensor), reduced on the GPU:
    the checksum ``read_inflight`` is checked with."""
    import cupy as cp
    w = _cp(a).ravel().view(cp.uint32)
    while w.size > 1:
        h = w.size // 2
        w = cp.concatenate([w[:h] ^ w[h:2 * h], w[2 * h:]])
    return int(w.get()[0])


def compute_ref(x, work: int):
    """What every day-2 consumer computes: ``work`` times v <- 0.999 v + 0.001 (closed form)."""
    a = 0.999 ** work
    return a * x + (1 - a)


HELPERS = SOURCE[:SOURCE.index("// ---- end of the helpers ----")]
"""The helper functions at the top of ``day02.cu`` (``smem_addr``, ``cp_async16``, ``cp_async_commit``,
``cp_async_wait<N>``, ``cp_async_arrive_noinc``, ``compute``, ``mbar_init``, ``mbar_arrive``,
``mbar_test``, ``mbar_wait_bounded``): what a learner's kernel is compiled after."""


def cp_async_helpers() -> str:
    """The cp.async helpers and ``compute`` of :data:`HELPERS` (what the pipeline exercise calls)."""
    return HELPERS[HELPERS.index("// One 16-byte cp.async"):HELPERS.index("// mbarrier basics")]


def learner_unit(source: str, footer: str = "") -> str:
    """The compile unit of a learner's day-2 kernel: :data:`HELPERS`, then ``source``, then
    ``footer`` (e.g. the ``extern "C"`` instantiations of a template)."""
    if not isinstance(source, str) or not source.strip():
        raise TypeError(f"the kernel must be CUDA C++ source in a string, got {type(source).__name__}")
    return f"{HELPERS}\n#line 1 \"your_kernel.cu\"\n{source}\n{footer}"
