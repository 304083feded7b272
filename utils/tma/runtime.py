"""Run the TMA teaching kernels (``tma_kernels.cu``) from Python with CuPy, on a GPU with TMA.

CuPy compiles them for the GPU they run on (``sm_90`` on Hopper, ``sm_100`` on a B200, ``sm_120``
on an RTX 50): they use only baseline sm_90 features (TMA, mbarrier transaction counts, clusters),
never ``sm_90a`` ones, so they run on every GPU of compute capability 9.0 or higher.

Every launcher validates its inputs first, with the rules of :mod:`.rules` (the validator's and
the NumPy model's: the same bad input gets the same error, before any GPU work), passes the
descriptor by value, and turns a timed-out mbarrier wait into a ``RuntimeError`` that says what
was expected. On machines without a GPU, :func:`ptx` still compiles the same source for sm_90a
with NVRTC.
"""
from __future__ import annotations

import functools
import pathlib

import numpy as np

from . import rules
from .descriptor import TensorMapSpec, make_spec
from .encode import encode

SOURCE = pathlib.Path(__file__).with_name("tma_kernels.cu").read_text()
MAX_SMEM = 227 * 1024          # shared memory per block on H100/H200 (static + dynamic)
STATIC_SMEM = 128              # the most any kernel here declares itself (the feed's 16 mbarriers)
TIMEOUT_NS = 1_000_000_000     # bounded waits: 1 s


def ptx() -> str:
    """sm_90a PTX of all teaching kernels (works on any machine)."""
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    return nvrtc_ptx(SOURCE, name="tma_kernels.cu")


@functools.lru_cache(maxsize=None)
def _module(options=("-std=c++17",)):
    import cupy as cp
    return cp.RawModule(code=SOURCE, options=options)


ALIGN_SLACK = 1024            # kernels align their shared-memory base to 1024 B themselves


def kernel(name: str, smem_bytes: int = 0):
    """A compiled kernel, with its dynamic shared-memory limit raised to ``smem_bytes``
    (which must include :data:`ALIGN_SLACK`)."""
    smem_bytes = rules.integer("smem_bytes", smem_bytes, "an int (bytes of dynamic shared memory)")
    rules.require(smem_bytes >= 0, f"smem_bytes {smem_bytes} is negative: it counts bytes of shared memory")
    if smem_bytes + STATIC_SMEM > MAX_SMEM:
        raise ValueError(f"{smem_bytes} B of shared memory, plus up to {STATIC_SMEM} B of the kernel's own "
                         f"mbarriers, exceeds the {MAX_SMEM} B a block may use")
    k = _module().get_function(name)
    # The limit belongs to the function, shared by every launcher made from it: only ever raise
    # it, or a launcher made earlier with bigger buffers would fail in the driver.
    if smem_bytes > 48 * 1024 and smem_bytes > k.max_dynamic_shared_size_bytes:
        k.max_dynamic_shared_size_bytes = smem_bytes
    return k


def check_coords(spec, coords, *, store: bool = False) -> tuple:
    """Validate box coordinates (array order) for ``spec``; return them in driver order.

    The rules are :mod:`.rules`, the same the NumPy model applies: int32 each, the innermost at
    a 16-byte boundary and, for a ``store``, none below 0 and a target tensor whose elements do
    not overlap. The coordinate rules were measured on H200: breaking them stops the kernel with
    "illegal instruction", which poisons the whole CUDA context, so they are refused here first.
    """
    if not isinstance(spec, TensorMapSpec):
        raise TypeError(f"spec must be a TensorMapSpec (make_spec), got {type(spec).__name__}")
    if rules.flag("store", store):
        rules.distinct_elements(spec.global_dims, spec.global_strides_bytes, spec.elem_size)
    return rules.coords(coords, spec.rank, spec.elem_size, store=store)[::-1]


def coords_arg(coords_driver_order) -> np.ndarray:
    """Box coordinates (innermost first, up to 5) packed as the kernel's ``Coords`` struct."""
    c = list(coords_driver_order) + [0] * (5 - len(coords_driver_order))
    return np.array(c, dtype=np.int32).view("V20")


