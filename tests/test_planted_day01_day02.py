"""Planted answers for the day 1 and day 2 exercise checks (issue 35: no check accepts a wrong
answer, none rejects a right one).

For each check: a table of wrong answers a learner really writes, each with the hint it must
produce, and right answers written differently, which must print "correct". The checks draw
random cases each call, so every function answer is checked several times.
"""
import math
import os

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)
import triton  # noqa: E402  (after setup: the interpreter is chosen at import)
import triton.language as tl  # noqa: E402

from jit_source import load_function  # noqa: E402  (tests/jit_source.py)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.day01 import checks as c1  # noqa: E402
from utils.day02 import checks as c2  # noqa: E402
from utils.day02 import cost_model as cm  # noqa: E402

REPEAT = int(os.environ.get("PLANTED_REPEAT", 3))     # fresh random cases each call


def stub(*args):
    raise NotImplementedError


def rejects(check, answer, hint):
    for _ in range(REPEAT):
        with pytest.raises(CheckFailed, match=hint):
            check(answer)


def accepts(check, answer, capsys):
    for _ in range(REPEAT):
        check(answer)
        assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("check", [c1.check_gemm_intensity, c1.check_attainable_tflops,
                                   c1.check_sectors_per_warp, c1.check_bank_of, c1.check_conflict_free_pad,
                                   c2.check_loads_per_thread, c2.check_stages_needed, c2.check_slot_and_phase,
                                   cm.check_bytes_in_flight, cm.check_warp_instructions])
def test_stub_is_not_attempted(check, capsys):
    check(stub)
    assert "not attempted" in capsys.readouterr().out


# --- day 1, exercise 1: gemm_intensity(M, N, K, elem_bytes) -----------------------------------
S = lambda M, N, K: M * K + K * N + M * N  # noqa: E731


@pytest.mark.parametrize("wrong, hint", [
    (lambda M, N, K, e: M * N * K / (e * S(M, N, K)), "2 FLOPs"),
    (lambda M, N, K, e: 2 * M * N * K / S(M, N, K), "bytes, not elements"),
    (lambda M, N, K, e: 2 * M * N * K / (2 * S(M, N, K)), "not a fixed 2 bytes"),
    (lambda M, N, K, e: 2 * M * N * K / (e * (M * K + K * N)), r"C \(M x N\) crosses DRAM too"),
    (lambda M, N, K, e: 2 * M * N * K / (e * (M * K + K * N + 2 * M * N)), "C is written, never read"),
    (lambda M, N, K, e: 2 * M * N * K // (e * S(M, N, K)), "use /, not //"),
    (lambda M, N, K, e: 2 * M * N * K / (e * M * K + K * N + M * N), "intensity = 2"),   # precedence
    (lambda M, N, K, e: 2 * M ** 3 / (e * 3 * M * M), "intensity = 2"),                 # square only
    (lambda M, N, K, e: None, "returned None; expected a number"),
    (lambda M, N, K, e: "a lot", "expected a number"),
    (lambda M, N, K, e: True, "bool True; expected a number"),
    (lambda M, N, K, e: 1 / 0, "raised ZeroDivisionError"),
])
def test_gemm_intensity_planted_wrong(wrong, hint):
    rejects(c1.check_gemm_intensity, wrong, hint)


@pytest.mark.parametrize("right", [
    c1.gemm_intensity_ref,
    lambda M, N, K, e: 2 / (e * (1 / M + 1 / N + 1 / K)),
    lambda M, N, K, e: np.float32(2 * M * N * K) / np.float32(e * S(M, N, K)),
    lambda M, N, K, e: (np.int64(2) * M * N * K) / (e * (N * K + M * N + K * M)),
])
def test_gemm_intensity_planted_right(right, capsys):
    accepts(c1.check_gemm_intensity, right, capsys)


# --- day 1, exercise 2: attainable_tflops(intensity, peak_tflops, bandwidth_gbs) ---------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda i, p, b: min(p, i * b), "divide by 1000"),
    (lambda i, p, b: min(p, i * b / 1e6), "not 1e6"),
    (lambda i, p, b: min(1000 * p, i * b), "that is GFLOP/s"),
    (lambda i, p, b: i * b / 1e3, "compute roof"),
    (lambda i, p, b: max(p, i * b / 1e3), "min, not max"),
    (lambda i, p, b: min(989.0, i * b / 1e3), "not a fixed 989"),
    (lambda i, p, b: min(p, i * 3350 / 1e3), "not a fixed 3350"),
    (lambda i, p, b: min(p, b / i / 1e3), "not\\s+bandwidth / intensity"),
    (lambda i, p, b: i * p, "attainable = min"),
    (lambda i, p, b: "989", "expected a number"),
    (lambda i, p, b: None, "expected a number"),
])
def test_attainable_planted_wrong(wrong, hint):
    rejects(c1.check_attainable_tflops, wrong, hint)


