"""Notebook 03's exercise checks: the kernel exercise runs learners' kernels under the
interpreter; the tile-order and block-rule checks reject planted mistakes with hints."""
import math

import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from utils.day05 import gemm, gemm_checks  # noqa: E402
from utils.core import ptx  # noqa: E402
from utils.triton_lang.compile import triton_ptx  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402


@triton.jit
def _epilogue(acc, c_ptr, M, N, off_m, off_n, BM: tl.constexpr, BN: tl.constexpr):
    rm, rn = off_m + tl.arange(0, BM), off_n + tl.arange(0, BN)
    tl.store(c_ptr + rm[:, None] * N + rn[None, :], acc.to(c_ptr.dtype.element_ty),
             mask=(rm[:, None] < M) & (rn[None, :] < N))


@triton.jit
def good_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]), acc)
    _epilogue(acc, c_ptr, M, N, off_m, off_n, BM, BN)


@triton.jit
def stub_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc += float("nan")
    _epilogue(acc, c_ptr, M, N, off_m, off_n, BM, BN)


@triton.jit
def no_accumulate_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, k]), b_desc.load([k, off_n]))
    _epilogue(acc, c_ptr, M, N, off_m, off_n, BM, BN)


@triton.jit
def first_step_kernel(a_desc, b_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr):
    off_m, off_n = tl.program_id(0) * BM, tl.program_id(1) * BN
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for k in range(0, K, BK):
        acc = tl.dot(a_desc.load([off_m, 0]), b_desc.load([0, off_n]), acc)
    _epilogue(acc, c_ptr, M, N, off_m, off_n, BM, BN)


def test_k_loop(capsys):
    gemm_checks.check_k_loop(good_kernel)
    assert "correct" in capsys.readouterr().out
    gemm_checks.check_k_loop(stub_kernel)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="LAST K step"):
        gemm_checks.check_k_loop(no_accumulate_kernel)
    with pytest.raises(CheckFailed, match=r"\[k, off_n\]"):
        gemm_checks.check_k_loop(first_step_kernel)
    with pytest.raises(CheckFailed, match="@triton.jit"):
        gemm_checks.check_k_loop(lambda *a: None)


def test_ptx_compiles_kernels_calling_helpers_under_the_interpreter():
    d = "tensordesc<fp16[32, 32]>"
    sig = {"a_desc": d, "b_desc": d, "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr"}
    text = triton_ptx(good_kernel, sig, {"BM": 32, "BN": 32, "BK": 32})
    assert ptx.count(text)["cp.async.bulk.tensor"] > 0


def stub(*args):
    raise NotImplementedError


def test_tile_order(capsys):
    gemm_checks.check_tile_order(gemm.tile_order_ref)
    assert "correct" in capsys.readouterr().out
    gemm_checks.check_tile_order(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong,hint", [
    (lambda p, pm, pn, g: (p // pn, p % pn), "row-major"),
    (lambda p, pm, pn, g: gemm.tile_order_ref(p, pm, pn, g)[::-1], "swapped"),
    (lambda p, pm, pn, g: ((p // (g * pn)) * g + (p % (g * pn)) % g, (p % (g * pn)) // g), "fewer than"),
    (lambda p, pm, pn, g: ((p // (g * pn)) * g + (p % (g * pn)) // pn, (p % (g * pn)) % pn), "row-major"),
    (lambda p, pm, pn, g: (gemm.tile_order_ref(p, pm, pn, g)[0], 0), "per_group = group_m"),
    (lambda p, pm, pn, g: tuple(float(v) for v in gemm.tile_order_ref(p, pm, pn, g)), "pair .* of ints"),
    (lambda p, pm, pn, g: (True, False), "pair .* of ints"),
    (lambda p, pm, pn, g: "0, 0", "pair")])
def test_tile_order_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        gemm_checks.check_tile_order(wrong)


def test_tile_order_accepts_numpy_ints_and_lists(capsys):
    import numpy as np
    gemm_checks.check_tile_order(lambda *a: [np.int64(v) for v in gemm.tile_order_ref(*a)])
    assert "correct" in capsys.readouterr().out


def triton_accepts(block, size):
    """Triton's own rules: its block-shape validation and the descriptor's 16-byte rule."""
    from triton._utils import validate_block_shape
    try:
        validate_block_shape(list(block))
    except ValueError:
        return False
    return block[-1] * size >= 16


def test_block_cases_agree_with_triton():
    for block, size in gemm_checks.BLOCK_CASES:
        assert (not gemm.block_violations(block, size)) == triton_accepts(block, size), block
    legal = [(b, s) for b, s in gemm_checks.BLOCK_CASES if not gemm.block_violations(b, s)]
    assert any(math.prod(b) == 2**20 for b, _ in legal) and any(max(b) > 256 for b, _ in legal)


def _numpy_rule(b, s):
    import numpy as np
    a = np.array(b)
    return np.all(a & (a - 1) == 0) & (a[-1] * s >= 16) & (np.prod(a) <= 2**20)


@pytest.mark.parametrize("right", [
    lambda b, s: not gemm.block_violations(b, s),
    triton_accepts,
    _numpy_rule,                                                # returns np.bool_
    lambda b, s: all(x > 0 and (x & (x - 1)) == 0 for x in b) and b[-1] * s >= 16 and math.prod(b) <= 1 << 20,
    lambda b, s: all(math.log2(x).is_integer() for x in b) and b[-1] * s >= 16 and math.prod(b) <= 1048576,
])
def test_block_rules_accepts(right, capsys):
    gemm_checks.check_block_rules(right)
    assert "correct" in capsys.readouterr().out


def test_block_rules_stub(capsys):
    gemm_checks.check_block_rules(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong,hint", [
    (lambda b, s: b[-1] * s >= 16 and math.prod(b) <= 2**20, "power of 2"),
    (lambda b, s: all(x & (x - 1) == 0 for x in b) and b[-1] >= 16 and math.prod(b) <= 2**20, "BYTES"),
    (lambda b, s: all(x & (x - 1) == 0 and x * s >= 16 for x in b) and math.prod(b) <= 2**20, "only the LAST"),
    (lambda b, s: all(x & (x - 1) == 0 for x in b) and b[-1] * s >= 16, "2\\*\\*20 elements"),
    (lambda b, s: all(x & (x - 1) == 0 for x in b) and b[-1] * s >= 16 and math.prod(b) < 2**20, "exactly 2\\*\\*20"),
    (lambda b, s: all(x & (x - 1) == 0 and x <= 256 for x in b) and b[-1] * s >= 16 and math.prod(b) <= 2**20,
     "exceed 256"),
    (lambda b, s: all(x & (x - 1) == 0 for x in b) and b[-1] * s > 16 and math.prod(b) <= 2**20, "got False, expected True"),
    (lambda b, s: not gemm.block_violations(b, s) and b != (4, 16), "keeps every rule"),
    (lambda b, s: 1, "True or False"),
    (lambda b, s: "yes", "True or False")])
def test_block_rules_reject(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        gemm_checks.check_block_rules(wrong)
