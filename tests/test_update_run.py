"""utils.tma.update_run (the CuPy launchers of update_kernels.cu) on a CPU: every launcher
validates its inputs before its first CUDA call, so what it refuses is checked here with a
stand-in for a CuPy array (a CuPy array itself cannot be allocated without a GPU). The launches
themselves run in notebook day05_tma/06 on Hopper."""
import re
from types import SimpleNamespace

import numpy as np
import pytest

from utils.tma import update, update_run

pytest.importorskip("cupy", reason="the launchers import cupy before validating")


class FakeCupyArray:
    """What the launchers read of a CuPy array before any CUDA call: ndim, shape, strides, dtype,
    data.ptr, and a type whose module is cupy's."""
    __module__ = "cupy._stand_in"

    def __init__(self, shape, dtype="float16", ptr=0x7F0000000000, strides=None):
        self.shape, self.ndim, self.dtype = tuple(shape), len(shape), np.dtype(dtype)
        item = self.dtype.itemsize
        self.strides = strides or tuple(int(np.prod(self.shape[i + 1:])) * item for i in range(len(shape)))
        self.data = SimpleNamespace(ptr=ptr)


def fake(shape, dtype="float16", ptr=0x7F0000000000, strides=None):
    return FakeCupyArray(shape, dtype, ptr, strides)


def _groups(n, dtype="float16"):
    return [fake((64 + 8 * g, 128), dtype, ptr=0x7F0000000000 + g * 0x100000) for g in range(n)]


def test_the_constants_match_the_kernel_source():
    assert set(update_run.MODES) == {0, 1, 2, 3} and all(isinstance(v, str) and v for v in update_run.MODES.values())
    src = update.SOURCE
    assert f"struct ByValue {{ TensorMap m[{update_run.BYVALUE_MAX}]; }};" in src
    assert f"unsigned char tile[{update_run.TILE_BYTES}];" in src
    assert f"unsigned char tile[2][{update_run.RACE_TILE_BYTES}];" in src
    # struct Group { u64 ptr; u32 rows, cols; u64 row_stride_bytes; }: 24 bytes, the same offsets
    assert update_run.GROUP.itemsize == 24
    assert [update_run.GROUP.fields[f][1] for f in ("ptr", "rows", "cols", "row_stride_bytes")] == [0, 8, 12, 16]
    assert "struct Group { unsigned long long ptr; unsigned rows, cols; unsigned long long row_stride_bytes; };" in src
    # the flag bits the race kernel tests
    assert update_run.RACE_FLAGS == {"release": 1, "acquire": 2, "in_flight": 4}
    for bit in (1, 2, 4):
        assert f"flags & {bit}" in src


def test_every_launched_kernel_is_in_the_source():
    names = set(re.findall(r'get_function\("(\w+)"\)', open(update_run.__file__).read()))
    assert names == set(update.KERNELS)


# ---- grouped_load ----

@pytest.mark.parametrize("mode", [4, -1, "0", None, 1.0, True])
def test_grouped_load_refuses_a_mode_out_of_range(mode):
    with pytest.raises(ValueError, match=r"mode must be one of \[0, 1, 2, 3\]"):
        update_run.grouped_load(_groups(2), (32, 64), mode)


def test_grouped_load_mode_3_holds_at_most_8_groups():
    with pytest.raises(ValueError, match="at most 8 groups, got 9"):
        update_run.grouped_load(_groups(9), (32, 64), 3)


@pytest.mark.parametrize("arrays, err, match", [
    ([], TypeError, "non-empty list"),
    ("x", TypeError, "non-empty list"),
    ([np.zeros((64, 64), np.float16)], TypeError, "group 0: expected a 2-D CuPy array, got ndarray"),
    ([fake((64, 64)), fake((4, 64, 64))], TypeError, "group 1: expected a 2-D CuPy array"),
    ([fake((64, 64)), fake((64, 64), "float32")], ValueError, "group 1 is float32 but group 0 is float16"),
])
def test_grouped_load_refuses_bad_groups(arrays, err, match):
    with pytest.raises(err, match=match):
        update_run.grouped_load(arrays, (32, 64), 0)


