// The debugging lab's kernel (day 5 · 08): the correct one. The broken kernels are copies of it
// with one line changed (two in lab_mystery_7), made by utils/tma/lab.py (EDITS), so that each
// differs in those lines only.
// Compiled after tma_kernels.cu (utils/tma/lab.py), whose helpers they use: mbar_init,
// mbar_expect_tx, mbar_wait_bounded (the bounded wait), tma_load, tma_store, smem_base.
//
// Every kernel computes y = 2 x for a rows x cols fp32 tensor, one 16 x 32 box at a time: a CTA
// walks tiles blockIdx.x, += gridDim.x, through ONE shared-memory buffer and ONE mbarrier
// (so the barrier's phase flips every tile). Thread 0 issues the TMA load, every thread doubles
// its elements in shared memory, thread 0 TMA-stores the tile. The launcher gives each CTA
// TILE * 4 + 128 bytes of dynamic shared memory (plus the 1024 B of alignment slack).
// A timed-out wait sets *status = 1 and the CTA returns.

#define BOX_X 32                 // box columns (fp32: 128-byte rows)
#define BOX_Y 16                 // box rows
#define TILE (BOX_X * BOX_Y)     // elements per box

// The correct kernel.
extern "C" __global__ void lab_fixed(const __grid_constant__ TensorMap src, const __grid_constant__ TensorMap dst,
                                     int rows, int cols, int* status, unsigned long long timeout_ns) {
  unsigned bar = smem_addr(smem_base());                // the mbarrier: the first 8 bytes
  float* tile = (float*)(smem_base() + 128);            // the tile, after it
  int tiles_x = (cols + BOX_X - 1) / BOX_X, n_tiles = tiles_x * ((rows + BOX_Y - 1) / BOX_Y);
  if (threadIdx.x == 0) mbar_init(bar, 1);
  __syncthreads();
  for (int it = 0, t = blockIdx.x; t < n_tiles; ++it, t += gridDim.x) {
    Coords k = {{(t % tiles_x) * BOX_X, (t / tiles_x) * BOX_Y, 0, 0, 0}};
    if (threadIdx.x == 0) {
      mbar_expect_tx(bar, TILE * 4);
      tma_load(2, smem_addr(tile), &src, k, bar);
    }
    if (!mbar_wait_bounded(bar, it & 1, timeout_ns)) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
    for (int i = threadIdx.x; i < TILE; i += blockDim.x) tile[i] *= 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      tma_store(2, &dst, k, smem_addr(tile), 0);
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
  }
}
