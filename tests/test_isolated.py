"""utils.triton_lang.isolated: a learner's Triton kernel rebuilt from its source and launched in a
child process (on a GPU a kernel that stops the GPU must not stop the notebook's). On this CPU the
child runs under the interpreter (``COURSE_ISOLATE_KERNELS=1``, ``TRITON_INTERPRET=1`` inherited):
a kernel calling a notebook-defined jit helper and reading module-level constants is rebuilt and
runs there; a child that dies, hangs or reports a CUDA error becomes a clear ``CheckFailed``. On a
GPU the same tests run the child on the GPU."""
import pytest

import utils

T = utils.setup(quiet=True)
import torch  # noqa: E402
import triton.language as tl  # noqa: E402

from jit_source import load_function  # noqa: E402  (tests/jit_source.py)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.day05 import persistent_check as pc, v1_check  # noqa: E402
from utils.triton_lang import isolated  # noqa: E402

DEV = T.device

HELPERS = '''\
import math
import triton
import triton.language as tl

SCALE = tl.constexpr(3)                     # module-level constants (a compiled kernel reads only
OFFSET: tl.constexpr = tl.constexpr(0.5)    # constexpr globals; the interpreter reads any)
FLAG = tl.constexpr(True)
COUNT, NAME, BIG, SHAPE = 4, "course", math.inf, (2, 3)
x = object()                                # a notebook global the kernel shadows (never read)


@triton.jit
def plain_reader(y_ptr):
    tl.store(y_ptr, COUNT + len(NAME) + SHAPE[0] + BIG)


@triton.jit
def twice(v):
    return v * 2


@triton.jit
def scaled(v, s: tl.constexpr):
    return twice(v) * s + OFFSET            # calls another helper, reads a constexpr


@triton.jit
def helper_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(x_ptr + offs, mask=mask)
    if FLAG:
        x = scaled(x, SCALE)
    tl.store(y_ptr + offs, x, mask=mask)
'''


@pytest.fixture
def child(monkeypatch):
    """Launches go to a child process even on the CPU."""
    monkeypatch.setenv(isolated.ENV, "1")


CAST = '''\
import triton
import triton.language as tl

DTYPE = tl.constexpr(tl.float32)


@triton.jit
def cast_copy(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask).to(DTYPE), mask=mask)
'''


def helper_kernel():
    return load_function(HELPERS, "helper_kernel")


def test_rebuilt_source_holds_helpers_and_constants():
    src = isolated.rebuild_source(helper_kernel())
    for piece in ("def twice(", "def scaled(", "def helper_kernel(", "constexpr(3)", "constexpr(True)",
                  "constexpr(0.5)", "import_module('triton.language')", "@_isolated_triton.jit"):
        assert piece in src, piece
    assert "NAME" not in src and "plain_reader" not in src and "x = " not in src.split("def ")[0]   # only what is read
    src = isolated.rebuild_source(load_function(HELPERS, "plain_reader"))
    for piece in ("COUNT = 4", "NAME = 'course'", "BIG = float('inf')", "SHAPE = (2, 3, )"):
        assert piece in src, piece
    ns = {}
    exec(src.split("\n\n@")[0], ns)                   # the constants' lines give the same values
    assert (ns["COUNT"], ns["NAME"], ns["BIG"], ns["SHAPE"]) == (4, "course", float("inf"), (2, 3))


def test_kernel_with_a_helper_and_constants_runs_in_the_child(child):
    x = torch.arange(100, dtype=torch.float32, device=DEV)
    y = torch.full((100,), float("nan"), device=DEV)
    calls = [((4,), (x, y, 100), {"BLOCK": 32}), ((2,), (x[:50], y[:50], 50), {"BLOCK": 32})]
    done = list(isolated.launches(helper_kernel(), calls, device=DEV))
    assert [d.error for d in done] == [None, None] and all(d.isolated for d in done)
    assert torch.equal(y, x * 6 + 0.5)


def test_views_bring_their_whole_storage_back(child):
    """A store past a view's end lands in the storage around it, which comes back (the checks'
    NaN guards rely on it)."""
    k = load_function("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                      "def spill(y_ptr, n, BLOCK: tl.constexpr):\n"
                      "    tl.store(y_ptr + tl.arange(0, BLOCK), 1.0)\n", "spill")
    buf = torch.full((64,), float("nan"), device=DEV)
    (done,) = isolated.launches(k, [((1,), (buf[8:12], 4), {"BLOCK": 16})], device=DEV)
    assert done.error is None and done.isolated
    assert torch.isnan(buf[:8]).all() and (buf[8:24] == 1).all() and torch.isnan(buf[24:]).all()


