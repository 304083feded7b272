"""Exercise checks for ``day05_tma/02_descriptors_cupy``: each tests a learner's function on
fresh random cases against the validated descriptor and the TMA model, and rejects wrong
answers with a hint. Stubs (``NotImplementedError``) are reported as "not attempted"."""
from __future__ import annotations

import random
import re

import numpy as np

from ..core.checks import NOT_ATTEMPTED, attempt, fail, int_answer, is_int, not_attempted, passed
from .descriptor import ArrayInfo, make_spec
from .swizzle import element_offset


DTYPE_OF_SIZE = {1: "uint8", 2: "float16", 4: "float32", 8: "float64"}


def _info(shape, itemsize):
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape)))
    return ArrayInfo(tuple(shape), strides, DTYPE_OF_SIZE[itemsize], 0)


def _ints(part) -> tuple | None:
    """``part`` as a tuple of ints (one type rule: :func:`utils.core.checks.is_int`), else None."""
    try:
        vals = tuple(part)
    except TypeError:
        return None
    return tuple(int(v) for v in vals) if all(is_int(v) for v in vals) else None


def check_encode_args(fn) -> None:
    """``fn(shape, itemsize, box_shape)`` must return ``(global_dims, global_strides_bytes,
    box_dims)`` in the DRIVER's order (innermost first; strides without dimension 0)."""
    name, rng = "encode_args", random.Random()
    cases = [((3, 5, 8), 4, (1, 2, 4)), ((1000, 1736), 2, (64, 128))] + [
        ((rng.randint(2, 300), rng.randint(2, 40), 8 * rng.randint(1, 40)), 2,
         (rng.randint(1, 16), rng.randint(1, 8), 8 * rng.randint(1, 8))) for _ in range(4)]
    for shape, size, box in cases:
        got = attempt(fn, shape, size, box)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        spec = make_spec(_info(shape, size), box)
        want = (spec.global_dims, spec.global_strides_bytes, spec.box_dims)
        parts = tuple(_ints(p) for p in got) if isinstance(got, (tuple, list)) and len(got) == 3 else None
        if parts is None or None in parts:
            fail(name, f"expected three tuples of ints (dims, strides in bytes, box dims), got {got!r}")
        if parts == want:
            continue
        strides_c = tuple(int(np.prod(shape[i + 1:])) * size for i in range(len(shape) - 1))
        k = next(i for i in range(3) if parts[i] != want[i])
        mistakes = [  # (part, the specific wrong value, what it is)
            (0, tuple(shape), "the dimensions in array order: the driver lists them innermost first"),
            (1, strides_c, "the strides in array order: the driver lists them innermost first"),
            (1, tuple(s // size for s in want[1]), "strides in elements: the driver wants BYTES"),
            (1, (size,) + want[1], "that includes the innermost stride (always the element "
             "size): the driver leaves it out, rank - 1 strides"),
            (1, tuple(s // size for s in strides_c), "strides in elements and in array order: "
             "the driver wants BYTES, innermost first"),
            (2, tuple(box), "box dims are innermost first too")]
        hint = next((h for part, value, h in mistakes if part == k and parts[k] == value), "")
        fail(name, f"shape {shape}, {size}-byte elements, box {box}: got {tuple(parts)}, "
             f"expected {want}", hint or "dims, strides (bytes, without the innermost) and box, "
             "all innermost first")
    return passed(name, "the driver's order is innermost first.")


def expect_tx_mistakes(box, size, es) -> list:
    """(bytes, why) for the expect_tx answers that come from a known slip."""
    n = int(np.prod(box))
    all_dims = int(np.prod([-(-b // s) for b, s in zip(box, es)])) * size
    return [(n, "that is elements, not bytes: multiply by the element size"),
            (all_dims, "the innermost element stride is ignored (interleave NONE): the whole "
             "inner row of box[-1] elements is loaded; only outer dimensions load "
             "ceil(box / stride) elements"),
            (n * size, "with element strides, each OUTER dimension loads ceil(box / stride) elements"),
            (int(np.prod([b // s for b, s in zip(box[:-1], es[:-1])])) * box[-1] * size,
             "round up: a box of 5 with stride 2 loads elements 0, 2, 4 = ceil(5 / 2)")]


def check_expect_tx(fn) -> None:
    """``fn(box_shape, itemsize, element_strides)`` must return the bytes one TMA load delivers."""
    name, rng = "expect_tx_bytes", random.Random()
    cases = [((64, 64), 2, (1, 1)), ((128, 64), 4, (2, 1)), ((7, 5, 48), 1, (3, 2, 1)),
             ((64, 32), 2, (2, 2)), ((10, 24), 4, (3, 4)), ((5, 6, 16), 2, (2, 4, 2))] + [
        ((rng.randint(1, 200), 8 * rng.randint(1, 16)), 2, (rng.randint(1, 8), rng.randint(1, 8)))
        for _ in range(4)]
    for box, size, es in cases:
        got = attempt(fn, box, size, es)
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        shape = tuple(b * 2 for b in box[:-1]) + (box[-1] * 2,)
        want = make_spec(_info(shape, size), box, element_strides=es).box_bytes
        got = int_answer(name, got, f"box {box}, element strides {es}: the answer", "a number of bytes")
        if got != want:
            hint = next((h for value, h in expect_tx_mistakes(box, size, es) if got == value and value != want),
                        "bytes = product over OUTER dims of ceil(box / stride), times box[-1], "
                        "times the element size")
            fail(name, f"box {box}, {size}-byte elements, element strides {es}: got {got}, "
                 f"expected {want}", hint)
    return passed(name, "and at the tensor's edge it is the same: out-of-bounds bytes count too.")


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
        (r * 128 + ((c ^ (r % 8)) * size), "XOR the 16-byte chunk index (c * elem_size // 16), "
         "not the column: the swizzle moves whole 16-byte chunks"),
        (element_offset(r, c, size, 128, "128B") // size, "return a BYTE offset, not elements")]


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
        got = np.array([[int_answer(name, fn(int(i), int(j), size), f"fn({i}, {j}, {size})")
                         for j in range(cols)] for i in range(16)])
        wrong = np.argwhere(got != want)
        if wrong.size:
            i, j = wrong[0]
            hint = next((h for value, h in swizzle_mistakes(size) if np.array_equal(got, value)),
                        "offset = row*128 + ((chunk ^ (row % 8)) * 16) + byte in chunk, "
                        "with chunk = c * elem_size // 16")
            fail(name, f"element ({i}, {j}) of a {size}-byte-element tile: got {got[i, j]}, "
                 f"expected {want[i, j]}", hint)
    return passed(name, "the same XOR the hardware applies.")


STORE_KERNEL = "store_tile"
STORE_STUB = r"""
struct __align__(64) TensorMap { unsigned long long opaque[16]; };
extern "C" __global__ void store_tile(const __grid_constant__ TensorMap map, const float* in, int x, int y) {
  __shared__ __align__(128) float tile[16 * 32];
  for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) tile[i] = 2.0f * in[i];
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned src = (unsigned)__cvta_generic_to_shared(tile);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&map), "r"(x), "r"(y), "r"(src) : "memory");
    asm volatile("cp.async.bulk.commit_group;\n cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}"""
"""The exercise's kernel as handed out (no fence): a source equal to it, up to comments and
spacing, is "not attempted". ``tests/test_tma_exercises.py`` keeps it equal to the notebook's."""


def c_tokens(source: str) -> list:
    """CUDA C++ ``source`` as tokens, comments and spacing dropped (string literals kept whole)."""
    code = re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or " ", source, flags=re.S)
    return re.findall(r'"(?:\\.|[^"\\])*"|\w+|\S', code)


def _is_smem_write(t):
    return bool(re.match(r"(st|atom|red)(\.\w+)*\.shared|stmatrix", t))


def _is_tma_store(t):
    return bool(re.match(r"cp(\.reduce)?\.async\.bulk(\.tensor\.\dd)?\.global\.shared", t))


def _is_proxy_fence(t):
    """A fence that orders this thread's generic-proxy shared-memory writes before async-proxy
    reads: bidirectional (no state space, or shared::cta / shared::cluster) or the one-way
    generic -> async release form."""
    return bool(re.fullmatch(r"fence\.proxy\.async(\.shared::(cta|cluster)|::generic\.release"
                             r"\.sync_restrict::shared::cta\.cluster)?", t.strip()))


def _is_commit(t):
    return t.startswith("cp.async.bulk.commit_group")


def _is_wait0(t):
    return bool(re.fullmatch(r"cp\.async\.bulk\.wait_group(\.read)?\s+0", t.strip()))


def store_kernel_problems(ptx_text: str, name: str = STORE_KERNEL) -> list:
    """(what is wrong, hint) for the ordering of kernel ``name``'s PTX (empty list: nothing), judged on
    every control-flow path: a proxy fence covering shared memory between every shared-memory
    write and the TMA store, then commit_group and wait_group(.read) 0 before the kernel exits."""
    from ..core.ptx_paths import find, kernel_body, path_avoiding
    body = kernel_body(ptx_text, name)
    if not find(body, _is_smem_write) or not find(body, _is_tma_store):
        return [("the kernel no longer has both the threads' shared-memory writes and the TMA "
                 "store", "change only the missing line; keep the writes and the TMA store")]
    out, fence_hint = [], ("threads write through the generic proxy; TMA reads through the async "
                           "proxy: asm volatile(\"fence.proxy.async.shared::cta;\" ::: \"memory\"); "
                           "after the writes, before __syncthreads()")
    if path_avoiding(body, _is_smem_write, _is_tma_store, _is_proxy_fence):
        fences = find(body, lambda t: t.startswith(("fence", "membar")))
        right = [f for f in fences if _is_proxy_fence(f)]
        if right:
            out.append("a path from the shared-memory writes to the TMA store skips your "
                       f"{right[0]} (it sits inside an if, or before the writes): every thread "
                       "must execute it after its writes, before __syncthreads()")
        elif fences:
            out.append(f"{', '.join(sorted(set(fences)))} is not the fence needed: the tile is in "
                       "SHARED memory and TMA reads it through the async proxy: "
                       "fence.proxy.async.shared::cta")
        else:
            out.append("no fence.proxy.async between the threads' shared-memory writes and the TMA "
                       "store (if you wrote one, the compiler removed it: it sits in code that "
                       "never runs)")
    out = [(msg, fence_hint) for msg in out]
    wait_hint = ("after the TMA store, thread 0 runs cp.async.bulk.commit_group; then "
                 "cp.async.bulk.wait_group.read 0; as the stub did")
    if path_avoiding(body, _is_tma_store, "exit", _is_commit):
        out.append(("the TMA store's bulk group is never committed (cp.async.bulk.commit_group) on "
                   "some path to the kernel's end", wait_hint))
    elif path_avoiding(body, _is_commit, "exit", _is_wait0):
        out.append(("the kernel can exit before the copy engine has read shared memory: keep "
                   "cp.async.bulk.wait_group.read 0 after the commit (shared memory is freed at exit)",
                    wait_hint))
    return out


def _run_store(source: str):
    """Launch the learner's ``store_tile`` on a 37 x 72 fp32 tensor poisoned with NaN, box 16 x 32
    at rows 30.., columns 48.. (partly outside); return (result, expected) as NumPy arrays."""
    import cupy as cp
    from .encode import encode
    g = cp.full((37, 72), cp.nan, dtype=cp.float32)
    tile = cp.random.standard_normal(16 * 32, dtype=cp.float32)
    kern = cp.RawModule(code=source, options=("-std=c++17",)).get_function(STORE_KERNEL)
    kern((1,), (128,), (encode(make_spec(g, (16, 32))), tile, np.int32(48), np.int32(30)))
    cp.cuda.get_current_stream().synchronize()
    want = np.full((37, 72), np.nan, np.float32)
    want[30:, 48:] = 2 * tile.get().reshape(16, 32)[:7, :24]
    return g.get(), want


def check_store_kernel(source: str, tier=None) -> None:
    """The learner's repaired store kernel (CUDA C++ text) must compile for sm_90a and, on every
    path of its PTX, fence the threads' shared-memory writes (``fence.proxy.async``) before the
    TMA store, and commit and wait for the store's reads before exiting. With a Hopper ``tier``
    it also runs, and its output is compared with the expected box."""
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    name = "store_kernel_fence"
    if not isinstance(source, str) or "__global__" not in source:
        fail(name, f"expected the kernel's CUDA C++ source as a string, got {type(source).__name__}")
    if c_tokens(source) == c_tokens(STORE_STUB):
        return not_attempted(name)
    try:
        text = nvrtc_ptx(source, name="store_kernel.cu")
        problems = store_kernel_problems(text)
    except RuntimeError as exc:
        fail(name, f"it does not compile:\n{exc}")
    except ValueError as exc:
        fail(name, str(exc), f"keep the kernel's name and signature: {STORE_KERNEL}(map, in, x, y)")
    if problems:
        fail(name, *problems[0])
    ran = tier is not None and getattr(tier, "has_tma", False)
    if ran:
        got, want = _run_store(source)
        wrong = np.argwhere(~((got == want) | (np.isnan(got) & np.isnan(want))))
        if wrong.size:
            i, j = (int(v) for v in wrong[0])
            fail(name, f"{len(wrong)} of {got.size} elements differ after the store; first at "
                 f"({i}, {j}): yours {got[i, j]}, expected {want[i, j]}",
                 "the kernel should store 2 * in as a 16 x 32 box at (row y, column x); elements "
                 "outside the tensor are not written", launched="store_tile<<<1, 128>>> on a "
                 "37 x 72 fp32 tensor (NaN), box 16 x 32 at row 30, column 48")
    return passed(name, "every path fences before the TMA store and waits before exiting"
                  + (", and the kernel stored the right box." if ran else
                     " (judged on the sm_90a PTX; on Hopper the check also runs it)."))
