"""Planted answers for ``utils.day05.tiling.check_tile_bytes`` (day 5 · 03's warm-up: the bytes
one program loads for its output tile): wrong answers a learner writes, each rejected with the
hint for its mistake and never another's, and right answers written differently, accepted. Also
the primer's helpers (intensity, the picture) and their input errors."""
import math
import re

import pytest

import utils

T = utils.setup(quiet=True)
from utils.core.checks import CheckFailed  # noqa: E402
from utils.day05 import tiling  # noqa: E402

WRONG = {
    "elements": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * (bm + bn) * bk, "those are elements"),
    "K columns, no zero-filled tail": (lambda bm, bn, bk, k, s: (bm + bn) * k * s, "whole BK wide"),
    "K // BK steps": (lambda bm, bn, bk, k, s: (k // bk) * (bm * bk + bk * bn) * s, "drops the last"),
    "one K step": (lambda bm, bn, bk, k, s: (bm * bk + bk * bn) * s, "ONE K step"),
    "C's tile": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * bm * bn * s, "C's tile, which the program stores"),
    "A only": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * bm * bk * s, "A's slices alone"),
    "B only": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * bk * bn * s, "B's slices alone"),
    "product of the three": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * bm * bn * bk * s, "multiply-adds"),
    "B as BK x BM": (lambda bm, bn, bk, k, s: math.ceil(k / bk) * 2 * bm * bk * s, "not BK x BM"),
    "C stored counted": (lambda bm, bn, bk, k, s: (math.ceil(k / bk) * (bm + bn) * bk + bm * bn) * s,
                         "stored, not loaded"),
    "bits": (lambda bm, bn, bk, k, s: 8 * math.ceil(k / bk) * (bm + bn) * bk * s, "bytes, not bits"),
    "a float": (lambda bm, bn, bk, k, s: float(tiling.tile_bytes_ref(bm, bn, bk, k, s)), "expected an int"),
    "forgot to return": (lambda *a: None, "forget to return"),
}
OTHERS = [h for _, h in tiling.TILE_SLIPS]


@pytest.mark.parametrize("answer,hint", WRONG.values(), ids=WRONG.keys())
def test_tile_bytes_rejects(answer, hint):
    with pytest.raises(CheckFailed, match=hint) as e:
        tiling.check_tile_bytes(answer)
    msg = str(e.value)
    matched = re.search(hint, msg).group(0)
    assert all(o not in msg or matched in o for o in OTHERS), msg


def _loop(bm, bn, bk, k, s):
    total = 0
    for k0 in range(0, k, bk):
        total += bm * bk * s + bk * bn * s
    return total


RIGHT = {"reference": tiling.tile_bytes_ref, "a loop over the steps": _loop,
         "math.ceil": lambda bm, bn, bk, k, s: math.ceil(k / bk) * bk * (bm + bn) * s,
         "padded K": lambda bm, bn, bk, k, s: (bm + bn) * ((k + bk - 1) // bk * bk) * s}


@pytest.mark.parametrize("answer", RIGHT.values(), ids=RIGHT.keys())
def test_tile_bytes_accepts(answer, capsys):
    tiling.check_tile_bytes(answer)
    assert "] correct." in capsys.readouterr().out


def test_tile_bytes_stub(capsys):
    def stub(*a):
        raise NotImplementedError
    tiling.check_tile_bytes(stub)
    assert "not attempted" in capsys.readouterr().out


def test_intensity_grows_with_the_tile_and_not_with_bk():
    assert tiling.intensity(128, 256, 64, 8192, 2) > tiling.intensity(128, 128, 64, 8192, 2) > \
        tiling.intensity(64, 64, 64, 8192, 2)
    assert tiling.intensity(128, 128, 32, 8192, 2) == tiling.intensity(128, 128, 64, 8192, 2) == 64


def test_bad_input_and_picture():
    with pytest.raises(ValueError, match="BK must be a positive int"):
        tiling.tile_bytes_ref(128, 128, 0, 64, 2)
    with pytest.raises(ValueError, match="outside the grid"):
        tiling.show_tiling(tile=(9, 0))
    import matplotlib
    matplotlib.use("Agg")
    fig = tiling.show_tiling()
    assert len(fig.axes) == 3
