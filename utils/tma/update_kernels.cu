// Descriptors updated on the device (grouped GEMM) and split-K partial tiles combined by a TMA
// reduce-add: three small teaching kernels, inline PTX so every step is visible. No #include.
//
// Compiled for sm_90a with NVRTC and assembled with ptxas on any machine (tests/test_tma_update.py
// reads the PTX and the SASS); run on a Hopper GPU by utils/tma/update_run.py, and on the CPU
// emulator by utils/emu/course.py (values and races, no time).
//
// PTX ISA references (docs.nvidia.com/cuda/parallel-thread-execution):
//  * tensormap.replace (Data Movement and Conversion Instructions): PTX ISA 8.3, sm_90a;
//    "treated as a weak memory operation on the entire 1024-bit tensor-map object".
//    global_stride's ordinal i is globalStrides[i] (the stride of dim i+1), in bytes (CUTLASS's
//    cute/arch/copy_sm90_desc.hpp passes bytes for CUDA >= 12.5, bytes >> 4 before).
//  * tensormap.cp_fenceproxy (Parallel Synchronization and Communication Instructions): PTX ISA
//    8.3, sm_90; copies 128 B shared::cta -> global and releases them to the tensormap proxy;
//    .sync.aligned: every lane of the warp executes it.
//  * fence.proxy.tensormap::generic.{release,acquire} (membar/fence): PTX ISA 8.3, sm_90; the
//    acquire names the descriptor's address and size 128.
//  * prefetch.tensormap (prefetch, prefetchu): .const/.param space or generic addressing.
//  * cp.reduce.async.bulk.tensor (.add on .f32/.f16/.bf16/.u32/.s32/.u64): PTX ISA 8.0, sm_90;
//    each element's reduction is .relaxed.gpu, so the order of the splits is not defined.

struct __align__(64) TensorMap { unsigned long long opaque[16]; };
struct Group { unsigned long long ptr; unsigned rows, cols; unsigned long long row_stride_bytes; };

__device__ __forceinline__ unsigned smem_u32(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
__device__ __forceinline__ unsigned long long globaltimer() {
  unsigned long long t; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); return t;
}
__device__ __forceinline__ bool try_wait(unsigned bar, unsigned parity) {
  unsigned ok;
  asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
               " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(bar), "r"(parity) : "memory");
  return ok != 0;
}

struct ByValue { TensorMap m[8]; };                   // 1 KiB of kernel parameters

// One CTA per group g loads box (0, 0) of group g into `out`, the descriptor coming from one of
// four places (the choices the notebook times; cycles[g] = clock64 from entry to the box's arrival):
//  mode 0: the base descriptor copied to SHARED memory, fields replaced there, published to
//          slots[g] (global) with tensormap.cp_fenceproxy;
//  mode 1: the base copied to slots[g] and the fields replaced IN PLACE in global memory, then
//          fence.proxy.tensormap::generic.release;
//  mode 2: slots[g] encoded on the HOST (cuTensorMapEncodeTiled) and copied there before launch;
//  mode 3: byval.m[g], encoded on the host and passed BY VALUE as a kernel parameter (g < 8).
// Modes 0-2 acquire the slot (fence.proxy.tensormap::generic.acquire) and prefetch it.
// box_bytes must be <= 16384 (the static tile): the launcher checks it.
extern "C" __global__ void grouped_load_updated(const __grid_constant__ TensorMap base,
                                                const __grid_constant__ ByValue byval, const Group* groups,
                                                TensorMap* slots, int mode, unsigned box_bytes,
                                                unsigned char* out, long long* cycles, int* status,
                                                unsigned long long timeout_ns) {
  __shared__ __align__(128) TensorMap sdesc;
  __shared__ __align__(128) unsigned char tile[16384];
  __shared__ __align__(8) unsigned long long bar_storage;
  const long long t0 = clock64();
  const unsigned bar = smem_u32(&bar_storage);
  const Group grp = groups[blockIdx.x];
  TensorMap* gdesc = slots + blockIdx.x;             // 128-B slot in global memory, one per group
  const unsigned lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (threadIdx.x < 32 && mode < 2) {                // warp 0 builds the descriptor
    // (1) copy the 128-B base descriptor: 16 lanes x 8 B, generic proxy
    if (lane < 16) { if (mode == 0) sdesc.opaque[lane] = base.opaque[lane]; else gdesc->opaque[lane] = base.opaque[lane]; }
    __syncwarp();
    if (lane == 0) {                                 // (2) replace what differs for this group
      if (mode == 0) {
        unsigned s = smem_u32(&sdesc);
        asm volatile("tensormap.replace.tile.global_address.shared::cta.b1024.b64 [%0], %1;" :: "r"(s), "l"(grp.ptr) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 0, %1;" :: "r"(s), "r"(grp.cols) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.shared::cta.b1024.b32 [%0], 1, %1;" :: "r"(s), "r"(grp.rows) : "memory");
        asm volatile("tensormap.replace.tile.global_stride.shared::cta.b1024.b64 [%0], 0, %1;" :: "r"(s), "l"(grp.row_stride_bytes) : "memory");
      } else {
        asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(gdesc), "l"(grp.ptr) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 0, %1;" :: "l"(gdesc), "r"(grp.cols) : "memory");
        asm volatile("tensormap.replace.tile.global_dim.global.b1024.b32 [%0], 1, %1;" :: "l"(gdesc), "r"(grp.rows) : "memory");
        asm volatile("tensormap.replace.tile.global_stride.global.b1024.b64 [%0], 0, %1;" :: "l"(gdesc), "l"(grp.row_stride_bytes) : "memory");
        // (3, in place) release the generic-proxy writes to the tensormap proxy
        asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
      }
    }
    __syncwarp();
    // (3, via shared memory) copy 128 B to global and release them: the whole warp executes it
    if (mode == 0)
      asm volatile("tensormap.cp_fenceproxy.global.shared::cta.tensormap::generic.release.gpu.sync.aligned [%0], [%1], 128;"
                   :: "l"(gdesc), "r"(smem_u32(&sdesc)) : "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    const void* d = mode == 3 ? (const void*)&byval.m[blockIdx.x] : (const void*)gdesc;
    if (mode < 3) {
      // (4) acquire: the tensormap proxy is not acquired from the generic proxy at kernel start
      asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gdesc) : "memory");
      asm volatile("prefetch.tensormap [%0];" :: "l"(gdesc) : "memory");               // (5) optional
    }
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(box_bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"  // (6) use it
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem_u32(tile)), "l"(d), "r"(0), "r"(0), "r"(bar) : "memory");
  }
  if (!try_wait(bar, 0)) {                           // bounded wait: a bad descriptor never hangs
    unsigned long long start = globaltimer();
    while (!try_wait(bar, 0))
      if (globaltimer() - start > timeout_ns) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
  }
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
  for (unsigned i = threadIdx.x; i < box_bytes && i < sizeof(tile); i += blockDim.x)
    out[(unsigned long long)blockIdx.x * box_bytes + i] = tile[i];
}

