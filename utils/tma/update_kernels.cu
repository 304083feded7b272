// Descriptors updated on the device (grouped GEMM) and split-K partial tiles combined by a TMA
// reduce-add: two small teaching kernels, inline PTX so every step is visible. No #include.
//
// STATUS: compiled for sm_90a with NVRTC and assembled with ptxas on a machine WITHOUT a GPU
// (tests/test_tma_update.py reads the PTX and the SASS). NOT YET RUN ON A GPU.
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

// One CTA per group g. mode 0: copy the base descriptor to SHARED memory, replace the fields
// there, publish it to slots[g] (global) with tensormap.cp_fenceproxy. mode 1: copy it to
// slots[g] and replace the fields IN PLACE in global memory, then fence.proxy...release.
// Either way the consumer acquires, prefetches, and loads box (0, 0) of group g into `out`.
// box_bytes must be <= 16384 (the static tile); a launcher (not written yet) must check it.
extern "C" __global__ void grouped_load_updated(const __grid_constant__ TensorMap base, const Group* groups,
                                                TensorMap* slots, int mode, unsigned box_bytes,
                                                unsigned char* out, int* status, unsigned long long timeout_ns) {
  __shared__ __align__(128) TensorMap sdesc;
  __shared__ __align__(128) unsigned char tile[16384];
  __shared__ __align__(8) unsigned long long bar_storage;
  const unsigned bar = smem_u32(&bar_storage);
  const Group grp = groups[blockIdx.x];
  TensorMap* gdesc = slots + blockIdx.x;             // 128-B slot in global memory, one per group
  const unsigned lane = threadIdx.x & 31;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  if (threadIdx.x < 32) {                            // warp 0 builds the descriptor
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
    // (4) acquire: the tensormap proxy is not acquired from the generic proxy at kernel start
    asm volatile("fence.proxy.tensormap::generic.acquire.gpu [%0], 128;" :: "l"(gdesc) : "memory");
    asm volatile("prefetch.tensormap [%0];" :: "l"(gdesc) : "memory");                 // (5) optional
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(box_bytes) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"  // (6) use it
                 " [%0], [%1, {%2, %3}], [%4];" :: "r"(smem_u32(tile)), "l"(gdesc), "r"(0), "r"(0), "r"(bar) : "memory");
  }
  if (!try_wait(bar, 0)) {                           // bounded wait: a bad descriptor never hangs
    unsigned long long start = globaltimer();
    while (!try_wait(bar, 0))
      if (globaltimer() - start > timeout_ns) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
  }
  for (unsigned i = threadIdx.x; i < box_bytes && i < sizeof(tile); i += blockDim.x)
    out[(unsigned long long)blockIdx.x * box_bytes + i] = tile[i];
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
