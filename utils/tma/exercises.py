"""Exercise checks for ``day05_tma/02_descriptors_cupy``: each tests a learner's function on
fresh random cases against the validated descriptor and the TMA model, and rejects wrong
answers with a hint. Stubs (``NotImplementedError``) are reported as "not attempted".

Every check runs ALL its cases first (ranks 1-5, element sizes 1-8, boxes that do not divide
the tensor), then reports the first wrong one; a hint that names a cause is given only when the
answers match that mistake on every case, so a hint is never a guess from one coincidence."""
from __future__ import annotations

import importlib.util
import pathlib
import random
import re

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


def _is_barrier(t):
    """A CTA barrier that waits (``__syncthreads()``: bar.sync; ``__syncthreads_or`` &c.: bar.red;
    not bar.arrive, which does not wait, nor bar.warp.sync, which is one warp's)."""
    return bool(re.match(r"(bar|barrier)(\.cta)?\.(sync|red)\b", t))


def _is_commit(t):
    return t.startswith("cp.async.bulk.commit_group")


def _is_wait0(t):
    return bool(re.fullmatch(r"cp\.async\.bulk\.wait_group(\.read)?\s+0", t.strip()))


def _reaches(succ, n, start, goal, avoid=()):
    """Is instruction ``goal`` (``n``: the kernel's exit) reachable from ``start`` (entered, not
    avoided) without entering an index in ``avoid``?"""
    seen, todo = {start}, ([] if start in avoid else [start])
    while todo:
        i = todo.pop()
        if i == goal:
            return True
        for j in (succ[i] if i < n else []):
            if j not in seen and j not in avoid:
                seen.add(j)
                todo.append(j)
    return False


def fence_problem(body: str):
    """(state, path) for the first path of the PTX ``body`` on which a thread's shared-memory write
    reaches a TMA store not yet "fenced, then barrier", else None. State 0: no fence.proxy.async
    after the last write; 1: fenced, but no CTA-wide barrier after the fence. A barrier counts only
    if every thread runs it (no path from entry to exit avoids it: not one inside an ``if``); a
    predicated fence or barrier may be skipped, a predicated write may happen."""
    from ..core.ptx_paths import parse, successors
    instrs, labels = parse(body)
    n = len(instrs)
    succ = [successors(instrs, labels, i) for i in range(n)]
    cta_bar = {k for k, ins in enumerate(instrs) if _is_barrier(ins.text) and not ins.predicated
               and not _reaches(succ, n, 0, n, avoid={k})}
    found = {}
    for w in (k for k, ins in enumerate(instrs) if _is_smem_write(ins.text)):
        parent, todo = {(w, 0): None}, [(w, 0)]
        while todo:
            i, s = todo.pop()
            for j in (succ[i] if i < n else []):
                if j == n:
                    continue
                ins = instrs[j]
                if _is_tma_store(ins.text) and s < 2 and s not in found:
                    path, node = [ins.text], (i, s)
                    while node:
                        path.append(instrs[node[0]].text)
                        node = parent[node]
                    found[s] = path[::-1]
                t = 0 if _is_smem_write(ins.text) else s
                if not ins.predicated and _is_proxy_fence(ins.text):
                    t = max(t, 1)
                if j in cta_bar and t == 1:
                    t = 2
                if (j, t) not in parent:
                    parent[(j, t)] = (i, s)
                    todo.append((j, t))
    return min(found.items()) if found else None


FENCE_HINT = ("every thread that wrote the tile runs asm volatile(\"fence.proxy.async.shared::cta;\" ::: "
              "\"memory\"); after its writes and BEFORE __syncthreads(); then one thread issues the TMA store")


def _fence_message(body: str, state: int, path: list) -> str:
    """What is wrong on ``path`` (from :func:`fence_problem`), told from where the fences are."""
    from ..core.ptx_paths import find, path_avoiding
    fences = find(body, lambda t: t.startswith(("fence", "membar")))
    right = [f for f in fences if _is_proxy_fence(f)]
    if state == 1:
        last = max(i for i, t in enumerate(path) if _is_proxy_fence(t))
        if any(_is_barrier(t) for t in path[:last]):
            return (f"your {path[last]} runs after __syncthreads(): nothing then makes the storing "
                    "thread wait until the OTHER threads have fenced their writes (a proxy fence orders "
                    "only the writes of the thread that runs it). The fence must come before the "
                    "barrier, in every thread that wrote")
        if any(_is_barrier(t) for t in path[last:]):
            return ("the __syncthreads() (bar.sync) after your fence sits inside an if: not every "
                    "thread runs it, so it does not make the storing thread wait for the others' "
                    "fenced writes (and it may hang)")
        return ("no __syncthreads() (bar.sync) between your fence and the TMA store: the storing "
                "thread does not wait until the other threads have written and fenced the tile")
    if right:
        if not path_avoiding(body, _is_smem_write, _is_proxy_fence, lambda t: False):
            where = "it comes before the writes: a fence orders only the writes made before it"
        elif path_avoiding(body, _is_proxy_fence, _is_smem_write, lambda t: False):
            where = "a write comes after it: it must follow each thread's LAST write"
        elif not path_avoiding(body, _is_smem_write, _is_proxy_fence, _is_tma_store):
            where = "it comes after the TMA store, which may already have read the tile"
        else:
            where = "it sits inside an if: not every thread that wrote runs it, e.g. only thread 0"
        return (f"a path from the shared-memory writes to the TMA store skips your {right[0]} ({where}): "
                "every thread that wrote must execute it after its writes, before __syncthreads()")
    if fences:
        return (f"{', '.join(sorted(set(fences)))} is not the fence needed: the tile is in "
                "SHARED memory and TMA reads it through the async proxy: fence.proxy.async.shared::cta")
    return ("no fence.proxy.async between the threads' shared-memory writes and the TMA store (if you "
            "wrote one, the compiler removed it: it sits in code that never runs)")


