"""Exercise checks accept right answers, report stubs as not attempted, and reject wrong ones."""
import numpy as np
import pytest
import torch

from utils.core import checks


def stub(*a):
    raise NotImplementedError


def test_attempt_and_not_attempted(capsys):
    assert checks.attempt(stub) == checks.NOT_ATTEMPTED
    assert checks.attempt(lambda x: x + 1, 1) == 2
    checks.check_array("ex", checks.NOT_ATTEMPTED, np.zeros(3))
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(checks.CheckFailed, match="expected a function"):
        checks.attempt(42)


def test_check_array_accepts_and_rejects(capsys):
    x = np.random.randn(5, 7)
    checks.check_array("ex", x.copy(), x)
    assert "[ex] correct. all 35 elements match." in capsys.readouterr().out
    wrong = x.copy(); wrong[2, 3] += 1
    with pytest.raises(checks.CheckFailed, match=r"first at index \(2, 3\)"):
        checks.check_array("ex", wrong, x, hint="look at row 2")
    with pytest.raises(checks.CheckFailed, match="transposed"):
        checks.check_array("ex", x.T, x)
    with pytest.raises(checks.CheckFailed, match="got None"):
        checks.check_array("ex", None, x)


def test_nan_poison_detects_unwritten_elements(capsys):
    x = torch.randn(4, 6)
    y = checks.nan_like(x)
    checks.check_array("k", y, x)          # untouched: not attempted
    assert "not attempted" in capsys.readouterr().out
    y[:, :5] = x[:, :5]
    with pytest.raises(checks.CheckFailed, match=r"4 of 24 elements were never written.*\(0, 5\)"):
        checks.check_array("k", y, x)


def test_check_value(capsys):
    checks.check_value("v", 8192, 8192)
    checks.check_value("v", 101.0, 100.0, rel=0.02)
    assert capsys.readouterr().out.count("[v] correct.") == 2
    with pytest.raises(checks.CheckFailed, match="got 4096, expected 8192"):
        checks.check_value("v", 4096, 8192, hint="bytes, not elements")
    with pytest.raises(checks.CheckFailed, match="expected a int or float, got str"):
        checks.check_value("v", "8192", 8192)
    with pytest.raises(checks.CheckFailed, match="got bool"):
        checks.check_value("v", True, 1)
    checks.check_value("v", checks.NOT_ATTEMPTED, 1)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("value,is_int,is_number", [
    (3, True, True), (np.int64(3), True, True), (np.int32(-2), True, True), (np.uint8(7), True, True),
    (3.0, False, True), (np.float32(3), False, True), (True, False, False), (np.bool_(True), False, False),
    ("3", False, False), (None, False, False), (3 + 0j, False, False), (np.array([3]), False, False)])
def test_one_type_rule(value, is_int, is_number):
    assert checks.is_int(value) is is_int and checks.is_number(value) is is_number


def test_int_and_number_answers():
    assert checks.int_answer("x", np.int64(5)) == 5 and type(checks.int_answer("x", np.int64(5))) is int
    assert checks.number_answer("x", np.float32(0.5)) == 0.5
    with pytest.raises(checks.CheckFailed, match="float 3.0; expected an int: return an int"):
        checks.int_answer("x", 3.0)
    with pytest.raises(checks.CheckFailed, match="bool True; expected an int"):
        checks.int_answer("x", True)
    with pytest.raises(checks.CheckFailed, match="expected a number"):
        checks.number_answer("x", "1.5")


def test_check_value_uses_the_one_type_rule(capsys):
    checks.check_value("v", np.int64(8192), 8192)
    checks.check_value("v", np.float32(100.5), 100.0, rel=0.01)
    assert capsys.readouterr().out.count("correct") == 2
    with pytest.raises(checks.CheckFailed, match="expected a int, got float"):
        checks.check_value("v", 8192.0, 8192, kind=int)
    with pytest.raises(checks.CheckFailed, match="got bool"):
        checks.check_value("v", np.bool_(True), 1)
