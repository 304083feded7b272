// TMA teaching kernels for CuPy (NVRTC), written with inline PTX so every step is visible.
// No #include: NVRTC without the CUDA toolkit headers compiles this, on any machine.
//
// Conventions
//  * The tensor map (CUtensorMap, 128 bytes) is passed BY VALUE as `const __grid_constant__`:
//    a descriptor must live in .param, .const or .global space.
//  * Coordinates are given innermost first (like the driver), in a small struct by value.
//  * Every mbarrier wait is BOUNDED by a timeout in nanoseconds (%globaltimer): a wrong
//    expect_tx byte count ends in status = 1 and a Python error, never a hung notebook.

struct __align__(64) TensorMap { unsigned long long opaque[16]; };
struct Coords { int c[5]; };

__device__ __forceinline__ unsigned smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- mbarrier ---------------------------------------------------------------------------
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count));
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");   // make init visible to TMA
}
__device__ __forceinline__ void mbar_expect_tx(unsigned bar, unsigned bytes) {
  // one arrival, and `bytes` more bytes that TMA must deliver before the phase completes
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(bytes) : "memory");
}
__device__ __forceinline__ bool mbar_try_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}
// Wait for phase `parity` to complete, at most `timeout_ns`. Returns false on timeout.
// The clock is read only every 64 polls: the common case costs nothing extra.
__device__ __forceinline__ bool mbar_wait_bounded(unsigned bar, unsigned parity, unsigned long long timeout_ns) {
  if (mbar_try_wait(bar, parity)) return true;
#ifdef COURSE_UNBOUNDED_WAIT
  while (!mbar_try_wait(bar, parity)) {}
  return true;
#else
  unsigned long long start = now_ns();
  for (;;) {
    for (int i = 0; i < 64; ++i)
      if (mbar_try_wait(bar, parity)) return true;
    if (now_ns() - start > timeout_ns) return false;
  }
#endif
}

// ---- TMA: one instruction per box ---------------------------------------------------------
#define C1 "{%2}"
#define C2 "{%2, %3}"
#define C3 "{%2, %3, %4}"
#define C4 "{%2, %3, %4, %5}"
#define C5 "{%2, %3, %4, %5, %6}"
#define ARGS(k) "r"(k.c[0]), "r"(k.c[1]), "r"(k.c[2]), "r"(k.c[3]), "r"(k.c[4])

// global -> shared, completing `bytes` on the mbarrier at `bar`
__device__ __forceinline__ void tma_load(int rank, unsigned dst, const TensorMap* map, Coords k, unsigned bar) {
#define LOAD(D, C) asm volatile("cp.async.bulk.tensor." #D ".shared::cluster.global.tile.mbarrier::complete_tx::bytes" \
    " [%0], [%1, " C "], [%7];" :: "r"(dst), "l"(map), ARGS(k), "r"(bar) : "memory")
  switch (rank) { case 1: LOAD(1d, C1); break; case 2: LOAD(2d, C2); break; case 3: LOAD(3d, C3); break;
                  case 4: LOAD(4d, C4); break; default: LOAD(5d, C5); }
#undef LOAD
}
// shared -> global (reduce = 0) or shared + global -> global (reduce = 1, element-wise add)
__device__ __forceinline__ void tma_store(int rank, const TensorMap* map, Coords k, unsigned src, int reduce) {
#define STORE(D, C) asm volatile("cp.async.bulk.tensor." #D ".global.shared::cta.bulk_group" \
    " [%1, " C "], [%0];" :: "r"(src), "l"(map), ARGS(k) : "memory")
#define REDUCE(D, C) asm volatile("cp.reduce.async.bulk.tensor." #D ".global.shared::cta.add.tile.bulk_group" \
    " [%1, " C "], [%0];" :: "r"(src), "l"(map), ARGS(k) : "memory")
  if (reduce) {
    switch (rank) { case 1: REDUCE(1d, C1); break; case 2: REDUCE(2d, C2); break; case 3: REDUCE(3d, C3); break;
                    case 4: REDUCE(4d, C4); break; default: REDUCE(5d, C5); }
  } else {
    switch (rank) { case 1: STORE(1d, C1); break; case 2: STORE(2d, C2); break; case 3: STORE(3d, C3); break;
                    case 4: STORE(4d, C4); break; default: STORE(5d, C5); }
  }