def store_kernel_problems(ptx_text: str, name: str = STORE_KERNEL) -> list:
    """(what is wrong, hint) for the ordering of kernel ``name``'s PTX (empty list: nothing), judged on
    every control-flow path: each thread's shared-memory writes, then its fence.proxy.async, then a
    barrier every thread runs, before the TMA store; then commit_group and wait_group(.read) 0
    before the kernel exits."""
    from ..core.ptx_paths import find, kernel_body, path_avoiding
    body = kernel_body(ptx_text, name)
    if not find(body, _is_smem_write) or not find(body, _is_tma_store):
        return [("the kernel no longer has both the threads' shared-memory writes and the TMA "
                 "store", "change only the missing line; keep the writes and the TMA store")]
    problem = fence_problem(body)
    out = [(_fence_message(body, *problem), FENCE_HINT)] if problem else []
    wait_hint = ("after the TMA store, thread 0 runs cp.async.bulk.commit_group; then "
                 "cp.async.bulk.wait_group.read 0; as the stub did")
    plain = sorted(set(find(body, lambda t: re.match(r"cp\.async\.(commit_group|wait_group|wait_all)", t))))
    if plain:
        wait_hint = (f"{', '.join(plain)} is for the per-thread cp.async copies, not for bulk copies: "
                     "cp.async.bulk.commit_group; then cp.async.bulk.wait_group.read 0;")
    if path_avoiding(body, _is_tma_store, "exit", _is_commit):
        out.append(("the TMA store's bulk group is never committed (cp.async.bulk.commit_group) on "
                   "some path to the kernel's end", wait_hint))
    elif path_avoiding(body, _is_commit, "exit", _is_wait0):
        out.append(("the kernel can exit before the copy engine has read shared memory: keep "
                    "cp.async.bulk.wait_group.read 0 after the commit (shared memory is freed at exit)",
                    wait_hint))
    return out


def _include_options() -> tuple:
    """``-I`` for the libcu++ headers bundled with CuPy (``<cuda/ptx>``, ``<cuda/barrier>``), so a
    kernel that fences with ``cuda::ptx::fence_proxy_async`` compiles as it would on the GPU."""
    spec = importlib.util.find_spec("cupy")
    for root in (spec.submodule_search_locations or []) if spec else []:
        inc = pathlib.Path(root, "_core", "include", "cupy", "_cccl", "libcudacxx")
        if inc.is_dir():
            return (f"-I{inc}",)
    return ()


def _run_store(source: str):
    """Launch the learner's ``store_tile`` on a 37 x 72 fp32 tensor poisoned with NaN, box 16 x 32
    at rows 30.., columns 48.. (partly outside); return (result, expected) as NumPy arrays."""
    import cupy as cp
    from .encode import encode
    g = cp.full((37, 72), cp.nan, dtype=cp.float32)
    tile = cp.random.standard_normal(16 * 32, dtype=cp.float32)
    kern = cp.RawModule(code=source, options=("-std=c++17",) + _include_options()).get_function(STORE_KERNEL)
    kern((1,), (128,), (encode(make_spec(g, (16, 32))), tile, np.int32(48), np.int32(30)))
    cp.cuda.get_current_stream().synchronize()
    want = np.full((37, 72), np.nan, np.float32)
    want[30:, 48:] = 2 * tile.get().reshape(16, 32)[:7, :24]
    return g.get(), want


def check_store_kernel(source: str, tier=None) -> None:
    """The learner's repaired store kernel (CUDA C++ text) must compile for sm_90a and, on every
    path of its PTX, fence the threads' shared-memory writes (``fence.proxy.async``, in every
    thread that wrote) BEFORE the barrier that precedes the TMA store, and commit and wait for the
    store's reads before exiting. With a Hopper ``tier`` it also runs, and its output is compared
    with the expected box."""
    from ..core.ptx_paths import kernel_body
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    name = "store_kernel_fence"
    if not isinstance(source, str) or "__global__" not in source:
        fail(name, f"expected the kernel's CUDA C++ source as a string, got {type(source).__name__}")
    if c_tokens(source) == c_tokens(STORE_STUB):
        return not_attempted(name)
    try:
        text = nvrtc_ptx(source, name="store_kernel.cu", options=_include_options())
    except RuntimeError as exc:
        fail(name, f"it does not compile:\n{exc}", "NVRTC finds the libcu++ headers (<cuda/ptx>, "
             "<cuda/barrier>) and no others: write the fence as asm volatile(...)"
             if "cannot open source file" in str(exc) or "could not open source file" in str(exc) else "")
    try:
        kernel_body(text, STORE_KERNEL)
    except ValueError as exc:
        fail(name, str(exc), f"keep the kernel's name and signature: {STORE_KERNEL}(map, in, x, y)")
    try:
        problems = store_kernel_problems(text)
    except ValueError as exc:    # a branch the path reader cannot follow
        fail(name, f"the check could not follow the kernel's control flow ({exc})",
             "change only the missing line")
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
    return passed(name, "every thread fences its writes before the barrier, one thread stores, and "
                  "it waits before exiting" + (", and the kernel stored the right box." if ran else
                                               " (judged on the sm_90a PTX; on Hopper the check also runs it)."))
