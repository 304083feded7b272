"""Planted kernels for ``utils.day05.tma_kernel_check`` (day 5 · 02): Exercise 3b, the learner's whole
TMA tile kernel (load -> double in shared memory -> store, one box per CTA; ``check_tile_kernel``), and
Exercise 3c, its pipelined version (a ring of STAGES buffers per CTA; ``check_ring_kernel``). Every
kernel runs on the course's PTX emulator (no GPU): wrong kernels a learner writes, each rejected with
the hint for ITS mistake, and right kernels written differently, each accepted. On a GPU with TMA the
GPU half runs too (the tests marked by ``_gpu_with_tma``)."""
import json
import pathlib
import re

import pytest

from utils.core.checks import CheckFailed
from utils.core.exercises import strip_solution
from utils.day05 import tma_kernel_check as tk
from utils.tma import lab

ROOT = pathlib.Path(__file__).resolve().parents[1]
NB = ROOT / "solutions" / "day05_tma" / "02_descriptors_cupy.ipynb"
SOLUTION = tk.SIGNATURE + r""" {
  float* tile = (float*)smem_base();
  __shared__ __align__(8) unsigned long long bar_storage;
  unsigned bar = smem_addr(&bar_storage);
  int tiles_x = (cols + BOX_X - 1) / BOX_X;
  Coords k = {{(int)(blockIdx.x % tiles_x) * BOX_X, (int)(blockIdx.x / tiles_x) * BOX_Y, 0, 0, 0}};
  if (threadIdx.x == 0) mbar_init(bar, 1);
  __syncthreads();
  if (threadIdx.x == 0) {
    mbar_expect_tx(bar, BOX_X * BOX_Y * 4);
    tma_load(2, smem_addr(tile), &src, k, bar);
  }
  if (!mbar_wait_bounded(bar, 0, timeout_ns)) { if (threadIdx.x == 0) atomicExch(status, 1); return; }
  for (int i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x) tile[i] *= 2.0f;
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    tma_store(2, &dst, k, smem_addr(tile), 0);
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}"""
FENCE = '  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n'
SYNC = "  __syncthreads();\n"
WAIT = "  if (!mbar_wait_bounded(bar, 0, timeout_ns))"
K = "{{(int)(blockIdx.x % tiles_x) * BOX_X, (int)(blockIdx.x / tiles_x) * BOX_Y"


def edit(*pairs, src=SOLUTION):
    """The solution with each (old, new) replaced (each old must occur)."""
    for old, new in pairs:
        assert old in src, old
        src = src.replace(old, new)
    return src