#undef STORE
#undef REDUCE
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

extern __shared__ __align__(1024) unsigned char smem_raw[];
// Swizzled TMA boxes assume a shared-memory base aligned to the swizzle repeat (1024 B for
// 128B). The dynamic window is not guaranteed to start there, so launchers ask for 1024 extra
// bytes and every kernel uses this aligned base.
__device__ __forceinline__ unsigned char* smem_base() {
  return smem_raw + ((1024u - (smem_addr(smem_raw) & 1023u)) & 1023u);
}

// Load one box and dump the raw shared-memory bytes, so Python can compare them with the
// NumPy model byte for byte (swizzle included). Shared memory is poisoned with 0xAB first.
extern "C" __global__ void tma_load_dump(const __grid_constant__ TensorMap map, int rank, Coords k,
                                         unsigned expect_bytes, unsigned dump_bytes,
                                         unsigned char* out, int* status, unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  unsigned bar = smem_addr(&bar_storage);
  for (unsigned i = threadIdx.x; i < dump_bytes; i += blockDim.x) smem[i] = 0xAB;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // our writes before TMA's
  if (threadIdx.x == 0) mbar_init(bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_expect_tx(bar, expect_bytes);              // declare the bytes, then start the copy
    tma_load(rank, smem_addr(smem), &map, k, bar);
  }
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) {    // every thread waits on phase 0
    if (threadIdx.x == 0) atomicExch(status, 1);
    return;
  }
  for (unsigned i = threadIdx.x; i < dump_bytes; i += blockDim.x) out[i] = smem[i];
}

// Fill shared memory from `in` with ordinary stores, then TMA-store (or reduce-add) it.
// `proxy_fence` = 0 leaves out the fence the copy engine needs: see Exercise 3 of day 5, notebook 02.
extern "C" __global__ void tma_store_box(const __grid_constant__ TensorMap map, int rank, Coords k,
                                         const unsigned char* in, unsigned bytes, int reduce,
                                         int proxy_fence) {
  unsigned char* smem = smem_base();
  for (unsigned i = threadIdx.x; i < bytes; i += blockDim.x) smem[i] = in[i];   // generic proxy
  if (proxy_fence) asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); // -> async proxy
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store(rank, &map, k, smem_addr(smem), reduce);
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem may be reused/freed
  }
}