def test_in_process_without_the_flag_and_for_unrebuildable_kernels(monkeypatch):
    k = helper_kernel()
    monkeypatch.delenv(isolated.ENV, raising=False)
    assert isolated.in_process(k, "cpu") and not isolated.isolates("cpu")
    assert isolated.isolates("cuda") and not isolated.in_process(k, "cuda")
    monkeypatch.setenv(isolated.ENV, "1")
    assert not isolated.in_process(k, "cpu")
    k.fn.__globals__["SCALE"] = torch.ones(1)           # a tensor cannot cross as source
    with pytest.raises(isolated.Unrebuildable, match="SCALE"):
        isolated.rebuild_source(k)
    x, y = torch.ones(8, device=DEV), torch.zeros(8, device=DEV)
    k = load_function(CAST, "cast_copy")              # no line rebuilds a constexpr dtype:
    assert isolated.in_process(k, "cpu")              # it runs here, as before (on a GPU too)
    (done,) = isolated.launches(k, [((1,), (x, y, 8), {"BLOCK": 8})], device=DEV)
    assert not done.isolated and done.error is None and torch.equal(y, x)
    monkeypatch.setenv(isolated.ENV, "yes")
    with pytest.raises(ValueError, match=isolated.ENV):
        isolated.isolates("cpu")


