"""The day-5 cost model: reference values, and checks that reject planted wrong answers."""
import numpy as np
import pytest

from utils.day02 import cost_model as cm
from utils.core.checks import CheckFailed


def test_references():
    assert cm.bytes_in_flight_ref(600, 3000) == pytest.approx(1.8e6)
    assert cm.warp_instructions_per_tile_ref(128, 64, 2) == 64
    assert cm.registers_to_hold(16384) == 4096
    assert cm.predicted_bandwidth_gbs(16384, 132, 600, 3350) == pytest.approx(3350)
    assert cm.predicted_bandwidth_gbs(4096, 132, 600, 3350) == pytest.approx(4096 * 132 / 600)


@pytest.mark.parametrize("bad", [0, -5, "3", True, None])
def test_references_reject_bad_input(bad):
    with pytest.raises(ValueError, match="must be a positive"):
        cm.bytes_in_flight_ref(bad, 3000)
    with pytest.raises(ValueError, match="must be a positive int"):
        cm.warp_instructions_per_tile_ref(bad, 64, 2)


def test_tile_not_warp_multiple():
    with pytest.raises(ValueError, match="not a multiple of 512 B"):
        cm.warp_instructions_per_tile_ref(3, 5, 2)


def test_bytes_in_flight_check(capsys):
    cm.check_bytes_in_flight(lambda l, b: l * b)
    assert "[bytes_in_flight] correct." in capsys.readouterr().out
    def stub(l, b):
        raise NotImplementedError
    cm.check_bytes_in_flight(stub)
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="off by 1e9"):
        cm.check_bytes_in_flight(lambda l, b: l * 1e-9 * b)
    with pytest.raises(CheckFailed, match="latency"):
        cm.check_bytes_in_flight(lambda l, b: l + b)
    with pytest.raises(CheckFailed, match="expected a number"):
        cm.check_bytes_in_flight(lambda l, b: "1.8 MB")


def test_warp_instruction_check(capsys):
    cm.check_warp_instructions(lambda r, c, e, v=16: 2 * r * c * e // (32 * v))
    assert "correct" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="loads AND stores"):
        cm.check_warp_instructions(lambda r, c, e, v=16: r * c * e // (32 * v))
    with pytest.raises(CheckFailed, match="32 threads share one"):
        cm.check_warp_instructions(lambda r, c, e, v=16: 2 * r * c * e // v)


@pytest.mark.parametrize("right", [lambda l, b: l * b, lambda l, b: l * 1e-9 * b * 1e9,
                                   lambda l, b: np.float32(l) * np.float32(b), lambda l, b: np.float64(l * b)])
def test_bytes_in_flight_accepts(right, capsys):
    cm.check_bytes_in_flight(right)
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda l, b: l * b * 1e9, "off by 1e9"), (lambda l, b: l * b * 1e-9, "off by 1e9"),
    (lambda l, b: l / b, "latency \\(s\\) x bandwidth"), (lambda l, b: True, "expected a number"),
    (lambda l, b: None, "expected a number")])
def test_bytes_in_flight_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        cm.check_bytes_in_flight(wrong)


@pytest.mark.parametrize("right", [lambda r, c, e, v=16: 2 * r * c * e // (32 * v),
                                   lambda r, c, e, v=16: int(2 * r * c * e / (32 * v)),
                                   lambda r, c, e, v=16: np.int64(r * c * e // (32 * v) * 2)])
def test_warp_instructions_accepts(right, capsys):
    cm.check_warp_instructions(right)
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("wrong, hint", [
    (lambda r, c, e, v=16: r * c * e // (32 * v), "loads AND stores"),
    (lambda r, c, e, v=16: 2 * r * c * e // v, "32 threads share one"),
    (lambda r, c, e, v=16: 2 * r * c * e // (32 * 16), "use vector_bytes"),
    (lambda r, c, e, v=16: 2 * r * c // (32 * v), "multiply by elem_bytes"),
    (lambda r, c, e, v=16: 2 * r * c * e // (32 * v) + 1, "times 2 directions"),
    (lambda r, c, e, v=16: 2 * r * c * e / (32 * v), "float .*expected an int"),
    (lambda r, c, e, v=16: True, "bool")])
def test_warp_instructions_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        cm.check_warp_instructions(wrong)