// A pipelined TMA copy: each CTA walks its tiles (tile = blockIdx.x, += gridDim.x) with
// `stages` shared-memory buffers. One thread does everything: up to `stages` loads in flight,
// each buffer stored back by TMA as soon as it lands, and reloaded once that store has read it.
// The bytes never pass through registers. Tiles are numbered row-major over a 2-D tensor.
extern "C" __global__ void tma_copy_pipelined(const __grid_constant__ TensorMap src,
                                              const __grid_constant__ TensorMap dst,
                                              int tiles_x, int n_tiles, int box_x, int box_y,
                                              int stages, unsigned tile_bytes, int* status,
                                              unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bars[8];
  if (threadIdx.x != 0) return;                 // a single thread drives the copy engine
  int mine = (n_tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;
  for (int s = 0; s < stages; ++s) mbar_init(smem_addr(&bars[s]), 1);
  Coords k = {{0, 0, 0, 0, 0}};
  for (int i = 0; i < stages && i < mine; ++i) {          // prologue: fill the pipeline
    int t = blockIdx.x + i * gridDim.x;
    k.c[0] = (t % tiles_x) * box_x; k.c[1] = (t / tiles_x) * box_y;
    mbar_expect_tx(smem_addr(&bars[i]), tile_bytes);
    tma_load(2, smem_addr(smem + i * tile_bytes), &src, k, smem_addr(&bars[i]));
  }
  for (int i = 0; i < mine; ++i) {
    int s = i % stages, t = blockIdx.x + i * gridDim.x;
    if (!mbar_wait_bounded(smem_addr(&bars[s]), (i / stages) & 1, timeout_ns)) { atomicExch(status, 1); return; }
    k.c[0] = (t % tiles_x) * box_x; k.c[1] = (t / tiles_x) * box_y;
    tma_store(2, &dst, k, smem_addr(smem + s * tile_bytes), 0);          // buffer s -> global
    // Refill the buffer of the PREVIOUS tile: its store has had one iteration to read it, so
    // "all but the newest group have read their source" (wait_group.read 1) rarely waits.
    int prev = i - 1, next = prev + stages;
    if (prev >= 0 && next < mine) {
      int sp = prev % stages, tn = blockIdx.x + next * gridDim.x;
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      k.c[0] = (tn % tiles_x) * box_x; k.c[1] = (tn / tiles_x) * box_y;
      mbar_expect_tx(smem_addr(&bars[sp]), tile_bytes);
      tma_load(2, smem_addr(smem + sp * tile_bytes), &src, k, smem_addr(&bars[sp]));
    }
  }
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem must outlive the reads
}

// (h) The same pipeline with 1-D bulk copies: no tensor map at all. `cp.async.bulk` moves
// `chunk` contiguous bytes global -> shared (completing them on an mbarrier) and shared ->
// global (a bulk group); addresses and sizes are multiples of 16 B (the launcher checks).
// Chunks are numbered over the flat buffer; the last one may be shorter.
__device__ __forceinline__ void bulk_load(unsigned dst, const unsigned char* src, unsigned bytes, unsigned bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar) : "memory");
}
__device__ __forceinline__ void bulk_store(unsigned char* dst, unsigned src, unsigned bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" :: "l"(dst), "r"(src), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
// The same two copies with an L2 cache hint: `policy` (from createpolicy) says how L2 should
// keep the lines they touch; evict_first: these lines go first when L2 needs room.
__device__ __forceinline__ unsigned long long evict_first_policy() {
  unsigned long long policy;
  asm volatile("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(policy));
  return policy;
}
__device__ __forceinline__ void bulk_load_hinted(unsigned dst, const unsigned char* src, unsigned bytes, unsigned bar,
                                                 unsigned long long policy) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.L2::cache_hint [%0], [%1], %2, [%3], %4;"
               :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "l"(policy) : "memory");
}
__device__ __forceinline__ void bulk_store_hinted(unsigned char* dst, unsigned src, unsigned bytes,
                                                  unsigned long long policy) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group.L2::cache_hint [%0], [%1], %2, %3;"
               :: "l"(dst), "r"(src), "r"(bytes), "l"(policy) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}
extern "C" __global__ void bulk_copy_pipelined(const unsigned char* src, unsigned char* dst,
                                               unsigned long long total, unsigned chunk, int stages,
                                               int span, int* status, unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bars[8];
  if (threadIdx.x != 0) return;                 // a single thread drives the copy engine
  long long n_chunks = (long long)((total + chunk - 1) / chunk);
  // Which chunks this CTA copies: round robin (chunk blockIdx.x + i * gridDim.x, so at any moment
  // the whole grid works on one region of memory), or `span`: one contiguous run of chunks per CTA.
  long long per = (n_chunks + gridDim.x - 1) / gridDim.x, first = (long long)blockIdx.x * per;
  long long left = n_chunks - first;                // span: this CTA's run is [first, first + mine)
  long long mine = span ? (left < 0 ? 0 : left < per ? left : per)
                        : (n_chunks - (long long)blockIdx.x + gridDim.x - 1) / gridDim.x;
  auto offset = [&](long long i) -> unsigned long long {   // byte offset of this CTA's i-th chunk
    return (unsigned long long)(span ? first + i : (long long)blockIdx.x + i * (long long)gridDim.x) * chunk;
  };
  auto size = [&](unsigned long long at) -> unsigned { return (unsigned)(total - at < chunk ? total - at : chunk); };
  for (int s = 0; s < stages; ++s) mbar_init(smem_addr(&bars[s]), 1);
  for (int i = 0; i < stages && i < mine; ++i) {          // prologue: fill the pipeline
    unsigned long long at = offset(i);
    mbar_expect_tx(smem_addr(&bars[i]), size(at));
    bulk_load(smem_addr(smem + i * chunk), src + at, size(at), smem_addr(&bars[i]));
  }
  for (long long i = 0; i < mine; ++i) {
    int s = (int)(i % stages);
    unsigned long long at = offset(i);
    if (!mbar_wait_bounded(smem_addr(&bars[s]), (unsigned)((i / stages) & 1), timeout_ns)) { atomicExch(status, 1); return; }
    bulk_store(dst + at, smem_addr(smem + s * chunk), size(at));
    long long prev = i - 1, next = prev + stages;           // refill the previous chunk's buffer
    if (prev >= 0 && next < mine) {
      int sp = (int)(prev % stages);
      unsigned long long an = offset(next);
      asm volatile("cp.async.bulk.wait_group.read 1;" ::: "memory");
      mbar_expect_tx(smem_addr(&bars[sp]), size(an));
      bulk_load(smem_addr(smem + sp * chunk), src + an, size(an), smem_addr(&bars[sp]));
    }
  }
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem must outlive the reads
}

