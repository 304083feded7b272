"""Planted kernels for day 1 · 03's Exercise 7 (issue 38): the learner's conflict-free transpose,
``check_transpose_kernel`` (:mod:`utils.day01.transpose_check`), run on the course's emulator.

Wrong kernels are the notebook's solution with one edit (the edited text must be there, so they follow
the solution when it changes), each rejected with the hint for that slip; right kernels are written
differently (XOR, rotation, a flat tile with a swizzle function, a transposed placement, the course's
own v3, and the padded v2 once the budget is lifted), each accepted. Then the access recorder
(:mod:`utils.day01.smem_trace`) on its own."""
import json
import pathlib

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.core.exercises import strip_solution
from utils.cuda_cpp import day01 as cuda_day01
from utils.day01 import checks as day01_checks
from utils.day01 import smem_trace
from utils.day01 import transpose_check as tc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def notebook_kernel(folder: str) -> str:
    """``transpose_src`` of the notebook's exercise cell (solution or exercise copy)."""
    cells = json.loads((ROOT / folder / "day01_memory_basics" / "03_shared_memory_banks.ipynb").read_text())["cells"]
    src = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith('transpose_src = r"""'))
    ns = {}
    exec(src, ns)
    return ns["transpose_src"]


SOL = notebook_kernel("solutions")
WRITE = "tile[j][tx ^ j] = x[(long long)(by + j) * N + bx + tx]"
READ = "= tile[tx][j ^ tx]"
STORE_Y = "y[(long long)(bx + j) * M + by + tx]"


def edit(source: str, *pairs) -> str:
    for old, new in pairs:
        assert old in source, f"planted edit: {old!r} not in the solution any more"
        source = source.replace(old, new)
    return source


def ours(name: str) -> str:
    """A course transpose renamed to the exercise's kernel name."""
    return cuda_day01.source(name).replace(name, "transpose_kernel")


ROTATION = edit(SOL, ("tile[j][tx ^ j]", "tile[j][(tx + j) & 31]"), (READ, "= tile[tx][(j + tx) & 31]"))
"""Right, written differently: rotate each row by its index instead of XOR."""

FLAT = r"""
__device__ __forceinline__ int swz(int r, int c) { return r * 32 + (c ^ r); }   // word of tile element (r, c)

extern "C" __global__ void transpose_kernel(const float* x, float* y, int M, int N) {
    __shared__ float tile[32 * 32];
    int col = blockIdx.x * 32 + threadIdx.x, row0 = blockIdx.y * 32;
    for (int k = 0; k < 4; ++k) {
        int r = threadIdx.y + 8 * k;
        if (row0 + r < M && col < N) tile[swz(r, threadIdx.x)] = x[(row0 + r) * N + col];
    }
    __syncthreads();
    for (int k = 0; k < 4; ++k) {
        int c = threadIdx.y + 8 * k, yrow = blockIdx.x * 32 + c, ycol = row0 + threadIdx.x;
        if (yrow < N && ycol < M) y[yrow * M + ycol] = tile[swz(threadIdx.x, c)];
    }
}"""
"""Right, written differently: a flat tile, a swizzle function, a counted loop, int indices."""

TRANSPOSED_PLACEMENT = edit(SOL, ("tile[j][tx ^ j] =", "tile[tx][j ^ tx] ="), (READ, "= tile[j][tx ^ j]"))
"""Right, written differently: the tile holds the transpose (element (r, c) at tile[c][r ^ c])."""

RIGHT = {"solution": (SOL, {}), "our v3": (ours("transpose_v3_swizzled"), {}), "rotation": (ROTATION, {}),
         "flat tile with swz()": (FLAT, {}), "transposed placement": (TRANSPOSED_PLACEMENT, {}),
         "padded v2, budget lifted": (ours("transpose_v2_padded"), {"smem_budget": None})}

