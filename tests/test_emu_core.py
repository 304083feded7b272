"""The PTX emulator's core (utils.emu): arithmetic, divergence, memory, errors it must raise."""
import numpy as np
import pytest

from utils.emu import (Deadlock, MemoryFault, MisalignedAddress, RaceError, UnsupportedPTX, device_empty, launch,
                       to_device)
from utils.emu.parse import parse

ALU = r'''
extern "C" __global__ void alu(const int* a, const int* b, int* out, const float* f, float* fo,
                               unsigned long long* wide) {
  int i = threadIdx.x;
  int x = a[i], y = b[i];
  out[i * 8 + 0] = x / y;                 // truncates toward zero
  out[i * 8 + 1] = x % y;
  out[i * 8 + 2] = x >> (i % 33);         // arithmetic shift
  out[i * 8 + 3] = (int)((unsigned)x >> 3);
  out[i * 8 + 4] = min(x, y) * 3 - max(x, y);
  out[i * 8 + 5] = (x & 0xff) ^ (y | 7);
  out[i * 8 + 6] = __popc(x) + __clz(y);
  out[i * 8 + 7] = (int)(f[i] * 3.5f);    // cvt.rzi
  fo[i] = fmaf(f[i], 1.25f, -0.5f) / 3.0f;
  wide[i] = (unsigned long long)(unsigned)x * (unsigned)y + ((unsigned long long)i << 40);
}
'''


def test_integer_and_float_semantics_match_cuda():
    rng = np.random.default_rng()
    a = rng.integers(-10**6, 10**6, 64).astype(np.int32)
    b = rng.integers(1, 1000, 64).astype(np.int32) * rng.choice([-1, 1], 64).astype(np.int32)
    f = rng.standard_normal(64).astype(np.float32)
    out, fo, wide = np.zeros(64 * 8, np.int32), np.zeros(64, np.float32), np.zeros(64, np.uint64)
    rep = launch(ALU, "alu", 1, 64, [a, b, out, f, fo, wide])
    o = out.reshape(64, 8)
    q = np.trunc(a / b).astype(np.int32)
    assert (o[:, 0] == q).all() and (o[:, 1] == a - q * b).all()
    sh = np.arange(64) % 33
    assert (o[:, 2] == np.where(sh >= 32, np.where(a < 0, -1, 0), a >> np.minimum(sh, 31))).all()
    assert (o[:, 3] == (a.view(np.uint32) >> 3).view(np.int32)).all()
    assert (o[:, 4] == np.minimum(a, b) * 3 - np.maximum(a, b)).all()
    assert (o[:, 5] == (a & 0xff) ^ (b | 7)).all()
    popc = np.array([bin(int(v)).count("1") for v in a.view(np.uint32)])
    clz = np.array([32 - int(v).bit_length() for v in b.view(np.uint32)])
    assert (o[:, 6] == popc + clz).all()
    assert (o[:, 7] == np.trunc(f * np.float32(3.5)).astype(np.int32)).all()
    ref = ((f.astype(np.float64) * 1.25 - 0.5).astype(np.float32) / np.float32(3)).astype(np.float32)
    assert np.array_equal(fo, ref)
    assert (wide == a.view(np.uint32).astype(np.uint64) * b.view(np.uint32).astype(np.uint64)
            + (np.arange(64, dtype=np.uint64) << np.uint64(40))).all()
    assert repr(rep).startswith("emulator:")


DIVERGE = r'''
extern "C" __global__ void diverge(const int* n, int* out) {
  int t = threadIdx.x, acc = 0;
  for (int k = 0; k < n[t]; ++k) {          // a different trip count per lane
    if ((k + t) % 3 == 0) continue;
    acc += k * (t % 2 ? 2 : -1);
  }
  int v = __shfl_down_sync(0xffffffffu, acc, 1);
  out[t] = acc + (__all_sync(0xffffffffu, acc > -1000000) ? v : 0);
}
'''


def test_divergent_loops_reconverge_and_shuffles_see_every_lane():
    rng = np.random.default_rng()
    n = rng.integers(0, 40, 64).astype(np.int32)
    out = np.zeros(64, np.int32)
    launch(DIVERGE, "diverge", 1, 64, [n, out])
    acc = np.array([sum(k * (2 if t % 2 else -1) for k in range(n[t]) if (k + t) % 3) for t in range(64)])
    lane = np.arange(64) % 32
    down = np.where(lane < 31, np.roll(acc, -1), acc)
    assert (out == acc + down).all()


def test_parser_names_scoped_registers_uniquely():
    ptx = (".version 8.0\n.target sm_90a\n.address_size 64\n.visible .entry k(\n\t.param .u64 k_param_0\n)\n{\n"
           "\t.reg .b32 %r<3>;\n\t{\n\t.reg .pred p;\n\tsetp.eq.s32 p, %r1, 0;\n\t}\n\t{\n\t.reg .pred p;\n"
           "\tsetp.eq.s32 p, %r2, 0;\n\t}\n\tret;\n}\n")
    k = parse(ptx).kernels["k"]
    first, second = k.code[0].ops[0], k.code[1].ops[0]
    assert first != second and first.startswith("p#") and second.startswith("p#")
    assert k.params == [("k_param_0", "u64", 8, 8)]


def test_unmodelled_instruction_stops_naming_it_and_its_line():
    src = r'''extern "C" __global__ void k(int* o) { asm volatile("wgmma.fence.sync.aligned;"); o[0] = 1; }'''
    o = np.zeros(1, np.int32)
    with pytest.raises(UnsupportedPTX, match=r"wgmma\.fence.*\n  at PTX line \d+: wgmma\.fence"):
        launch(src, "k", 1, 32, [o])
    assert o[0] == 0                       # never a wrong answer: it stopped before the store