def _status():
    import cupy as cp
    return cp.zeros(1, dtype=cp.int32)


def _raise_on_timeout(status, what: str):
    if int(status.get()[0]):
        raise RuntimeError(f"TMA wait timed out after {TIMEOUT_NS / 1e9:.0f} s: {what}")


def smem_image_bytes(spec) -> int:
    """Bytes of shared memory a box occupies (swizzled rows fill a whole span), rounded up to
    the 1024-B swizzle repeat."""
    from .swizzle import row_pitch
    rows = spec.box_bytes // spec.inner_box_bytes
    return -(-rows * row_pitch(spec.inner_box_bytes, spec.swizzle) // 1024) * 1024


def load_dump(array, box_shape, coords, *, expect_bytes=None, **spec_kwargs) -> np.ndarray:
    """TMA-load one box of the CuPy ``array`` at ``coords`` (array order) and return the raw
    shared-memory bytes (``uint8``, poisoned with 0xAB where TMA wrote nothing).

    ``expect_bytes`` (default: the box size) is what the kernel declares with expect_tx: an int in
    0..2**20-1, the range of an mbarrier's tx-count.
    """
    spec = make_spec(array, box_shape, **spec_kwargs)
    expect = spec.box_bytes if expect_bytes is None else rules.in_range(
        "expect_bytes", expect_bytes, 0, 2**20 - 1, " (an mbarrier's tx-count)")
    coords = check_coords(spec, coords)
    import cupy as cp
    n = smem_image_bytes(spec)
    out, status = cp.empty(n, dtype=cp.uint8), _status()
    k = kernel("tma_load_dump", n + ALIGN_SLACK)
    k((1,), (128,), (encode(spec), np.int32(spec.rank), coords_arg(coords),
                     np.uint32(expect), np.uint32(n), out, status, np.uint64(TIMEOUT_NS)),
      shared_mem=n + ALIGN_SLACK)
    _raise_on_timeout(status, f"expect_tx declared {expect} B but the box delivers "
                      f"{spec.box_bytes} B, so the phase never completed")
    return out.get()


def store_box(array, tile, coords, *, reduce: bool = False, proxy_fence: bool = True,
              **spec_kwargs) -> None:
    """TMA-store (or with ``reduce``, add) the NumPy/CuPy ``tile`` into ``array`` at ``coords``.

    The tile's shape must be the box shape; its bytes are staged in shared memory by threads.
    A reduce-add takes only the element types the instruction adds (:func:`.rules.reduce_add_dtype`).
    """
    spec = make_spec(array, np.shape(tile), **spec_kwargs)
    if rules.flag("reduce", reduce):
        rules.reduce_add_dtype(spec.dtype)
    rules.flag("proxy_fence", proxy_fence)
    if spec.swizzle != "none":
        raise ValueError("store_box stages the tile densely: use swizzle='none'")
    coords = check_coords(spec, coords, store=True)
    import cupy as cp
    tile = cp.ascontiguousarray(cp.asarray(tile, dtype=array.dtype))
    nbytes = tile.nbytes
    k = kernel("tma_store_box", nbytes + ALIGN_SLACK)
    k((1,), (128,), (encode(spec), np.int32(spec.rank), coords_arg(coords),
                     tile.view(cp.uint8).ravel(), np.uint32(nbytes), np.int32(bool(reduce)),
                     np.int32(bool(proxy_fence))), shared_mem=nbytes + ALIGN_SLACK)
    cp.cuda.get_current_stream().synchronize()


def _check_stages(stages):
    """The pipelined copies refill a buffer only after the NEXT tile's store is issued, so one
    buffer would wait forever for its second tile: they need 2..8 (8 mbarriers)."""
    rules.in_range("stages", stages, 2, 8, " (a buffer is refilled while the next one is stored, so one "
                   "buffer cannot pipeline; 8 mbarriers)")


def _check_ctas_per_sm(ctas_per_sm):
    """The grid is ``SMs x ctas_per_sm`` CTAs: 1..32 (32 is the most CTAs an SM can hold)."""
    rules.in_range("ctas_per_sm", ctas_per_sm, 1, 32)


def copy_pipelined(src, dst, box_shape=(32, 256), stages: int = 4, ctas_per_sm: int = 2,
                   check: bool = True, **spec_kwargs):
    """Copy a 2-D CuPy array with the pipelined TMA kernel; returns ``dst``.

    With ``check`` the call synchronises and raises if a wait timed out.
    """
    rules.flag("check", check)
    launch, status = pipelined_launcher(src, dst, box_shape, stages, ctas_per_sm, **spec_kwargs)
    launch()
    if check:
        _raise_on_timeout(status, "a pipeline stage never completed")
    return dst


def pipelined_launcher(src, dst, box_shape=(32, 256), stages: int = 4, ctas_per_sm: int = 2,
                       **spec_kwargs):
    """Encode the two descriptors ONCE and return ``(launch, status)``: ``launch()`` enqueues the
    pipelined copy with no host work but the launch itself (what a benchmark should time)."""
    if src.shape != dst.shape or src.dtype != dst.dtype or src.ndim != 2:
        raise ValueError(f"src and dst must be 2-D with equal shape and dtype, got "
                         f"{src.shape}/{src.dtype} and {dst.shape}/{dst.dtype}")
    _check_stages(stages)
    _check_ctas_per_sm(ctas_per_sm)
    s_src, s_dst = make_spec(src, box_shape, **spec_kwargs), make_spec(dst, box_shape, **spec_kwargs)
    rules.distinct_elements(s_dst.global_dims, s_dst.global_strides_bytes, s_dst.elem_size)
    import cupy as cp
    by, bx = box_shape
    tiles_x, tiles_y = -(-src.shape[1] // bx), -(-src.shape[0] // by)
    smem = stages * s_src.box_bytes + ALIGN_SLACK
    k = kernel("tma_copy_pipelined", smem)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    status = _status()
    args = (encode(s_src), encode(s_dst), np.int32(tiles_x), np.int32(tiles_x * tiles_y),
            np.int32(bx), np.int32(by), np.int32(stages), np.uint32(s_src.box_bytes), status,
            np.uint64(TIMEOUT_NS))
    grid = (sms * ctas_per_sm,)
    return (lambda: k(grid, (32,), args, shared_mem=smem)), status


def check_aligned(name: str, a) -> None:
    """A bulk copy's global address must be a multiple of 16 B: the tensor map's address rule
    (:func:`.rules.global_address`), named after the array."""
    rules.global_address(a.data.ptr, f"{name} address")


def _check_bulk(src, dst, chunk_bytes) -> None:
    """The rules a 1-D bulk copy of ``src`` into ``dst`` in ``chunk_bytes`` chunks has: contiguous
    arrays at 16-byte aligned addresses, equal dtype and size, sizes a multiple of 16 B."""
    for name, a in (("src", src), ("dst", dst)):
        if not a.flags.c_contiguous:
            raise ValueError(f"{name} must be contiguous: a 1-D bulk copy moves one run of bytes")
        check_aligned(name, a)
    if src.nbytes != dst.nbytes or src.dtype != dst.dtype:
        raise ValueError(f"src and dst must have the same dtype and size, got {src.dtype} {src.nbytes} B "
                         f"and {dst.dtype} {dst.nbytes} B")
    rules.multiple("the copy's size (src.nbytes)", src.nbytes, 16, of_text="16 B",
                   why=" (cp.async.bulk moves whole 16-B units)")
    rules.multiple("chunk_bytes", chunk_bytes, 16)


def bulk_launcher(src, dst, chunk_bytes: int = 32768, stages: int = 4, ctas_per_sm: int = 1,
                  span: bool = False):
    """``(launch, status)`` for the 1-D bulk copy (``cp.async.bulk``, no tensor map) of the
    contiguous CuPy array ``src`` into ``dst``: each CTA walks ``chunk_bytes`` chunks with
    ``stages`` shared-memory buffers: round robin over the grid (CTA ``b`` takes chunks ``b``,
    ``b + grid``, ...), or with ``span=True`` one contiguous run of chunks per CTA. Checks the
    rules the instruction has: 16-byte aligned addresses, sizes that are multiples of 16 B, and
    the shared memory the buffers need."""
    _check_bulk(src, dst, chunk_bytes)
    _check_stages(stages)
    _check_ctas_per_sm(ctas_per_sm)
    rules.flag("span", span)
    import cupy as cp
    smem = stages * chunk_bytes + ALIGN_SLACK
    k = kernel("bulk_copy_pipelined", smem)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    status = _status()
    args = (src, dst, np.uint64(src.nbytes), np.uint32(chunk_bytes), np.int32(stages), np.int32(span), status,
            np.uint64(TIMEOUT_NS))
    grid = (sms * ctas_per_sm,)
    return (lambda: k(grid, (32,), args, shared_mem=smem)), status


EVICT_FIRST = {"loads": 1, "stores": 2}   # which of a copy's bulk copies carry an L2 evict_first hint


def chunk_launcher(src, dst, chunk_bytes: int = 32768, evict_first: tuple = ()):
    """``(launch, status)`` for the 1-D bulk copy with no loop: one CTA per ``chunk_bytes`` chunk
    (load, wait, store, exit), as many resident per SM as their shared memory allows.
    ``evict_first`` names the copies ("loads", "stores") that carry an L2 evict_first cache hint.
    Same rules as :func:`bulk_launcher`."""
    _check_bulk(src, dst, chunk_bytes)
    if not (isinstance(evict_first, tuple) and set(evict_first) <= set(EVICT_FIRST)
            and len(set(evict_first)) == len(evict_first)):
        raise ValueError(f"evict_first must be a tuple of distinct names from {tuple(EVICT_FIRST)}, "
                         f"got {evict_first!r}")
    hints = sum(EVICT_FIRST[n] for n in evict_first)
    smem = chunk_bytes + ALIGN_SLACK
    k = kernel("bulk_copy_chunk", smem)
    status = _status()
    args = (src, dst, np.uint64(src.nbytes), np.uint32(chunk_bytes), np.int32(hints), status,
            np.uint64(TIMEOUT_NS))
    grid = (-(-src.nbytes // chunk_bytes),)
    return (lambda: k(grid, (32,), args, shared_mem=smem)), status


def serial_launcher(src, dst, chunk_bytes: int = 32768, ctas_per_sm: int = 6, dynamic: bool = False):
    """``(launch, status)`` for the 1-D bulk copy that loops over ONE chunk at a time per CTA, with
    ``ctas_per_sm`` CTAs per SM: chunks taken in a fixed round robin, or with ``dynamic=True`` the
    next untaken chunk from a global counter (which the kernel resets when it ends). Same rules as
    :func:`bulk_launcher`."""
    _check_bulk(src, dst, chunk_bytes)
    _check_ctas_per_sm(ctas_per_sm)
    rules.flag("dynamic", dynamic)
    import cupy as cp
    smem = chunk_bytes + ALIGN_SLACK
    k = kernel("bulk_copy_serial", smem)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    status, counters = _status(), cp.zeros(2, dtype=cp.uint64)
    args = (src, dst, np.uint64(src.nbytes), np.uint32(chunk_bytes), np.int32(dynamic), counters, status,
            np.uint64(TIMEOUT_NS))
    return (lambda: k((sms * ctas_per_sm,), (32,), args, shared_mem=smem)), status


def resident_ctas(name: str, smem_bytes: int, threads: int = 32) -> int:
    """How many CTAs of kernel ``name`` (``threads`` each, ``smem_bytes`` of dynamic shared memory)
    one SM holds at once, from the CUDA occupancy calculator (needs a GPU)."""
    rules.in_range("threads", threads, 1, 1024, " (threads per block)")
    import cupy as cp
    k = kernel(name, smem_bytes)
    return int(cp.cuda.driver.occupancyMaxActiveBlocksPerMultiprocessor(k.kernel.ptr, threads, smem_bytes))


def tiles_launcher(src, dst, box_shape=(64, 128), **spec_kwargs):
    """Encode the descriptors ONCE and return ``(launch, status)``: ``launch()`` enqueues the
    one-tile-per-CTA copy (load, wait, store) with no host work but the launch itself."""
    if src.shape != dst.shape or src.dtype != dst.dtype or src.ndim != 2:
        raise ValueError(f"src and dst must be 2-D with equal shape and dtype, got "
                         f"{src.shape}/{src.dtype} and {dst.shape}/{dst.dtype}")
    s_src, s_dst = make_spec(src, box_shape, **spec_kwargs), make_spec(dst, box_shape, **spec_kwargs)
    rules.distinct_elements(s_dst.global_dims, s_dst.global_strides_bytes, s_dst.elem_size)
    by, bx = box_shape
    tiles_x, tiles_y = -(-src.shape[1] // bx), -(-src.shape[0] // by)
    status = _status()
    smem = s_src.box_bytes + ALIGN_SLACK
    k = kernel("tma_copy_tile", smem)
    args = (encode(s_src), encode(s_dst), np.int32(tiles_x), np.int32(bx), np.int32(by),
            np.uint32(s_src.box_bytes), status, np.uint64(TIMEOUT_NS))
    return (lambda: k((tiles_x * tiles_y,), (32,), args, shared_mem=smem)), status


def copy_tiles(src, dst, box_shape=(64, 128), check: bool = True, **spec_kwargs):
    """Copy a 2-D CuPy array with one TMA tile per CTA (load, wait, store); returns ``dst``."""
    rules.flag("check", check)
    launch, status = tiles_launcher(src, dst, box_shape, **spec_kwargs)
    launch()
    if check:
        _raise_on_timeout(status, "a tile never arrived")
    return dst


def plain_copy(src, dst, threads: int = 256, blocks_per_sm: int = 8):
    """Thread-driven 16-byte-vector copy of a contiguous CuPy array; returns ``dst``."""
    if src.nbytes != dst.nbytes:
        raise ValueError(f"src and dst must have equal size, got {src.nbytes} B and {dst.nbytes} B")
    rules.multiple("the copy's size (src.nbytes)", src.nbytes, 16, of_text="16 B",
                   why=" (the copy moves 16-byte vectors)")
    rules.in_range("threads", threads, 1, 1024, " (threads per block)")
    rules.positive("blocks_per_sm", blocks_per_sm)
    import cupy as cp
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    kernel("plain_copy")((sms * blocks_per_sm,), (threads,), (src, dst, np.int64(src.nbytes // 16)))
    return dst


def column_read_cycles(swizzle: str, chunk: int = 3, reps: int = 256) -> float:
    """Cycles per warp-wide 16-byte column read of a 64 x 64 fp16 tile loaded by TMA with
    ``swizzle`` ("none" or "128B")."""
    if swizzle not in ("none", "128B"):
        raise ValueError(f"swizzle must be 'none' or '128B', got {swizzle!r}")
    rules.in_range("chunk", chunk, 0, 7, " (the 16-B chunk of a 128-B row)")
    rules.positive("reps", reps)
    import cupy as cp
    tile = cp.random.standard_normal((64, 64), dtype=cp.float32).astype(cp.float16)
    spec = make_spec(tile, (64, 64), swizzle=swizzle)
    cycles, sink, status = cp.zeros(1, cp.uint64), cp.zeros(32, cp.float32), _status()
    smem = 8192 + ALIGN_SLACK
    kernel("column_read", smem)((1,), (32,), (encode(spec), np.int32(chunk), np.int32(swizzle == "128B"),
                                              np.int32(reps), cycles, sink, status,
                                              np.uint64(TIMEOUT_NS)), shared_mem=smem)
    _raise_on_timeout(status, "the 64x64 tile never arrived")
    return float(cycles.get()[0])


def kernel_source(name: str) -> str:
    """The CUDA source of one teaching kernel (from its comment block to its closing brace)."""
    start = SOURCE.find(f" {name}(")
    if start < 0:
        raise ValueError(f"no kernel named {name!r} in tma_kernels.cu")
    begin = SOURCE.rfind("\n\n", 0, start) + 2
    end = SOURCE.find("\n}\n", start) + 2
    return SOURCE[begin:end]
