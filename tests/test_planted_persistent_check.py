"""Planted kernels for ``utils.day05.persistent_check.check_persistent`` (day 5 · 03, Exercise 4:
the persistent tile loop with a TMA-store epilogue): wrong kernels a learner writes, each rejected
with the hint for ITS mistake (never another slip's), and right kernels written differently, each
accepted. They run under the Triton interpreter on the CPU (on a GPU for real); accepted kernels
are also compiled for sm_90a."""
import os
import re

import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402,F401
import triton.language as tl  # noqa: E402,F401

from jit_source import assert_rejected, load_function, replace_each  # noqa: E402  (tests/jit_source.py)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.day05 import gemm, persistent_check as pc  # noqa: E402
from utils.triton_lang import isolated  # noqa: E402

HEAD = '''\
import triton
import triton.language as tl


@triton.jit
def tile_coords(tile, num_pid_m, num_pid_n, GROUP_M: tl.constexpr):
    per_group = GROUP_M * num_pid_n
    first_m = (tile // per_group) * GROUP_M
    rows = tl.minimum(num_pid_m - first_m, GROUP_M)
    return first_m + (tile % per_group) % rows, (tile % per_group) // rows


@triton.jit
def persistent_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
'''
SOLUTION = """\
c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
num_pid_m, num_pid_n = tl.cdiv(M, BM), tl.cdiv(N, BN)
for tile in range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):
    pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pid_m * BM, k]), b_desc.load([k, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))
"""


def kernel(body: str):
    """A @triton.jit ``persistent_kernel`` with ``body`` (a real file: Triton reads the source)."""
    return load_function(HEAD + "".join(f"    {line}\n" for line in body.strip("\n").split("\n")),
                         "persistent_kernel")


def edit(*pairs):
    """The solution with each (old, new) replaced (each old must occur)."""
    return replace_each(SOLUTION, *pairs)


LOOP = "for tile in range(tl.program_id(0), num_pid_m * num_pid_n, NUM_PROGRAMS):"
COORDS = "pid_m, pid_n = tile_coords(tile, num_pid_m, num_pid_n, GROUP_M)"
ZEROS = "    acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
STORE = "c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))"
PTR_STORE = ("rm, rn = pid_m * BM + tl.arange(0, BM), pid_n * BN + tl.arange(0, BN)\n"
             "    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),\n"
             "             mask=(rm[:, None] < M) & (rn[None, :] < N))")
WRONG = {
    "tiles stepped by 1": (edit((LOOP, "for tile in range(tl.program_id(0), num_pid_m * num_pid_n):")),
                           "computed and stored by several programs"),
    "tile_coords with the sizes swapped": (edit((COORDS, "pid_m, pid_n = tile_coords(tile, num_pid_n, "
                                                 "num_pid_m, GROUP_M)")), "swapped"),
    "row-major with the wrong divisor": (edit((COORDS, "pid_m, pid_n = tile // num_pid_m, tile % num_pid_m")),
                                         "swapped"),
    "loop stops one tile early": (edit((LOOP, "for tile in range(tl.program_id(0), num_pid_m * num_pid_n - 1, "
                                        "NUM_PROGRAMS):")), "one tile early"),
    "acc not reset per tile": (edit((ZEROS, ""), ("num_pid_m, num_pid_n = ",
                                                  "acc = tl.zeros((BM, BN), dtype=tl.float32)\n"
                                                  "num_pid_m, num_pid_n = ")), "not reset per tile"),
    "store through tl.store": (edit(("c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], "
                                     "block_shape=[BM, BN])\n", ""), (STORE, PTR_STORE)), "TMA store, not tl.store"),
    "right only when NUM_PROGRAMS divides the tiles": (
        edit((LOOP, "for i in range(num_pid_m * num_pid_n // NUM_PROGRAMS):\n"
                    "    tile = tl.program_id(0) + i * NUM_PROGRAMS")), "divides the number of tiles"),
    "K tail dropped": (edit(("for k in range(0, K, BK):", "for k in range(0, K // BK * BK, BK):")),
                       "partial K slice is missing"),
    "no accumulation in the K loop": (edit((", acc)\n", ")\n")), "LAST K step"),
    "fp16 accumulator": (edit(("dtype=tl.float32", "dtype=tl.float16")), "rounded to fp16"),
    "store at the tile index, not its offset": (edit(("c_desc.store([pid_m * BM, pid_n * BN]",
                                                      "c_desc.store([pid_m, pid_n]")), "top-left"),
    "stub line kept": (edit((ZEROS, ZEROS + '    acc += float("nan")\n')), "still NaN"),
}
OTHERS = [h for *_, h in pc.LOOP_SLIPS] + [pc.STEP_BY_ONE, pc.TL_STORE, pc.NOT_WRITTEN, pc.LOOP_STEP]


