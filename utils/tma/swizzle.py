"""Hopper TMA shared-memory swizzle, exact to the byte.

The swizzle is a function of the shared-memory *byte address*. It moves whole
16-byte chunks and never splits one:

    SWIZZLE_32B :  bit  4    ^= bit  7       (pattern repeats every  256 B)
    SWIZZLE_64B :  bits 4..5 ^= bits 7..8    (pattern repeats every  512 B)
    SWIZZLE_128B:  bits 4..6 ^= bits 7..9    (pattern repeats every 1024 B)

In words: cut shared memory into 128-byte lines of eight 16-B chunks; the chunk
index inside a line (bits 4..6) is XORed with the line index mod 2 / 4 / 8.
This is CuTe's ``Swizzle<B,4,3>`` with B = 1 / 2 / 3 applied to byte offsets.

Sources followed:
  * PTX ISA, section "Tensor swizzling modes" (5.5.7): the 8-chunk-per-row
    tables for 32B / 64B / 128B swizzle and the 256 / 512 / 1024-B alignment
    at which the repeating pattern starts;
  * CUTLASS ``include/cute/atom/copy_traits_sm90_tma_swizzle.hpp``
    (``get_tma_swizzle_bits``: ``Swizzle<3,4,3>`` -> SWIZZLE_128B, ``<2,4,3>``
    -> 64B, ``<1,4,3>`` -> 32B) and ``cute/swizzle.hpp`` (``offset ^
    ((offset & yyy_mask) >> 3)`` with ``yyy_mask = ((1 << B) - 1) << 7``).
Both give the same permutation; the tests check it against the PTX tables.
"""
from __future__ import annotations

import numpy as np

SWIZZLE_MODES = ("none", "32B", "64B", "128B")
_BITS = {"none": 0, "32B": 1, "64B": 2, "128B": 3}


def check_mode(mode: str) -> str:
    """Return ``mode`` if it is one of "none", "32B", "64B", "128B", else raise ValueError."""
    if mode not in _BITS:
        raise ValueError(f"swizzle {mode!r} is not one of {SWIZZLE_MODES}")
    return mode


def swizzle_span(mode: str) -> int:
    """Swizzle width in bytes (0 for "none"): the largest inner box row the mode allows."""
    return 0 if check_mode(mode) == "none" else 16 << _BITS[mode]


def repeat_bytes(mode: str) -> int:
    """Bytes after which the pattern repeats (256 / 512 / 1024; 0 for "none").

    The shared-memory tile must start at a multiple of this for the pattern to
    begin at its first row (PTX ISA 5.5.7).
    """
    return 0 if check_mode(mode) == "none" else 128 << _BITS[mode]


def apply_swizzle(offset, mode: str, base: int = 0):
    """Physical byte offset of logical byte ``offset`` of a tile starting at smem address ``base``.

    ``offset`` may be an int or an integer array. The XOR reads address bits,
    so a ``base`` that is not a multiple of :func:`repeat_bytes` shifts the
    pattern (what happens when a swizzled tile is misaligned). Swizzling twice
    gives back the input when ``base`` is aligned: the map is its own inverse.
    """
    bits = _BITS[check_mode(mode)]
    address = np.asarray(offset, dtype=np.int64) + base
    chunk_mask = ((1 << bits) - 1) << 4           # the chunk-index bits that get flipped
    result = (address ^ ((address >> 3) & chunk_mask)) - base
    return int(result) if result.ndim == 0 else result


def swizzled_offset(row, col_byte, mode: str, row_bytes: int = 128):
    """Where byte ``col_byte`` of tile row ``row`` lands, for rows of ``row_bytes`` bytes.

    With the default 128-byte rows and "128B": row 1, chunk 0 (col_byte 0) lands
    at 128 + 16; row 7, chunk 7 (col_byte 112) lands at 7*128 + 0.
    """
    return apply_swizzle(np.asarray(row) * row_bytes + np.asarray(col_byte), mode)


def element_offset(r, c, elem_size: int, row_bytes: int, mode: str):
    """Byte offset in smem of element (r, c) of a dense 2-D tile with ``row_bytes``-byte rows."""
    return swizzled_offset(r, np.asarray(c) * elem_size, mode, row_bytes)


def row_pitch(inner_bytes: int, mode: str) -> int:
    """Bytes between consecutive box rows in smem. Unswizzled boxes are dense; a swizzled box
    row always occupies a whole swizzle span, even when the box's inner extent is narrower
    (measured on H200: a 64-B fp16 row under SWIZZLE_128B starts every 128 B)."""
    span = swizzle_span(mode)
    return max(inner_bytes, span) if span else inner_bytes


def smem_offsets(tile_shape, elem_size: int, mode: str) -> np.ndarray:
    """Byte offset of every element of a tile (array order, innermost axis last) in smem.

    The box is stored innermost axis fastest, rows :func:`row_pitch` apart, starting at an
    aligned base; then the swizzle moves each 16-B chunk.
    """
    tile_shape = tuple(int(n) for n in tile_shape)
    inner = tile_shape[-1]
    rows = int(np.prod(tile_shape[:-1], dtype=np.int64))
    pitch = row_pitch(inner * elem_size, mode)
    linear = (np.arange(rows, dtype=np.int64)[:, None] * pitch
              + np.arange(inner, dtype=np.int64)[None, :] * elem_size)
    return apply_swizzle(linear.reshape(tile_shape), mode)


def bank_map(tile_shape, elem_size: int, mode: str) -> np.ndarray:
    """The 4-byte bank (0..31) holding the first byte of each tile element.

    Draw a column of it to see bank conflicts: with fp16 rows of 128 B and no
    swizzle every row's column c sits in the same bank.
    """
    return (smem_offsets(tile_shape, elem_size, mode) // 4) % 32


def bank_conflict_ways(byte_offsets) -> int:
    """How many shared-memory wavefronts one request for these byte addresses needs.

    Each address is one 4-byte word read by one thread. Threads reading the same
    word share it (broadcast); distinct words in the same bank serialize. So the
    answer is the largest number of distinct words in any one bank: 1 means
    conflict-free. (Wider 8/16-B loads are split into phases by the hardware;
    model each phase separately.)
    """
    words = np.unique(np.asarray(byte_offsets, dtype=np.int64).ravel() // 4)
    return int(np.bincount(words % 32, minlength=32).max()) if words.size else 0


def chunk_table(mode: str, rows: int = 8) -> np.ndarray:
    """The PTX-ISA style table: entry [row, j] = logical 16-B chunk stored at position j of 128-B line ``row``."""
    lines = np.arange(rows)[:, None] * 128 + np.arange(8)[None, :] * 16
    return (apply_swizzle(lines, mode) % 128) // 16
