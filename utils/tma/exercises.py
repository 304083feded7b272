"""Exercise checks for ``day05_tma/02_descriptors_cupy``: each tests a learner's function on
fresh random cases against the validated descriptor and the TMA model, and rejects wrong
answers with a hint. Stubs (``NotImplementedError``) are reported as "not attempted".

Every check runs ALL its cases first (ranks 1-5, element sizes 1-8, boxes that do not divide
the tensor), then reports the first wrong one; a hint that names a cause is given only when the
answers match that mistake on every case, so a hint is never a guess from one coincidence."""
from __future__ import annotations

import random

import numpy as np

from ..core.checks import NOT_ATTEMPTED, CheckFailed, fail, int_answer, is_int, not_attempted, passed
from .descriptor import ArrayInfo, make_spec
from .swizzle import element_offset


DTYPE_OF_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def _info(shape, itemsize):
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape)))
    return ArrayInfo(tuple(shape), strides, DTYPE_OF_SIZE[itemsize], 0)


def _ints(part) -> tuple | None:
    """``part`` as a tuple of ints (one type rule: :func:`utils.core.checks.is_int`), else None."""
    if isinstance(part, (str, bytes, dict)):
        return None
    try:
        vals = tuple(part)
    except TypeError:
        return None
    return tuple(int(v) for v in vals) if all(is_int(v) for v in vals) else None


def _answers(name, fn, cases, tried: str):
    """``fn(*case)`` for every case: a list of answers, or NOT_ATTEMPTED if the first call is a
    stub. A learner's exception becomes a failure naming the case (chained: its traceback shows);
    ``tried`` says what the cases vary, for the hint."""
    if not callable(fn):
        raise CheckFailed(f"[{name}] expected a function, got {type(fn).__name__}: pass the function "
                          "itself, without calling it")
    out = []
    for k, case in enumerate(cases):
        try:
            out.append(fn(*case))
        except NotImplementedError:
            if k == 0:
                return NOT_ATTEMPTED
            fail(name, f"fn{case} raised NotImplementedError, but fn{cases[0]} returned an answer",
                 f"every case must be answered: the check tries {tried}")
        except CheckFailed:
            raise
        except Exception as e:
            fail(name, f"fn{case} raised {type(e).__name__}: {e}", f"the check tries {tried}, not only "
                 "the notebook's example: does your code assume one of them?")
    return out


def _same_mistake(got: list, model: list) -> bool:
    """The learner's answers equal a mistake's on every case (so its hint is the true cause)."""
    return len(got) == len(model) and all(np.array_equal(g, m) for g, m in zip(got, model))


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


def check_encode_args(fn) -> None:
    """``fn(shape, itemsize, box_shape)`` must return ``(global_dims, global_strides_bytes,
    box_dims)`` in the DRIVER's order (innermost first; strides without dimension 0)."""
    name = "encode_args"
    cases = encode_cases(random.Random())
    got = _answers(name, fn, cases, "ranks 1 to 5, element sizes 1 to 8 and boxes that do not divide "
                   "the shape")
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    answers = []
    for (shape, size, box), ans in zip(cases, got):
        parts = tuple(_ints(p) for p in ans) if isinstance(ans, (tuple, list)) and len(ans) == 3 else None
        if parts is None or None in parts:
            floats = isinstance(ans, (tuple, list)) and any(
                isinstance(v, (float, np.floating)) for p in ans if np.iterable(p) for v in p)
            fail(name, f"for shape {shape}: expected three tuples of ints (dims, strides in bytes, box "
                 f"dims), got {ans!r}", "those are floats: a dimension or a stride is an int (use // or "
                 "int(...))" if floats else "a rank-1 tensor has no strides to list: an empty tuple ()"
                 if len(shape) == 1 else "e.g. return dims, strides, box  (three tuples or lists)")
        answers.append(parts)
    for (shape, size, box), parts in zip(cases, answers):
        spec = make_spec(_info(shape, size), box)
        want = (spec.global_dims, spec.global_strides_bytes, spec.box_dims)
        if parts == want:
            continue
        k = next(i for i in range(3) if parts[i] != want[i])
        hint = "dims, strides (bytes, without the innermost) and box, all innermost first"
        for j, (part, _, why) in enumerate(encode_mistakes(shape, size, box)):
            model = [encode_mistakes(*c)[j][1] for c in cases]
            if part == k and _same_mistake([a[k] for a in answers], model):
                hint = why
                break
        fail(name, f"shape {shape}, {size}-byte elements, box {box}: got {tuple(parts)}, "
             f"expected {want}", hint)
    return passed(name, "the driver's order is innermost first.")


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


