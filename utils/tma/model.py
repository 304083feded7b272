"""A NumPy model of TMA tile loads, stores and reduce-adds, exact to the byte.

Conventions (one for the whole course):
  * ``coords`` and ``box_shape`` are in ARRAY order (outermost axis first, like
    ``arr.shape``). The kernel's PTX coordinates are the same numbers reversed.
  * The model checks the same rules as the validator (``make_spec``) and the runtime
    (``runtime.check_coords``), with the same messages: they all call :mod:`.rules`. So the
    global array must be one TMA could describe (NumPy array, TMA dtype, innermost axis
    contiguous, 16-B aligned, strides multiples of 16 B), and every box coordinate fits in
    int32 with the innermost one at a 16-byte boundary. Loads follow the array's strides, even
    broadcast (stride 0) or overlapping ones, as the hardware does; a store target must give
    every element its own address.
  * A LOAD may start below 0 or run past the end: those elements are out of bounds (OOB)
    and are filled (zero, or NaN for ``oob_fill="nan"``). A STORE or reduce-add must start
    at coordinates >= 0 (measured on H200: a store box starting below 0 stops the kernel with
    "illegal instruction"); the part of its box past the end is skipped.
  * ``element_strides[i]`` keeps every i-th element along axis i, giving
    ceil(box/estride) elements. The innermost axis is never strided (the driver
    ignores elementStrides[0] with interleave "none"), so its entry is ignored.
  * In shared memory the tile is dense, innermost axis fastest, at a base
    aligned to the swizzle repeat; then :mod:`.swizzle` moves the 16-B chunks.
  * NaN fill uses NumPy's NaN; the hardware's "OOB-NaN" bit pattern may differ.
"""
from __future__ import annotations

from typing import NamedTuple

import numpy as np

from . import rules
from .descriptor import TensorMapSpec, array_info
from .swizzle import row_pitch, smem_offsets, swizzle_span


def _global(global_array) -> tuple:
    """The global tensor: a NumPy array that passes every tensor rule (same text as make_spec).
    Returns ``(array, dims, strides)``, the last two in driver order."""
    if not isinstance(global_array, np.ndarray):
        raise TypeError(f"the TMA model reads a NumPy array (host memory standing for the global tensor), "
                        f"got {type(global_array).__name__}")
    info = array_info(global_array)
    return (global_array,) + rules.tensor(info.shape, info.strides_bytes, info.dtype, info.address)


def _box_args(global_array, box, element_strides, oob_fill, swizzle="none"):
    """Check the tensor and the box; return (array, box, element_strides, oob_fill) in array order."""
    a = _global(global_array)[0]
    if isinstance(box, TensorMapSpec):
        if element_strides is not None or oob_fill is not None:
            raise ValueError("give either a TensorMapSpec or element_strides/oob_fill, not both")
        if box.array_shape != a.shape or box.dtype != a.dtype.name:
            raise ValueError(f"spec describes a {box.array_shape} {box.dtype} tensor but the array is "
                             f"{a.shape} {a.dtype.name}")
        rules.swizzle_inner(box.inner_box_bytes, swizzle)
        return a, box.array_box_shape, box.array_element_strides, box.oob_fill
    box, es = rules.box(box, a.itemsize, element_strides=element_strides, swizzle=swizzle, rank_=a.ndim)
    fill = "zero" if oob_fill is None else oob_fill
    rules.oob_fill(fill, a.dtype.name)
    return a, box, es, fill