__device__ __forceinline__ void load_box(unsigned char* dst, const void* desc, unsigned bar, unsigned box_bytes) {
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(box_bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem_u32(dst)), "l"(desc), "r"(0), "r"(0), "r"(bar) : "memory");
  }
}

__device__ __forceinline__ bool wait_box(unsigned bar, unsigned parity, unsigned long long timeout_ns, int* status) {
  if (try_wait(bar, parity)) return true;
  unsigned long long start = globaltimer();
  while (!try_wait(bar, parity))
    if (globaltimer() - start > timeout_ns) { if (threadIdx.x == 0) atomicExch(status, 1); return false; }
  return true;
}

// What goes wrong (notebook 06, part 3). slots[c] holds a host-encoded descriptor of X. CTA c:
// load #1 of box (0, 0) through slots[c]; replace slots[c]'s global_address with new_ptr (Y, same
// shape) IN GLOBAL MEMORY, then (flags bit 0) fence.proxy.tensormap::generic.release and
// (bit 1) ...acquire; load #2 through slots[c]. Bit 2: do the replace while load #1 is still in
// flight (before waiting for it) instead of after. out[c] = [tile of load #1 | tile of load #2]:
// the host tells X's bytes from Y's.
extern "C" __global__ void update_race(TensorMap* slots, unsigned long long new_ptr, int flags,
                                       unsigned box_bytes, unsigned char* out, int* status,
                                       unsigned long long timeout_ns) {
  __shared__ __align__(128) unsigned char tile[2][8192];
  __shared__ __align__(8) unsigned long long bars[2];
  TensorMap* gdesc = slots + blockIdx.x;
  const unsigned b0 = smem_u32(&bars[0]), b1 = smem_u32(&bars[1]);
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b0));
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(b1));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gdesc) : "memory");
  }
  __syncthreads();
  bool ok = true;
  load_box(tile[0], gdesc, b0, box_bytes);
  if (!(flags & 4)) ok = wait_box(b0, 0, timeout_ns, status);
  if (threadIdx.x == 0) {
    asm volatile("tensormap.replace.tile.global_address.global.b1024.b64 [%0], %1;" :: "l"(gdesc), "l"(new_ptr) : "memory");
    if (flags & 1) asm volatile("fence.proxy.tensormap::generic.release.gpu;" ::: "memory");
    if (flags & 2) asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gdesc) : "memory");
  }
  __syncthreads();
  if (ok) load_box(tile[1], gdesc, b1, box_bytes);
  if (flags & 4) ok = wait_box(b0, 0, timeout_ns, status) && ok;
  ok = ok && wait_box(b1, 0, timeout_ns, status);
  if (!ok) return;
  for (unsigned i = threadIdx.x; i < box_bytes; i += blockDim.x) {
    out[(unsigned long long)blockIdx.x * 2 * box_bytes + i] = tile[0][i];
    out[(unsigned long long)blockIdx.x * 2 * box_bytes + box_bytes + i] = tile[1][i];
  }
}

// Split-K combine: CTA (tile t = blockIdx.x, split s = blockIdx.y) holds its fp32 partial tile
// (here read from `partials`, in a GEMM it is the accumulator), writes it to shared memory and
// ADDS it into C with one TMA reduce-add. C must hold zeros (or beta * C) before the launch.
// The box is at most 64 x 64 fp32 (the static buffer); c_map's box must be box_x x box_y.
extern "C" __global__ void splitk_reduce_add(const __grid_constant__ TensorMap c_map, const float* partials,
                                             int tiles_x, int box_x, int box_y, long long partial_stride) {
  __shared__ __align__(128) float acc[64 * 64];
  const int n = box_x * box_y;
  const float* src = partials + blockIdx.y * partial_stride + (long long)blockIdx.x * n;
  for (int i = threadIdx.x; i < n && i < 64 * 64; i += blockDim.x) acc[i] = src[i];    // generic proxy
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");   // our smem writes before TMA reads
  __syncthreads();
  if (threadIdx.x == 0) {
    int x = (blockIdx.x % tiles_x) * box_x, y = (blockIdx.x / tiles_x) * box_y;
    asm volatile("cp.reduce.async.bulk.tensor.2d.global.shared::cta.add.tile.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&c_map), "r"(x), "r"(y), "r"(smem_u32(acc)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem must outlive the read
  }
}
