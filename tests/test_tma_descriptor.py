"""Tests for utils.tma.descriptor: every cuTensorMapEncodeTiled rule is checked before the driver."""
import ctypes
import dataclasses
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from utils.tma import ArrayInfo, TensorMapSpec, describe, encode, encode_tiled, field_names, make_spec

F16 = np.zeros((200, 136), np.float16)          # 272-B rows: a legal TMA tensor


def _info(shape=(64, 64), strides=(128, 2), dtype="float16", address=1024):
    return ArrayInfo(shape, strides, dtype, address)


BAD = [  # (array, box_shape, make_spec kwargs, exception, message regex naming the rule)
    (np.zeros((2,) * 6, np.float32), (2,) * 6, {}, ValueError, r"rank 6 is outside 1\.\.5"),
    (np.zeros((4, 16), np.complex64), (4, 16), {}, ValueError, r"'complex64' is not a TMA tile type"),
    (np.zeros((4, 16), np.int8), (4, 16), {}, ValueError, r"'int8' is not a TMA tile type.*uint8"),
    (_info(address=1032), (8, 64), {}, ValueError, r"global address 0x408 is not 16-B aligned"),
    (F16[:, ::2], (8, 8), {}, ValueError, r"innermost stride 4 B .* must equal the element size 2 B"),
    (np.zeros((10, 70), np.float32), (8, 8), {}, ValueError,
     r"global stride 280 B \(dim 1 = array axis 0\) is not a multiple of 16 B"),
    (_info(strides=(2**40, 2)), (8, 64), {}, ValueError, r"global stride 1099511627776 B .* below 2\*\*40"),
    (F16[::-1], (8, 8), {}, ValueError, r"global stride -272 B .* is negative"),
    (np.zeros((0, 16), np.float32), (1, 4), {}, ValueError, r"global dimension 0 .* must be in 1\.\.2\*\*32"),
    (_info(shape=(2**32 + 1,), strides=(1,), dtype="uint8"), (16,), {}, ValueError,
     r"global dimension 4294967297 .* must be in 1\.\.2\*\*32"),
    (F16, (300, 64), {}, ValueError, r"box dimension 300 \(dim 1 = array axis 0\) exceeds 256 elements"),
    (F16, (0, 64), {}, ValueError, r"box dimension 0 .* must be at least 1"),
    (F16, (8, 4), {}, ValueError, r"inner box is 8 B .* not a multiple of 16 B"),
    (F16, (8, 128), {"swizzle": "128B"}, ValueError, r"inner box is 256 B but SWIZZLE_128B allows at most 128 B"),
    (F16, (8, 32), {"swizzle": "32B"}, ValueError, r"inner box is 64 B but SWIZZLE_32B allows at most 32 B"),
    (F16, (8, 64), {"element_strides": (9, 1)}, ValueError, r"element stride 9 .* outside 1\.\.8"),
    (F16, (8, 64), {"element_strides": (0, 1)}, ValueError, r"element stride 0 .* outside 1\.\.8"),
    (F16, (8, 64), {"element_strides": (1, 1, 1)}, ValueError, r"element_strides .* has 3 entries"),
    (np.zeros((8, 8), np.int32), (8, 8), {"oob_fill": "nan"}, ValueError, r"oob_fill 'nan' needs a float dtype"),
    (F16, (8, 8, 8), {}, ValueError, r"box_shape \(8, 8, 8\) has 3 entries"),
    (F16, (8.0, 64), {}, TypeError, r"box_shape must hold ints, got 8\.0 \(float\)"),
    (F16, (True, 64), {}, TypeError, r"box_shape must hold ints, got True \(bool\)"),
    (F16, 64, {}, TypeError, r"box_shape must be a tuple of ints"),
    (F16, (8, 64), {"swizzle": "256B"}, ValueError, r"swizzle '256B' is not one of"),
    (F16, (8, 64), {"l2_promotion": "512B"}, ValueError, r"l2_promotion '512B' is not one of"),
    (F16.tolist(), (8, 64), {}, TypeError, r"expected a NumPy array, torch tensor, CuPy array or ArrayInfo"),
]


