"""Exercise checks for ``day05_tma/02_descriptors_cupy``: each tests a learner's function on
fresh random cases against the validated descriptor and the TMA model, and rejects wrong
answers with a hint. Stubs (``NotImplementedError``) are reported as "not attempted"."""
from __future__ import annotations

import random
import re

import numpy as np

from ..checks import NOT_ATTEMPTED, attempt, fail, not_attempted, passed
from .descriptor import ArrayInfo, make_spec
from .swizzle import element_offset


DTYPE_OF_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def _info(shape, itemsize):
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape)))
    return ArrayInfo(tuple(shape), strides, DTYPE_OF_SIZE[itemsize], 0)


def check_encode_args(fn) -> None:
    """``fn(shape, itemsize, box_shape)`` must return ``(global_dims, global_strides_bytes,
    box_dims)`` in the DRIVER's order (innermost first; strides without dimension 0)."""
    name, rng = "encode_args", random.Random()
    cases = [((1000, 1736), 2, (64, 128))] + [
        ((rng.randint(2, 300), rng.randint(2, 40), 8 * rng.randint(1, 40)), 2,
         (rng.randint(1, 16), rng.randint(1, 8), 8 * rng.randint(1, 8))) for _ in range(4)]
    for shape, size, box in cases:
        got = attempt(fn, shape, size, box)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        spec = make_spec(_info(shape, size), box)
        want = (spec.global_dims, spec.global_strides_bytes, spec.box_dims)
        try:
            got = tuple(tuple(int(v) for v in part) for part in got)
        except (TypeError, ValueError):
            fail(name, f"expected three tuples of ints, got {got!r}")
        if got != want:
            hint = "the driver lists dimensions innermost first" if got[0] == tuple(shape) else (
                "strides are in BYTES and leave out dimension 0" if got[1] != want[1] else
                "box dims are innermost first too")
            fail(name, f"shape {shape}, {size}-byte elements, box {box}: got {got}, expected {want}", hint)
    return passed(name, "the driver's order is innermost first.")


def check_expect_tx(fn) -> None:
    """``fn(box_shape, itemsize, element_strides)`` must return the bytes one TMA load delivers."""
    name, rng = "expect_tx_bytes", random.Random()
    cases = [((64, 64), 2, (1, 1)), ((128, 64), 4, (2, 1)), ((7, 5, 48), 1, (3, 2, 1))] + [
        ((rng.randint(1, 200), 8 * rng.randint(1, 16)), 2, (rng.randint(1, 8), 1)) for _ in range(4)]
    for box, size, es in cases:
        got = attempt(fn, box, size, es)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        shape = tuple(b * 2 for b in box[:-1]) + (box[-1] * 2,)
        want = make_spec(_info(shape, size), box, element_strides=es).box_bytes
        if isinstance(got, bool) or not isinstance(got, (int, np.integer)):
            fail(name, f"expected an int number of bytes, got {got!r}")
        if got != want:
            n = int(np.prod(box))
            hint = ("that is elements, not bytes" if got == n or got * size == want else
                    "with element strides, each outer dimension loads ceil(box / stride) elements"
                    if got == n * size else "bytes = product over dims of ceil(box/stride) x element size")
            fail(name, f"box {box}, {size}-byte elements, element strides {es}: got {got}, "
                 f"expected {want}", hint)
    return passed(name, "and at the tensor's edge it is the same: out-of-bounds bytes count too.")


def check_swizzle_offset(fn) -> None:
    """``fn(r, c, elem_size)``: byte offset of element (r, c) of a tile with 128-byte rows
    under SWIZZLE_128B, compared with the model for every element of several tiles."""
    name = "swizzle_128b_offset"
    for size in (2, 4, 1):
        cols = 128 // size
        r, c = np.meshgrid(np.arange(16), np.arange(cols), indexing="ij")
        want = element_offset(r, c, size, 128, "128B")
        first = attempt(fn, 0, 0, size)
        if first is NOT_ATTEMPTED:
            return not_attempted(name)
        got = np.array([[fn(int(i), int(j), size) for j in range(cols)] for i in range(16)])
        wrong = np.argwhere(got != want)
        if wrong.size:
            i, j = wrong[0]
            plain = i * 128 + j * size
            hint = ("that is the unswizzled offset: XOR the 16-byte chunk index with row % 8"
                    if got[i, j] == plain else "offset = row*128 + ((chunk ^ (row % 8)) * 16) + byte in chunk")
            fail(name, f"element ({i}, {j}) of a {size}-byte-element tile: got {got[i, j]}, "
                 f"expected {want[i, j]}", hint)
    return passed(name, "the same XOR the hardware applies.")


def proxy_fence_in_order(ptx_text: str) -> bool:
    """True if ``fence.proxy.async`` sits after the last shared-memory store and before the
    first bulk tensor store of the (single-kernel) PTX."""
    lines = [l.split("//")[0].strip() for l in ptx_text.splitlines()]
    st = [i for i, l in enumerate(lines) if re.match(r"(@%p\d+\s+)?st\.shared", l)]
    tma = [i for i, l in enumerate(lines) if re.search(r"cp\.(reduce\.)?async\.bulk\.tensor\.\dd\.global", l)]
    fence = [i for i, l in enumerate(lines) if "fence.proxy.async" in l]
    if not st or not tma:
        raise ValueError("expected a kernel with shared-memory stores and a TMA store")
    return any(max(st) < f < min(tma) for f in fence)


def check_store_kernel(source: str) -> None:
    """The learner's repaired store kernel (CUDA C++ text) must compile and order its smem
    writes before the TMA store with a proxy fence."""
    from ..ptx import nvrtc_ptx
    name = "store_kernel_fence"
    if isinstance(source, str) and "TODO" in source:
        return not_attempted(name)
    if not isinstance(source, str) or "__global__" not in source:
        fail(name, "expected the kernel's CUDA C++ source as a string")
    try:
        text = nvrtc_ptx(source, name="store_kernel.cu")
    except RuntimeError as exc:
        fail(name, f"it does not compile:\n{exc}")
    if not proxy_fence_in_order(text):
        fail(name, "no fence.proxy.async between the threads' shared-memory writes and the TMA "
             "store", "threads write through the generic proxy; TMA reads through the async "
             "proxy: add asm volatile(\"fence.proxy.async.shared::cta;\") after the writes, "
             "before __syncthreads()")
    return passed(name, "the copy engine will see every byte the threads wrote.")