WRONG = {  # what the learner did: (kernel, words the hint must contain)
    "no proxy fence": (edit((FENCE, "")), r"fence\.proxy\.async.*every thread that wrote"),
    "fence after the barrier": (edit((FENCE + SYNC, SYNC + FENCE)), r"before the barrier, in every thread"),
    "fence only in thread 0, before the barrier": (edit((FENCE, "  if (threadIdx.x == 0) " + FENCE.lstrip())),
                                                  r"in every thread that wrote"),
    "no barrier between the fence and the store": (edit((FENCE + SYNC, FENCE)), r"then __syncthreads\(\)"),
    "expect_tx in elements, not bytes": (edit(("BOX_X * BOX_Y * 4)", "BOX_X * BOX_Y)")), r"counts BYTES"),
    "expect_tx of a box of the wrong shape": (edit(("BOX_X * BOX_Y * 4)", "BOX_X * BOX_X * 4)")),
                                              r"more bytes than one box delivers"),
    "waits on the wrong parity": (edit(("mbar_wait_bounded(bar, 0,", "mbar_wait_bounded(bar, 1,")), r"parity 0"),
    "only thread 0 waits, every thread reads": (edit((WAIT, "  if (threadIdx.x == 0 && !mbar_wait_bounded(bar, 0, "
                                                      "timeout_ns))")), r"every thread that reads the tile"),
    "no wait_group.read before exit": (edit(('    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");\n',
                                             "")), r"wait_group\.read before the buffer is reused .* before it exits"),
    "coordinates in array order (row, column)": (
        edit((K, "{{(int)(blockIdx.x / tiles_x) * BOX_Y, (int)(blockIdx.x % tiles_x) * BOX_X")), r"innermost first"),
    "tile count rounded down (right only at multiples of the box)": (
        edit(("(cols + BOX_X - 1) / BOX_X", "cols / BOX_X")), r"from cols, rounded UP"),
    "tile count of the displayed tensor hard-coded": (edit(("(cols + BOX_X - 1) / BOX_X", "4")),
                                                      r"computed from rows and cols|follows from cols"),
    "mbarrier count = every thread": (edit(("mbar_init(bar, 1)", "mbar_init(bar, blockDim.x)")), r"count of 1"),
    "no barrier after the mbarrier's init": (edit(("  if (threadIdx.x == 0) mbar_init(bar, 1);\n" + SYNC,
                                                   "  if (threadIdx.x == 0) mbar_init(bar, 1);\n")),
                                             r"then __syncthreads\(\) before any thread waits"),
    "not doubled": (edit(("tile[i] *= 2.0f;", "tile[i] *= 1.0f;")), r"stored undoubled"),
    "unbounded wait (otherwise right)": (
        edit((WAIT + " { if (threadIdx.x == 0) atomicExch(status, 1); return; }",
              "  while (!mbar_try_wait(bar, 0)) {}")), r"the wait must be bounded.*\*status = 1"),
    "bounded wait that never reports (status left 0)": (
        edit(("{ if (threadIdx.x == 0) atomicExch(status, 1); return; }", "return;")),
        r"the wait must be bounded.*atomicExch\(status, 1\)"),
    "unbounded wait and a wrong expect_tx": (
        edit(("BOX_X * BOX_Y * 4)", "BOX_X * BOX_Y)"),
             (WAIT + " { if (threadIdx.x == 0) atomicExch(status, 1); return; }",
              "  while (!mbar_try_wait(bar, 0)) {}")), r"bound the wait.*counts BYTES"),
}

RAW_PTX = tk.SIGNATURE + r""" {
  unsigned char* base = smem_base();
  unsigned bar = smem_addr(base);                      // the mbarrier in the first 8 bytes
  float* tile = (float*)(base + 128);                  // the box after it, 128-B aligned
  const int tx = (cols + BOX_X - 1) / BOX_X;
  const int c0 = (blockIdx.x % tx) * BOX_X, c1 = (blockIdx.x / tx) * BOX_Y;
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" :: "r"(bar));
    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" :: "r"(bar), "r"(BOX_X * BOX_Y * 4) : "memory");
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
                 :: "r"(smem_addr(tile)), "l"(&src), "r"(c0), "r"(c1), "r"(bar) : "memory");
  }
  unsigned long long start = now_ns();
  while (!mbar_try_wait(bar, 0)) {
    if (now_ns() - start > timeout_ns) { atomicExch(status, 1); return; }
  }
  for (int i = threadIdx.x; i < BOX_X * BOX_Y; i += blockDim.x) tile[i] = tile[i] + tile[i];
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  if (threadIdx.x == 0) {
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&dst), "r"(c0), "r"(c1), "r"(smem_addr(tile)) : "memory");
    asm volatile("cp.async.bulk.commit_group;" ::: "memory");
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
  }
}"""
ONE_WAITER = edit((WAIT + " { if (threadIdx.x == 0) atomicExch(status, 1); return; }",
                   "  __shared__ int ok;\n  if (threadIdx.x == 0) ok = mbar_wait_bounded(bar, 0, timeout_ns);\n"
                   "  __syncthreads();\n  if (!ok) { if (threadIdx.x == 0) atomicExch(status, 1); return; }"))
LOOPED = "#define TILE (BOX_X * BOX_Y)\n" + lab.source("lab_fixed").replace("lab_fixed(", "tile_x2(")  # 08: a tile loop
RIGHT = {"the course's helpers": SOLUTION, "raw PTX and a bounded loop of its own": RAW_PTX,
         "thread 0 waits, a barrier tells the others": ONE_WAITER, "a loop over tiles, parity flipping": LOOPED}