def check_expect_tx(fn) -> None:
    """``fn(box_shape, itemsize, element_strides)`` must return the bytes one TMA load delivers."""
    name = "expect_tx_bytes"
    cases = expect_tx_cases(random.Random())
    got = _answers(name, fn, cases, "ranks 1 to 5, element sizes 1 to 8 and element strides 1 to 8")
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    got = [int_answer(name, g, f"box {box}, element strides {es}: the answer", "a number of bytes")
           for (box, _, es), g in zip(cases, got)]
    for (box, size, es), mine in zip(cases, got):
        shape = tuple(b * 2 for b in box[:-1]) + (box[-1] * 2,)
        want = make_spec(_info(shape, size), box, element_strides=es).box_bytes
        if mine != want:
            hint = next((why for j, (_, why) in enumerate(expect_tx_mistakes(box, size, es))
                         if _same_mistake(got, [expect_tx_mistakes(*c)[j][0] for c in cases])),
                        "bytes = product over OUTER dims of ceil(box / stride), times box[-1], "
                        "times the element size")
            fail(name, f"box {box}, {size}-byte elements, element strides {es}: got {mine}, "
                 f"expected {want}", hint)
    return passed(name, "and at the tensor's edge it is the same: out-of-bounds bytes count too.")


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


def check_swizzle_offset(fn) -> None:
    """``fn(r, c, elem_size)``: byte offset of element (r, c) of a tile with 128-byte rows
    under SWIZZLE_128B, compared with the model for every element of 16-row tiles of 1-, 2-, 4-
    and 8-byte elements."""
    name = "swizzle_128b_offset"
    tiles, cases = {}, []
    for size in SWIZZLE_SIZES:
        cases += [(i, j, size) for i in range(16) for j in range(128 // size)]
    got = _answers(name, fn, cases, "every element of tiles of 1-, 2-, 4- and 8-byte elements")
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    for (i, j, size), g in zip(cases, got):
        tiles.setdefault(size, np.zeros((16, 128 // size), np.int64))[i, j] = \
            int_answer(name, g, f"fn({i}, {j}, {size})")
    for size in SWIZZLE_SIZES:
        r, c = np.meshgrid(np.arange(16), np.arange(128 // size), indexing="ij")
        want = element_offset(r, c, size, 128, "128B")
        wrong = np.argwhere(tiles[size] != want)
        if wrong.size:
            i, j = wrong[0]
            hint = next((why for k, (_, why) in enumerate(swizzle_mistakes(size))
                         if _same_mistake([tiles[s] for s in SWIZZLE_SIZES],
                                          [swizzle_mistakes(s)[k][0] for s in SWIZZLE_SIZES])),
                        "offset = row*128 + ((chunk ^ (row % 8)) * 16) + byte in chunk, "
                        "with chunk = c * elem_size // 16")
            fail(name, f"element ({i}, {j}) of a {size}-byte-element tile: got {tiles[size][i, j]}, "
                 f"expected {want[i, j]}", hint)
    return passed(name, "the same XOR the hardware applies.")


# The store-kernel exercise lives in its own module; notebooks and tests reach it through this one.
from .store_check import (STORE_KERNEL, STORE_STUB, c_tokens, check_store_kernel,  # noqa: E402,F401
                          store_kernel_problems)
