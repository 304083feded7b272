"""Planted kernels for ``utils.day05.v1_check.check_v1`` (day 5 · 03, Exercise 2: the whole v1
kernel, v0's tiling with A's and B's tiles through host tensor descriptors): wrong kernels a
learner writes, each rejected with the hint for ITS mistake (never another slip's), and right
kernels written differently, each accepted. They run under the Triton interpreter on the CPU
(on a GPU for real); accepted kernels are also compiled for sm_90a."""
import re

import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402,F401
import triton.language as tl  # noqa: E402,F401

from jit_source import assert_rejected, load_function, replace_each  # noqa: E402  (tests/jit_source.py)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.day05 import gemm_checks, v1_check  # noqa: E402

SIG = ("def v1_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, "
       "BK: tl.constexpr):\n")
SOLUTION = """\
off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
acc = tl.zeros((BM, BN), dtype=tl.float32)
for k in range(0, K, BK):
    acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
rm, rn = off_m + tl.arange(0, BM), off_n + tl.arange(0, BN)
tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
         mask=(rm[:, None] < M) & (rn[None, :] < N))
"""


def kernel(body: str):
    """A @triton.jit ``v1_kernel`` with ``body`` (a real file: Triton reads the source)."""
    return load_function("import triton\nimport triton.language as tl\n\n\n@triton.jit\n" + SIG
                         + "".join(f"    {line}\n" for line in body.strip("\n").split("\n")), "v1_kernel")


def edit(*pairs):
    """The solution with each (old, new) replaced (each old must occur)."""
    return replace_each(SOLUTION, *pairs)


LOOP = "for k in range(0, K, BK):"
MASK = "mask=(rm[:, None] < M) & (rn[None, :] < N)"
WRONG = {
    "K tail dropped (K // BK steps)": (edit((LOOP, "for ki in range(K // BK):\n    k = ki * BK")),
                                       "partial K slice is missing"),
    "off by one: range(0, K - BK, BK)": (edit((LOOP, "for k in range(0, K - BK, BK):")),
                                         "partial K slice is missing"),
    "K loop steps by BN": (edit((LOOP, "for k in range(0, K, BN):")), "steps by BN"),
    "K loop steps by BM": (edit((LOOP, "for k in range(0, K, BM):")), "steps by BM"),
    "C's strides swapped": (edit(("rm[:, None] * N + rn[None, :]", "rm[:, None] + rn[None, :] * M")),
                            "row-major"),
    "fp16 accumulator": (edit(("dtype=tl.float32", "dtype=tl.float16")), "rounded to fp16"),
    "fp16 after each step": (edit(("acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)",
                                   "acc += tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n])).to(tl.float16)")),
                             "rounded to fp16"),
    "no store mask": (edit((",\n         " + MASK, "")), "stored outside C"),
    "mask on rows only": (edit((MASK, "mask=rm[:, None] < M")), "stored outside C"),
    "mask with <=": (edit((MASK, "mask=(rm[:, None] <= M) & (rn[None, :] <= N)")), "stored outside C"),
    "right only at the displayed shape (N typed as a number)": (
        edit(("rm[:, None] * N", f"rm[:, None] * {v1_check.SHAPES[T.has_gpu][0][1]}")), "right at the first shape"),
    "K offset never advanced": (edit(("[off_m, k]", "[off_m, 0]"), ("[k, off_n]", "[0, off_n]")), "k = 0 tiles"),
    "program ids swapped": (edit(("tl.program_id(0) * BM, tl.program_id(1) * BN",
                                  "tl.program_id(1) * BM, tl.program_id(0) * BN")), "grid axis 0 walks M"),
    "no accumulation": (edit((", acc)\n", ")\n")), "LAST K step"),
    "B read as N x K": (edit(("b_desc.load([k, off_n])", "b_desc.load([off_n, k])")), "B is K x N"),
    "v0's pointer loads on a descriptor": (edit(("a_desc.load([off_m, k])", "tl.load(a_desc + off_m * K + k)")),
                                           "own method|descriptor"),
    "no store": ("\n".join(SOLUTION.split("\n")[:4]), "still NaN"),
    "stub line kept": (edit(("acc = tl.zeros((BM, BN), dtype=tl.float32)",
                             'acc = tl.zeros((BM, BN), dtype=tl.float32)\nacc += float("nan")')), "still NaN"),
}
OTHERS = [h for _, h in v1_check.V1_SLIPS] + [s[-1] for s in gemm_checks.K_SLIPS] + [
    v1_check.NOT_WRITTEN, v1_check.HARD_CODED]


def rejects(body, hint):
    assert_rejected(v1_check.check_v1, kernel(body), hint, OTHERS)


@pytest.mark.parametrize("body,hint", WRONG.values(), ids=WRONG.keys())
def test_v1_rejects(body, hint):
    rejects(body, hint)


