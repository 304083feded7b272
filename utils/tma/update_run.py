"""Run ``update_kernels.cu`` on a Hopper GPU with CuPy (notebook ``day05_tma/06``).

* :func:`grouped_load`: one CTA per group loads box (0, 0) of its group through a descriptor from
  one of :data:`MODES` (built on the device in shared or global memory, encoded on the host into
  global memory, or passed by value) and times it in cycles. The tiles are returned so the
  caller can check them against the groups' data.
* :func:`update_race`: replace a descriptor's address in global memory between two loads with or
  without the proxy fences, or while the first load is in flight; say which data each load saw.
* :func:`reduce_add`: combine fp32 partial tiles into C with TMA reduce-add stores.

Every launcher validates its inputs first (the encode rules of :mod:`.rules` for every group) and
turns a timed-out wait into a ``RuntimeError``. Inputs are CuPy arrays.
"""
from __future__ import annotations

import functools

import numpy as np

from . import rules, update
from .descriptor import make_spec
from .encode import encode
from .runtime import TIMEOUT_NS, _raise_on_timeout, _status
MODES = {0: "built on the device in shared memory, published by tensormap.cp_fenceproxy",
         1: "built on the device in global memory, in place, + fence ... release",
         2: "encoded on the host, copied to global memory before the launch",
         3: "encoded on the host, passed by value as a kernel parameter"}
BYVALUE_MAX = 8                # descriptors in the ByValue parameter struct (1 KiB)
TILE_BYTES = 16384             # grouped_load_updated's static tile
RACE_TILE_BYTES = 8192         # update_race's static tiles
GROUP = np.dtype([("ptr", "<u8"), ("rows", "<u4"), ("cols", "<u4"), ("row_stride_bytes", "<u8")])


@functools.lru_cache(maxsize=None)
def _module():
    """``update_kernels.cu`` compiled for this GPU's architecture-specific target: tensormap.replace
    exists only for sm_90a, sm_100a/f, sm_110f, sm_120a/f (PTX ISA; utils.core.features), so
    ``sm_90a`` on Hopper, ``sm_100a`` on a B200, ``sm_120a`` on an RTX 50."""
    import cupy as cp
    from ..core.features import arch_target
    cc = cp.cuda.Device().compute_capability           # "90", "100", "120"
    arch = arch_target((int(cc[:-1]), int(cc[-1])))
    if arch is None:
        raise RuntimeError(f"tensormap.replace needs compute capability 9.0 or higher, this GPU is {cc[:-1]}.{cc[-1]}")
    return cp.RawModule(code=update.SOURCE, options=("-std=c++17", f"-arch={arch}"))


def _check_groups(arrays):
    if not isinstance(arrays, (list, tuple)) or not arrays:
        raise TypeError("arrays must be a non-empty list of 2-D CuPy arrays, one per group")
    for i, a in enumerate(arrays):
        if getattr(a, "ndim", None) != 2 or type(a).__module__.split(".")[0] != "cupy":
            raise TypeError(f"group {i}: expected a 2-D CuPy array, got {type(a).__name__} "
                            f"of shape {getattr(a, 'shape', None)}")
        if a.dtype != arrays[0].dtype:
            raise ValueError(f"group {i} is {a.dtype} but group 0 is {arrays[0].dtype}: groups share the "
                             "base descriptor's element type")


def grouped_load(arrays, box_shape, mode: int):
    """Load box (0, 0) of every group (2-D CuPy arrays of one dtype, any shapes and row strides)
    with descriptors from ``mode`` (:data:`MODES`). Returns ``(tiles, cycles)``: ``tiles[g]`` the
    box's bytes as the group's dtype, shaped ``box_shape``; ``cycles[g]`` clock64 cycles from
    the CTA's start to the box's arrival (descriptor work + load latency)."""
    import cupy as cp
    _check_groups(arrays)
    rules.require(isinstance(mode, (int, np.integer)) and not isinstance(mode, bool) and mode in MODES,
                  f"mode must be one of {sorted(MODES)} ({MODES}), got {mode!r}")
    G = len(arrays)
    rules.require(mode != 3 or G <= BYVALUE_MAX, f"mode 3 passes descriptors by value in a {BYVALUE_MAX}-slot "
                  f"parameter struct: at most {BYVALUE_MAX} groups, got {G} (the parameter space is the limit)")
    base = make_spec(arrays[0], box_shape)
    rules.require(base.box_bytes <= TILE_BYTES, f"a box of {base.box_bytes} B exceeds the kernel's "
                  f"{TILE_BYTES}-B tile")
    specs = [update.group_spec(base, a.data.ptr, a.shape, a.strides) for a in arrays]
    groups = np.zeros(G, GROUP)
    for g, (a, s) in enumerate(zip(arrays, specs)):
        groups[g] = (a.data.ptr, a.shape[0], a.shape[1], a.strides[0])
    slots = cp.zeros((G, 128), dtype=cp.uint8)
    if mode == 2:
        slots.set(np.stack([encode(s).view(np.uint8) for s in specs]))
    byval = np.zeros(BYVALUE_MAX * 128, np.uint8)
    if mode == 3:
        for g, s in enumerate(specs):
            byval[g * 128:(g + 1) * 128] = encode(s).view(np.uint8)
    out = cp.empty(G * base.box_bytes, dtype=cp.uint8)
    cycles, status = cp.zeros(G, dtype=cp.int64), _status()
    k = _module().get_function("grouped_load_updated")
    k((G,), (128,), (encode(base), byval.view(f"V{byval.size}"), cp.asarray(groups.view(np.uint8)), slots,
                     np.int32(mode), np.uint32(base.box_bytes), out, cycles, status, np.uint64(TIMEOUT_NS)))
    _raise_on_timeout(status, f"mode {mode}: a group's box never arrived")
    tiles = out.view(arrays[0].dtype).reshape((G, *box_shape))
    return tiles, cycles.get()


