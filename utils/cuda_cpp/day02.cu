// Day 2 teaching kernels (latency, bytes in flight, cp.async pipelines, mbarriers) for CuPy.
// No #include: NVRTC alone compiles this, on any machine. Inline PTX shows every step.
// Every mbarrier wait is BOUNDED (%globaltimer): a wrong phase ends in status = 1 and a Python
// RuntimeError, never a hung notebook.

__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned long long now_ns() {
  unsigned long long t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

// ---- Helpers (a learner's kernel may call these: utils.cuda_cpp.day02.HELPERS) ----------------
// One 16-byte cp.async from global to shared memory; valid == false: 16 zero bytes (zero-fill).
__device__ __forceinline__ void cp_async16(void* dst, const float4* src, bool valid) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;"       // %2 = 0: zero-fill
               :: "r"(smem_addr(dst)), "l"(src), "r"(valid ? 16 : 0) : "memory");
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Wait until at most N of this thread's committed groups are still in flight (N: a constant).
template <int N>
__device__ __forceinline__ void cp_async_wait() { asm volatile("cp.async.wait_group %0;" :: "n"(N) : "memory"); }
// Arrive on the mbarrier at `bar` when all of this thread's earlier cp.async copies have landed
// (.noinc: the arrival is one of those the barrier's init counted).
__device__ __forceinline__ void cp_async_arrive_noinc(unsigned bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(bar) : "memory");
}

// The consumer's "compute": `work` dependent FMAs per value, y = a^w x + (1 - a^w) with a = 0.999.
__device__ __forceinline__ float4 compute(float4 v, int work) {
  for (int w = 0; w < work; ++w) {
    v.x = fmaf(v.x, 0.999f, 0.001f); v.y = fmaf(v.y, 0.999f, 0.001f);
    v.z = fmaf(v.z, 0.999f, 0.001f); v.w = fmaf(v.w, 0.999f, 0.001f);
  }
  return v;
}

// mbarrier basics
__device__ __forceinline__ void mbar_init(unsigned bar, unsigned count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(bar), "r"(count) : "memory");
}
__device__ __forceinline__ void mbar_arrive(unsigned bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(bar) : "memory");
}
// Has the phase with this parity completed? (non-blocking; sm_80+)
__device__ __forceinline__ bool mbar_test(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}
// Wait for the phase with `parity` to complete, at most timeout_ns. Returns false on timeout.
__device__ __forceinline__ bool mbar_wait_bounded(unsigned bar, unsigned parity, unsigned long long timeout_ns) {
  if (mbar_test(bar, parity)) return true;
  unsigned long long start = now_ns();
  for (;;) {
    for (int i = 0; i < 64; ++i) if (mbar_test(bar, parity)) return true;
    if (now_ns() - start > timeout_ns) return false;
  }
}

// ---- end of the helpers ----

// ---- 1. Pointer chase: one thread, each load's address is the previous load's value ----------
// mode 0: ld.global.ca (cached in L1 and L2), 1: ld.global.cg (L2 only), 2: ld.shared (the
// cycle is first copied into shared memory by the whole block). cycles[0] = clock64 cycles.
extern "C" __global__ void chase(const int* next, int n, int steps, int mode, int* out,
                                 long long* cycles) {
  extern __shared__ int s_next[];
  if (mode == 2) {
    for (int j = threadIdx.x; j < n; j += blockDim.x) s_next[j] = next[j];
    __syncthreads();
  }
  if (threadIdx.x != 0) return;
  int i = 0;
  long long t0 = clock64();
  if (mode == 0) {
    for (int s = 0; s < steps; ++s) asm volatile("ld.global.ca.s32 %0, [%1];" : "=r"(i) : "l"(next + i));
  } else if (mode == 1) {
    for (int s = 0; s < steps; ++s) asm volatile("ld.global.cg.s32 %0, [%1];" : "=r"(i) : "l"(next + i));
  } else {
    for (int s = 0; s < steps; ++s) asm volatile("ld.shared.s32 %0, [%1];" : "=r"(i) : "r"(smem_addr(s_next + i)));
  }
  long long t1 = clock64();
  out[0] = i;
  cycles[0] = t1 - t0;
}