// (h) The loop with ONE chunk at a time per CTA (load -> wait -> store -> wait until the store has
// read the buffer -> next chunk): no ring, so no chunk ever waits behind an older one of its CTA.
// Which chunk comes next: chunk blockIdx.x + i * gridDim.x (a fixed round robin), or with
// `dynamic` the next one no CTA has taken yet, from the counter next[0]. The last CTA to finish
// resets the counters (next[1] counts the CTAs done), so the next launch starts from chunk 0.
extern "C" __global__ void bulk_copy_serial(const unsigned char* src, unsigned char* dst,
                                            unsigned long long total, unsigned chunk, int dynamic,
                                            unsigned long long* next, int* status,
                                            unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  if (threadIdx.x != 0) return;
  unsigned bar = smem_addr(&bar_storage), phase = 0;
  unsigned long long n_chunks = (total + chunk - 1) / chunk;
  mbar_init(bar, 1);
  for (unsigned long long i = blockIdx.x;; phase ^= 1) {
    if (dynamic) i = atomicAdd(next, 1ULL);            // the next chunk nobody has taken
    if (i >= n_chunks) break;
    unsigned long long at = i * chunk;
    unsigned bytes = (unsigned)(total - at < chunk ? total - at : chunk);
    mbar_expect_tx(bar, bytes);
    bulk_load(smem_addr(smem), src + at, bytes, bar);
    if (!mbar_wait_bounded(bar, phase, timeout_ns)) { atomicExch(status, 1); break; }
    bulk_store(dst + at, smem_addr(smem), bytes);
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // the buffer is free again
    if (!dynamic) i += gridDim.x;
  }
  if (dynamic && atomicAdd(next + 1, 1ULL) == gridDim.x - 1) { next[0] = 0; next[1] = 0; }
}

// (h) The 1-D bulk copy without the loop: each CTA copies ONE chunk (load -> wait -> store) and
// exits, and the hardware's CTA scheduler starts the next CTA in its place. The chunks in flight
// per SM are the CTAs resident there (shared memory decides how many): no ring, no stage index,
// no phase to track. `evict_first` (bit 0: the loads, bit 1: the stores) asks L2 to evict those
// lines first; 0 issues the plain copies.
extern "C" __global__ void bulk_copy_chunk(const unsigned char* src, unsigned char* dst,
                                           unsigned long long total, unsigned chunk, int evict_first,
                                           int* status, unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  if (threadIdx.x != 0) return;
  unsigned long long at = (unsigned long long)blockIdx.x * chunk;
  if (at >= total) return;
  unsigned bytes = (unsigned)(total - at < chunk ? total - at : chunk), bar = smem_addr(&bar_storage);
  unsigned long long policy = evict_first ? evict_first_policy() : 0;
  mbar_init(bar, 1);
  mbar_expect_tx(bar, bytes);
  if (evict_first & 1) bulk_load_hinted(smem_addr(smem), src + at, bytes, bar, policy);
  else bulk_load(smem_addr(smem), src + at, bytes, bar);
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) { atomicExch(status, 1); return; }
  if (evict_first & 2) bulk_store_hinted(dst + at, smem_addr(smem), bytes, policy);
  else bulk_store(dst + at, smem_addr(smem), bytes);
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem must outlive the read
}

