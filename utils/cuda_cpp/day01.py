"""CUDA C++ kernels of day 1, as source text for ``cupy.RawKernel`` (GPU) and NVRTC (PTX on
any machine). No ``#include``: they compile with NVRTC alone.

* ``STRIDED_READ``: ``y[i] = x[offset + i * stride]``, four elements per thread, ``blockDim`` apart (4-byte loads).
* ``TRANSPOSE``: a 32 x 32-tile transpose in four steps, blocks of 32 x 8 threads, each thread
  moving 4 elements: ``transpose_v0_naive`` (reads coalesced, writes strided),
  ``transpose_v1_smem`` (staged through a shared tile: both global sides coalesced, column
  reads of the tile 32-way bank-conflicted), ``transpose_v2_padded`` (rows of 33 words),
  ``transpose_v3_swizzled`` (``tile[r][c ^ r]``: no padding, no conflicts).
"""
from __future__ import annotations

import functools

STRIDED_READ = r"""
// Each thread copies 4 elements, blockDim apart: 4 independent loads in flight per thread
// (one alone cannot cover the memory latency), and a warp still reads 32 consecutive i.
extern "C" __global__ void strided_read(const float* x, float* y, long long n, int stride, int offset) {
    long long base = (long long)blockIdx.x * blockDim.x * 4 + threadIdx.x;
    float v[4];
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        long long i = base + (long long)k * blockDim.x;
        v[k] = i < n ? x[offset + i * stride] : 0.0f;
    }
    #pragma unroll
    for (int k = 0; k < 4; ++k) {
        long long i = base + (long long)k * blockDim.x;
        if (i < n) y[i] = v[k];
    }
}
"""

_TILE_LOOPS = r"""
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;      // tile of x: rows r0..r0+31
    for (int j = threadIdx.y; j < 32; j += 8)
        if (r0 + j < M && c < N) tile[WRITE] = x[(long long)(r0 + j) * N + c];
    __syncthreads();
    int oc = r0 + threadIdx.x, or0 = blockIdx.x * 32;                 // same tile, transposed
    for (int j = threadIdx.y; j < 32; j += 8)
        if (or0 + j < N && oc < M) y[(long long)(or0 + j) * M + oc] = tile[READ];
}
"""


def _tiled(name: str, decl: str, write: str, read: str) -> str:
    head = f'extern "C" __global__ void {name}(const float* x, float* y, int M, int N) {{\n'
    return head + f"    {decl}\n" + _TILE_LOOPS.replace("WRITE", write).replace("READ", read)


TRANSPOSE = {
    "transpose_v0_naive": r"""
extern "C" __global__ void transpose_v0_naive(const float* x, float* y, int M, int N) {
    int c = blockIdx.x * 32 + threadIdx.x, r0 = blockIdx.y * 32;
    for (int j = threadIdx.y; j < 32; j += 8)                          // read a row: coalesced
        if (r0 + j < M && c < N) y[(long long)c * M + r0 + j] = x[(long long)(r0 + j) * N + c];
}                                                                      // write a column: strided
""",
    "transpose_v1_smem": _tiled("transpose_v1_smem", "__shared__ float tile[32][32];",
                                "j][threadIdx.x", "threadIdx.x][j"),
    "transpose_v2_padded": _tiled("transpose_v2_padded", "__shared__ float tile[32][33];",
                                  "j][threadIdx.x", "threadIdx.x][j"),
    "transpose_v3_swizzled": _tiled("transpose_v3_swizzled", "__shared__ float tile[32][32];",
                                    "j][threadIdx.x ^ j", "threadIdx.x][j ^ threadIdx.x"),
}


def source(name: str) -> str:
    """The CUDA source of kernel ``name`` (``strided_read`` or a ``TRANSPOSE`` key)."""
    if name == "strided_read":
        return STRIDED_READ
    if name not in TRANSPOSE:
        raise ValueError(f"unknown kernel {name!r}; known: ['strided_read', {', '.join(map(repr, TRANSPOSE))}]")
    return TRANSPOSE[name]


@functools.lru_cache(maxsize=None)
def raw_kernel(name: str):
    """A compiled ``cupy.RawKernel`` for kernel ``name`` (needs a CUDA GPU and CuPy), cached."""
    import cupy
    return cupy.RawKernel(source(name), name)


def as_cupy(t):
    """A CuPy view of a torch CUDA tensor (no copy); a CuPy array is returned as it is.
    Make views once, outside a timed loop: the conversion costs host time."""
    import cupy
    return t if isinstance(t, cupy.ndarray) else cupy.from_dlpack(t)


def _numel(a) -> int:
    return int(a.numel() if hasattr(a, "numel") else a.size)


def transpose(name: str, x, y):
    """Launch transpose kernel ``name``: ``y`` (N x M) = ``x`` (M x N).T, fp32, contiguous
    (torch CUDA tensors or CuPy arrays). Returns ``y``."""
    import numpy as np
    if name not in TRANSPOSE:
        raise ValueError(f"unknown transpose {name!r}; known: {list(TRANSPOSE)}")
    if len(x.shape) != 2 or tuple(y.shape) != tuple(x.shape[::-1]):
        raise ValueError(f"need x (M, N) and y (N, M), got {tuple(x.shape)} and {tuple(y.shape)}")
    M, N = x.shape
    grid = ((N + 31) // 32, (M + 31) // 32)
    raw_kernel(name)(grid, (32, 8), (as_cupy(x), as_cupy(y), np.int32(M), np.int32(N)))
    return y


def strided_read(x, y, stride: int, offset: int = 0, block: int = 256):
    """Launch ``strided_read``: ``y[i] = x[offset + i*stride]`` on fp32 1-D arrays (torch CUDA
    tensors or CuPy arrays). Returns ``y``."""
    import numpy as np
    n = _numel(y)
    if stride < 1 or offset < 0 or offset + (n - 1) * stride >= _numel(x):
        raise ValueError(f"reading {n} elements at stride {stride}, offset {offset} must stay inside x")
    raw_kernel("strided_read")(((n + 4 * block - 1) // (4 * block),), (block,),
                               (as_cupy(x), as_cupy(y), np.int64(n), np.int32(stride), np.int32(offset)))
    return y
