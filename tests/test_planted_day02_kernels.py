"""Planted kernels for day 2's two kernel exercises (issue 38), all run on the emulator: the
``cp.async`` ring of ``02_software_pipelining`` (Exercise 4, :mod:`utils.day02.pipeline_check`) and the
producer/consumer mbarrier ring of ``03_async_barriers`` (Exercise 6, :mod:`utils.day02.ring_check`).

Each table holds wrong kernels a learner writes, each rejected with the hint for that slip, and right
kernels written differently, each accepted. Wrong kernels are the notebook's solution with one edit
(the edited text must be there), so they follow the solution when it changes."""
import json
import pathlib

import pytest

from utils.core.checks import CheckFailed
from utils.core.exercises import strip_solution
from utils.cuda_cpp import day02
from utils.cuda_cpp import kernel_runs as kr
from utils.day02 import pipeline_check as pc
from utils.day02 import ring_check as rc

ROOT = pathlib.Path(__file__).resolve().parents[1]


def notebook_kernel(folder: str, stem: str, var: str) -> str:
    """The kernel string ``var`` of the notebook's exercise cell (solution or exercise copy)."""
    cells = json.loads((ROOT / folder / "day02_pipelining" / f"{stem}.ipynb").read_text())["cells"]
    src = next("".join(c["source"]) for c in cells if "".join(c["source"]).startswith(f"{var} = r"))
    ns = {}
    exec(src.split("\nday02_checks.")[0], ns)
    return ns[var]


PIPE = notebook_kernel("solutions", "02_software_pipelining", "pipeline_src")
RING = notebook_kernel("solutions", "03_async_barriers", "ring_src")


def edit(source: str, old: str, new: str, count: int = 1) -> str:
    assert source.count(old) >= count, f"planted edit: {old!r} not in the solution any more"
    return source.replace(old, new, count)


def drop_nth(source: str, line: str, n: int) -> str:
    """``source`` without the ``n``-th (1-based) line containing ``line``."""
    out, seen = [], 0
    for ln in source.split("\n"):
        if line in ln:
            seen += 1
            if seen == n:
                continue
        out.append(ln)
    assert seen >= n, f"planted edit: fewer than {n} lines with {line!r}"
    return "\n".join(out)


# ---- Exercise 4 of 02: the cp.async ring ------------------------------------------------------
COURSE_ORDER = r"""
template <int S>
__device__ __forceinline__ void pipeline(const float4* x, float4* y, long long n_vec, int work) {
  extern __shared__ float4 ring[];
  const int T = blockDim.x, tid = threadIdx.x, peer = (tid + 32) % T;
  long long n_tiles = (n_vec + T - 1) / T;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto issue = [&](long long k) {
    long long v = (blockIdx.x + k * gridDim.x) * T + tid;
    cp_async16(&ring[(k % S) * T + tid], v < n_vec ? x + v : x, v < n_vec);
  };
  for (int k = 0; k < S - 1; ++k) {
    if (k < mine) issue(k);
    asm volatile("cp.async.commit_group;" ::: "memory");
  }
  for (long long k = 0; k < mine; ++k) {
    if (k + S - 1 < mine) issue(k + S - 1);
    asm volatile("cp.async.commit_group;" ::: "memory");
    asm volatile("cp.async.wait_group %0;" :: "n"(S - 1) : "memory");
    __syncthreads();
    float4 v = compute(ring[(k % S) * T + peer], work);
    long long o = (blockIdx.x + k * gridDim.x) * T + peer;
    if (o < n_vec) y[o] = v;
    __syncthreads();
  }
}"""
"""Right, written as day02.cu's pipeline<S>: issue, commit, wait S - 1, two barriers, raw asm."""