// The simplest TMA copy: one tile per CTA, load -> wait -> store.
extern "C" __global__ void tma_copy_tile(const __grid_constant__ TensorMap src,
                                         const __grid_constant__ TensorMap dst, int tiles_x,
                                         int box_x, int box_y, unsigned tile_bytes, int* status,
                                         unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  if (threadIdx.x != 0) return;
  unsigned bar = smem_addr(&bar_storage);
  Coords k = {{(int)(blockIdx.x % tiles_x) * box_x, (int)(blockIdx.x / tiles_x) * box_y, 0, 0, 0}};
  mbar_init(bar, 1);
  mbar_expect_tx(bar, tile_bytes);
  tma_load(2, smem_addr(smem), &src, k, bar);
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) { atomicExch(status, 1); return; }
  tma_store(2, &dst, k, smem_addr(smem), 0);
  asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}

// The thread-driven baseline: every thread copies 16-byte vectors, grid-stride.
extern "C" __global__ void plain_copy(const uint4* __restrict__ src, uint4* __restrict__ dst, long long n_vec) {
  for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n_vec; i += (long long)gridDim.x * blockDim.x)
    dst[i] = src[i];
}

// (f) Read one column of a 64 x 64 fp16 tile (128-byte rows) that TMA placed in shared memory,
// 16 bytes per thread (thread t reads row t % 64, chunk `chunk`), `reps` times; report the
// cycles per warp-wide read. With SWIZZLE_NONE the 32 threads hit the same banks; with
// SWIZZLE_128B the chunk index is XOR-ed with the row, spreading them over all 32 banks.
extern "C" __global__ void column_read(const __grid_constant__ TensorMap map, int chunk, int swizzled,
                                       int reps, unsigned long long* cycles, float* sink, int* status,
                                       unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  unsigned bar = smem_addr(&bar_storage);
  if (threadIdx.x == 0) { mbar_init(bar, 1); }
  __syncthreads();
  if (threadIdx.x == 0) {
    Coords k = {{0, 0, 0, 0, 0}};
    mbar_expect_tx(bar, 64 * 64 * 2);
    tma_load(2, smem_addr(smem), &map, k, bar);
  }
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
  int row = threadIdx.x % 64;
  int phys = swizzled ? (chunk ^ (row % 8)) : chunk;      // where TMA put logical chunk `chunk`
  unsigned addr = smem_addr(smem + row * 128 + phys * 16);
  float acc = 0.f;
  __syncwarp();
  unsigned long long t0 = clock64();
  for (int r = 0; r < reps; ++r) {
    unsigned a, b, c, d;
    asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];" : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr));
    // The next address depends on this load's value (two fp16 NaNs never occur in the tile, but
    // the compiler cannot know), so each read waits for the previous one to return: the time
    // per read is its latency, bank-conflict replays included.
    addr = (a == 0xFFFFFFFFu) ? addr + 16 : addr;
    acc += __uint_as_float(a ^ b ^ c ^ d);
  }
  __syncwarp();
  unsigned long long t1 = clock64();
  if (threadIdx.x == 0) cycles[blockIdx.x] = (t1 - t0) / reps;
  sink[threadIdx.x] = acc;
}