@pytest.mark.parametrize("array, box, kwargs, exc, match", BAD)
def test_bad_input_names_the_rule(array, box, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make_spec(array, box, **kwargs)


def test_interleave_other_than_none_is_rejected():
    with pytest.raises(ValueError, match=r"interleave '32B' is not supported here, only 'none'"):
        TensorMapSpec("float16", 2, 0, (64, 64), (128,), (64, 64), (1, 1), interleave="32B")


def test_spec_built_directly_obeys_the_same_rules():
    with pytest.raises(ValueError, match=r"global stride 72 B \(dim 1 = array axis 0\) is not a multiple of 16 B"):
        TensorMapSpec("float16", 2, 0, (64, 64), (72,), (64, 8), (1, 1))
    with pytest.raises(ValueError, match=r"global_strides_bytes \(\) has 0 entries but a rank-2 tensor needs 1"):
        TensorMapSpec("float16", 2, 0, (64, 64), (), (64, 8), (1, 1))
    assert TensorMapSpec("float16", 2, 0, (64, 64), (128,), (64, 8), (1, 1)).box_bytes == 1024


def test_broadcast_and_overlapping_strides_are_legal_descriptors():
    """The driver accepts them and loads follow them (measured: .gpu_jobs/h5/stride_probe.py);
    only stores refuse them (tests/test_tma_rules.py)."""
    assert make_spec(_info(strides=(0, 2)), (8, 64)).global_strides_bytes == (0,)
    assert make_spec(_info(strides=(32, 2)), (8, 64)).global_strides_bytes == (32,)
    assert make_spec(_info(shape=(8, 4, 64), strides=(128, 1024, 2)), (8, 4, 64)).global_strides_bytes == (1024, 128)


def test_numpy_spec_is_in_driver_order():
    spec = make_spec(F16, (64, 32), swizzle="64B")
    assert spec.global_dims == (136, 200) and spec.global_strides_bytes == (272,)
    assert spec.box_dims == (32, 64) and spec.array_box_shape == (64, 32)
    assert spec.global_address == F16.ctypes.data and spec.elem_size == 2 and spec.rank == 2
    assert spec.inner_box_bytes == 64 and spec.box_bytes == 64 * 32 * 2
    assert spec.boxes_per_axis == (4, 5)           # 200/64 -> 4 (last overhangs), 136/32 -> 5
    assert spec.array_strides_bytes == F16.strides


def test_box_may_overhang_and_element_strides_shrink_the_box():
    small = np.zeros((3, 8), np.float32)
    assert make_spec(small, (16, 8)).box_bytes == 16 * 8 * 4           # box bigger than the tensor: legal
    spec = make_spec(np.zeros((64, 64, 64), np.float32), (10, 9, 8), element_strides=(3, 2, 4))
    assert spec.smem_box_dims == (8, 5, 4)          # driver order; dim 0 stride ignored
    assert spec.box_bytes == 4 * 5 * 8 * 4


def test_torch_cpu_tensor_accepted():
    torch = pytest.importorskip("torch")
    t = torch.zeros(128, 64, dtype=torch.bfloat16)
    spec = make_spec(t, (64, 64), swizzle="128B", oob_fill="nan")
    assert spec.dtype == "bfloat16" and spec.global_strides_bytes == (128,)
    assert spec.global_address == t.data_ptr() and spec.box_bytes == 8192
    with pytest.raises(ValueError, match="innermost stride"):
        make_spec(t.t(), (64, 64))                  # transposed view: not contiguous inside


def test_array_info_describes_a_gpu_tensor_from_the_cpu():
    spec = make_spec(_info(shape=(4096, 4096), strides=(8192, 2), dtype="bfloat16", address=0x7F0000000000),
                     (128, 64), swizzle="128B")
    assert spec.global_dims == (4096, 4096) and spec.box_bytes == 128 * 64 * 2
    assert make_spec(_info(dtype=np.float16), (8, 64)).dtype == "float16"


def test_field_names_match_driver_enum_names():
    assert field_names["swizzle"]["128B"] == "CU_TENSOR_MAP_SWIZZLE_128B"
    assert field_names["dtype"]["bfloat16"] == "CU_TENSOR_MAP_DATA_TYPE_BFLOAT16"
    drv = pytest.importorskip("cuda.bindings.driver")
    classes = {"dtype": drv.CUtensorMapDataType, "swizzle": drv.CUtensorMapSwizzle,
               "l2_promotion": drv.CUtensorMapL2promotion, "oob_fill": drv.CUtensorMapFloatOOBfill,
               "interleave": drv.CUtensorMapInterleave}
    for field, names in field_names.items():
        for name in names.values():
            assert hasattr(classes[field], name), name


def test_driver_arguments_use_wrapper_ints():
    drv = pytest.importorskip("cuda.bindings.driver")
    from utils.tma.encode import _driver_args
    args = _driver_args(make_spec(F16, (64, 64), swizzle="128B"), drv)
    assert len(args) == 11 and args[1] == 2
    assert all(isinstance(x, drv.cuuint64_t) for x in args[3] + args[4])
    assert all(isinstance(x, drv.cuuint32_t) for x in args[5] + args[6])
    assert [int(x) for x in args[3]] == [136, 200] and args[8] == drv.CUtensorMapSwizzle.CU_TENSOR_MAP_SWIZZLE_128B


def test_describe_mentions_every_field():
    spec = make_spec(F16, (64, 64), swizzle="128B")
    text = describe(spec)
    for f in dataclasses.fields(TensorMapSpec):
        assert f.name in text, f.name
    assert "8192" in text and "(136, 200)" in text and "(200, 136)" in text and "CU_TENSOR_MAP_SWIZZLE_128B" in text


def test_import_needs_no_gpu_libraries():
    code = ("import sys, utils.tma; "
            "assert not any(m.startswith(('cuda', 'cupy', 'torch')) for m in sys.modules), 'heavy import'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).resolve().parents[1])


def _have_driver() -> bool:
    try:
        ctypes.CDLL("libcuda.so.1")
        return True
    except OSError:
        return False


@pytest.mark.skipif(not _have_driver(), reason="needs libcuda (the CUDA driver, libcuda.so.1)")
def test_encode_returns_128_byte_descriptor():
    pytest.importorskip("cuda.bindings.driver")
    tmap = encode(make_spec(F16, (64, 64), swizzle="128B"))
    assert tmap.shape == (1,) and tmap.dtype == np.dtype("V128") and tmap.nbytes == 128
    assert encode_tiled(F16, (64, 64)).tobytes() != bytes(128)


@pytest.mark.skipif(_have_driver(), reason="needs a machine without libcuda (checks the no-driver message)")
def test_encode_without_driver_raises_clear_error():
    pytest.importorskip("cuda.bindings.driver")
    with pytest.raises(RuntimeError, match="CUDA driver"):
        encode(make_spec(F16, (64, 64)))