OOB = r'''
extern "C" __global__ void oob(const float* x, float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  y[i] = x[i + n];
}
extern "C" __global__ void misaligned(const char* x, float* y) { y[threadIdx.x] = *(const float*)(x + 2); }
'''


def test_out_of_bounds_and_misaligned_global_accesses_name_address_and_rule():
    x, y = device_empty(64, np.float32, 0), device_empty(64, np.float32, 0)
    with pytest.raises(MemoryFault, match=r"ld\.global.*0x[0-9a-f]+.*outside every array"):
        launch(OOB, "oob", 1, 64, [x, y, 8])
    with pytest.raises(MisalignedAddress, match=r"not a multiple of 4 B"):
        launch(OOB, "misaligned", 1, 32, [x, y])


def test_unbounded_hang_is_a_deadlock_report_naming_the_mbarrier():
    src = r'''
extern "C" __global__ void hang(int* o) {
  __shared__ __align__(8) unsigned long long bar;
  unsigned b = (unsigned)__cvta_generic_to_shared(&bar), ok = 0;
  if (threadIdx.x == 0) asm volatile("mbarrier.init.shared::cta.b64 [%0], 2;" :: "r"(b));
  __syncthreads();
  if (threadIdx.x == 0) asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(b));
  while (!ok) asm volatile("{\n .reg .pred p;\n mbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                           " selp.u32 %0, 1, 0, p;\n}" : "=r"(ok) : "r"(b));
  o[threadIdx.x] = 1;
}'''
    o = np.zeros(64, np.int32)
    with pytest.raises(Deadlock, match=r"parity 0 .*1 of 2 arrivals pending"):
        launch(src, "hang", 1, 64, [o])


def test_shared_write_into_a_buffer_a_store_still_reads_is_a_race():
    from utils.tma import runtime
    from utils.emu import tensor_map
    g = to_device(np.zeros((16, 32), np.float32))
    src = runtime.SOURCE.replace('''    tma_store(rank, &map, k, smem_addr(smem), reduce);
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");   // smem may be reused/freed''',
                                 '''    tma_store(rank, &map, k, smem_addr(smem), reduce);
    smem[0] = 7;''')
    assert src != runtime.SOURCE
    tile = np.ones((16, 32), np.float32)
    with pytest.raises(RaceError, match="still being read by the TMA store"):
        launch(src, "tma_store_box", 1, 32, [tensor_map(g, (16, 32)), 2, np.zeros(5, np.int32).view("V20"),
                                             tile.view(np.uint8).ravel(), tile.nbytes, 0, 1], shared_bytes=4096)


def test_generic_mbarrier_addresses_and_state_token_waits():
    src = r'''
extern "C" __global__ void gen(int* o) {
  __shared__ __align__(8) unsigned long long bar;
  if (threadIdx.x == 0) asm volatile("mbarrier.init.b64 [%0], 64;" :: "l"(&bar));
  __syncthreads();
  unsigned long long st;
  asm volatile("mbarrier.arrive.b64 %0, [%1];" : "=l"(st) : "l"(&bar));
  unsigned ok = 0;
  while (!ok) asm volatile("{\n .reg .pred p;\n mbarrier.test_wait.b64 p, [%1], %2;\n selp.u32 %0, 1, 0, p;\n}"
                           : "=r"(ok) : "l"(&bar), "l"(st));
  o[threadIdx.x] = 1;
}'''
    o = np.zeros(64, np.int32)
    launch(src, "gen", 1, 64, [o], seed=7)
    assert (o == 1).all()


def test_three_dimensional_grids_and_blocks_number_threads_like_cuda():
    src = r'''
extern "C" __global__ void ids(int* o) {
  int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  o[b * blockDim.x * blockDim.y * blockDim.z + t] = (blockIdx.z << 24) | (blockIdx.y << 20) | (blockIdx.x << 16)
      | (threadIdx.z << 8) | (threadIdx.y << 4) | threadIdx.x;
}'''
    o = np.zeros(2 * 3 * 2 * 8 * 4 * 3, np.int32)
    launch(src, "ids", (2, 3, 2), (8, 4, 3), [o])
    bz, by, bx, tz, ty, tx = np.meshgrid(*(np.arange(n) for n in (2, 3, 2, 3, 4, 8)), indexing="ij")
    want = (bz << 24) | (by << 20) | (bx << 16) | (tz << 8) | (ty << 4) | tx
    assert np.array_equal(o, want.ravel())


def test_bad_launch_arguments_name_the_rule():
    src = r'''extern "C" __global__ void k(int* o, int n) { if (threadIdx.x < n) o[threadIdx.x] = n; }'''
    o = np.zeros(32, np.int32)
    with pytest.raises(ValueError, match=r"no kernel named 'kk'.*\['k'\]"):
        launch(src, "kk", 1, 32, [o, 3])
    with pytest.raises(TypeError, match=r"takes 2 arguments"):
        launch(src, "k", 1, 32, [o])
    with pytest.raises(ValueError, match=r"does not fit the parameter's \.u32|does not fit"):
        launch(src, "k", 1, 32, [o, 2**40])
    with pytest.raises(ValueError, match=r"more than 1024 threads"):
        launch(src, "k", 1, (64, 32), [o, 3])
    with pytest.raises(ValueError, match=r"not a whole number of clusters"):
        launch(src, "k", 3, 32, [o, 3], cluster=2)
    with pytest.raises(TypeError, match=r"pass a NumPy array"):
        launch(src, "k", 1, 32, [[1, 2], 3])
    with pytest.raises(ValueError, match="completion must be one of"):
        launch(src, "k", 1, 32, [o, 3], completion="sometimes")