@pytest.mark.parametrize("what", sorted(WRONG))
def test_wrong_kernel_is_rejected_with_its_hint(what):
    src, words = WRONG[what]
    with pytest.raises(CheckFailed) as info:
        tk.check_tile_kernel(src)
    hint = str(info.value).split("hint:")[-1]
    assert "hint:" in str(info.value) and re.search(words, hint, re.S), str(info.value)


@pytest.mark.parametrize("what", sorted(RIGHT))
def test_right_kernel_written_differently_is_accepted(what, capsys):
    tk.check_tile_kernel(RIGHT[what])
    assert "correct" in capsys.readouterr().out


def test_tables_are_big_enough():
    assert len(WRONG) >= 6 and len(RIGHT) >= 2


def _cell():
    nb = json.loads(NB.read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "tile_x2_src = " in "".join(c["source"]))
    return cell


def test_notebook_solution_passes_and_its_generated_stub_is_not_attempted(capsys):
    ns = {}
    exec(_cell(), ns)
    tk.check_tile_kernel(ns["tile_x2_src"])
    stub = {}
    exec(strip_solution(_cell()), stub)
    assert tk.c_tokens(stub["tile_x2_src"]) == tk.c_tokens(tk.STUB)
    tk.check_tile_kernel(stub["tile_x2_src"])
    out = capsys.readouterr().out
    assert "correct" in out and "not attempted" in out


def test_bad_input_is_explained():
    for bad in (None, 3, "int main() {}"):
        with pytest.raises(CheckFailed, match="expected the kernel's CUDA C"):
            tk.check_tile_kernel(bad)
    with pytest.raises(CheckFailed, match="does not compile"):
        tk.check_tile_kernel(tk.SIGNATURE + " { undeclared_thing(); }")
    with pytest.raises(CheckFailed, match="keep the signature"):
        tk.check_tile_kernel(SOLUTION.replace("tile_x2(", "tile_x3("))


class _Tier:
    has_tma = True


def _gpu_with_tma() -> bool:
    try:
        import torch
        return torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] >= 9
    except Exception:
        return False


@pytest.mark.skipif(_gpu_with_tma(), reason="checks the subprocess's failure path where no GPU answers")
def test_without_a_gpu_the_gpu_run_fails_cleanly_in_its_subprocess():
    with pytest.raises(CheckFailed, match="on the GPU: .*") as info:
        tk.check_tile_kernel(SOLUTION, _Tier())
    assert "subprocess" in str(info.value)


GPU_WRONG = ["ring: refilled with the wrong box", "expect_tx in elements, not bytes",
             "coordinates in array order (row, column)",
             "tile count rounded down (right only at multiples of the box)", "not doubled"]


