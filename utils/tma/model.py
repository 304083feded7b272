"""A NumPy model of TMA tile loads, stores and reduce-adds, exact to the byte.

Conventions (one for the whole course):
  * ``coords`` and ``box_shape`` are in ARRAY order (outermost axis first, like
    ``arr.shape``). The kernel's PTX coordinates are the same numbers reversed.
  * Coordinates may be negative or run past the end: those elements are out of
    bounds (OOB). A load fills them (zero, or NaN for ``oob_fill="nan"``); a
    store or reduce-add skips them.
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

from .descriptor import TensorMapSpec, _check_ints
from .swizzle import apply_swizzle, check_mode, row_pitch, smem_offsets, swizzle_span


def _ints(name, values, rank):
    """Check a tuple of ints (TypeError) of length ``rank`` (ValueError)."""
    values = _check_ints(name, values)
    if len(values) != rank:
        raise ValueError(f"{name} {values} has {len(values)} entries but the tensor has rank {rank}")
    return values


def _box_args(global_array, box, element_strides, oob_fill):
    """Resolve (box, element_strides, oob_fill) in array order from a spec or from plain arguments."""
    a = np.asarray(global_array)
    if not 1 <= a.ndim <= 5:
        raise ValueError(f"rank {a.ndim} is outside 1..5: TMA tensors have 1 to 5 dimensions")
    if isinstance(box, TensorMapSpec):
        if element_strides is not None or oob_fill is not None:
            raise ValueError("give either a TensorMapSpec or element_strides/oob_fill, not both")
        if box.array_shape != a.shape:
            raise ValueError(f"spec describes shape {box.array_shape} but the array has shape {a.shape}")
        return a, box.array_box_shape, box.array_element_strides, box.oob_fill
    box = _ints("box_shape", box, a.ndim)
    es = (1,) * a.ndim if element_strides is None else _ints("element_strides", element_strides, a.ndim)
    for axis, (b, e) in enumerate(zip(box, es)):
        if not 1 <= b <= 256:
            raise ValueError(f"box dimension {b} (array axis {axis}) must be in 1..256")
        if not 1 <= e <= 8:
            raise ValueError(f"element stride {e} (array axis {axis}) is outside 1..8")
    if box[-1] * a.itemsize % 16:
        raise ValueError(f"inner box is {box[-1] * a.itemsize} B, not a multiple of 16 B")
    return a, box, es, oob_fill or "zero"


def _positions(shape, box, coords, es):
    """Global index of every tile element (one broadcast array per axis) and the in-bounds mask."""
    rank = len(shape)
    es = tuple(es[:-1]) + (1,)                     # innermost axis is never strided
    coords = _ints("coords", coords, rank)
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
    a, box, es, fill = _box_args(global_array, box, element_strides, oob_fill)
    if fill not in ("zero", "nan"):
        raise ValueError(f"oob_fill {fill!r} is not one of ('zero', 'nan')")
    if fill == "nan" and not np.issubdtype(a.dtype, np.floating):
        raise ValueError(f"oob_fill 'nan' needs a float dtype, got {a.dtype}")
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
    """The smem byte offset of every byte of a tile (in the tile's C order): where TMA writes."""
    check_mode(swizzle_mode)
    inner = tile_shape[-1] * elem_size
    span = swizzle_span(swizzle_mode)
    if span and (inner > span or inner % 16):
        raise ValueError(f"inner box is {inner} B but SWIZZLE_{swizzle_mode} needs a multiple of 16 B, "
                         f"at most {span} B")
    first = smem_offsets(tile_shape, elem_size, swizzle_mode).reshape(-1, 1)
    return (first + np.arange(elem_size)[None, :]).reshape(-1)


def smem_bytes(global_array, box, coords, *, element_strides=None, oob_fill=None, swizzle=None) -> np.ndarray:
    """The exact shared-memory byte image of a TMA load: :func:`tma_load` then :func:`smem_image`.

    ``swizzle=None`` means the spec's swizzle when ``box`` is a TensorMapSpec, else "none".
    """
    if swizzle is None:
        swizzle = box.swizzle if isinstance(box, TensorMapSpec) else "none"
    return smem_image(tma_load(global_array, box, coords, element_strides=element_strides,
                               oob_fill=oob_fill), swizzle)


def _store(global_array, tile, coords, combine):
    a, tile = np.asarray(global_array), np.asarray(tile)
    if tile.ndim != a.ndim:
        raise ValueError(f"tile has rank {tile.ndim} but the global tensor has rank {a.ndim}")
    if tile.dtype != a.dtype:
        raise ValueError(f"tile dtype {tile.dtype} differs from global dtype {a.dtype}: "
                         "TMA copies bytes, it does not convert")
    if any(int(c) < 0 for c in coords):
        raise ValueError(f"store coordinates {tuple(coords)} start below 0: a TMA store box must "
                         "start inside the tensor (measured on H200: a negative start coordinate "
                         "stops the kernel with 'illegal instruction'); loads may start below 0")
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

    Returns ``(new_array, elements_updated)``.
    """
    return _store(global_array, tile, coords, lambda old, new: old + new)


class Traffic(NamedTuple):
    """Data moved by one TMA box operation (elements and bytes)."""
    tile_elements: int   # elements in the smem tile
    in_bounds: int       # elements read from (load) or written to (store) global memory
    oob: int             # elements filled (load) or dropped (store)
    global_bytes: int    # in_bounds * element size
    smem_bytes: int      # tile_elements * element size: the load's expect_tx count


def tma_traffic(global_shape, box_shape, coords, elem_size: int, *, element_strides=None) -> Traffic:
    """Count what a TMA box at ``coords`` moves: in-bounds vs OOB elements and the bytes on each side."""
    rank = len(global_shape)
    es = (1,) * rank if element_strides is None else _ints("element_strides", element_strides, rank)
    box = _ints("box_shape", box_shape, rank)
    _, mask = _positions(tuple(global_shape), box, coords, es)
    n, inside = mask.size, int(mask.sum())
    return Traffic(n, inside, n - inside, inside * elem_size, n * elem_size)