@pytest.mark.parametrize("right", [
    c1.attainable_tflops_ref,
    lambda i, p, b: np.minimum(p, i * b * 1e9 / 1e12),
    lambda i, p, b: p if i * b / 1000 > p else i * b / 1000,
    lambda i, p, b: np.float32(min(p, i * b / 1e3)),
])
def test_attainable_planted_right(right, capsys):
    accepts(c1.check_attainable_tflops, right, capsys)


# --- day 1, exercise 3: sectors_per_warp(byte_addresses, access_bytes) -------------------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda a, n: len(set((np.asarray(a) // 128).tolist())), "sectors are 32 bytes"),
    (lambda a, n: len(set((np.asarray(a) // 32).tolist())), "may\\s+cross into the next sector"),
    (lambda a, n: len(set((a // 32).tolist()) | set(((a + n) // 32).tolist())), r"a \+ access_bytes - 1"),
    (lambda a, n: len(set((a // 32).tolist()) | set(((a + 3) // 32).tolist())), "not a fixed 4 bytes"),
    (lambda a, n: len(a), "count distinct sectors"),
    (lambda a, n: int(sum((x + n - 1) // 32 - x // 32 + 1 for x in a)), "count distinct sectors"),
    (lambda a, n: math.ceil(len(a) * n / 32), "not the\\s+bytes requested / 32"),
    (lambda a, n: int((a.max() + n - 1) // 32 - a.min() // 32 + 1), "not the span"),
    (lambda a, n: len({a[t] // 32 for t in range(32)} | {(a[t] + n - 1) // 32 for t in range(32)}),
     "raised IndexError"),                                                      # assumes 32 lanes
    (lambda a, n: 4, "distinct values of byte // 32"),
    (lambda a, n: 4.0, "float 4.0; expected an int"),
    (lambda a, n: True, "bool"),
    (lambda a, n: None, "returned None; expected an int"),
])
def test_sectors_planted_wrong(wrong, hint):
    rejects(c1.check_sectors_per_warp, wrong, hint)


def sectors_loop(byte_addresses, access_bytes):
    seen = set()
    for a in byte_addresses:
        for byte in range(a, a + access_bytes):
            seen.add(byte // 32)
    return len(seen)


@pytest.mark.parametrize("right", [
    c1.sectors_per_warp_ref,
    sectors_loop,
    lambda a, n: np.unique(np.concatenate([a // 32, (a + n - 1) // 32])).size,
    lambda a, n: np.int64(len(set((a // 32).tolist()) | set(((a + n - 1) // 32).tolist()))),
])
def test_sectors_planted_right(right, capsys):
    accepts(c1.check_sectors_per_warp, right, capsys)


# --- day 1, exercise 5: bank_of(byte_address) --------------------------------------------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda a: a % 32, "divide the byte address by 4"),
    (lambda a: a % 128, "divide the byte address by 4"),
    (lambda a: a // 4, "modulo 32"),
    (lambda a: a // 4 % 16, "32 banks, not 16"),
    (lambda a: a // 32 % 32, "one 4-byte word of each 128-byte row"),
    (lambda a: a // 128 % 32, "the 128-byte row"),
    (lambda a: a // 4 % 32 + 1, "numbered 0 .. 31"),
    (lambda a: round(a / 4) % 32, "not round"),
    (lambda a: math.ceil(a / 4) % 32, "not math.ceil"),
    (lambda a: a // 8 % 32, "bank = \\(byte_address // 4\\) % 32"),
    (lambda a: a / 4 % 32, "float .*expected an int: use //"),
    (lambda a: a // 4 % 32 == 1, "bool"),
    (lambda a: str(a // 4 % 32), "expected an int"),
])
def test_bank_of_planted_wrong(wrong, hint):
    rejects(c1.check_bank_of, wrong, hint)


@pytest.mark.parametrize("right", [
    c1.bank_of_ref,
    lambda a: (a >> 2) & 31,
    lambda a: np.int64(a % 128 // 4),
    lambda a: int(a / 4) % 32,
    lambda a: divmod(a, 4)[0] % 32,
])
def test_bank_of_planted_right(right, capsys):
    accepts(c1.check_bank_of, right, capsys)


# --- day 1, exercise 6: conflict_free_pad(tile_cols) -------------------------------------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda c: 1, "(?s)2-way conflicted.*not always 1"),
    (lambda c: 0, "32-way conflicted"),
    (lambda c: c % 2, "inverted"),
    (lambda c: int(c % 32 == 0), "(?s)16-way conflicted.*not only multiples of 32"),
    (lambda c: 3 if c % 2 == 0 else 2, "wastes shared memory"),
    (lambda c: 33 - c % 32 if c % 32 else 1, "wastes shared memory"),
    (lambda c: -1, "expected an int >= 0"),
    (lambda c: "1", "expected an int"),
    (lambda c: float(c % 2 == 0), "float"),
    (lambda c: c % 2 == 0, "bool"),
    (lambda c: None, "returned None; expected an int"),
])
def test_pad_planted_wrong(wrong, hint):
    rejects(c1.check_conflict_free_pad, wrong, hint)


def pad_search(cols):
    for pad in range(32):
        if len({(t * (cols + pad)) % 32 for t in range(32)}) == 32:
            return pad


@pytest.mark.parametrize("right", [
    c1.conflict_free_pad_ref,
    pad_search,
    lambda c: np.int32(1 - c % 2),
    lambda c: 0 if c & 1 else 1,
    lambda c: int(math.gcd(c, 32) > 1),
])
def test_pad_planted_right(right, capsys):
    accepts(c1.check_conflict_free_pad, right, capsys)


# --- day 2 · 01, exercise 1: loads_per_thread_needed(...) --------------------------------------
R = lambda l, b, n, t, e: l * b / n / (t * e)  # noqa: E731


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, b, n, t, e=16: math.ceil(l * b / (t * e)), "divide by the number of SMs"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / 132 / (t * e)), "not a fixed 132"),
    (lambda l, b, n, t, e=16: int(R(l, b, n, t, e)), "round UP: a fraction"),
    (lambda l, b, n, t, e=16: round(R(l, b, n, t, e)), "round UP, not to the nearest"),
    (lambda l, b, n, t, e=16: int(R(l, b, n, t, e)) + 1, r"int\(x\) \+ 1 is one too many"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / n / t), "divide by bytes_per_load"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / n / (32 * e)), "not one warp of 32"),
    (lambda l, b, n, t, e=16: math.ceil(R(l, b, n, t, e)) + 1, "loads = ceil"),
    (lambda l, b, n, t, e=16: np.ceil(R(l, b, n, t, e)), "float64 .*expected an int"),
    (lambda l, b, n, t, e=16: R(l, b, n, t, e), "expected an int.*math.ceil"),
    (lambda l, b, n, t, e=16: True, "bool"),
    (lambda l, b, n, t, e=16: "3", "expected an int"),
    (lambda l, b, n, t, e=16: None, "returned None; expected an int"),
])
def test_loads_per_thread_planted_wrong(wrong, hint):
    rejects(c2.check_loads_per_thread, wrong, hint)


@pytest.mark.parametrize("right", [
    c2.loads_per_thread_needed_ref,
    lambda l, b, n, t, e=16: math.ceil(l * 1e-9 * b * 1e9 / n / (t * e)),
    lambda l, b, n, t, e=16: int(-(-(l * b / n) // (t * e))),
    lambda l, b, n, t, e=16: np.int64(math.ceil(l * b / (n * t * e))),
])
def test_loads_per_thread_planted_right(right, capsys):
    accepts(c2.check_loads_per_thread, right, capsys)


# --- day 2 · 02, exercise 2: stages_needed(latency_ns, tile_bytes, bandwidth_gbs) --------------
X = lambda l, t, b: l / (t / b)  # noqa: E731


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, t, b: math.ceil(X(l, t, b)), "one stage too few"),
    (lambda l, t, b: int(X(l, t, b)) + 1, "round the tiles in flight UP: int"),
    (lambda l, t, b: round(X(l, t, b)) + 1, "not to the nearest"),
    (lambda l, t, b: int(X(l, t, b)) + 2, r"int\(x\) \+ 1 is one too many"),
    (lambda l, t, b: math.ceil(X(l, t, b)) + 2, "one stage too many"),
    (lambda l, t, b: math.ceil(l / (t * b)) + 1, "time per tile = tile_bytes / bandwidth"),
    (lambda l, t, b: math.ceil(l * t / b) + 1, "time per tile = tile_bytes / bandwidth"),
    (lambda l, t, b: math.ceil(t / b / l) + 1, "not time per tile / latency"),
    (lambda l, t, b: float(math.ceil(X(l, t, b)) + 1), "float .*expected an int"),
    (lambda l, t, b: None, "expected an int"),
    (lambda l, t, b: True, "bool"),
])
def test_stages_planted_wrong(wrong, hint):
    rejects(c2.check_stages_needed, wrong, hint)


def stages_loop(latency_ns, tile_bytes, bandwidth_gbs):
    in_flight = 1
    while in_flight * tile_bytes / bandwidth_gbs < latency_ns:
        in_flight += 1
    return in_flight + 1


@pytest.mark.parametrize("right", [
    c2.stages_needed_ref,
    stages_loop,
    lambda l, t, b: int(-(-(l * b) // t)) + 1,
    lambda l, t, b: np.int64(math.ceil(l * b / t) + 1),
])
def test_stages_planted_right(right, capsys):
    accepts(c2.check_stages_needed, right, capsys)


# --- day 2 · 02, exercise 3: slot_and_phase(k, stages) -----------------------------------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda k, s: (k % s, k % 2), "once per pass"),
    (lambda k, s: (k % s, k // s), "0 or 1"),
    (lambda k, s: (k % s, 1 - (k // s) % 2), "inverted"),
    (lambda k, s: (k // s, (k // s) % 2), "0 .. stages-1"),
    (lambda k, s: ((k // s) % 2, k % s), "in that order"),
    (lambda k, s: divmod(k, s), "divmod"),
    (lambda k, s: (k % s, (k % s) % 2), "not the slot number"),
    (lambda k, s: (k & (s - 1), (k // s) & 1), "power of 2"),
    (lambda k, s: (k % s, (k >> int(math.log2(s))) & 1), "power of 2"),
    (lambda k, s: (k % s, min(k // s, 1)), "slot = k % stages; parity"),       # right for rounds 0, 1
    (lambda k, s: ((k + 1) % s, (k // s) % 2), "slot = k % stages"),
    (lambda k, s: (k % s, (k / s) % 2), "float .*expected an int: use //"),
    (lambda k, s: (k % s, (k // s) % 2 == 1), "bool"),
    (lambda k, s: k % s, "expected a pair"),
    (lambda k, s: (k % s, (k // s) % 2, 0), "expected a pair"),
    (lambda k, s: None, "returned None; expected a pair.*forget to return"),
    (lambda k, s: f"{k % s},{k // s % 2}", "expected a pair"),
])
def test_slot_and_phase_planted_wrong(wrong, hint):
    rejects(c2.check_slot_and_phase, wrong, hint)


def slot_and_phase_divmod(k, stages):
    use, slot = divmod(k, stages)
    return slot, use % 2


@pytest.mark.parametrize("right", [
    c2.slot_and_phase_ref,
    slot_and_phase_divmod,
    lambda k, s: [np.int64(k % s), (k // s) & 1],
    lambda k, s: np.array([k % s, k // s % 2]),
    lambda k, s: (k - s * (k // s), int((k / s) % 2)),
])
def test_slot_and_phase_planted_right(right, capsys):
    accepts(c2.check_slot_and_phase, right, capsys)


# --- day 2 · 03, exercise 4: the producer's wait parity, a C expression ------------------------
@pytest.mark.parametrize("wrong, hint", [
    ("0", "must pass at once"),
    ("1", "PREVIOUS use"),
    ("(k / stages) % 2", "must pass at once"),                   # the bug, written differently
    ("(k / stages) ^ 1", "gives 3; a phase parity is 0 or 1"),
    ("k / stages + 1", "gives 2; a phase parity is 0 or 1"),
    ("1 - k / stages", "gives -1; a phase parity is 0 or 1"),
    ("((k >> 1) & 1) ^ 1", "1 stage.*overwrites at tile 1(?s:.*)PREVIOUS use"),  # right for 2 stages
    ("((k / 4) & 1) ^ 1", "stage"),                               # right for 4 stages only
    ("((k % stages) & 1) ^ 1", "ring"),
    ("((k / stages) & 1) ^ (k < stages)", "PREVIOUS use"),
    ("(k / (stages - 1)) & 1 ^ 1", "undefined in C"),
    ("not ((k / stages) & 1)", "Python"),
    ("((k // stages) & 1) ^ 1", "comment in C"),
    ("", "cannot read"),
])
def test_phase_fix_planted_wrong(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        c2.check_phase_fix(wrong)


@pytest.mark.parametrize("bad", [1, None, ["((k / stages) & 1) ^ 1"]])
def test_phase_fix_planted_not_a_string(bad):
    with pytest.raises(CheckFailed, match="C expression as a string"):
        c2.check_phase_fix(bad)


@pytest.mark.parametrize("right", [
    c2.PRODUCER_PARITY_REF, "!((k / stages) & 1)", "(k / stages + 1) % 2", "1 - (k / stages) % 2",
    "((k + stages) / stages) & 1", "(k / stages & 1) == 0", "k / stages % 2 ? 0 : 1",
])
def test_phase_fix_planted_right(right, capsys):
    c2.check_phase_fix(right)
    assert "correct" in capsys.readouterr().out


def test_phase_fix_stub_not_attempted(capsys):
    c2.check_phase_fix(c2.PRODUCER_PARITY_BUG)
    assert "not attempted" in capsys.readouterr().out


# --- day 5 · 01, exercise 2: bytes_in_flight(latency_ns, bandwidth_gbs) ------------------------
@pytest.mark.parametrize("wrong, hint", [
    (lambda l, b: l * b * 1e9, "off by 1e9"),
    (lambda l, b: l * 1e-9 * b, "off by 1e9"),
    (lambda l, b: l * 1e-9 * b * 1e-9, "off by 1e18"),
    (lambda l, b: l * 1e-6 * b * 1e9, "off by 1000"),
    (lambda l, b: l * b / 1e6, "that is MB"),
    (lambda l, b: l * 1e-9 * b * 2 ** 30, r"not 2\^30"),
    (lambda l, b: l * b * 8, "that is bits"),
    (lambda l, b: l / b, "not latency / bandwidth"),
    (lambda l, b: l + b, "bytes in flight = latency \\(s\\) x bandwidth"),
    (lambda l, b: "1.8 MB", "expected a number"),
    (lambda l, b: None, "expected a number"),
    (lambda l, b: True, "expected a number"),
])
def test_bytes_in_flight_planted_wrong(wrong, hint):
    rejects(cm.check_bytes_in_flight, wrong, hint)


@pytest.mark.parametrize("right", [
    cm.bytes_in_flight_ref,
    lambda l, b: l * b,
    lambda l, b: (l / 1e9) * (b * 1e9),
    lambda l, b: np.float32(l) * np.float32(b),
    lambda l, b: math.ceil(l * b),                               # whole bytes
])
def test_bytes_in_flight_planted_right(right, capsys):
    accepts(cm.check_bytes_in_flight, right, capsys)


# --- day 5 · 01, exercise 1: warp_instructions_per_tile(rows, cols, elem_bytes, vector_bytes) --
@pytest.mark.parametrize("wrong, hint", [
    (lambda r, c, e, v=16: r * c * e // (32 * v), "loads AND stores"),
    (lambda r, c, e, v=16: 2 * r * c * e // v, "32 threads share one"),
    (lambda r, c, e, v=16: 2 * r * c * e // (32 * 16), "use vector_bytes"),
    (lambda r, c, e, v=16: 2 * r * c // (32 * v), "multiply by elem_bytes"),
    (lambda r, c, e, v=16: 2 * r * c * 2 // (32 * v), "not a fixed 2"),
    (lambda r, c, e, v=16: 2 * r * c * e // 32, "divide by 32 x vector_bytes"),
    (lambda r, c, e, v=16: 2 * r * c * e // (128 * v), "not per 128-thread block"),
    (lambda r, c, e, v=16: 2 * r * c // 32, "not one element"),
    (lambda r, c, e, v=16: 2 * r * c * e // (32 * v) + 1, "times 2 directions"),
    (lambda r, c, e, v=16: 2 * r * c * e / (32 * v), "float .*expected an int: use //"),
    (lambda r, c, e, v=16: True, "bool"),
    (lambda r, c, e, v=16: None, "expected an int"),
])
def test_warp_instructions_planted_wrong(wrong, hint):
    rejects(cm.check_warp_instructions, wrong, hint)


@pytest.mark.parametrize("right", [
    cm.warp_instructions_per_tile_ref,
    lambda r, c, e, v=16: int(2 * r * c * e / (32 * v)),
    lambda r, c, e, v=16: 2 * (r * c * e // v) // 32,
    lambda r, c, e, v=16: np.int64(r * c * e // (32 * v) * 2),
])
def test_warp_instructions_planted_right(right, capsys):
    accepts(cm.check_warp_instructions, right, capsys)


# --- day 1 · 02, exercise 4: copy_coalesced_kernel (Triton; interpreter on the cpu tier) -------
@triton.jit
def right_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def right_reversed_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + (BLOCK - 1 - tl.arange(0, BLOCK))      # a permutation within each warp
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)


@triton.jit
def right_other_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    start = tl.program_id(0) * BLOCK
    offs = start + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask, other=0.0), mask=mask)
    tl.store(where_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), offs)


def copy_kernel(offsets, mask="offs < n", record=True):
    """A copy kernel whose offsets (and mask) are the learner's line, as in the notebook's cell."""
    src = f'''
@triton.jit
def planted_kernel(x_ptr, y_ptr, where_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    t = tl.arange(0, BLOCK)
    offs = {offsets}
    mask = {mask}
    tl.store(y_ptr + offs, tl.load(x_ptr + offs, mask=mask), mask=mask)
    if {record}:
        tl.store(where_ptr + pid * BLOCK + tl.arange(0, BLOCK), offs)
'''
    return load_function("import triton\nimport triton.language as tl\n" + src, "planted_kernel")


@pytest.mark.parametrize("offsets, mask, record, hint", [
    ("pid + t * tl.num_programs(0)", "offs < n", True, "neighbouring lanes read neighbouring elements"),
    ("pid * BLOCK + (t % 32) * (BLOCK // 32) + t // 32", "offs < n", True, "neighbouring lanes"),
    ("t", "offs < n", True, "never written"),                                     # forgot pid
    ("pid * 128 + t", "offs < n", True, "use BLOCK, not a fixed size"),
    ("pid * BLOCK + 2 * t", "offs < n", True, "never written|differ"),
    ("pid * BLOCK + t", "offs < (n // BLOCK) * BLOCK", True, "never written"),
    ("pid * BLOCK + t", "offs <= n", True, "wrote outside y"),
    ("pid * BLOCK + t", "offs < n + BLOCK", True, "wrote outside y"),           # no real mask
    ("pid * BLOCK + t - 1", "offs < n", True, "wrote outside y"),
    ("(pid * BLOCK + t) % n", "offs < n", True, "read twice"),
    ("pid * BLOCK + t", "offs < n", False, r"where\[\] was not written"),
])
def test_coalesced_copy_planted_wrong(offsets, mask, record, hint):
    kernel = copy_kernel(offsets, mask, record)
    with pytest.raises(CheckFailed, match=hint):
        c1.check_coalesced_copy(kernel, T.device)


@pytest.mark.parametrize("kernel", [right_kernel, right_reversed_kernel, right_other_kernel])
def test_coalesced_copy_planted_right(kernel, capsys):
    c1.check_coalesced_copy(kernel, T.device)
    assert "[copy_coalesced] correct" in capsys.readouterr().out


def test_coalesced_copy_stub_not_attempted(capsys):
    c1.check_coalesced_copy(copy_kernel("n + t"), T.device)
    assert "not attempted" in capsys.readouterr().out