RIGHT = {
    "solution": SOLUTION,
    "cdiv steps, +=, implicit cast, named mask": """\
pid_m = tl.program_id(0)
pid_n = tl.program_id(1)
acc = tl.zeros((BM, BN), tl.float32)
for ki in range(tl.cdiv(K, BK)):
    a = a_desc.load([pid_m * BM, ki * BK])
    b = b_desc.load([ki * BK, pid_n * BN])
    acc += tl.dot(a, b)
rows = pid_m * BM + tl.arange(0, BM)
cols = pid_n * BN + tl.arange(0, BN)
inside = (rows < M)[:, None] & (cols < N)[None, :]
tl.store(c_ptr + rows[:, None] * N + cols[None, :], acc, mask=inside)
""",
    "while loop, tuple offsets, acc= keyword": """\
off_m = tl.program_id(0) * BM
off_n = tl.program_id(1) * BN
acc = tl.zeros((BM, BN), dtype=tl.float32)
k = 0
while k < K:
    acc = tl.dot(a_desc.load((off_m, k)), b_desc.load((k, off_n)), acc=acc)
    k += BK
offs_m = off_m + tl.arange(0, BM)[:, None]
offs_n = off_n + tl.arange(0, BN)[None, :]
tl.store(c_ptr + offs_m * N + offs_n, acc.to(tl.float16), mask=(offs_m < M) & (offs_n < N))
""",
}


@pytest.mark.parametrize("body", RIGHT.values(), ids=RIGHT.keys())
def test_v1_accepts(body, capsys):
    v1_check.check_v1(kernel(body))
    out = capsys.readouterr().out
    assert re.search(r"\[v1_kernel\] correct\..*cp\.async\.bulk\.tensor", out), out


def test_v1_stub_and_malformed(capsys):
    v1_check.check_v1(kernel("pass   # v0's tiling, with A's and B's tiles read through a_desc and b_desc"))
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="@triton.jit"):
        v1_check.check_v1(lambda *a: None)


def test_v1_table_is_large_enough():
    assert len(WRONG) >= 6 and len(RIGHT) >= 2


def test_slip_emulations_differ_from_the_reference():
    """Every emulated slip gives a C that differs from A @ B at the check's CPU shapes."""
    import torch
    BM, BN, BK = v1_check.BLOCKS[False]
    for M, N, K in v1_check.SHAPES[False]:
        a, b = torch.randn(M, K).half(), torch.randn(K, N).half()
        ref = a.double() @ b.double()
        for make, hint in v1_check.V1_SLIPS:
            assert not v1_check._same(make(a, b, ref, BM, BN, BK), ref, {"atol": 1e-3, "rtol": 1e-3}), hint


# ---- the fp16 accumulator, as Hopper's compiler refuses it (no GPU needed) ----

FP16_ROWS = {"fp16 accumulator"}


@pytest.mark.parametrize("body", [b for b, _ in WRONG.values()] + list(RIGHT.values()),
                         ids=[f"wrong: {k}" for k in WRONG] + [f"right: {k}" for k in RIGHT])
def test_fp16_accumulator_detector(body):
    """True exactly for the kernels whose acc starts as a 16-bit tl.zeros (not for a product
    converted with .to(tl.float16), nor for tl.float32 written any way)."""
    fp16 = body in [WRONG[k][0] for k in FP16_ROWS]
    assert v1_check.fp16_accumulator(SIG + "".join(f"    {line}\n" for line in body.splitlines())) == fp16


@pytest.mark.parametrize("line,fp16", [
    ("acc = tl.zeros((BM, BN), dtype=tl.float16)", True), ("acc = tl.zeros((BM, BN), tl.float16)", True),
    ("acc = tl.zeros([BM, BN], dtype=tl.bfloat16)", True), ("acc = tl.full((BM, BN), 0, tl.float16)", True),
    ("acc = tl.zeros((BM, BN), dtype=tl.float32)", False), ("acc = tl.zeros((BM, BN), tl.float32)", False),
    ("acc = tl.zeros((BM, BN), dtype=tl.float32).to(tl.float16)", False), ("x = (BM, BN)", False)])
def test_fp16_accumulator_detector_forms(line, fp16):
    assert v1_check.fp16_accumulator(f"def k(BM, BN):\n    {line}\n") == fp16


def test_fp16_accumulator_compile_error_gets_its_hint(monkeypatch):
    """On Hopper (Triton 3.6) the fp16 accumulator is a CompilationError: the check's hint is
    FP16_ACC, not the generic one (the error is planted: this Triton compiles it)."""
    from utils.triton_lang import isolated
    for message in ("expected accumulator dtype fp32, got fp16; pass out_dtype=fp16 to use this "
                    "accumulator dtype",            # Triton's words
                    "failed to legalize operation 'tt.dot'"):    # none the check knows: the source decides
        error = isolated.raised("CompilationError", f"at 5:14:\n    acc = tl.dot(a, b, acc)\n   ^\n{message}")
        monkeypatch.setattr(isolated, "launches", lambda *a, **k: iter([isolated.Outcome(error, None, True)]))
        rejects(WRONG["fp16 accumulator"][0], "rounded to fp16")
    with pytest.raises(CheckFailed, match="raised CompilationError") as e:
        v1_check.check_v1(kernel(SOLUTION))             # fp32 acc: the generic hint, not FP16_ACC
    assert v1_check.FP16_ACC not in str(e.value)