// ---- 2. Bytes in flight: every thread keeps U independent 16-byte loads in flight ------------
// Grid-stride over n_vec uint4; out[thread] = XOR of every word the thread read (so the loads
// cannot be removed, and Python can check that every vector was read exactly once).
template <int U>
__device__ __forceinline__ void read_inflight(const uint4* __restrict__ src, unsigned* out, long long n_vec) {
  long long stride = (long long)gridDim.x * blockDim.x;
  long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x;
  unsigned acc = 0;
#pragma unroll 1
  for (; i + (U - 1) * stride < n_vec; i += U * stride) {
    uint4 v[U];
#pragma unroll
    for (int k = 0; k < U; ++k) v[k] = src[i + k * stride];       // U loads issued back to back
#pragma unroll
    for (int k = 0; k < U; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;   // then used
  }
  for (; i < n_vec; i += stride) { uint4 v = src[i]; acc ^= v.x ^ v.y ^ v.z ^ v.w; }
  out[blockIdx.x * (long long)blockDim.x + threadIdx.x] = acc;
}
#define READ(U) extern "C" __global__ void read_inflight_u##U(const uint4* s, unsigned* o, long long n) { read_inflight<U>(s, o, n); }
READ(1) READ(2) READ(4) READ(8) READ(16)

// ---- 3. A tiled kernel with S shared-memory stages filled by cp.async ------------------------
// A tile is blockDim.x float4 (16 B per thread). Block b handles tiles b, b + gridDim.x, ...
// Stage k of the ring holds tile k % S. Tiles k+1 .. k+S-1 are in flight while tile k is used.
template <int S>
__device__ __forceinline__ void pipeline(const float4* x, float4* y, long long n_vec, int work) {
  extern __shared__ float4 ring[];                                  // S * blockDim.x float4
  const int T = blockDim.x, tid = threadIdx.x, peer = (tid + 32) % T;   // read a neighbour's data
  long long n_tiles = (n_vec + T - 1) / T;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto issue = [&](long long k) {                                   // tile k -> stage k % S
    long long v = (blockIdx.x + k * gridDim.x) * T + tid;
    cp_async16(&ring[(k % S) * T + tid], v < n_vec ? x + v : x, v < n_vec);
  };
  for (int k = 0; k < S - 1; ++k) {                                 // prologue: S-1 tiles ahead
    if (k < mine) issue(k);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (long long k = 0; k < mine; ++k) {
    if (k + S - 1 < mine) issue(k + S - 1);      // into the stage freed at the end of k-1
    asm volatile("cp.async.commit_group;" ::: "memory");   // one group per iteration, maybe empty
    asm volatile("cp.async.wait_group %0;" :: "n"(S - 1) : "memory");  // all but S-1 newest done
    __syncthreads();                                        // ... in every thread: tile k landed
    float4 v = compute(ring[(k % S) * T + peer], work);
    long long o = (blockIdx.x + k * gridDim.x) * T + peer;
    if (o < n_vec) y[o] = v;
    __syncthreads();                                        // stage k % S may be refilled now
  }
}
#define PIPE(S) extern "C" __global__ void cp_async_pipeline_s##S(const float4* x, float4* y, long long n, int w) { pipeline<S>(x, y, n, w); }
PIPE(1) PIPE(2) PIPE(3) PIPE(4) PIPE(8)

// ---- 4. mbarrier phases made visible -------------------------------------------------------------
// Phases made visible: count = blockDim.x. Each round, the first half of the threads arrive,
// thread 0 probes both parities, then the second half arrive and thread 0 probes again.
// probe[0..1] before any arrival; round r writes probe[2 + 4r .. 5 + 4r] (mid p0, p1, end p0, p1).
extern "C" __global__ void mbar_phases(int rounds, int* probe) {
  __shared__ __align__(8) unsigned long long bar_storage;
  unsigned bar = smem_addr(&bar_storage);
  if (threadIdx.x == 0) mbar_init(bar, blockDim.x);
  __syncthreads();
  if (threadIdx.x == 0) { probe[0] = mbar_test(bar, 0); probe[1] = mbar_test(bar, 1); }
  for (int r = 0; r < rounds; ++r) {
    __syncthreads();
    if (threadIdx.x < blockDim.x / 2) mbar_arrive(bar);
    __syncthreads();
    if (threadIdx.x == 0) { probe[2 + 4 * r] = mbar_test(bar, 0); probe[3 + 4 * r] = mbar_test(bar, 1); }
    __syncthreads();
    if (threadIdx.x >= blockDim.x / 2) mbar_arrive(bar);
    __syncthreads();
    if (threadIdx.x == 0) { probe[4 + 4 * r] = mbar_test(bar, 0); probe[5 + 4 * r] = mbar_test(bar, 1); }
  }
}

// ---- 5. A producer warp and a consumer warp around a ring of `stages` buffers ---------------
// full[s]: "stage s holds data"  (32 producer lanes arrive through cp.async.mbarrier.arrive)
// empty[s]: "stage s may be refilled" (32 consumer lanes arrive after reading it)
// Use k of stage s = k % stages is its (k / stages)-th use: waits alternate parity 0, 1, 0, ...
#ifndef PRODUCER_PARITY
#define PRODUCER_PARITY(k, stages) ((((k) / (stages)) & 1) ^ 1)
#endif
#define TILE_VEC 128                     // float4 per tile: 32 lanes x 4 = 2 KiB
extern "C" __global__ void pc_ring(const float4* x, float4* y, long long n_vec, int stages,
                                   int work, int bulk, int* status, unsigned long long timeout_ns) {
  extern __shared__ float4 ring[];                       // stages * TILE_VEC float4
  __shared__ __align__(8) unsigned long long full[8], empty[8];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  long long n_tiles = (n_vec + TILE_VEC - 1) / TILE_VEC;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x < stages) {
    mbar_init(smem_addr(&full[threadIdx.x]), bulk ? 1 : 32);
    mbar_init(smem_addr(&empty[threadIdx.x]), 32);
  }
#if __CUDA_ARCH__ >= 900
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");   // init visible to TMA
#endif
  __syncthreads();
  for (long long k = 0; k < mine; ++k) {
    int s = (int)(k % stages);
    long long base = (blockIdx.x + k * gridDim.x) * TILE_VEC;
    float4* stage = ring + s * TILE_VEC;
    if (warp == 0) {                                     // PRODUCER
      if (!mbar_wait_bounded(smem_addr(&empty[s]), PRODUCER_PARITY(k, stages), timeout_ns)) {
        atomicExch(status, 1); return;
      }
      if (!bulk) {                                       // 32 lanes x 4 cp.async of 16 B
        for (int j = 0; j < 4; ++j) {
          long long v = base + j * 32 + lane;
          cp_async16(&stage[j * 32 + lane], v < n_vec ? x + v : x, v < n_vec);
        }
        // arrive on full[s] when THIS lane's copies have landed (noinc: counted in init's 32)
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" :: "r"(smem_addr(&full[s])) : "memory");
      } else if (lane == 0) {                            // the step to TMA: one bulk copy
#if __CUDA_ARCH__ >= 900
        unsigned bytes = (unsigned)(min((long long)TILE_VEC, n_vec - base) * 16);
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(smem_addr(&full[s])), "r"(bytes) : "memory");
        asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                     :: "r"(smem_addr(stage)), "l"(x + base), "r"(bytes), "r"(smem_addr(&full[s])) : "memory");
#endif
      }
    } else {                                             // CONSUMER
      if (!mbar_wait_bounded(smem_addr(&full[s]), (unsigned)((k / stages) & 1), timeout_ns)) {
        atomicExch(status, 1); return;
      }
      for (int j = 0; j < 4; ++j) {
        long long v = base + j * 32 + lane;
        float4 r = compute(stage[j * 32 + lane], work);
        if (v < n_vec) y[v] = r;
      }
      mbar_arrive(smem_addr(&empty[s]));                 // this lane is done with stage s
    }
  }
}