def test_grouped_load_refuses_a_box_larger_than_the_tile():
    with pytest.raises(ValueError, match="a box of 32768 B exceeds the kernel's 16384-B tile"):
        update_run.grouped_load(_groups(2), (128, 128), 0)


def test_grouped_load_checks_every_group_by_the_encode_rules():
    groups = _groups(2) + [fake((37, 4100), strides=(8200, 2))]        # 8200-B rows: not a multiple of 16
    with pytest.raises(ValueError, match="8200"):
        update_run.grouped_load(groups, (32, 64), 1)


# ---- update_race ----

def test_update_race_refuses_x_and_y_of_different_shapes():
    with pytest.raises(ValueError, match="same shape and strides"):
        update_run.update_race(fake((64, 64)), fake((64, 128)), (32, 64), release=True, acquire=True)
    with pytest.raises(ValueError, match="same shape and strides"):
        update_run.update_race(fake((64, 64)), fake((64, 64), strides=(256, 2)), (32, 64), release=True, acquire=True)


@pytest.mark.parametrize("ctas", [0, 65536, 1.5, None])
def test_update_race_refuses_a_bad_cta_count(ctas):
    wrong_kind = not isinstance(ctas, int)                   # None, 1.5: a TypeError stating the same rule
    with pytest.raises(TypeError if wrong_kind else ValueError, match="ctas must be an int in 1..65535"):
        update_run.update_race(fake((64, 64)), fake((64, 64), ptr=0x7F0000100000), (32, 64),
                               release=False, acquire=False, ctas=ctas)


def test_update_race_refuses_a_box_larger_than_its_tiles_and_mixed_dtypes():
    with pytest.raises(ValueError, match="a box of 16384 B exceeds the kernel's 8192-B tiles"):
        update_run.update_race(fake((128, 128)), fake((128, 128), ptr=0x7F0000100000), (64, 128),
                               release=True, acquire=True)
    with pytest.raises(ValueError, match="group 1 is float32 but group 0 is float16"):
        update_run.update_race(fake((64, 64)), fake((64, 64), "float32"), (32, 64), release=True, acquire=True)
    with pytest.raises(TypeError, match="expected a 2-D CuPy array"):
        update_run.update_race(np.zeros((64, 64), np.float16), fake((64, 64)), (32, 64), release=True, acquire=True)


# ---- reduce_add ----

@pytest.mark.parametrize("c, partials, box, err, match", [
    (fake((64, 64), "float16"), fake((2, 64, 64), "float32"), (32, 32), ValueError, "must be float32"),
    (fake((64, 64), "float32"), fake((2, 64, 64), "float16"), (32, 32), ValueError, "must be float32"),
    (fake((64, 64), "float32"), fake((64, 64), "float32"), (32, 32), ValueError, r"partials must be \(splits, 64, 64\)"),
    (fake((64, 64), "float32"), fake((2, 64, 32), "float32"), (32, 32), ValueError, r"got \(2, 64, 32\)"),
    (fake((128, 64), "float32"), fake((2, 128, 64), "float32"), (128, 64), ValueError, "exceeds the kernel's 64 x 64"),
    (fake((64, 64), "float32"), fake((2, 64, 64), "float32"), (24, 32), ValueError, "not a whole number of"),
    (fake((64, 64), "float32"), fake((2, 64, 64), "float32"), (32.0, 32), TypeError, "box_shape must hold ints"),
    (np.zeros((64, 64), np.float32), fake((2, 64, 64), "float32"), (32, 32), TypeError, "expected a 2-D CuPy array"),
])
def test_reduce_add_refuses_bad_inputs(c, partials, box, err, match):
    with pytest.raises(err, match=match):
        update_run.reduce_add(c, partials, box)