def test_a_raised_error_keeps_its_type_name(child):
    k = load_function("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                      "def bad(y_ptr):\n    tl.store(y_ptr, undefined_name)\n", "bad")
    (done,) = isolated.launches(k, [((1,), (torch.zeros(1, device=DEV),), {})], device=DEV)
    assert isinstance(done.error, isolated.KernelRaised) and done.isolated
    assert "undefined_name" in str(done.error) and type(done.error).__name__ not in ("KernelRaised", "Exception")


# ---- a child that dies, hangs or reports a CUDA error (planted: the rebuilt module replaced) ----

FAKE = '''
class _Launcher:
    def __getitem__(self, grid):
        return self.launch
    def launch(self, *args, **kwargs):
        {body}
{name} = _Launcher()
'''


def ARGS():
    """One launch of helper_kernel's arguments."""
    return (1,), (torch.zeros(8, device=DEV), torch.zeros(8, device=DEV), 8), {"BLOCK": 8}


def plant(monkeypatch, body, name):
    """The child imports a module whose ``name`` launches by running ``body``."""
    src = FAKE.format(body=body, name=name)
    monkeypatch.setattr(isolated, "rebuild_source", lambda kernel: src)


def test_a_child_that_dies_is_reported(child, monkeypatch):
    plant(monkeypatch, "import os; os._exit(7)", "helper_kernel")
    (done,) = isolated.launches(helper_kernel(), [ARGS()], device=DEV)
    assert isinstance(done.error, isolated.GpuFault) and done.error.kind == "died"
    assert "exit status 7" in str(done.error) and "separate process" in str(done.error)


def test_a_hang_is_stopped_and_reported(child, monkeypatch):
    plant(monkeypatch, "import time; time.sleep(600)", "helper_kernel")
    (done,) = isolated.launches(helper_kernel(), [ARGS()], device=DEV, timeout_s=15)
    assert isinstance(done.error, isolated.GpuFault) and done.error.kind == "hang"
    assert "did not finish" in str(done.error) and isolated.fault_hint(done.error, "") == isolated.HANG_HINT


PERSISTENT = '''\
import triton
import triton.language as tl


@triton.jit
def persistent_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                      BK: tl.constexpr, GROUP_M: tl.constexpr, NUM_PROGRAMS: tl.constexpr):
    c_desc = tl.make_tensor_descriptor(c_ptr, shape=[M, N], strides=[N, 1], block_shape=[BM, BN])
    for tile in range(tl.program_id(0), tl.cdiv(M, BM) * tl.cdiv(N, BN), NUM_PROGRAMS):
        pid_m, pid_n = tile // tl.cdiv(N, BN), tile % tl.cdiv(N, BN)
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for k in range(0, K, BK):
            acc = tl.dot(a_desc.load([pid_m * BM, k]), b_desc.load([k, pid_n * BN]), acc)
        c_desc.store([pid_m, pid_n], acc.to(c_desc.dtype))
'''


def test_an_illegal_instruction_fails_the_check_with_the_tma_rule(child, monkeypatch):
    """As on Hopper for a tile stored at its indices: the child reports a sticky CUDA error, the
    check fails naming it, the separate process and the 16-byte rule."""
    plant(monkeypatch, "raise RuntimeError('Triton Error [CUDA]: an illegal instruction was encountered')",
          "persistent_kernel")
    with pytest.raises(CheckFailed) as e:
        pc.check_persistent(load_function(PERSISTENT, "persistent_kernel"))
    msg = str(e.value)
    for piece in ("stopped the GPU", "illegal instruction", "separate process", "this notebook's GPU is "
                  "unaffected", "16 bytes", "top-left", "launched:"):
        assert piece in msg, (piece, msg)


@pytest.mark.skipif(T.name != "hopper", reason="the illegal instruction is Hopper's (measured on H100 and H200)")
def test_on_hopper_a_tile_stored_at_its_index_stops_only_the_child():
    """The real fault: the check fails with the TMA rule, and this process's GPU still works."""
    with pytest.raises(CheckFailed, match="stopped the GPU") as e:
        pc.check_persistent(load_function(PERSISTENT, "persistent_kernel"))
    assert "16 bytes" in str(e.value) and "separate process" in str(e.value)
    assert torch.ones(4, device="cuda").sum().item() == 4


def test_a_dead_child_fails_the_check_clearly(child, monkeypatch):
    plant(monkeypatch, "import os; os._exit(3)", "v1_kernel")
    k = load_function("import triton\nimport triton.language as tl\n\n\n@triton.jit\n"
                      "def v1_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, "
                      "BK: tl.constexpr):\n    pass\n", "v1_kernel")
    with pytest.raises(CheckFailed, match=r"process running your kernel died \(exit status 3\).*separate"):
        v1_check.check_v1(k)


def test_fault_hints():
    tma, ptr = (isolated.fault_hint(isolated.GpuFault(kind, "x"), PERSISTENT) for kind in
                ("illegal instruction", "illegal memory access"))
    assert tma == isolated.TMA_RULE and ptr == isolated.POINTER_RULE
    assert isolated.fault_kind("Triton Error [CUDA]: misaligned address") == "misaligned address"
    assert isolated.descriptor_copies(PERSISTENT)
    assert not isolated.descriptor_copies("def k(x_ptr):\n    tl.store(x_ptr, tl.load(x_ptr))\n")


def test_fault_words_name_the_error():
    torch_msg = ("CUDA error: an illegal instruction was encountered\nCUDA kernel errors might be "
                 "asynchronously reported at some other API call\nCompile with `TORCH_USE_CUDA_DSA` to "
                 "enable device-side assertions.\n")
    assert isolated._fault_words(torch_msg) == "CUDA error: an illegal instruction was encountered"
    assert isolated.fault_kind(torch_msg) == "illegal instruction"


def test_the_child_stays_warm_between_checks_and_is_replaced_after_a_death(child, monkeypatch):
    """One child serves launch after launch (torch, Triton and the GPU start once); a child that
    died is replaced by a fresh one, and so is one started under another environment."""
    k, real = helper_kernel(), isolated.rebuild_source
    (done,) = isolated.launches(k, [ARGS()], device=DEV)
    first = isolated._WORKER["proc"].pid
    (again,) = isolated.launches(k, [ARGS()], device=DEV)
    assert done.error is None and again.error is None and isolated._WORKER["proc"].pid == first
    plant(monkeypatch, "import os; os._exit(7)", "helper_kernel")
    (dead,) = isolated.launches(k, [ARGS()], device=DEV)
    assert isinstance(dead.error, isolated.GpuFault) and dead.error.kind == "died"
    monkeypatch.setattr(isolated, "rebuild_source", real)
    (fresh,) = isolated.launches(k, [ARGS()], device=DEV)
    assert fresh.error is None and isolated._WORKER["proc"].pid != first
    second = isolated._WORKER["proc"].pid
    monkeypatch.setenv("COURSE_SOME_SETTING", "changed")
    (other,) = isolated.launches(k, [ARGS()], device=DEV)
    assert other.error is None and isolated._WORKER["proc"].pid != second


def test_a_child_that_cannot_start_says_why(child, monkeypatch, tmp_path):
    """A child that dies before its first job (a broken environment) is reported with its last words."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ImportError: no module named torch' >&2\nexit 5\n")
    fake.chmod(0o755)
    isolated.stop_worker()
    monkeypatch.setattr(isolated.sys, "executable", str(fake))
    (done,) = isolated.launches(helper_kernel(), [ARGS()], device=DEV)
    assert isinstance(done.error, isolated.GpuFault) and done.error.kind == "died"
    assert "exit status 5" in str(done.error) and "no module named torch" in str(done.error)
    isolated.stop_worker()


def test_a_child_dead_before_the_write_says_why_too(child, monkeypatch, tmp_path):
    """The same broken child, already gone when the job is written to it (the pipe is broken on the
    first write and on the fresh start's): still reported with its exit status and last words (this
    race failed CI once with an unhandled BrokenPipeError)."""
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\necho 'ImportError: no module named torch' >&2\nexit 5\n")
    fake.chmod(0o755)
    isolated.stop_worker()
    monkeypatch.setattr(isolated.sys, "executable", str(fake))
    start = isolated._worker

    def dead_on_arrival(env):
        p = start(env)
        p.wait()                    # the child has exited before anything is written to it
        return p
    monkeypatch.setattr(isolated, "_worker", dead_on_arrival)
    (done,) = isolated.launches(helper_kernel(), [ARGS()], device=DEV)
    assert isinstance(done.error, isolated.GpuFault) and done.error.kind == "died"
    assert "exit status 5" in str(done.error) and "no module named torch" in str(done.error)
    isolated.stop_worker()
