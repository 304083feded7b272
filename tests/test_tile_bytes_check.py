"""Lab report 06b, Exercise 1 (utils.day05.tile_bytes_check): the bytes a tiled GEMM asks L2 for.
Wrong answers a learner would write are rejected, each with the hint for that slip; right ones
written differently are accepted; a stub is "not attempted"."""
import math
import re

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.day05 import tile_bytes_check as tb

PHRASES = ["those are elements", "read once each", "M x N is C", "A is not read once",
           "B is not read once", "tile counts are swapped", "A's slices alone", "B's slices alone",
           "bytes, not bits", "not MiB", "is a product", "C is what the tiles write"]

WRONG = {
    "elements": (lambda M, N, K, BM, BN, s: (M // BM) * (N // BN) * K * (BM + BN), "those are elements"),
    "A and B once": (lambda M, N, K, BM, BN, s: (M * K + K * N) * s, "read once each"),
    "C's size": (lambda M, N, K, BM, BN, s: M * N * s, "M x N is C"),
    "C tiles": (lambda M, N, K, BM, BN, s: (M // BM) * (N // BN) * BM * BN * s, "M x N is C"),
    "A once, B per tile": (lambda M, N, K, BM, BN, s: (M * K + (M // BM) * N * K) * s, "A is not read once"),
    "B once, A per tile": (lambda M, N, K, BM, BN, s: ((N // BN) * M * K + K * N) * s, "B is not read once"),
    "swapped tile counts": (lambda M, N, K, BM, BN, s: (M // BN) * (N // BM) * K * (BM + BN) * s, "swapped"),
    "A only": (lambda M, N, K, BM, BN, s: (M // BM) * (N // BN) * BM * K * s, "A's slices alone"),
    "B only": (lambda M, N, K, BM, BN, s: (N // BN) * (M // BM) * BN * K * s, "B's slices alone"),
    "bits": (lambda M, N, K, BM, BN, s: tb.tile_bytes_ref(M, N, K, BM, BN, s) * 8, "bytes, not bits"),
    "MiB": (lambda M, N, K, BM, BN, s: tb.tile_bytes_ref(M, N, K, BM, BN, s) // 2 ** 20, "not MiB"),
    "product": (lambda M, N, K, BM, BN, s: (M // BM) * (N // BN) * K * BM * BN * s, "is a product"),
    "float": (lambda M, N, K, BM, BN, s: M / BM * N / BN * K * (BM + BN) * s, "expected an int"),
    "no return": (lambda M, N, K, BM, BN, s: None, "forget to return|returned None|None"),
    "raises": (lambda M, N, K, BM, BN, s: M // (BM - BM), "ZeroDivisionError"),
    "fixed 2 bytes": (lambda M, N, K, BM, BN, s: (M // BM) * (N // BN) * K * (BM + BN) * 2, "bytes ONE tile streams"),
    "MiB as a float": (lambda M, N, K, BM, BN, s: tb.tile_bytes_ref(M, N, K, BM, BN, s) / 2 ** 20, "bytes, not MiB"),
    "swapped, rounded up": (lambda M, N, K, BM, BN, s: math.ceil(M / BN) * math.ceil(N / BM) * K * (BM + BN) * s, "swapped"),
    "C counted too": (lambda M, N, K, BM, BN, s: ((M // BM) * (N // BN) * K * (BM + BN) + M * N) * s, "C is what the tiles write"),
}


@pytest.mark.parametrize("answer, hint", WRONG.values(), ids=WRONG.keys())
def test_rejects_with_the_slips_hint(answer, hint):
    with pytest.raises(CheckFailed, match=hint) as e:
        tb.check_tile_bytes(answer)
    msg = str(e.value)
    assert "Traceback" not in msg
    matched = re.search(hint, msg).group(0)
    for other in PHRASES:
        assert other not in msg or other in matched or re.search(hint, other), f"another slip's hint ({other!r}): {msg}"


def _loop(M, N, K, BM, BN, s):
    total = 0
    for _m in range(0, M, BM):
        for _n in range(0, N, BN):
            total += BM * K * s + K * BN * s
    return total


RIGHT = {
    "reference": tb.tile_bytes_ref,
    "a loop over tiles": _loop,
    "ceil and per-operand": lambda M, N, K, BM, BN, s: math.ceil(M / BM) * math.ceil(N / BN) * (BM * K + K * BN) * s,
    "numpy ints": lambda M, N, K, BM, BN, s: np.int64(M // BM) * np.int64(N // BN) * np.int64(K * (BM + BN) * s),
    "A then B, summed by operand": lambda M, N, K, BM, BN, s: (N // BN) * M * K * s + (M // BM) * K * N * s,
}


@pytest.mark.parametrize("answer", RIGHT.values(), ids=RIGHT.keys())
def test_accepts_right_answers_written_differently(answer, capsys):
    tb.check_tile_bytes(answer)
    out = capsys.readouterr().out
    assert "] correct." in out and "wrong" not in out


def test_a_stub_is_not_attempted(capsys):
    def stub(*a):
        raise NotImplementedError
    tb.check_tile_bytes(stub)
    assert "not attempted" in capsys.readouterr().out


def test_every_slip_is_wrong_somewhere_and_has_its_own_hint():
    for rule, why in tb.SLIPS:
        assert any(rule(*c) != tb.tile_bytes_ref(*c) for c in tb.CASES), why
        with pytest.raises(CheckFailed, match=re.escape(why[:40])):
            tb.check_tile_bytes(rule)


def test_the_notebook_shape_is_what_ncu_counted_delivered():
    """06b's shape with cuBLAS's tile: 128 tiles x 8192 x 256 x 2 B = 512 MiB, the LRC's delivered bytes."""
    assert tb.tile_bytes_ref(256, 8192, 8192, 128, 128, 2) == 512 * 2 ** 20