# ---- Exercise 3c: the ring (two CTAs, STAGES buffers each, loads in flight while the threads work) ----
RING_SOLUTION = tk.RING.signature + r""" {
  float* buf = (float*)smem_base();
  __shared__ __align__(8) unsigned long long full[STAGES];
  int tiles_x = (cols + BOX_X - 1) / BOX_X, n_tiles = tiles_x * ((rows + BOX_Y - 1) / BOX_Y);
  int mine = (n_tiles - (int)blockIdx.x + (int)gridDim.x - 1) / (int)gridDim.x;   // boxes of this CTA
  if (threadIdx.x == 0) for (int s = 0; s < STAGES; ++s) mbar_init(smem_addr(&full[s]), 1);
  __syncthreads();
  for (int i = 0; threadIdx.x == 0 && i < STAGES && i < mine; ++i)       // fill the ring
    load_box(buf + i * BOX_X * BOX_Y, smem_addr(&full[i]), &src, blockIdx.x + i * gridDim.x, tiles_x);
  for (int i = 0; i < mine; ++i) {
    int s = i % STAGES, t = blockIdx.x + i * gridDim.x;
    float* tile = buf + s * BOX_X * BOX_Y;
    if (!mbar_wait_bounded(smem_addr(&full[s]), (i / STAGES) & 1, timeout_ns)) { atomicExch(status, 1); return; }
    for (int j = threadIdx.x; j < BOX_X * BOX_Y; j += blockDim.x) tile[j] *= 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x != 0) continue;
    tma_store(2, &dst, box_at(t, tiles_x), smem_addr(tile), 0);
    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");      // the store has read buffer s
    if (i + STAGES < mine) load_box(tile, smem_addr(&full[s]), &src, t + STAGES * gridDim.x, tiles_x);
  }
}"""
RING_FENCE = '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");\n'
RING_WAIT = '    if (!mbar_wait_bounded(smem_addr(&full[s]), (i / STAGES) & 1, timeout_ns))'
REFILL_WAIT = '    asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");      // the store has read buffer s\n'
RING_WRONG = {
    "no wait_group.read after the store": (edit((REFILL_WAIT, ""), src=RING_SOLUTION),
                                           r"wait_group\.read before the buffer is reused"),
    "parity of the iteration, not of the buffer's use": (edit(("(i / STAGES) & 1", "i & 1"), src=RING_SOLUTION),
                                                         r"parity n & 1, n = i / STAGES"),
    "always parity 0": (edit(("(i / STAGES) & 1", "0"), src=RING_SOLUTION), r"parity n & 1"),
    "only thread 0 waits": (edit((RING_WAIT, "    if (threadIdx.x == 0 && !mbar_wait_bounded(smem_addr(&full[s]), "
                                  "(i / STAGES) & 1, timeout_ns))"), src=RING_SOLUTION),
                            r"every thread that reads the tile"),
    "no proxy fence": (edit((RING_FENCE, ""), src=RING_SOLUTION), r"in every thread that wrote"),
    "fence after the barrier": (edit((RING_FENCE + "    __syncthreads();\n", "    __syncthreads();\n" + RING_FENCE),
                                     src=RING_SOLUTION), r"before the barrier, in every thread"),
    "prologue fills one stage": (edit(("i < STAGES && i < mine", "i < 1 && i < mine"), src=RING_SOLUTION),
                                 r"prologue fills every stage"),
    "refilled with the wrong box": (edit(("t + STAGES * gridDim.x", "t + STAGES"), src=RING_SOLUTION),
                                    r"refill buffer s with tile"),
}
RING_TOP = tk.RING.signature + r""" {
  unsigned char* base = smem_base();
  unsigned long long* full = (unsigned long long*)base;            // STAGES barriers, then the buffers
  float* buf = (float*)(base + 128);
  const int tx = (cols + BOX_X - 1) / BOX_X, n = tx * ((rows + BOX_Y - 1) / BOX_Y);
  if (threadIdx.x == 0)
    for (int s = 0; s < STAGES; ++s) mbar_init(smem_addr(full + s), 1);
  __syncthreads();
  unsigned phase = 0;
  for (int i = 0, t = blockIdx.x; t < n; ++i, t += gridDim.x) {
    int s = i % STAGES;
    if (threadIdx.x == 0) {
      if (i == 0)                                                    // fill the ring
        for (int j = 0, u = blockIdx.x; j < STAGES && u < n; ++j, u += gridDim.x) {
          Coords k = {{(u % tx) * BOX_X, (u / tx) * BOX_Y, 0, 0, 0}};
          mbar_expect_tx(smem_addr(full + j), BOX_X * BOX_Y * 4);
          tma_load(2, smem_addr(buf + j * BOX_X * BOX_Y), &src, k, smem_addr(full + j));
        }
      int p = (i + STAGES - 1) % STAGES, u = t + (STAGES - 1) * gridDim.x;   // refill the previous buffer
      if (i > 0 && u < n) {
        asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
        Coords k = {{(u % tx) * BOX_X, (u / tx) * BOX_Y, 0, 0, 0}};
        mbar_expect_tx(smem_addr(full + p), BOX_X * BOX_Y * 4);
        tma_load(2, smem_addr(buf + p * BOX_X * BOX_Y), &src, k, smem_addr(full + p));
      }
    }
    unsigned long long start = now_ns();
    while (!mbar_try_wait(smem_addr(full + s), phase))
      if (now_ns() - start > timeout_ns) { atomicExch(status, 1); return; }
    if (s == STAGES - 1) phase ^= 1;
    float* tile = buf + s * BOX_X * BOX_Y;
    for (int j = threadIdx.x; j < BOX_X * BOX_Y; j += blockDim.x) tile[j] = tile[j] * 2.0f;
    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    if (threadIdx.x == 0) {
      Coords k = {{(t % tx) * BOX_X, (t / tx) * BOX_Y, 0, 0, 0}};
      tma_store(2, &dst, k, smem_addr(tile), 0);
    }
  }
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
}"""
RING_RIGHT = {"refill after the store, parity (i / STAGES) & 1": RING_SOLUTION,
              "refill the previous buffer at the top, a phase bit of its own": RING_TOP}