WRONG = {
    "XOR with threadIdx.y (the wrong operand) on both sides": (
        (("tile[j][tx ^ j]", "tile[j][tx ^ threadIdx.y]"), (READ, "= tile[tx][j ^ threadIdx.y]")),
        "the same function of \\(row, col\\) on both sides"),
    "XOR with the row's low 3 bits: right values, 4-way": (
        (("tile[j][tx ^ j]", "tile[j][tx ^ (j & 7)]"), (READ, "= tile[tx][j ^ (tx & 7)]")), "4-way bank-conflicted"),
    "XOR with the matrix row instead of the tile row": (
        (("tile[j][tx ^ j]", "tile[j][tx ^ (by + j)]"), (READ, "= tile[tx][j ^ (by + tx)]")),
        "index outside the 32 x 32 tile|the same function of"),
    "swizzle on the write, not on the read": (((READ, "= tile[tx][j]"),), "read back with another placement"),
    "swizzle on the read, not on the write": ((("tile[j][tx ^ j]", "tile[j][tx]"),), "read back with another placement"),
    "no swizzle at all (v1)": ((("tile[j][tx ^ j]", "tile[j][tx]"), (READ, "= tile[tx][j]")), "32-way bank-conflicted"),
    "padding by 32 instead of 1": ((("tile[32][32]", "tile[32][64]"), ("tile[j][tx ^ j]", "tile[j][tx]"),
                                    (READ, "= tile[tx][j]")), "32-way bank-conflicted"),
    "padding by 1 (v2): over the budget": ((("tile[32][32]", "tile[32][33]"), ("tile[j][tx ^ j]", "tile[j][tx]"),
                                            (READ, "= tile[tx][j]")), "over the budget of 4096 B"),
    "off-by-one edge mask (<= M)": ((("by + j < M", "by + j <= M"),), "an access outside x or y"),
    "edge mask one short (< M - 1)": ((("by + tx < M)", "by + tx < M - 1)"),), "a bound off by one"),
    "no edge masks: right at whole tiles only": (
        (("if (by + j < M && bx + tx < N) ", ""), ("if (bx + j < N && by + tx < M) ", "")), "the last tiles are partial"),
    "y indexed with N (transposed row length swapped)": (((STORE_Y, "y[(long long)(bx + j) * N + by + tx]"),),
                                                         "right when M == N only"),
    "write-side bounds swapped (< M, < N)": ((("bx + j < N && by + tx < M", "bx + j < M && by + tx < N"),),
                                             "right when M == N only"),
    "y written in x's order (a copy)": (((STORE_Y, "y[(long long)(by + tx) * N + bx + j]"),), "in x's own order"),
    "no __syncthreads()": ((("__syncthreads();", ""),), "put __syncthreads\\(\\) after the whole tile"),
    "__syncthreads() inside the edge mask": (
        (("__syncthreads();", "if (by + tx < M) __syncthreads();"),), "every thread of the block must reach"),
    "x read down a column (uncoalesced read)": (
        ((WRITE, "tile[tx][j ^ tx] = x[(long long)(by + tx) * N + bx + j]"), ("if (by + j < M && bx + tx < N)",
                                                                               "if (by + tx < M && bx + j < N)")),
        "the read of x is not coalesced"),
    "rows 4 apart instead of 8: every element moved twice": ((("j += 8", "j += 4"),), "read 2 times"),
    "a typo": ((("__syncthreads();", "__syncthreads()"),), "NVRTC could not compile"),
}


@pytest.mark.parametrize("what", sorted(WRONG))
def test_planted_wrong_kernel_is_rejected_with_its_hint(what):
    edits, hint = WRONG[what]
    with pytest.raises(CheckFailed, match=hint):
        tc.check_transpose_kernel(edit(SOL, *edits))


def test_the_naive_kernel_is_rejected_for_not_staging():
    with pytest.raises(CheckFailed, match="no access to shared memory"):
        tc.check_transpose_kernel(ours("transpose_v0_naive"))


@pytest.mark.parametrize("what", sorted(RIGHT))
def test_right_kernels_pass(what, capsys):
    source, kwargs = RIGHT[what]
    day01_checks.check_transpose_kernel(source, **kwargs)
    assert "correct" in capsys.readouterr().out