COUNTERS = r"""
template <int S>
__device__ __forceinline__ void pipeline(const float4* x, float4* y, long long n_vec, int work) {
  extern __shared__ float4 ring[];
  const int T = blockDim.x, tid = threadIdx.x, peer = (tid + 32) % T;
  long long n_tiles = (n_vec + T - 1) / T;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  int fill = 0, use = 0;                      // stage counters instead of k % S
  long long next = 0;                         // the next tile to issue
  while (next < S - 1) {
    long long v = (blockIdx.x + next * gridDim.x) * T + tid;
    if (next < mine) cp_async16(ring + fill * T + tid, v < n_vec ? x + v : x, v < n_vec);
    cp_async_commit();
    ++next; fill = fill + 1 == S ? 0 : fill + 1;
  }
  for (long long k = 0; k < mine; ++k, ++next) {
    cp_async_wait<S - 2>();
    __syncthreads();
    long long v = (blockIdx.x + next * gridDim.x) * T + tid;
    if (next < mine) cp_async16(ring + fill * T + tid, v < n_vec ? x + v : x, v < n_vec);
    cp_async_commit();
    fill = fill + 1 == S ? 0 : fill + 1;
    long long o = (blockIdx.x + k * gridDim.x) * T + peer;
    float4 r = compute(ring[use * T + peer], work);
    if (o < n_vec) y[o] = r;
    use = use + 1 == S ? 0 : use + 1;
  }
}"""
"""Right, written differently: stage counters that wrap, a while-loop prologue."""

PIPE_WRONG = {
    "wait_group one too large (waits before issuing)": (
        lambda: edit(PIPE, "cp_async_wait<S - 2>", "cp_async_wait<S - 1>"), "in ONE warp, a thread read tile k"),
    "wait_group one too large (issues before waiting, as ours)": (
        lambda: edit(COURSE_ORDER, '"n"(S - 1)', '"n"(S)'), "in ONE warp, a thread read tile k"),
    "no __syncthreads between the wait and the read": (
        lambda: drop_nth(COURSE_ORDER, "__syncthreads();", 1), "reads a NEIGHBOUR's element"),
    "no __syncthreads before the stage is refilled": (
        lambda: drop_nth(COURSE_ORDER, "__syncthreads();", 2), "refilled while another warp still read it"),
    "the one __syncthreads dropped": (
        lambda: drop_nth(PIPE, "__syncthreads();", 1), "threads read their neighbours' elements"),
    "ring index without the modulo": (
        lambda: edit(PIPE, "ring[(k % S) * T + tid]", "ring[k * T + tid]"), r"index the ring with \(k % S\)"),
    "k & (S - 1) for k % S": (lambda: edit(PIPE, "(k % S)", "(k & (S - 1))", 2), "only when S is a power of two"),
    "prologue one stage short": (
        lambda: edit(PIPE, "k < S - 1; ++k", "k < S - 2; ++k"), "the prologue issues tiles 0 .. S - 2"),
    "waits for every copy: one tile in flight": (
        lambda: edit(PIPE, "cp_async_wait<S - 2>", "cp_async_wait<0>"), "should keep"),
    "the last tile read past the end of x": (
        lambda: edit(PIPE, "v < n_vec ? x + v : x, v < n_vec", "x + v, true"), "the last tile is partial"),
    "plain loads into shared memory, no cp.async": (
        lambda: edit(PIPE, "if (k < mine) cp_async16(&ring[(k % S) * T + tid], v < n_vec ? x + v : x, v < n_vec);",
                     "if (k < mine) ring[(k % S) * T + tid] = v < n_vec ? x[v] : make_float4(0, 0, 0, 0);"),
        "issues no cp.async"),
    "a typo": (lambda: edit(PIPE, "cp_async_commit();", "cp_async_commit()"), "NVRTC could not compile"),
}


@pytest.mark.parametrize("what", sorted(PIPE_WRONG))
def test_pipeline_planted_wrong_kernel_is_rejected_with_its_hint(what):
    make, hint = PIPE_WRONG[what]
    with pytest.raises(CheckFailed, match=hint):
        pc.check_pipeline_kernel(make())