def rejects(body, hint):
    assert_rejected(pc.check_persistent, kernel(body), hint, OTHERS)


@pytest.mark.parametrize("body,hint", WRONG.values(), ids=WRONG.keys())
def test_persistent_rejects(body, hint):
    rejects(body, hint)


RIGHT = {
    "solution": SOLUTION,
    "row-major order, while loop, host-style offsets": """\
c_desc = tl.make_tensor_descriptor(c_ptr, [M, N], [N, 1], [BM, BN])
num_pid_n = tl.cdiv(N, BN)
num_tiles = tl.cdiv(M, BM) * num_pid_n
tile = tl.program_id(0)
while tile < num_tiles:
    off_m = (tile // num_pid_n) * BM
    off_n = (tile % num_pid_n) * BN
    acc = tl.zeros((BM, BN), tl.float32)
    for ki in range(tl.cdiv(K, BK)):
        acc += tl.dot(a_desc.load([off_m, ki * BK]), b_desc.load([ki * BK, off_n]))
    c_desc.store([off_m, off_n], acc.to(tl.float16))
    tile += NUM_PROGRAMS
""",
    "counted rounds, tl.range, column-major order": """\
c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
num_pid_m = tl.cdiv(M, BM)
num_tiles = num_pid_m * tl.cdiv(N, BN)
pid = tl.program_id(0)
for i in tl.range(0, tl.cdiv(num_tiles - pid, NUM_PROGRAMS)):
    tile = pid + i * NUM_PROGRAMS
    pid_m, pid_n = tile % num_pid_m, tile // num_pid_m
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([pid_m * BM, k]), b_desc.load([k, pid_n * BN]), acc)
    c_desc.store([pid_m * BM, pid_n * BN], acc.to(c_desc.dtype))
""",
}


@pytest.mark.parametrize("body", RIGHT.values(), ids=RIGHT.keys())
def test_persistent_accepts(body, capsys):
    k = kernel(body)
    pc.check_persistent(k)
    out = capsys.readouterr().out
    assert re.search(r"\[persistent_kernel\] correct\..*TMA store", out), out
    # "each tile stored once" is claimed only where the interpreter recorded the stores (this
    # process, the cpu tier); on a GPU, or in a child process, nothing is recorded
    assert ("each tile stored once" in out) == pc.records_stores(k, T.device), out


def test_stores_are_recorded_on_the_cpu_tier():
    """The claim above is required on the cpu tier (in-process, under the interpreter)."""
    k = kernel(SOLUTION)
    assert pc.records_stores(k, T.device) == (not T.has_gpu and os.environ.get(isolated.ENV) != "1")


def test_persistent_stub_and_malformed(capsys):
    pc.check_persistent(kernel("pass   # a loop over this program's tiles: K loop, then a TMA store"))
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="@triton.jit"):
        pc.check_persistent(lambda *a: None)


