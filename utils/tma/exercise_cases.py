"""The cases the descriptor exercises of ``day05_tma/02_descriptors_cupy`` try, and the slips their
hints name (:mod:`utils.tma.exercises` checks with them): each ``*_cases`` covers ranks 1-5,
element sizes 1-8 and boxes that do not divide the tensor; each ``*_mistakes`` gives, for one
case, the answer a known slip produces and what is wrong with it. A hint is chosen only when the
learner's answers equal a slip's on every case."""
from __future__ import annotations

import numpy as np

from .swizzle import element_offset


def _c_strides(shape, size):
    """Array-order byte strides of a contiguous ``shape``, without the innermost (rank - 1)."""
    return tuple(int(np.prod(shape[i + 1:])) * size for i in range(len(shape) - 1))


def encode_mistakes(shape, size, box) -> list:
    """(part, the value a known slip gives, why) for :func:`check_encode_args`: part 0 dims,
    1 strides, 2 box."""
    want = _c_strides(shape, size)[::-1]
    full = tuple(int(np.prod(shape[i + 1:])) * size for i in range(len(shape)))[::-1]   # with the innermost
    return [(0, tuple(shape), "the dimensions in array order: the driver lists them innermost first"),
            (1, _c_strides(shape, size), "the strides in array order: the driver lists them innermost first"),
            (1, tuple(s // size for s in want), "strides in elements: the driver wants BYTES"),
            (1, full, "that includes the innermost stride (always the element size): the driver "
             "leaves it out, rank - 1 strides"),
            (1, full[:-1], "that drops the OUTERMOST stride and keeps the innermost one (the element "
             "size): the driver leaves out the innermost, rank - 1 strides"),
            (1, tuple(s // size for s in _c_strides(shape, size)), "strides in elements and in array "
             "order: the driver wants BYTES, innermost first"),
            (1, _c_strides(box, size)[::-1], "those are the strides of the BOX: the global strides "
             "step through the whole tensor (its shape)"),
            (2, tuple(box), "box dims are innermost first too")]


def encode_cases(rng) -> list:
    """(shape, itemsize, box): every rank 1-5 and element size 1-8, boxes that do not divide the
    shape, inner and outer dims that differ, and random ones."""
    cases = [((3, 5, 8), 4, (1, 2, 4)), ((1000, 1736), 2, (64, 128)), ((37,), 8, (16,)),
             ((2, 3, 5, 7, 48), 1, (1, 2, 3, 4, 32)), ((6, 10, 24), 8, (3, 5, 4)), ((300, 20), 4, (7, 12)),
             ((9, 4, 11, 16), 2, (2, 3, 5, 8))]
    for _ in range(4):
        size = rng.choice((1, 2, 4, 8))
        rank, step = rng.randint(1, 5), 16 // size
        shape = tuple(rng.randint(1, 40) for _ in range(rank - 1)) + (step * rng.randint(1, 30),)
        box = tuple(rng.randint(1, min(n, 256)) for n in shape[:-1]) + (step * rng.randint(1, 4),)
        cases.append((shape, size, box))
    return cases


def expect_tx_mistakes(box, size, es) -> list:
    """(bytes, why) for the expect_tx answers that come from a known slip."""
    n = int(np.prod(box))
    outer = [(b, s) for b, s in zip(box[:-1], es[:-1])]
    return [(n, "that is elements, not bytes: multiply by the element size"),
            (int(np.prod([-(-b // s) for b, s in zip(box, es)])) * size,
             "the innermost element stride is ignored (interleave NONE): the whole "
             "inner row of box[-1] elements is loaded; only outer dimensions load "
             "ceil(box / stride) elements"),
            (n * size, "with element strides, each OUTER dimension loads ceil(box / stride) elements"),
            (int(np.prod([b // s for b, s in outer])) * box[-1] * size,
             "round up: a box of 5 with stride 2 loads elements 0, 2, 4 = ceil(5 / 2)"),
            (int(np.prod([-(-b // s) for b, s in zip(box[1:], es[1:])])) * box[0] * size,
             "box_shape and element_strides are in ARRAY order: the innermost dimension (whose "
             "stride is ignored) is the LAST one, box[-1]")]


def expect_tx_cases(rng) -> list:
    """(box, itemsize, element strides), array order: ranks 1-5, element sizes 1-8, strides that
    do and do not divide the box, a strided innermost dimension, and random ones."""
    cases = [((64, 64), 2, (1, 1)), ((128, 64), 4, (2, 1)), ((7, 5, 48), 1, (3, 2, 1)),
             ((64, 32), 2, (2, 2)), ((10, 24), 4, (3, 4)), ((5, 6, 16), 2, (2, 4, 2)),
             ((40,), 8, (3,)), ((3, 2, 7, 5, 32), 1, (2, 1, 3, 4, 5)), ((9, 12), 8, (4, 1))]
    for _ in range(4):
        rank, size = rng.randint(1, 5), rng.choice((1, 2, 4, 8))
        box = tuple(rng.randint(1, 20) for _ in range(rank - 1)) + ((16 // size) * rng.randint(1, 8),)
        cases.append((box, size, tuple(rng.randint(1, 8) for _ in range(rank))))
    return cases


SWIZZLE_SIZES = (2, 4, 1, 8)   # element sizes tried, fp16 first (the notebook's)


def swizzle_mistakes(size: int) -> list:
    """(offsets of a 16-row tile, why) for SWIZZLE_128B answers that come from a known slip."""
    r, c = np.meshgrid(np.arange(16), np.arange(128 // size), indexing="ij")
    byte = c * size
    chunk, within = byte // 16, byte % 16
    return [
        (r * 128 + byte, "that is the unswizzled offset: XOR the 16-byte chunk index with row % 8"),
        (element_offset(r, c, size, 128, "64B"), "that is SWIZZLE_64B (chunk ^ row % 4): the "
         "128-byte mode XORs with row % 8"),
        (element_offset(r, c, size, 128, "32B"), "that is SWIZZLE_32B (chunk ^ row % 2): the "
         "128-byte mode XORs with row % 8"),
        (r * 128 + ((chunk ^ r) * 16) + within, "XOR with row % 8, not the row: the pattern "
         "repeats every 8 rows (1024 B) and never leaves the row"),
        (r * 128 + ((chunk ^ (r % 8)) * 16), "add the byte's place inside its 16-byte chunk "
         "(byte % 16): the swizzle moves whole chunks"),
        (r * 128 + ((chunk ^ (r % 8)) * 16) + c % (16 // size), "the place inside the chunk is in "
         "BYTES (byte % 16), not in elements"),
        (r * 128 + ((c ^ (r % 8)) * size), "XOR the 16-byte chunk index (c * elem_size // 16), "
         "not the column: the swizzle moves whole 16-byte chunks"),
        (r * 128 + (((c // 8) ^ (r % 8)) * 16) + (c % 8) * size, "a 16-byte chunk holds 16 // "
         "elem_size elements (8 only for 2-byte elements): chunk = c * elem_size // 16"),
        ((r * 128 + chunk) ^ ((r % 8) * 16 + within), "in Python, ^ binds more loosely than + and *: "
         "parenthesise the XOR, (chunk ^ (r % 8)) * 16"),
        (element_offset(r, c, size, 128, "128B") // size, "return a BYTE offset, not elements")]