// Load one box, then one warp reads it back from shared memory: thread t loads the 16 bytes
// at byte offset offsets[t] of the box image, `reps` times (ld.volatile, so ptxas keeps every
// load), and writes what it read to out[t]. The caller takes the offsets from the NumPy model
// (where it says a column's chunks sit, swizzle included) and checks the values against the
// tensor; Nsight Compute counts the shared-memory wavefronts the reads cost.
extern "C" __global__ void shared_read_at(const __grid_constant__ TensorMap map, int rank, Coords k,
                                          unsigned expect_bytes, const int* offsets, int reps,
                                          uint4* out, int* status, unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  unsigned bar = smem_addr(&bar_storage);
  if (threadIdx.x == 0) mbar_init(bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_expect_tx(bar, expect_bytes);
    tma_load(rank, smem_addr(smem), &map, k, bar);
  }
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
  unsigned addr = smem_addr(smem + offsets[threadIdx.x]);
  unsigned a = 0, b = 0, c = 0, d = 0;
  for (int r = 0; r < reps; ++r)
    asm volatile("ld.volatile.shared.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(a), "=r"(b), "=r"(c), "=r"(d) : "r"(addr) : "memory");
  out[threadIdx.x] = make_uint4(a, b, c, d);
}

// (i) The L2 feed, with and without multicast. A cluster of R CTAs reads the same chunks:
// `per_cta` chunks of `chunk` bytes, starting at chunk `first = cluster id * per_cta`, taken
// modulo the `n_chunks` of the source (a source smaller than L2 stays there). Warp 0 is the
// producer; warps 1-4 consume each chunk from shared memory (a sum per thread, so the bytes
// are really read) and free its buffer. `lines` (1 .. chunk / 2048) is how many 2 KiB lines of each
// chunk the consumers read: all of them to sum every byte, 1 to measure what the SM can take in
// when its own work is almost nothing (the copy still lands the whole chunk).
//  * mode 0: every CTA loads the whole chunk into its own shared memory (R reads of each
//    chunk from L2), and frees its own buffer.
//  * mode 1 (multicast): CTA `rank` loads slice `rank` of the chunk ONCE for the whole cluster
//    (`.multicast::cluster`, mask = all R CTAs), so L2 is read once per chunk; a buffer may be
//    refilled only when the consumers of EVERY CTA freed it, so each consumer warp arrives on
//    the `empty` barrier of every CTA of the cluster (mapa + a remote mbarrier arrive).
//  * mode 2: loads as mode 0, frees as mode 1 (the cluster-wide release without multicast).
//  * mode 3: as mode 2, but each remote arrive carries `.release.cluster` (a cluster-scope release,
//    the fenced form the course first used). Modes 1 and 2 arrive as the course's CuteDSL GEMM
//    (CUTLASS's pipeline) does: `mbarrier.arrive.shared::cluster.b64` with the default semantics.
//  * mode 4: as mode 0, but out of step: CTA `rank` takes the cluster's chunks starting
//    `rank * per_cta / R` chunks later (wrapping round), so the CTAs of a cluster never ask for
//    the same chunk at the same time (the same chunks in all, so the same sums).
// out[global CTA][thread] = that thread's sum; every wait is bounded (status = 1).
__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r;
}
__device__ __forceinline__ unsigned cluster_id() {
  unsigned r; asm volatile("mov.u32 %0, %%clusterid.x;" : "=r"(r)); return r;
}
__device__ __forceinline__ void cluster_sync_all() {
  asm volatile("barrier.cluster.arrive.release.aligned;\nbarrier.cluster.wait.acquire.aligned;" ::: "memory");
}
__device__ __forceinline__ void bulk_load_multicast(unsigned dst, const unsigned char* src, unsigned bytes,
                                                    unsigned bar, unsigned short mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1], %2, [%3], %4;" :: "r"(dst), "l"(src), "r"(bytes), "r"(bar), "h"(mask) : "memory");
}
__device__ __forceinline__ void mbar_arrive_in(unsigned bar, unsigned rank, bool fenced) {   // on CTA `rank`'s barrier
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(bar), "r"(rank));
  if (fenced) asm volatile("mbarrier.arrive.release.cluster.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
  else asm volatile("mbarrier.arrive.shared::cluster.b64 _, [%0];" :: "r"(remote) : "memory");
}

