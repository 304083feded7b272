"""Exercise checks for ``day05_tma/02_descriptors_cupy``: each tests a learner's function on
fresh random cases against the validated descriptor and the TMA model, and rejects wrong
answers with a hint. Stubs (``NotImplementedError``) are reported as "not attempted".

Every check runs ALL its cases first (ranks 1-5, element sizes 1-8, boxes that do not divide
the tensor), then reports the first wrong one; a hint that names a cause is given only when the
answers match that mistake on every case, so a hint is never a guess from one coincidence
(:mod:`utils.core.answers`). The cases and the slips are in :mod:`utils.tma.exercise_cases`; the
store-kernel exercise in :mod:`utils.tma.store_check` (both re-exported here)."""
from __future__ import annotations

import random

import numpy as np

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, CheckFailed, fail, int_answer, is_int, not_attempted, passed
from .descriptor import ArrayInfo, make_spec
from .exercise_cases import (SWIZZLE_SIZES, encode_cases, encode_mistakes, expect_tx_cases,  # noqa: F401
                             expect_tx_mistakes, swizzle_mistakes)
from .swizzle import element_offset
# The store-kernel exercise lives in its own module; notebooks and tests reach it through this one
from .store_check import STORE_KERNEL, STORE_STUB, c_tokens, check_store_kernel, store_kernel_problems  # noqa: F401


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
    """``fn(*case)`` for every case (:func:`utils.core.answers.answers`), or NOT_ATTEMPTED if the
    first call is a stub; a learner's exception, a later stub too, fails naming the case (chained:
    its traceback shows); ``tried`` says what the cases vary, for the hint."""
    if not callable(fn):
        raise CheckFailed(f"[{name}] expected a function, got {type(fn).__name__}: pass the function "
                          "itself, without calling it")

    def raised(case, e):
        if isinstance(e, NotImplementedError):
            return (f"fn{case} raised NotImplementedError, but fn{cases[0]} returned an answer",
                    f"every case must be answered: the check tries {tried}")
        return (f"fn{case} raised {type(e).__name__}: {e}", f"the check tries {tried}, not only the "
                "notebook's example: does your code assume one of them?")
    return answers(name, fn, cases, raised=raised, stub_first_only=True)


def check_encode_args(fn) -> None:
    """``fn(shape, itemsize, box_shape)`` must return ``(global_dims, global_strides_bytes,
    box_dims)`` in the DRIVER's order (innermost first; strides without dimension 0)."""
    name = "encode_args"
    cases = encode_cases(random.Random())
    got = _answers(name, fn, cases, "ranks 1 to 5, element sizes 1 to 8 and boxes that do not divide "
                   "the shape")
    if got is NOT_ATTEMPTED:
        return not_attempted(name)
    parts_all = []
    for (shape, size, box), ans in zip(cases, got):
        parts = tuple(_ints(p) for p in ans) if isinstance(ans, (tuple, list)) and len(ans) == 3 else None
        if parts is None or None in parts:
            floats = isinstance(ans, (tuple, list)) and any(
                isinstance(v, (float, np.floating)) for p in ans if np.iterable(p) for v in p)
            fail(name, f"for shape {shape}: expected three tuples of ints (dims, strides in bytes, box "
                 f"dims), got {ans!r}", "those are floats: a dimension or a stride is an int (use // or "
                 "int(...))" if floats else "a rank-1 tensor has no strides to list: an empty tuple ()"
                 if len(shape) == 1 else "e.g. return dims, strides, box  (three tuples or lists)")
        parts_all.append(parts)
    for (shape, size, box), parts in zip(cases, parts_all):
        spec = make_spec(_info(shape, size), box)
        want = (spec.global_dims, spec.global_strides_bytes, spec.box_dims)
        if parts == want:
            continue
        k = next(i for i in range(3) if parts[i] != want[i])
        slips = [(lambda *c, j=j: encode_mistakes(*c)[j][1], why)
                 for j, (part, _, why) in enumerate(encode_mistakes(shape, size, box)) if part == k]
        hint = named_mistake([a[k] for a in parts_all], cases, slips, "dims, strides (bytes, without the "
                             "innermost) and box, all innermost first", same=np.array_equal)
        fail(name, f"shape {shape}, {size}-byte elements, box {box}: got {tuple(parts)}, "
             f"expected {want}", hint)
    return passed(name, "the driver's order is innermost first.")


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
            slips = [(lambda *c, j=j: expect_tx_mistakes(*c)[j][0], why)
                     for j, (_, why) in enumerate(expect_tx_mistakes(box, size, es))]
            hint = named_mistake(got, cases, slips, "bytes = product over OUTER dims of ceil(box / stride), "
                                 "times box[-1], times the element size", same=np.array_equal)
            fail(name, f"box {box}, {size}-byte elements, element strides {es}: got {mine}, "
                 f"expected {want}", hint)
    return passed(name, "and at the tensor's edge it is the same: out-of-bounds bytes count too.")


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
            slips = [(lambda s, k=k: swizzle_mistakes(s)[k][0], why)
                     for k, (_, why) in enumerate(swizzle_mistakes(size))]
            hint = named_mistake([tiles[s] for s in SWIZZLE_SIZES], [(s,) for s in SWIZZLE_SIZES], slips,
                                 "offset = row*128 + ((chunk ^ (row % 8)) * 16) + byte in chunk, "
                                 "with chunk = c * elem_size // 16", same=np.array_equal)
            fail(name, f"element ({i}, {j}) of a {size}-byte-element tile: got {tiles[size][i, j]}, "
                 f"expected {want[i, j]}", hint)
    return passed(name, "the same XOR the hardware applies.")
