// The course's helpers and kernel for Exercise 4 of day 5 · 06 (read by utils/day05/group_desc.py);
// your load_group_box goes between them, at the line below the helpers. No #include.
struct __align__(64) TensorMap { unsigned long long opaque[16]; };   // 128 B, like CUtensorMap
constexpr int BOX_ROWS = 8, BOX_COLS = 16;                           // the base descriptor's box (fp32)
__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
// This CTA's box of a rows x cols group: (x, y) = its first column and row; false if it has none.
__device__ __forceinline__ bool tile_of(int rows, int cols, int* x, int* y) {
  const int tiles_x = (cols + BOX_COLS - 1) / BOX_COLS;
  *x = (blockIdx.x % tiles_x) * BOX_COLS; *y = (blockIdx.x / tiles_x) * BOX_ROWS;
  return *y < rows;
}
__device__ __forceinline__ void init_bar(unsigned bar) {            // one thread: count 1
  asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}
__device__ __forceinline__ bool try_wait0(unsigned bar) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
               " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(bar) : "memory");
  return ok != 0;
}
// Bounded wait for phase 0: false (and *status = 1) after timeout_ns, never a hang.
__device__ __forceinline__ bool wait_box(unsigned bar, unsigned long long timeout_ns, int* status) {
  if (try_wait0(bar)) return true;
  unsigned long long start, now;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
  while (!try_wait0(bar)) {
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
    if (now - start > timeout_ns) { if (threadIdx.x == 0) atomicExch(status, 1); return false; }
  }
  return true;
}
// Every thread: copy the landed box to this CTA's place in out.
__device__ __forceinline__ void save_box(float* out, const float* tile) {
  float* dst = out + (unsigned long long)(blockIdx.y * gridDim.x + blockIdx.x) * (BOX_ROWS * BOX_COLS);
  for (int i = threadIdx.x; i < BOX_ROWS * BOX_COLS; i += blockDim.x) dst[i] = tile[i];
}
// ---- load_group_box (the learner's) ----
// The course's kernel: CTA (t, g) = (blockIdx.x, blockIdx.y) loads box t of group g, rows
// offsets[g]..offsets[g+1] of A (K of its ld columns), through a descriptor built in its own slot.
extern "C" __global__ void group_tile(const __grid_constant__ TensorMap base, const float* a, int K, int ld,
                                      const int* offsets, TensorMap* slots, float* out, int* status,
                                      unsigned long long timeout_ns) {
  __shared__ __align__(128) float tile[BOX_ROWS * BOX_COLS];
  __shared__ __align__(8) unsigned long long bar;
  const int row0 = offsets[blockIdx.y], rows = offsets[blockIdx.y + 1] - row0;
  int x, y;
  if (!tile_of(rows, K, &x, &y)) return;              // this CTA's box (x, y) of group g, if it has one
  const unsigned b = smem_u32(&bar);
  if (threadIdx.x == 0) init_bar(b);
  __syncthreads();
  load_group_box(base, slots + blockIdx.y * gridDim.x + blockIdx.x, a, ld, row0, rows, x, y, tile, b);
  if (!wait_box(b, timeout_ns, status)) return;       // bounded wait for the box (phase 0)
  save_box(out, tile);
}