RACE_FLAGS = {"release": 1, "acquire": 2, "in_flight": 4}


def update_race(x, y, box_shape, *, release: bool, acquire: bool, in_flight: bool = False, ctas: int = 132):
    """Each of ``ctas`` CTAs loads box (0, 0) through a host-encoded descriptor of ``x``, replaces the
    descriptor's address with ``y``'s in global memory (``release`` / ``acquire``: which proxy
    fences follow; ``in_flight``: replace before the first load has landed), loads again.
    Returns ``{"load1": {"x": n, "y": n, "other": n}, "load2": {...}}``: how many CTAs saw each."""
    import cupy as cp
    _check_groups([x, y])
    rules.require(x.shape == y.shape and x.strides == y.strides, "x and y must have the same shape and strides: "
                  "only the address is replaced")
    rules.in_range("ctas", ctas, 1, 65535)
    spec = make_spec(x, box_shape)
    rules.require(spec.box_bytes <= RACE_TILE_BYTES, f"a box of {spec.box_bytes} B exceeds the kernel's "
                  f"{RACE_TILE_BYTES}-B tiles")
    bx, by = (cp.ascontiguousarray(a[tuple(slice(0, n) for n in box_shape)]).view(cp.uint8).get().ravel()
              for a in (x, y))
    rules.require(not np.array_equal(bx, by), "x and y hold the same first box: the race could not be seen")
    slots = cp.asarray(np.tile(encode(spec).view(np.uint8), (ctas, 1)))
    flags = (RACE_FLAGS["release"] * bool(release) | RACE_FLAGS["acquire"] * bool(acquire)
             | RACE_FLAGS["in_flight"] * bool(in_flight))
    out, status = cp.empty(ctas * 2 * spec.box_bytes, dtype=cp.uint8), _status()
    _module().get_function("update_race")((ctas,), (128,), (slots, np.uint64(y.data.ptr), np.int32(flags),
                                                            np.uint32(spec.box_bytes), out, status,
                                                            np.uint64(TIMEOUT_NS)))
    _raise_on_timeout(status, "a load through the updated descriptor never arrived")
    seen = out.get().reshape(ctas, 2, spec.box_bytes)
    result = {}
    for i, name in enumerate(("load1", "load2")):
        is_x = (seen[:, i] == bx).all(1)
        is_y = (seen[:, i] == by).all(1)
        result[name] = {"x": int(is_x.sum()), "y": int(is_y.sum()), "other": int((~is_x & ~is_y).sum())}
    return result


def reduce_add(c, partials, box_shape):
    """Add each fp32 partial (``partials``: (S, M, N) CuPy float32) into ``c`` (M, N) float32 with
    TMA reduce-add stores of ``box_shape`` boxes (at most 64 x 64), one CTA per (box, split).
    ``M`` and ``N`` must be multiples of the box. Returns ``c``."""
    _check_groups([c])
    rules.reduce_add_dtype(c.dtype.name)          # the instruction's rule first, then this kernel's
    rules.require(c.dtype == np.float32 and getattr(partials, "dtype", None) == np.float32,
                  "c and partials must be float32 (the kernel adds fp32 tiles)")
    rules.require(getattr(partials, "ndim", 0) == 3 and partials.shape[1:] == c.shape,
                  f"partials must be (splits, {c.shape[0]}, {c.shape[1]}), got {getattr(partials, 'shape', None)}")
    by, bx = rules.ints("box_shape", box_shape)
    rules.require(1 <= bx <= 64 and 1 <= by <= 64, f"box {box_shape} exceeds the kernel's 64 x 64 fp32 tile")
    M, N = c.shape
    rules.require(M % by == 0 and N % bx == 0, f"C {c.shape} is not a whole number of {box_shape} boxes")
    spec = make_spec(c, box_shape)
    import cupy as cp
    tiles_x, S = N // bx, partials.shape[0]
    # the kernel reads partial tile t of split s as box_x * box_y contiguous floats
    boxes = cp.ascontiguousarray(partials.reshape(S, M // by, by, tiles_x, bx).transpose(0, 1, 3, 2, 4))
    _module().get_function("splitk_reduce_add")(((M // by) * tiles_x, S), (128,),
                                                (encode(spec), boxes, np.int32(tiles_x), np.int32(bx), np.int32(by),
                                                 np.int64(M * N)))
    cp.cuda.get_current_stream().synchronize()
    return c
