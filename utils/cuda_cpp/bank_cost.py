"""What a shared-memory bank conflict costs, measured: a warp reads a column of 16-byte chunks
(8 rows of 128 bytes per 8-lane phase, as an operand load does) with 1-, 2-, 4- or 8-way
conflicts per phase, chosen by XOR-ing the chunk index with ``row & mask`` (mask 7: conflict-free,
like SWIZZLE_128B; mask 0: all 8 rows in the same 4 banks, like no swizzle).

Two timings per pattern, both with the SM's cycle counter:

* ``latency``: each read's address depends on the previous read's value, so the time per read
  is one load's whole latency, replays included;
* ``throughput``: 16 warps, each with eight independent reads per step, so the shared-memory
  pipeline, not one read's latency, sets the pace: the time per warp-read approaches the cost
  of its wavefronts alone (cycles of the whole loop / reads of all warps).

A 16-byte-per-lane warp read needs at least 4 wavefronts (512 bytes, 128 per wavefront); a
``k``-way conflict per phase makes it ``4 k``. Runs on any CUDA GPU (no TMA needed); the source
compiles with NVRTC alone, so its PTX can be read on any machine.
"""
from __future__ import annotations

import functools

import numpy as np

WAYS_TO_MASK = {1: 7, 2: 3, 4: 1, 8: 0}      # XOR mask of the row index -> conflict ways per phase
THROUGHPUT_WARPS = 16                         # warps reading at once in the throughput timing

SOURCE = r"""
#define FILL(tile) \
  for (int i = threadIdx.x; i < 64 * 128 / 4; i += blockDim.x) \
    ((unsigned*)tile)[i] = 0x3c003c00u ^ ((i * 2654435761u) & 0x03ff03ffu);  /* fp16 values, never 0xFFFF */
// Lane t reads logical chunk `chunk` of row t % 64, stored at chunk ^ (row & xor_mask).
extern "C" __global__ void column_read_cost(int xor_mask, int chunk, int reps, int independent,
                                            unsigned long long* cycles, float* sink) {
  __shared__ __align__(128) unsigned char tile[64 * 128];
  FILL(tile);
  __syncthreads();
  int row = threadIdx.x % 64;
  unsigned addr = (unsigned)__cvta_generic_to_shared(tile + row * 128 + ((chunk ^ (row & xor_mask)) * 16));
  unsigned acc = 0;
  __syncthreads();
  unsigned long long t0 = clock64();
  for (int r = 0; r < reps; ++r) {
    unsigned a, b, c, d;
    if (independent) {                    // 8 reads with no dependence between them; .volatile keeps
                                          // ptxas from merging the 8 identical loads into one
      #pragma unroll
      for (int j = 0; j < 8; ++j) {
        asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
        acc ^= a ^ b ^ c ^ d;
      }
    } else {                              // one read whose result the next address depends on
      asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
      acc ^= a ^ b ^ c ^ d;
    }
    addr = (a == 0xFFFFFFFFu) ? addr + 16 : addr;   // never taken, but the compiler cannot know
  }
  __syncthreads();
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cycles[0] = t1 - t0;      // the host divides by the warp-reads
  sink[threadIdx.x] = __uint_as_float(acc);
}
"""


@functools.lru_cache(maxsize=None)
def _kernel():
    import cupy as cp
    return cp.RawModule(code=SOURCE, options=("-std=c++17",)).get_function("column_read_cost")


def cycles_per_read(ways: int, *, independent: bool, reps: int = 256, repeat: int = 5) -> float:
    """Median cycles per warp-wide 16-byte column read with ``ways``-way conflicts per 8-lane
    phase (1, 2, 4 or 8): its latency (``independent=False``, one warp, a dependent chain) or
    its throughput cost (``independent=True``, ``THROUGHPUT_WARPS`` warps of independent reads:
    loop cycles per warp-read). Needs a CUDA GPU."""
    import cupy as cp
    _check_ways(ways)
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ValueError(f"reps must be a positive int, got {reps!r}")
    cycles, sink, got = cp.zeros(1, cp.uint64), cp.zeros(THROUGHPUT_WARPS * 32, cp.float32), []
    for _ in range(repeat):
        _kernel()((1,), (THROUGHPUT_WARPS * 32 if independent else 32,), (np.int32(WAYS_TO_MASK[ways]), np.int32(3), np.int32(reps),
                                np.int32(bool(independent)), cycles, sink))
        reads = reps * (8 * THROUGHPUT_WARPS if independent else 1)
        got.append(int(cycles.get()[0]) / reads)
    return float(np.median(got))


def _check_ways(ways) -> None:
    if isinstance(ways, bool) or not isinstance(ways, int) or ways not in WAYS_TO_MASK:
        raise ValueError(f"ways must be one of {sorted(WAYS_TO_MASK)} (an int), got {ways!r}")


def wavefronts(ways: int) -> int:
    """Wavefronts of one warp-wide 16-byte read with ``ways``-way conflicts per 8-lane phase."""
    _check_ways(ways)
    return 4 * ways


def fit_line(xs, ys) -> tuple[float, float]:
    """Least-squares ``y = a + b x``: returns ``(a, b)`` (fixed cost, cost per unit)."""
    xs, ys = np.asarray(xs, float), np.asarray(ys, float)
    if xs.shape != ys.shape or xs.size < 2 or np.ptp(xs) == 0:
        raise ValueError("fit_line needs at least two points with different x, as equal-length lists")
    b, a = np.polyfit(xs, ys, 1)
    return float(a), float(b)