@pytest.mark.parametrize("source", [PIPE, COURSE_ORDER, COUNTERS], ids=["solution", "ours", "counters"])
def test_pipeline_right_kernels_pass(source, capsys):
    pc.check_pipeline_kernel(source)
    assert "correct" in capsys.readouterr().out


# ---- Exercise 6 of 03: the producer/consumer mbarrier ring ------------------------------------
SYNC_PRODUCER = edit(RING, "if (warp == 0) cp_async_arrive_noinc(smem_addr(&full[s]));",
                     "if (warp == 0) { cp_async_commit(); cp_async_wait<0>(); mbar_arrive(smem_addr(&full[s])); }")
"""Right, written differently: the producer waits for its own copies, then a plain arrival."""

PHASE_BITS = r"""
extern "C" __global__ void ring_kernel(const float4* x, float4* y, long long n_vec, int stages, int work,
                                       int* status, unsigned long long timeout_ns) {
  extern __shared__ float4 ring[];
  __shared__ __align__(8) unsigned long long full[8], empty[8];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  long long n_tiles = (n_vec + 127) / 128;
  long long mine = blockIdx.x < n_tiles ? (n_tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  if (threadIdx.x == 0)
    for (int i = 0; i < stages; ++i) { mbar_init(smem_addr(full + i), 32); mbar_init(smem_addr(empty + i), 32); }
  __syncthreads();
  int s = 0;
  unsigned phase = 0;                                // flips each time s wraps around
  for (long long k = 0; k < mine; ++k) {
    float4* stage = ring + s * 128;
    long long base = (blockIdx.x + k * gridDim.x) * 128 + lane;
    bool ok = warp == 0 ? mbar_wait_bounded(smem_addr(empty + s), !phase, timeout_ns)
                        : mbar_wait_bounded(smem_addr(full + s), phase, timeout_ns);
    if (!ok) { atomicExch(status, 1); return; }
    for (int j = 0; j < 4; ++j) {
      long long v = base + j * 32;
      if (warp == 0) cp_async16(stage + j * 32 + lane, x + (v < n_vec ? v : 0), v < n_vec);
      else if (v < n_vec) y[v] = compute(stage[j * 32 + lane], work);
    }
    if (warp == 0) cp_async_arrive_noinc(smem_addr(full + s));
    else mbar_arrive(smem_addr(empty + s));
    if (++s == stages) { s = 0; phase ^= 1; }
  }
}"""
"""Right, written differently: a stage counter and a phase bit, one barrier-init loop, !phase."""

NO_RELEASE = edit(RING, " else mbar_arrive(smem_addr(&empty[s]));", "")
RING_WRONG = {
    "producer's parity without the ^ 1": (lambda: edit(RING, "use ^ 1, timeout_ns", "use, timeout_ns"),
                                          r"first wait on empty\[s\] must pass at once"),
    "the consumer never releases its stage": (lambda: NO_RELEASE, "the ring ran one pass and stopped"),
    "the producer refills without waiting for the release": (
        lambda: edit(RING, "warp == 0 ? mbar_wait_bounded(smem_addr(&empty[s]), use ^ 1, timeout_ns)", "warp == 0 ? true"),
        "refilled while the consumer still read it"),
    "the consumer releases before it reads": (
        lambda: edit(NO_RELEASE, "if (!ok) { atomicExch(status, 1); return; }",
                     "if (!ok) { atomicExch(status, 1); return; }\n    if (warp == 1) mbar_arrive(smem_addr(&empty[s]));"),
        "refilled while the consumer still read it"),
    "the consumer's parity with ^ 1 too": (
        lambda: edit(RING, "smem_addr(&full[s]), use, timeout_ns", "smem_addr(&full[s]), use ^ 1, timeout_ns"),
        r"the consumer read a stage before the producer filled it"),
    "the parity from k, not from the use of the stage": (
        lambda: edit(RING, "(unsigned)((k / stages) & 1)", "(unsigned)(k & 1)"),
        r"the consumer read a stage before the producer filled it"),
    "a plain arrival right after the copies": (
        lambda: edit(RING, "cp_async_arrive_noinc(smem_addr(&full[s]));", "mbar_arrive(smem_addr(&full[s]));"),
        r"full\[s\]'s phase completed before the copies landed"),
    "no __syncthreads after the init": (lambda: drop_nth(RING, "__syncthreads();", 1), "then a __syncthreads"),
    "empty initialised for two warps' arrivals": (
        lambda: edit(RING, "mbar_init(smem_addr(&empty[threadIdx.x]), 32);", "mbar_init(smem_addr(&empty[threadIdx.x]), 64);"),
        "waits for more arrivals than one use makes"),
    "full initialised for one arrival": (
        lambda: edit(RING, "mbar_init(smem_addr(&full[threadIdx.x]), 32);", "mbar_init(smem_addr(&full[threadIdx.x]), 1);"),
        "more phases than there are tiles"),
    "the stage is k, without the modulo": (lambda: edit(RING, "int s = (int)(k % stages);", "int s = (int)k;"),
                                           "never k itself"),
    "the last tile read past the end of x": (
        lambda: edit(RING, "v < n_vec ? x + v : x, v < n_vec", "x + v, true"), "the last tile is partial"),
}