__device__ __forceinline__ float half_to_float(unsigned bits) {   // no cuda_fp16.h under NVRTC here
  float f; unsigned short h = (unsigned short)bits;
  asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
}
template <int R>
__device__ __forceinline__ void feed_body(const unsigned char* src, long long n_chunks, unsigned chunk,
                                          int stages, int per_cta, int lines, int mode, float* out, int* status,
                                          unsigned long long timeout_ns) {
  unsigned char* smem = smem_base();
  __shared__ __align__(8) unsigned long long full[8], empty[8];   // runtime.STATIC_SMEM bytes
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  const unsigned rank = R > 1 ? cluster_rank() : 0;
  const long long first = (long long)(R > 1 ? cluster_id() : blockIdx.x) * per_cta;
  const bool cluster_free = mode >= 1 && mode <= 3;  // a buffer is freed by every CTA's consumers
  const int freeers = cluster_free ? 4 * R : 4;      // consumer warps that free each buffer
  if (threadIdx.x == 0)
    for (int s = 0; s < stages; ++s) { mbar_init(smem_addr(&full[s]), 1); mbar_init(smem_addr(&empty[s]), freeers); }
  if (R > 1) cluster_sync_all(); else __syncthreads();    // barriers ready before any peer's copy
  bool ok = true;
  if (warp == 0) {
    if (lane == 0) {
      const unsigned slice = mode == 1 ? chunk / R : chunk;
      for (int i = 0; i < per_cta && ok; ++i) {
        int s = i % stages;
        if (i >= stages && !mbar_wait_bounded(smem_addr(&empty[s]), ((i / stages) + 1) & 1, timeout_ns)) ok = false;
        if (!ok) break;
        const long long j = mode == 4 ? (i + (long long)rank * (per_cta / R)) % per_cta : i;
        const unsigned char* g = src + ((first + j) % n_chunks) * chunk;
        mbar_expect_tx(smem_addr(&full[s]), chunk);       // the whole chunk lands here either way
        if (R > 1 && mode == 1)                           // compiled out of feed_c1
          bulk_load_multicast(smem_addr(smem + s * chunk + rank * slice), g + rank * slice, slice,
                              smem_addr(&full[s]), (unsigned short)((1u << R) - 1));
        else
          bulk_load(smem_addr(smem + s * chunk), g, chunk, smem_addr(&full[s]));
      }
    }
  } else {
    const int t = threadIdx.x - 32;                       // 0..127
    float acc = 0.f;
    for (int i = 0; i < per_cta && ok; ++i) {
      int s = i % stages;
      bool landed = mbar_wait_bounded(smem_addr(&full[s]), (i / stages) & 1, timeout_ns);
      if (!__all_sync(0xffffffffu, landed)) { ok = false; break; }   // the whole warp leaves together
      const uint4* v = reinterpret_cast<const uint4*>(smem + s * chunk);
      for (unsigned k = t; k < (unsigned)lines * 128u; k += 128) {
        uint4 q = v[k];
        unsigned w[4] = {q.x, q.y, q.z, q.w};
        for (int j = 0; j < 4; ++j) acc += half_to_float(w[j] & 0xffffu) + half_to_float(w[j] >> 16);
      }
      __syncwarp();
      if (lane == 0) {
        if (R > 1 && cluster_free) { for (int r = 0; r < R; ++r) mbar_arrive_in(smem_addr(&empty[s]), r, mode == 3); }
        else asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(&empty[s])) : "memory");
      }
    }
    out[(long long)blockIdx.x * 128 + t] = acc;
  }
  if (!ok) atomicExch(status, 1);
  if (R > 1) cluster_sync_all();                          // no CTA leaves while peers may still write to it
}
extern "C" __global__ void __cluster_dims__(1, 1, 1) feed_c1(const unsigned char* src, long long n_chunks,
    unsigned chunk, int stages, int per_cta, int lines, int mode, float* out, int* status, unsigned long long timeout_ns) {
  feed_body<1>(src, n_chunks, chunk, stages, per_cta, lines, mode, out, status, timeout_ns);
}
extern "C" __global__ void __cluster_dims__(2, 1, 1) feed_c2(const unsigned char* src, long long n_chunks,
    unsigned chunk, int stages, int per_cta, int lines, int mode, float* out, int* status, unsigned long long timeout_ns) {
  feed_body<2>(src, n_chunks, chunk, stages, per_cta, lines, mode, out, status, timeout_ns);
}
extern "C" __global__ void __cluster_dims__(4, 1, 1) feed_c4(const unsigned char* src, long long n_chunks,
    unsigned chunk, int stages, int per_cta, int lines, int mode, float* out, int* status, unsigned long long timeout_ns) {
  feed_body<4>(src, n_chunks, chunk, stages, per_cta, lines, mode, out, status, timeout_ns);
}