def test_tables_are_large_enough_and_runs_are_uneven():
    assert len(WRONG) >= 6 and len(RIGHT) >= 2
    for has_gpu in (False, True):
        BM, BN, _ = pc.BLOCKS[has_gpu]
        for M, N, K, P in pc.RUNS[has_gpu]:
            npm, npn = -(-M // BM), -(-N // BN)
            assert P < npm * npn and npm * npn % P >= 2 and npm != npn
            assert M % BM and N % BN and K % pc.BLOCKS[has_gpu][2] and (N * 2) % 16 == 0


def test_loop_slip_emulations_differ_from_the_reference():
    """Every emulated tile-loop slip, in every order, differs from A @ B at the check's CPU runs."""
    import torch
    BM, BN, _ = pc.BLOCKS[False]
    for M, N, K, P in pc.RUNS[False]:
        ref = torch.randn(M, N, dtype=torch.float64)
        for order in ("grouped", "row-major", "column-major"):
            assert pc._same(pc._emulate(ref, BM, BN, P, pc.GROUP_M, lambda p, T, P: range(p, T, P),
                                        False, True, order), ref, {"atol": 1e-9, "rtol": 0})
            for tiles, swapped, reset, hint in pc.LOOP_SLIPS:
                got = pc._emulate(ref, BM, BN, P, pc.GROUP_M, tiles, swapped, reset, order)
                assert not pc._same(got, ref, {"atol": 1e-3, "rtol": 1e-3}), (order, hint)


def test_structure_reads_the_loop_and_the_store():
    s = pc.structure(HEAD.split("@triton.jit\n")[-1] + "".join(f"    {l}\n" for l in SOLUTION.splitlines()),
                     "NUM_PROGRAMS")
    assert s == {"loop": True, "desc_store": True, "tl_store": False}
    body = edit((LOOP, "for tile in range(tl.program_id(0), num_pid_m * num_pid_n):"), (STORE, PTR_STORE))
    s = pc.structure(HEAD.split("@triton.jit\n")[-1] + "".join(f"    {l}\n" for l in body.splitlines()),
                     "NUM_PROGRAMS")
    assert s == {"loop": False, "desc_store": False, "tl_store": True}
    assert gemm.GPU_CONFIGS[("v3", "float16")]["GROUP_M"]        # the compile's configuration


@pytest.mark.parametrize("name", ["tiles stepped by 1", "store through tl.store"])
def test_compiled_path_reads_the_source(name, monkeypatch):
    """Where no store is recorded (a compiled kernel on a GPU), the kernel's AST catches the two
    slips whose values are right."""
    import contextlib
    monkeypatch.setattr(pc, "_recording_stores", contextlib.contextmanager(lambda k: (yield None)))
    rejects(*WRONG[name])


def test_fp16_accumulator_detector():
    """The detector shared with v1's check: true for the planted fp16 accumulator only."""
    from utils.day05 import v1_check
    for name, (body, _) in WRONG.items():
        assert v1_check.fp16_accumulator(body) == (name == "fp16 accumulator"), name
    for name, body in RIGHT.items():
        assert not v1_check.fp16_accumulator(body), name


def test_gpu_faults_fail_with_the_hint_for_their_cause(monkeypatch):
    """As on Hopper, where the kernel runs in a child process: a tile stored at its indices is an
    illegal instruction (the TMA rule), a hang is reported as such; planted outcomes, no GPU."""
    for fault, want in ((isolated.GpuFault("illegal instruction", "Triton Error [CUDA]: an illegal "
                                           "instruction was encountered"), "16 bytes.*top-left"),
                        (isolated.GpuFault("hang", "launch 1 still running 30 s after it started"),
                         "does every loop end")):
        monkeypatch.setattr(isolated, "launches", lambda *a, **k: iter([isolated.Outcome(fault, None, True)]))
        with pytest.raises(CheckFailed, match=want) as e:
            pc.check_persistent(kernel(edit((STORE, "c_desc.store([pid_m, pid_n], acc.to(c_desc.dtype))"))))
        assert "separate process" in str(e.value) and "seed" in str(e.value)
