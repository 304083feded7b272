"""Exercise checks accept right answers, report stubs as not attempted, and reject wrong ones."""
import numpy as np
import pytest
import torch

from utils import checks


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
