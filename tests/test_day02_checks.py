"""Day 2 checks accept the references, reject planted wrong answers with a hint, and report
stubs as "not attempted"; the quiz accepts its answers and rejects every wrong letter."""
import math

import numpy as np
import pytest

from utils.day02 import checks as dc
from utils.core.checks import CheckFailed


def stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check, ref", [
    (dc.check_loads_per_thread, dc.loads_per_thread_needed_ref),
    (dc.check_stages_needed, dc.stages_needed_ref),
    (dc.check_slot_and_phase, dc.slot_and_phase_ref),
    (dc.check_loads_per_thread, lambda *a: np.int64(dc.loads_per_thread_needed_ref(*a))),
    (dc.check_stages_needed, lambda l, t, b: -(-int(l * b) // t) + 1 if (l * b) % t == 0 else math.ceil(l / (t / b)) + 1),
    (dc.check_slot_and_phase, lambda k, s: [np.int64(k % s), (k // s) & 1]),
])
def test_reference_passes_and_stub_not_attempted(check, ref, capsys):
    """Also in forms a learner may write: NumPy integers, a list instead of a tuple."""
    check(ref)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, b, n, t, e=16: math.ceil(l * b / (t * e)), "divide by the number of SMs"),
    (lambda l, b, n, t, e=16: int(l * b / n / (t * e)), "round UP"),
    (lambda l, b, n, t, e=16: round(l * b / n / (t * e)), "round UP"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / n / t), "divide by bytes_per_load"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / n / (t * e)) + 1, "loads = ceil"),
    (lambda l, b, n, t, e=16: float(math.ceil(l * b / n / (t * e))), "float .*expected an int"),
    (lambda l, b, n, t, e=16: l * b / n / (t * e), "expected an int"),
    (lambda l, b, n, t, e=16: True, "bool"),
    (lambda l, b, n, t, e=16: "3", "expected an int"),
])
def test_loads_per_thread_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_loads_per_thread(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, t, b: math.ceil(l / (t / b)), "one stage too few"),
    (lambda l, t, b: int(l / (t / b)) + 1, "round the tiles in flight UP"),
    (lambda l, t, b: math.ceil(l / (t / b)) + 2, "one stage too many"),
    (lambda l, t, b: math.ceil(l / (t * b)) + 1, "time per tile"),
    (lambda l, t, b: math.ceil(l / (t / b)) + 3, "stages = ceil"),
    (lambda l, t, b: math.ceil(l * t / b) + 1, "time per tile"),
])
def test_stages_needed_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_stages_needed(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda k, s: (k % s, k % 2), "once per pass"),
    (lambda k, s: (k % s, k // s), "0 or 1"),
    (lambda k, s: (k % s, 1 - (k // s) % 2), "inverted"),
    (lambda k, s: (k // s, (k // s) % 2), "0 .. stages-1"),
    (lambda k, s: ((k // s) % 2, k % s), "in that order"),
    (lambda k, s: ((k + 1) % s, (k // s) % 2), "slot = k % stages"),
    (lambda k, s: (k % s, float((k // s) % 2)), "expected an int"),
    (lambda k, s: (k % s, (k // s) % 2 == 1), "bool"),
    (lambda k, s: k % s, "pair"),
])
def test_slot_and_phase_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_slot_and_phase(wrong)


@pytest.mark.parametrize("expr", [
    dc.PRODUCER_PARITY_REF, "(k / stages + 1) & 1", "!((k / stages) & 1)", "!(k / stages % 2)",
    "(k / stages) % 2 == 0", "1 - (k / stages) % 2", "~(k / stages) & 1", "k / stages & 1 ^ 1",
    "k / stages % 2 ? 0 : 1", "((k / stages) & 1) == 0", "(k / stages & 1) != 1", "1 ^ k / stages % 2",
    "  ( ( k/stages ) & 1 ) ^ 1  "])
def test_phase_fix_accepts(expr, capsys):
    dc.check_phase_fix(expr)
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("expr", [dc.PRODUCER_PARITY_BUG, "(k/stages)&1", " (k / stages)  & 1 "])
def test_phase_fix_stub_not_attempted(expr, capsys):
    dc.check_phase_fix(expr)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("expr, hint", [
    ("0", "must pass at once"), ("k & 1", "must pass at once"), ("1", "PREVIOUS use"),
    ("((k % stages) & 1) ^ 1", "ring"),
    ("((k - stages) / stages) & 1", "must pass at once"),     # fine with Python's //, deadlocks in C
    ("(k - stages) / stages % 2 != 0", "must pass at once"),  # likewise (Python's % and //)
    ("((k / stages) & 1) ^ (k < stages)", "PREVIOUS use"),   # right in round 0 only
    ("(k / (stages - 1)) & 1 ^ 1", "undefined in C"),         # stages = 1 divides by zero
    ("((k / stages) & 1) ^ 1 // C", "comment in C"),
    ("not ((k / stages) & 1)", "Python"),
    ("((k // stages) & 1) ^ 1", "comment in C"),
    ("import os", "cannot read"), ("__import__('os').system('true')", "cannot read"),
    ("k ** 2", "cannot read"), ("n / stages", "unknown name")])
def test_phase_fix_rejects(expr, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_phase_fix(expr)


@pytest.mark.parametrize("bad", [1, None, ["k"]])
def test_phase_fix_rejects_non_strings(bad):
    with pytest.raises(CheckFailed, match="C expression as a string"):
        dc.check_phase_fix(bad)


def test_simulate_ring():
    ok = dc.parity_fn(dc.PRODUCER_PARITY_REF)
    assert all(dc.simulate_ring(s, 30, ok) == ("ok", 30) for s in (1, 2, 3, 8))
    assert dc.simulate_ring(4, 30, dc.parity_fn(dc.PRODUCER_PARITY_BUG)) == ("deadlock", 0)
    assert dc.simulate_ring(4, 30, lambda k, s: 1) == ("overwrite", 4)
    assert dc.parity_fn("7 / 2")(0, 1) == 3                   # C integer division
    assert dc.parity_fn("-7 / 2")(0, 1) == -3                 # truncated toward zero, as in C