def test_stub_is_not_attempted_and_matches_the_exercise(capsys):
    stub = notebook_kernel(".") if (ROOT / "day01_memory_basics").exists() else None
    generated = strip_solution(SOL)
    tc.check_transpose_kernel(generated)
    assert "not attempted" in capsys.readouterr().out
    if stub is not None:
        assert stub == generated
    tc.check_transpose_kernel(generated.replace("// TODO", "/* edited */ // TODO"))
    assert "not attempted" in capsys.readouterr().out


def test_bad_input_is_explained():
    with pytest.raises(CheckFailed, match="CUDA C\\+\\+ source in a string"):
        tc.check_transpose_kernel(None)
    with pytest.raises(CheckFailed, match="no kernel named transpose_kernel"):
        tc.check_transpose_kernel(SOL.replace("transpose_kernel", "my_transpose"))
    with pytest.raises(ValueError, match="smem_budget"):
        tc.check_transpose_kernel(SOL, smem_budget=-1)


def test_tracer_sees_addresses_barriers_and_races():
    """The recorder: v1's column read is 32-way in the model, and a missing barrier is a race."""
    from utils.emu import device_empty, to_device
    x = to_device(np.random.default_rng(0).standard_normal((40, 40)).astype(np.float32))
    y = device_empty((40, 40), np.float32, np.nan)
    tr = smem_trace.traced_launch(ours("transpose_v1_smem"), "transpose_kernel", (2, 2), (32, 8), [x, y, 40, 40])
    assert np.array_equal(y, x.T) and tr.race is None
    assert max(a.wavefronts()[0] for a in tr.of("ld", "shared")) == 32
    assert max(a.wavefronts()[0] for a in tr.of("st", "shared")) == 1
    assert all(a.sectors()[0] <= a.sectors()[1] for a in tr.of("ld", "global"))
    racy = ours("transpose_v1_smem").replace("__syncthreads();", "")
    y[...] = np.nan
    tr = smem_trace.traced_launch(racy, "transpose_kernel", (2, 2), (32, 8), [x, y, 40, 40])
    assert tr.race is not None and tr.race["reader"] != tr.race["writer"]
    from utils.emu.cta import CTA
    assert CTA.load.__name__ == "load" and CTA._check_bar.__name__ == "_check_bar"   # restored


def test_tile_ways_prices_the_placement():
    """The "change this, predict" cell's helper: v1 32-way, v3 conflict-free, XOR with 4 bits 2-way."""
    v3 = cuda_day01.source("transpose_v3_swizzled")
    low4 = v3.replace("threadIdx.x ^ j]", "threadIdx.x ^ (j & 15)]").replace("j ^ threadIdx.x]", "j ^ (threadIdx.x & 15)]")
    assert day01_checks.tile_ways(v3, "transpose_v3_swizzled") == {"store": 1, "load": 1}
    assert day01_checks.tile_ways(low4, "transpose_v3_swizzled") == {"store": 1, "load": 2}
    assert tc.tile_ways(cuda_day01.source("transpose_v1_smem"), "transpose_v1_smem", 40, 72)["load"] == 32
    assert tc.tile_ways(ours("transpose_v0_naive")) == {"store": 0, "load": 0}
    with pytest.raises(TypeError, match="as strings"):
        tc.tile_ways(None)


def _gpu() -> bool:
    try:
        import cupy  # noqa: F401
        import torch
        return torch.cuda.is_available()
    except Exception:
        return False


class _Tier:
    def has(self, feature):
        return feature == "gpu"


@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU with CuPy")
@pytest.mark.parametrize("what", sorted(RIGHT))
def test_on_the_gpu_right_kernels_pass(what, capsys):
    source, kwargs = RIGHT[what]
    tc.check_transpose_kernel(source, _Tier(), **kwargs)
    assert "and on this GPU" in capsys.readouterr().out


@pytest.mark.skipif(not _gpu(), reason="needs a CUDA GPU with CuPy")
@pytest.mark.parametrize("what", ["swizzle on the write, not on the read", "edge mask one short (< M - 1)"])
def test_on_the_gpu_wrong_values_are_caught(what):
    """The GPU half alone (the emulator stops these first): poisoned y, every element compared."""
    with pytest.raises(CheckFailed, match="on the GPU: .* elements of y wrong"):
        tc._check_on_gpu(edit(SOL, *WRONG[what][0]), np.random.default_rng())