def _positions(shape, box, coords, es):
    """Global index of every tile element (one broadcast array per axis) and the in-bounds mask."""
    rank = len(shape)
    es = tuple(es[:-1]) + (1,)                     # innermost axis is never strided
    index, mask = [], np.ones((1,) * rank, dtype=bool)
    for axis, (n, b, c, e) in enumerate(zip(shape, box, coords, es)):
        i = (c + e * np.arange(-(-b // e))).reshape([-1 if k == axis else 1 for k in range(rank)])
        index.append(i)
        mask = mask & (i >= 0) & (i < n)           # broadcasting builds the full box mask
    index = np.broadcast_arrays(*index)
    return index, np.broadcast_to(mask, index[0].shape)


def tma_load(global_array, box, coords, *, element_strides=None, oob_fill=None) -> np.ndarray:
    """The tile a TMA load of the box at ``coords`` delivers (logical view, no swizzle).

    ``box`` is a box shape (array order) or a TensorMapSpec (which then also
    supplies element strides and OOB fill). Shape: ceil(box/estride) per axis.
    """
    return _load(global_array, box, coords, element_strides, oob_fill, "none")


def _load(global_array, box, coords, element_strides, oob_fill, swizzle):
    """Check tensor, box (with ``swizzle``), fill and coordinates in make_spec's order; load."""
    a, box, es, fill = _box_args(global_array, box, element_strides, oob_fill, swizzle)
    coords = rules.coords(coords, a.ndim, a.itemsize)
    index, mask = _positions(a.shape, box, coords, es)
    tile = np.full(mask.shape, np.nan if fill == "nan" else 0, dtype=a.dtype)
    tile[mask] = a[tuple(i[mask] for i in index)]
    return tile


def smem_image(tile, swizzle_mode: str = "none") -> np.ndarray:
    """Raw shared-memory bytes (uint8) of ``tile`` as TMA lays it out.

    Rows are :func:`row_pitch` apart (a swizzled row fills a whole swizzle span), chunks are
    swizzled; the length is rows x pitch, rounded up to a 128-B line when swizzled. Bytes TMA
    would not write are 0; :func:`smem_positions` says which bytes it writes.
    """
    tile = np.ascontiguousarray(tile)
    where = smem_positions(tile.shape, tile.itemsize, swizzle_mode)
    raw = tile.reshape(-1).view(np.uint8)
    rows = raw.size // (tile.shape[-1] * tile.itemsize)
    size = rows * row_pitch(tile.shape[-1] * tile.itemsize, swizzle_mode)
    if swizzle_span(swizzle_mode):
        size = -(-size // 128) * 128
    image = np.zeros(size, dtype=np.uint8)
    image[where] = raw
    return image


def smem_positions(tile_shape, elem_size: int, swizzle_mode: str = "none") -> np.ndarray:
    """The smem byte offset of every byte of a tile (in the tile's C order): where TMA writes.
    The tile follows the box rules (rank 1..5, every extent 1..256, 16-B inner rows, swizzle span)."""
    elem_size = rules.elem_size(elem_size)
    tile_shape = rules.ints("tile_shape", tile_shape)
    rules.rank(len(tile_shape))
    rules.box(tile_shape, elem_size, swizzle=swizzle_mode, name="tile_shape")
    first = smem_offsets(tile_shape, elem_size, swizzle_mode).reshape(-1, 1)
    return (first + np.arange(elem_size)[None, :]).reshape(-1)


def smem_bytes(global_array, box, coords, *, element_strides=None, oob_fill=None, swizzle=None) -> np.ndarray:
    """The exact shared-memory byte image of a TMA load: :func:`tma_load` then :func:`smem_image`.

    ``swizzle=None`` means the spec's swizzle when ``box`` is a TensorMapSpec, else "none".
    """
    if swizzle is None:
        swizzle = box.swizzle if isinstance(box, TensorMapSpec) else "none"
    return smem_image(_load(global_array, box, coords, element_strides, oob_fill, swizzle), swizzle)


def _store(global_array, tile, coords, combine, reduce=False):
    """Check in store_box's order (tensor, reduce-add dtype, box = tile shape, dtype, distinct
    elements, store coordinates); then combine."""
    a, dims, strides = _global(global_array)
    if reduce:
        rules.reduce_add_dtype(a.dtype.name)
    tile = np.asarray(tile)
    rules.box(tile.shape, a.itemsize, rank_=a.ndim)
    rules.same_dtype(tile.dtype.name, a.dtype.name)
    rules.distinct_elements(dims, strides, a.itemsize)
    coords = rules.coords(coords, a.ndim, a.itemsize, store=True)
    index, mask = _positions(a.shape, tile.shape, coords, (1,) * a.ndim)
    out = a.copy()
    where = tuple(i[mask] for i in index)
    out[where] = combine(out[where], tile[mask])
    return out, int(mask.sum())


def tma_store(global_array, tile, coords):
    """Write ``tile`` at ``coords`` into a copy of ``global_array``; OOB elements are not written.

    Returns ``(new_array, elements_written)``.
    """
    return _store(global_array, tile, coords, lambda old, new: new)


def tma_reduce_add(global_array, tile, coords):
    """Like :func:`tma_store` but adds (``cp.reduce.async.bulk.tensor ... .add``); OOB skipped.
    Only the element types the instruction adds are accepted (:data:`.rules.REDUCE_ADD_DTYPES`).

    Returns ``(new_array, elements_updated)``.
    """
    return _store(global_array, tile, coords, lambda old, new: old + new, reduce=True)


class Traffic(NamedTuple):
    """Data moved by one TMA box operation (elements and bytes)."""
    tile_elements: int   # elements in the smem tile
    in_bounds: int       # elements read from (load) or written to (store) global memory
    oob: int             # elements filled (load) or dropped (store)
    global_bytes: int    # in_bounds * element size
    smem_bytes: int      # tile_elements * element size: the load's expect_tx count


def tma_traffic(global_shape, box_shape, coords, elem_size: int, *, element_strides=None) -> Traffic:
    """Count what a TMA box at ``coords`` moves: in-bounds vs OOB elements and the bytes on each side.
    The shape, box and coordinates must pass the same rules as a real load."""
    shape = rules.global_shape("global_shape", global_shape)
    rank = len(shape)
    elem_size = rules.elem_size(elem_size)
    box, es = rules.box(box_shape, elem_size, element_strides=element_strides, rank_=rank)
    coords = rules.coords(coords, rank, elem_size)
    _, mask = _positions(shape, box, coords, es)
    n, inside = mask.size, int(mask.sum())
    return Traffic(n, inside, n - inside, inside * elem_size, n * elem_size)