@pytest.mark.parametrize("what", sorted(RING_WRONG))
def test_ring_planted_wrong_kernel_is_rejected_with_its_hint(what):
    make, hint = RING_WRONG[what]
    with pytest.raises(CheckFailed, match=hint):
        rc.check_ring_kernel(make())


@pytest.mark.parametrize("source", [RING, SYNC_PRODUCER, PHASE_BITS], ids=["solution", "sync-producer", "phase-bits"])
def test_ring_right_kernels_pass(source, capsys):
    rc.check_ring_kernel(source)
    assert "correct" in capsys.readouterr().out


# ---- stubs, tables, bad input -----------------------------------------------------------------
@pytest.mark.parametrize("stem,var,mod", [("02_software_pipelining", "pipeline_src", pc),
                                          ("03_async_barriers", "ring_src", rc)])
def test_the_notebooks_stub_is_not_attempted_and_compiles(stem, var, mod, capsys):
    handed_out = notebook_kernel(".", stem, var)
    assert kr.same_as_stub(handed_out, mod.STUB)
    mod_check = pc.check_pipeline_kernel if mod is pc else rc.check_ring_kernel
    mod_check(handed_out)
    assert "not attempted" in capsys.readouterr().out
    footer = pc.FOOTER if mod is pc else ""
    assert ".entry" in kr.compile_ptx("stub", day02.learner_unit(handed_out, footer))   # compiles
    assert "BEGIN SOLUTION" not in strip_solution(f'x = r"""{handed_out}"""')


def test_tables_are_large_enough():
    assert len(PIPE_WRONG) >= 6 and len(RING_WRONG) >= 6


@pytest.mark.parametrize("bad", [None, 42, "", "not a kernel"])
def test_a_malformed_answer_is_explained(bad):
    for check in (pc.check_pipeline_kernel, rc.check_ring_kernel):
        with pytest.raises(CheckFailed, match="CUDA C\\+\\+ source in a string|NVRTC could not compile"):
            check(bad)


# ---- on a GPU with cp.async, the right kernels also run for real ------------------------------
def _tier():
    import utils
    return utils.setup(quiet=True)


@pytest.mark.parametrize("check,source", [(pc.check_pipeline_kernel, PIPE), (pc.check_pipeline_kernel, COURSE_ORDER),
                                          (rc.check_ring_kernel, RING), (rc.check_ring_kernel, PHASE_BITS)])
def test_right_kernels_pass_on_a_gpu_too(check, source, capsys):
    T = _tier()
    if not kr.gpu_can_run(T):
        pytest.skip("needs a GPU with cp.async and mbarrier (compute capability 8.0 or later)")
    check(source, T)
    assert "and on this GPU" in capsys.readouterr().out
