"""The exercise "a TMA store with its proxy fence" (``day05_tma/02_descriptors_cupy``): the
learner's CUDA kernel is compiled for sm_90a by NVRTC and its PTX is read along every path from a
shared-memory write to the TMA store (fence in every writing thread, then a barrier every thread
runs, then the store; commit and wait before exit). On Hopper the kernel also runs and its box is
compared element by element. The paths are read by :mod:`utils.tma.fence_paths`. Split from
:mod:`utils.tma.exercises`, which re-exports it."""
from __future__ import annotations

import importlib.util
import pathlib
import re

import numpy as np

from ..core.checks import fail, not_attempted, passed
from .descriptor import make_spec
from .fence_paths import FENCE_HINT, fence_message, fence_problem, is_commit, is_smem_write, is_tma_store, is_wait0


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


def store_kernel_problems(ptx_text: str, name: str = STORE_KERNEL) -> list:
    """(what is wrong, hint) for the ordering of kernel ``name``'s PTX (empty list: nothing), judged on
    every control-flow path: each thread's shared-memory writes, then its fence.proxy.async, then a
    barrier every thread runs, before the TMA store; then commit_group and wait_group(.read) 0
    before the kernel exits."""
    from ..core.ptx_paths import find, kernel_body, path_avoiding
    body = kernel_body(ptx_text, name)
    if not find(body, is_smem_write) or not find(body, is_tma_store):
        return [("the kernel no longer has both the threads' shared-memory writes and the TMA "
                 "store", "change only the missing line; keep the writes and the TMA store")]
    problem = fence_problem(body)
    out = [(fence_message(body, *problem), FENCE_HINT)] if problem else []
    wait_hint = ("after the TMA store, thread 0 runs cp.async.bulk.commit_group; then "
                 "cp.async.bulk.wait_group.read 0; as the stub did")
    plain = sorted(set(find(body, lambda t: re.match(r"cp\.async\.(commit_group|wait_group|wait_all)", t))))
    if plain:
        wait_hint = (f"{', '.join(plain)} is for the per-thread cp.async copies, not for bulk copies: "
                     "cp.async.bulk.commit_group; then cp.async.bulk.wait_group.read 0;")
    if path_avoiding(body, is_tma_store, "exit", is_commit):
        out.append(("the TMA store's bulk group is never committed (cp.async.bulk.commit_group) on "
                   "some path to the kernel's end", wait_hint))
    elif path_avoiding(body, is_commit, "exit", is_wait0):
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