@pytest.mark.parametrize("what", sorted(RING_WRONG))
def test_wrong_ring_is_rejected_with_its_hint(what):
    src, words = RING_WRONG[what]
    with pytest.raises(CheckFailed) as info:
        tk.check_ring_kernel(src)
    hint = str(info.value).split("hint:")[-1]
    assert "hint:" in str(info.value) and re.search(words, hint, re.S), str(info.value)


@pytest.mark.parametrize("what", sorted(RING_RIGHT))
def test_right_ring_written_differently_is_accepted(what, capsys):
    tk.check_ring_kernel(RING_RIGHT[what])
    assert "correct" in capsys.readouterr().out


def test_ring_tables_are_big_enough_and_the_notebook_ring_passes(capsys):
    assert len(RING_WRONG) >= 6 and len(RING_RIGHT) >= 2
    nb = json.loads(NB.read_text())
    cell = next("".join(c["source"]) for c in nb["cells"] if "ring_x2_src = " in "".join(c["source"]))
    ns, stub = {}, {}
    exec(cell, ns)
    exec(strip_solution(cell), stub)
    assert tk.c_tokens(stub["ring_x2_src"]) == tk.c_tokens(tk.RING_STUB)
    tk.check_ring_kernel(ns["ring_x2_src"])
    tk.check_ring_kernel(stub["ring_x2_src"])
    out = capsys.readouterr().out
    assert "correct" in out and "not attempted" in out


@pytest.mark.skipif(not _gpu_with_tma(), reason="needs a GPU with TMA (compute capability >= 9.0)")
@pytest.mark.parametrize("what", sorted(RIGHT) + [f"ring: {w}" for w in sorted(RING_RIGHT)])
def test_on_the_gpu_right_kernels_pass(what, capsys):
    if what.startswith("ring: "):
        tk.check_ring_kernel(RING_RIGHT[what[6:]], _Tier())
    else:
        tk.check_tile_kernel(RIGHT[what], _Tier())
    assert "and on this GPU" in capsys.readouterr().out


@pytest.mark.skipif(not _gpu_with_tma(), reason="needs a GPU with TMA (compute capability >= 9.0)")
@pytest.mark.parametrize("what", GPU_WRONG)
def test_on_the_gpu_the_same_mistakes_show(what):
    """The GPU half alone (the emulator would stop these first): its output gets the same hint."""
    import random
    kernel, (src, words) = (tk.RING, RING_WRONG[what[6:]]) if what.startswith("ring: ") else (tk.TILE, WRONG[what])
    shapes = tk.shapes(random.Random(), 2, big=True)
    runs = tk.run_gpu(kernel, src, shapes)
    assert not any(isinstance(r[0], str) for r in runs), runs
    if what.startswith("expect_tx"):
        assert all(r[2] == 1 for r in runs), "the bounded wait must fire on the GPU too"
        return
    problem = tk.compare([r[:2] for r in runs], tk.BOX, ring=bool(kernel.stages))
    assert problem and re.search(words, problem[1], re.S), problem
