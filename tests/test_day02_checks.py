"""Day 2 checks accept the references, reject planted wrong answers with a hint, and report
stubs as "not attempted"; the quiz accepts its answers and rejects every wrong letter."""
import math

import pytest

from utils import day02_checks as dc
from utils.checks import CheckFailed
from utils.quizzes_day02 import DAY02


def stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check, ref", [
    (dc.check_loads_per_thread, dc.loads_per_thread_needed_ref),
    (dc.check_stages_needed, dc.stages_needed_ref),
    (dc.check_slot_and_phase, dc.slot_and_phase_ref),
])
def test_reference_passes_and_stub_not_attempted(check, ref, capsys):
    check(ref)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, b, n, t, e=16: math.ceil(l * b / (t * e)), "divide by the number of SMs"),
    (lambda l, b, n, t, e=16: int(l * b / n / (t * e)), "round UP"),
    (lambda l, b, n, t, e=16: math.ceil(l * b / n / t), "bytes_per_load"),
    (lambda l, b, n, t, e=16: "3", "whole number"),
])
def test_loads_per_thread_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_loads_per_thread(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, t, b: math.ceil(l / (t / b)), "one stage too few"),
    (lambda l, t, b: int(l / (t / b)) + 1, "round the tiles in flight UP"),
    (lambda l, t, b: math.ceil(l / (t / b)) + 2, "stages = ceil"),
    (lambda l, t, b: math.ceil(l / (t * b)) + 1, "stages = ceil"),
    (lambda l, t, b: math.ceil(l * t / b) + 1, "time per tile"),
])
def test_stages_needed_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_stages_needed(wrong)


@pytest.mark.parametrize("wrong, hint", [
    (lambda k, s: (k % s, k % 2), "once per pass"),
    (lambda k, s: (k // s, (k // s) % 2), "0 .. stages-1"),
    (lambda k, s: k % s, "pair"),
])
def test_slot_and_phase_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        dc.check_slot_and_phase(wrong)


def test_phase_fix(capsys):
    dc.check_phase_fix(dc.PRODUCER_PARITY_REF)
    dc.check_phase_fix("(k / stages + 1) & 1")                # an equivalent form
    assert capsys.readouterr().out.count("correct") == 2
    dc.check_phase_fix(dc.PRODUCER_PARITY_BUG)
    assert "not attempted" in capsys.readouterr().out
    for wrong, hint in [("0", "must pass at once"), ("k & 1", "must pass at once"),
                        ("1", "PREVIOUS use"), ("((k % stages) & 1) ^ 1", "ring")]:
        with pytest.raises(CheckFailed, match=hint):
            dc.check_phase_fix(wrong)
    with pytest.raises(CheckFailed, match="C expression as a string"):
        dc.check_phase_fix(1)
    with pytest.raises(CheckFailed, match="cannot read"):
        dc.check_phase_fix("import os")


def test_simulate_ring():
    ok = dc.parity_fn(dc.PRODUCER_PARITY_REF)
    assert all(dc.simulate_ring(s, 30, ok) == ("ok", 30) for s in (1, 2, 3, 8))
    assert dc.simulate_ring(4, 30, dc.parity_fn(dc.PRODUCER_PARITY_BUG)) == ("deadlock", 0)
    assert dc.simulate_ring(4, 30, lambda k, s: 1) == ("overwrite", 4)
    assert dc.parity_fn("7 / 2")(0, 1) == 3                   # C integer division


SOLUTION = dict(q1="b", q2="b", q3="c", q4={"a", "b", "c"}, q5="c", q6="b", q7="b", q8="a", q9="b", q10="b")


def test_quiz_accepts_solution(capsys):
    assert DAY02.grade(SOLUTION) == len(DAY02.questions) == len(SOLUTION)
    assert DAY02.grade({}) == 0


@pytest.mark.parametrize("qid", sorted(SOLUTION))
def test_quiz_rejects_every_wrong_letter(qid, capsys):
    q = next(q for q in DAY02.questions if q.qid == qid)
    wrongs = [{c} for c in q.choices] if q.multi else [c for c in q.choices if c != q.answer]
    for wrong in wrongs:
        with pytest.raises(CheckFailed, match=f"wrong answers: {qid}"):
            DAY02.grade(dict(SOLUTION, **{qid: wrong}))
