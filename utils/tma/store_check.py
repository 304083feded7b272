"""The exercise "a TMA store with its proxy fence" (``day05_tma/02_descriptors_cupy``): the
learner's CUDA kernel is compiled for sm_90a by NVRTC and its PTX is read along every path from a
shared-memory write to the TMA store (fence in every writing thread, then a barrier every thread
runs, then the store; commit and wait before exit). On Hopper the kernel also runs and its box is
compared element by element. Split from :mod:`utils.tma.exercises`, which re-exports it."""
from __future__ import annotations

import importlib.util
import pathlib
import re

import numpy as np

from ..core.checks import fail, not_attempted, passed
from .descriptor import make_spec


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
