"""Day 5 · 08, Exercise 7: ``lab_mystery_7`` has two bugs, a wrong ``expect_tx`` whose hang hides a
fence of the wrong kind. The kernel is what the exercise says (two edited lines, the hang first and
the race behind it, on the emulator), and ``lab_checks.check_pair`` accepts both bugs written
differently and rejects the answers a learner would really give, each with the right hint."""
import contextlib
import io
import re

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.emu import course, fidelity
from utils.tma import lab, lab_checks

STUB = {"line": None, "diagnosis": "?"}
TX, FENCE = {"line": 11, "diagnosis": "expect_tx"}, {"line": 16, "diagnosis": "proxy fence"}


def verdict(*args):
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        try:
            lab_checks.check_pair(lab.PAIR, *args)
        except CheckFailed as e:
            return False, str(e)
    return True, out.getvalue()


RIGHT = [
    [TX, FENCE],
    [{"line": 16, "diagnosis": "Proxy-Fence"}, {"line": 11, "diagnosis": "expect tx"}],            # other order
    ({"line": np.int64(11), "diagnosis": " EXPECT_TX ", "why": "2176 B"},                          # a tuple, numpy
     {"line": np.int32(16), "diagnosis": "proxy_fence"}),
]
WRONG = [   # (answer, the words of the verdict and hint)
    ([TX, STUB], r"one of the two bugs; the other answer is still '\?'.*symptom shows only the first bug"),
    ([STUB, FENCE], r"line 16 \('proxy fence'\) is one of the two bugs"),
    (TX, r"this kernel has two bugs: answer with a list"),                              # the one-bug habit
    ([{"line": 6, "diagnosis": "arrival count"}, FENCE], r"'arrival count' is not one of.*mbarrier\.init's count"),
    ([{"line": 14, "diagnosis": "phase"}, FENCE], r"'phase' is not one of.*parity is not `it & 1`"),
    ([TX, {"line": 17, "diagnosis": "proxy fence"}], r"line 17 \(`__syncthreads\(\);`\) is not where it lives"),
    ([{"line": 12, "diagnosis": "expect_tx"}, FENCE], r"line 12 .* is not where it lives.*2048 bytes"),
    ([{"line": 16, "diagnosis": "expect_tx"}, {"line": 11, "diagnosis": "proxy fence"}], r"line 16 .* not where it lives"),
    ([TX, {"line": 11, "diagnosis": "expect tx"}], r"both answers name one bug, 'expect_tx'"),
    ([TX, {"line": 20, "diagnosis": "wait_group"}], r"'wait_group' is not one of.*wait_group\.read 0"),
    ([TX, {"line": 16, "diagnosis": "fence"}], r"diagnosis 'fence' is not one of"),
    ([TX, {"line": "16", "diagnosis": "proxy fence"}], r"line must be an int from 1 to 24"),
    ([TX, FENCE, {"line": 6, "diagnosis": "arrival count"}], r"expected a list of two dicts"),
    ([TX, (16, "proxy fence")], r"expected a dict"),
]


@pytest.mark.parametrize("answer", RIGHT, ids=["as-listed", "reordered-spelled", "tuple-numpy"])
def test_right_answers_pass(answer):
    ok, text = verdict(answer)
    assert ok and "correct" in text and "line 11" in text and "line 16" in text, text


@pytest.mark.parametrize("answer, hint", WRONG)
def test_wrong_answers_fail_with_their_hint(answer, hint):
    ok, text = verdict(answer)
    assert not ok, f"accepted a wrong answer: {text}"
    assert "wrong" in text, text
    assert re.search(hint, text, re.S), text


def test_planted_table_size():
    assert len(WRONG) >= 6 and len(RIGHT) >= 2


def test_stub_is_not_attempted():
    ok, text = verdict([STUB, dict(STUB)])
    assert ok and "not attempted" in text


def test_bad_kernel_name():
    with pytest.raises(ValueError, match="no two-bug exercise"):
        lab_checks.check_pair("lab_mystery_1", [TX, FENCE])


def test_the_kernel_is_lab_fixed_with_two_lines_changed_and_listed_as_a_puzzle():
    fixed, mine = lab.source(lab.FIXED).splitlines(), lab.source(lab.PAIR).splitlines()
    changed = [i for i, (a, b) in enumerate(zip(fixed, mine), 1) if a != b and i > 2]
    assert changed == [11, 16] == sorted(lab.EDITS[lab.PAIR])
    assert lab.PAIR in lab.PUZZLES and lab.PAIR not in lab.MYSTERIES and lab.PAIR in lab.KERNELS
    assert [lab_checks.bug_line(lab.PAIR, t) for _, t in lab_checks.PAIR_ANSWERS[lab.PAIR]] == [11, 16]
    d = lab.diff(lab.PAIR)
    assert any(s.startswith("+") and "2176" in s for s in d)                  # 2048 + 128 bytes declared
    assert any(s.startswith("-") and "fence.proxy.async" in s for s in d)
    assert lab.fence_gap(lab.PAIR)                                           # the PTX path check sees it


def test_the_hang_hides_the_race_on_the_emulator():
    rep = course.lab_report(lab.PAIR)
    assert fidelity.emulator_kind(rep) == "deadlock" and rep["unwritten"] == rep["elements"]
    assert "tx-count 128 B still expected" in fidelity.detail(rep)
    fixed = lab.source(lab.FIXED).splitlines()
    half = course.lab_report(lab.PAIR, source=lab.with_lines(lab.PAIR, {11: fixed[10]}))
    assert half["error"] == "RaceError" and "no fence.proxy.async" in half["message"]
    other = course.lab_report(lab.PAIR, source=lab.with_lines(lab.PAIR, {16: fixed[15]}))
    assert fidelity.emulator_kind(other) == "deadlock"                       # the fence alone fixes nothing visible
    both = course.lab_report(lab.PAIR, source=lab.with_lines(lab.PAIR, {11: fixed[10], 16: fixed[15]}))
    assert fidelity.emulator_kind(both) == "ok" and both["wrong"] == 0


def test_with_lines_rejects_bad_input():
    with pytest.raises(ValueError, match="lines must map a line number 1..24"):
        lab.with_lines(lab.PAIR, {0: "x"})
    with pytest.raises(ValueError, match="no lab kernel named"):
        lab.with_lines("nope", {1: "x"})
