"""Day 1 checks accept the references, report stubs as not attempted, and reject planted
wrong answers with the right hint."""
import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402  (after setup: the interpreter is chosen at import)
import triton.language as tl  # noqa: E402

from utils.day01 import checks as dc  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402


def stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check, ref", [
    (dc.check_gemm_intensity, dc.gemm_intensity_ref),
    (dc.check_attainable_tflops, dc.attainable_tflops_ref),
    (dc.check_sectors_per_warp, dc.sectors_per_warp_ref),
    (dc.check_bank_of, dc.bank_of_ref),
    (dc.check_conflict_free_pad, dc.conflict_free_pad_ref),
    (dc.check_gemm_intensity, lambda M, N, K, e: np.float32(2 * M * N * K) / np.float32(e * (M * K + K * N + M * N))),
    (dc.check_attainable_tflops, lambda i, p, b: np.minimum(p, i * b * 1e9 / 1e12)),
    (dc.check_sectors_per_warp, lambda a, n: np.unique(np.concatenate([np.asarray(a) // 32,
                                                                       (np.asarray(a) + n - 1) // 32])).size),
    (dc.check_sectors_per_warp, lambda a, n: np.int64(dc.sectors_per_warp_ref(a, n))),
    (dc.check_bank_of, lambda a: (a >> 2) & 31),
    (dc.check_bank_of, lambda a: np.int64(a % 128 // 4)),
    (dc.check_conflict_free_pad, lambda c: np.int32(1 - c % 2)),
])
def test_reference_passes_and_stub_is_not_attempted(check, ref, capsys):
    """The references, and other right forms a learner may write (NumPy scalars, other idioms)."""
    check(ref)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda M, N, K, e: M * N * K / (e * (M * K + K * N + M * N)), "2 FLOPs"),
    (lambda M, N, K, e: 2 * M * N * K / (M * K + K * N + M * N), "bytes, not elements"),
    (lambda M, N, K, e: 2 * M * N * K / (e * (M * K + K * N)), "C \\(M x N\\) crosses DRAM"),
    (lambda M, N, K, e: M + N + K, "intensity = 2"),
    (lambda M, N, K, e: "a lot", "expected a number"),
    (lambda M, N, K, e: True, "expected a number"),
])
def test_gemm_intensity_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_gemm_intensity(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda i, p, b: min(p, i * b), "divide by 1000"),
    (lambda i, p, b: i * b / 1e3, "compute roof"),
    (lambda i, p, b: max(p, i * b / 1e3), "min, not max"),
    (lambda i, p, b: i * p, "attainable = min"),
])
def test_attainable_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_attainable_tflops(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda a, n: len(set((np.asarray(a) // 128).tolist())), "sectors are 32 bytes"),
    (lambda a, n: len(a), "count distinct sectors"),
    (lambda a, n: len(set((np.asarray(a) // 32).tolist())), "may cross into the next sector"),
    (lambda a, n: 4, "distinct values"),
    (lambda a, n: 4.0, "expected an int"),
    (lambda a, n: True, "bool"),
])
def test_sectors_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_sectors_per_warp(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda a: a % 32, "divide the byte address by 4"),
    (lambda a: a // 4, "modulo 32"),
    (lambda a: (a // 8) % 32, "bank = "),
    (lambda a: (a // 4) % 16, "not 16"),
    (lambda a: a // 32 % 32, "one 4-byte word of each 128-byte row"),
    (lambda a: float((a // 4) % 32), "float .*expected an int"),
    (lambda a: (a // 4) % 32 == 1, "bool"),
])
def test_bank_of_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_bank_of(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda c: 1, "2-way conflicted"),
    (lambda c: 0, "32-way conflicted"),
    (lambda c: 3 if c % 2 == 0 else 2, "wastes shared memory"),
    (lambda c: -1, "expected an int >= 0"),
    (lambda c: "1", "expected an int"),
    (lambda c: float(c % 2 == 0), "float"),
])
def test_pad_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_conflict_free_pad(wrong)


@triton.jit
def good_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def uncoalesced_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid + tl.arange(0, BLOCK) * tl.num_programs(0)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def stub_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = n + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def unmasked_edge_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < (n // BLOCK) * BLOCK                      # forgets the partial last block
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def no_record_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)


def test_coalesced_copy_check(capsys):
    dc.check_coalesced_copy(good_kernel, T.device)
    assert "[copy_coalesced] correct" in capsys.readouterr().out
    dc.check_coalesced_copy(stub_kernel, T.device)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="neighbouring lanes read neighbouring elements"):
        dc.check_coalesced_copy(uncoalesced_kernel, T.device)
    with pytest.raises(CheckFailed, match="never written"):
        dc.check_coalesced_copy(unmasked_edge_kernel, T.device)
    with pytest.raises(CheckFailed, match="where\\[\\] was not written"):
        dc.check_coalesced_copy(no_record_kernel, T.device)
