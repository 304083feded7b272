"""A validated wrapper over the driver's ``cuTensorMapEncodeTiled`` (the TMA descriptor).

Two orders of dimensions appear, and mixing them up is the classic TMA bug:
  * array order: outermost axis first, like ``arr.shape`` (NumPy, torch, CuPy);
  * driver order: innermost dimension first (dim 0), as ``cuTensorMapEncodeTiled`` takes it.
:func:`make_spec` takes array order; :class:`TensorMapSpec` stores driver order and
offers ``array_*`` properties for the other one. Every documented rule (CUDA Driver
API, ``cuTensorMapEncodeTiled``) is checked in Python before the driver is called.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from .swizzle import SWIZZLE_MODES, swizzle_span

# numpy-style dtype name -> (driver CUtensorMapDataType suffix, element size in bytes)
DTYPES = {"uint8": ("UINT8", 1), "uint16": ("UINT16", 2), "uint32": ("UINT32", 4),
          "int32": ("INT32", 4), "uint64": ("UINT64", 8), "int64": ("INT64", 8),
          "float16": ("FLOAT16", 2), "float32": ("FLOAT32", 4), "float64": ("FLOAT64", 8),
          "bfloat16": ("BFLOAT16", 2)}
FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")

# our string -> driver enum member name, per argument (handy for teaching)
field_names = {
    "dtype": {k: f"CU_TENSOR_MAP_DATA_TYPE_{v[0]}" for k, v in DTYPES.items()},
    "swizzle": {m: "CU_TENSOR_MAP_SWIZZLE_" + m.upper() for m in SWIZZLE_MODES},
    "l2_promotion": {"none": "CU_TENSOR_MAP_L2_PROMOTION_NONE", "64B": "CU_TENSOR_MAP_L2_PROMOTION_L2_64B",
                     "128B": "CU_TENSOR_MAP_L2_PROMOTION_L2_128B", "256B": "CU_TENSOR_MAP_L2_PROMOTION_L2_256B"},
    "oob_fill": {"zero": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
                 "nan": "CU_TENSOR_MAP_FLOAT_OOB_FILL_NAN_REQUEST_ZERO_FMA"},
    "interleave": {"none": "CU_TENSOR_MAP_INTERLEAVE_NONE"},
}


class ArrayInfo(NamedTuple):
    """Describes a tensor without holding it: array-order ``shape`` and ``strides_bytes``,
    a dtype name (e.g. "bfloat16"), and the device ``address`` of element 0."""
    shape: tuple
    strides_bytes: tuple
    dtype: str
    address: int


def _check_ints(name, values):
    """TypeError unless ``values`` is a sequence of true integers (bools and floats rejected)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a tuple of ints, got {values!r}")
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"{name} must hold ints, got {v!r} ({type(v).__name__}) in {tuple(values)!r}")
    return tuple(int(v) for v in values)


def _check_dtype(dtype) -> None:
    """ValueError unless ``dtype`` names a supported TMA tile type."""
    if not isinstance(dtype, str) or dtype not in DTYPES:
        raise ValueError(f"dtype {dtype!r} is not a TMA tile type; supported: {', '.join(DTYPES)} "
                         "(for int8/int16 view the data as uint8/uint16: TMA only moves bytes)")


def _dtype_name(dtype) -> str:
    """'float16' for "float16", np.float16, np.dtype("float16") or torch.float16."""
    if isinstance(dtype, str):
        return dtype
    return str(dtype)[len("torch."):] if str(dtype).startswith("torch.") else np.dtype(dtype).name


def _axis(rank, d):
    return f"dim {d} = array axis {rank - 1 - d}"


@dataclass(frozen=True)
class TensorMapSpec:
    """Every argument of ``cuTensorMapEncodeTiled``, in driver order, validated on creation."""
    dtype: str
    rank: int
    global_address: int
    global_dims: tuple           # innermost first
    global_strides_bytes: tuple  # rank-1 entries: stride of dims 1..rank-1, in bytes
    box_dims: tuple              # innermost first
    element_strides: tuple       # innermost first; [0] is ignored by TMA (interleave none)
    swizzle: str = "none"
    l2_promotion: str = "128B"
    oob_fill: str = "zero"
    interleave: str = "none"
    elem_size: int = 0           # 0 means "take it from dtype"

    def __post_init__(self):
        _check_dtype(self.dtype)
        for name in ("rank", "global_address", "elem_size"):
            _check_ints(name, [getattr(self, name)])
        for name in ("global_dims", "global_strides_bytes", "box_dims", "element_strides"):
            object.__setattr__(self, name, _check_ints(name, getattr(self, name)))
        if self.elem_size == 0:
            object.__setattr__(self, "elem_size", DTYPES[self.dtype][1])
        _validate(self)

    # Derived numbers (driver order unless the name says "array").
    @property
    def inner_box_bytes(self) -> int:
        """Bytes of one box row along the innermost dimension: boxDim[0] * element size."""
        return self.box_dims[0] * self.elem_size

    @property
    def smem_box_dims(self) -> tuple:
        """Elements landing in smem per dim: ceil(box/estride); dim 0 is never strided."""
        return (self.box_dims[0],) + tuple(-(-b // e) for b, e in zip(self.box_dims[1:], self.element_strides[1:]))

    @property
    def box_bytes(self) -> int:
        """Bytes one box load writes to smem, OOB fill included: the mbarrier expect_tx count."""
        return math.prod(self.smem_box_dims) * self.elem_size

    @property
    def array_shape(self) -> tuple:
        """Global shape in array order."""
        return self.global_dims[::-1]

    @property
    def array_box_shape(self) -> tuple:
        """Box shape in array order."""
        return self.box_dims[::-1]

    @property
    def array_element_strides(self) -> tuple:
        """Element strides in array order (TMA ignores the last one)."""
        return self.element_strides[::-1]

    @property
    def array_strides_bytes(self) -> tuple:
        """Byte strides in array order, with the implicit innermost one (= elem_size)."""
        return self.global_strides_bytes[::-1] + (self.elem_size,)

    @property
    def boxes_per_axis(self) -> tuple:
        """Boxes needed to cover the tensor along each array axis (the last may overhang)."""
        return tuple(-(-g // b) for g, b in zip(self.array_shape, self.array_box_shape))


def _require(ok: bool, message: str) -> None:
    if not ok:
        raise ValueError(message)


def _validate(s: TensorMapSpec) -> None:
    """Raise ValueError naming the first broken cuTensorMapEncodeTiled rule and its value."""
    _require(1 <= s.rank <= 5, f"rank {s.rank} is outside 1..5: TMA tensors have 1 to 5 dimensions")
    for name, want in (("global_dims", s.rank), ("global_strides_bytes", s.rank - 1),
                       ("box_dims", s.rank), ("element_strides", s.rank)):
        n = len(getattr(s, name))
        _require(n == want, f"{name} has {n} entries but rank {s.rank} needs {want}")
    for name, allowed in (("swizzle", SWIZZLE_MODES), ("l2_promotion", tuple(field_names["l2_promotion"])),
                          ("oob_fill", ("zero", "nan"))):
        _require(getattr(s, name) in allowed, f"{name} {getattr(s, name)!r} is not one of {allowed}")
    _require(s.interleave == "none", f"interleave {s.interleave!r} is not supported here, only 'none' "
             "(16B/32B interleave is for NC/8HWC8-style layouts, outside this course)")
    size = DTYPES[s.dtype][1]
    _require(s.elem_size == size, f"elem_size {s.elem_size} B does not match dtype {s.dtype} ({size} B)")
    _require(s.global_address >= 0 and s.global_address % 16 == 0, f"global address {s.global_address:#x} "
             f"is not 16-B aligned (address % 16 = {s.global_address % 16})")
    for d, n in enumerate(s.global_dims):
        _require(1 <= n <= 2**32, f"global dimension {n} ({_axis(s.rank, d)}) must be in 1..2**32")
    for d, st in enumerate(s.global_strides_bytes, start=1):
        where = f"{st} B ({_axis(s.rank, d)})"
        _require(st >= 0, f"global stride {where} is negative: TMA cannot walk backwards; pass a copy")
        _require(st % 16 == 0, f"global stride {where} is not a multiple of 16 B "
                 "(pad the rows: allocate a wider array and slice it)")
        _require(st < 2**40, f"global stride {where} is not below 2**40 B")
    for d, b in enumerate(s.box_dims):
        _require(b >= 1, f"box dimension {b} ({_axis(s.rank, d)}) must be at least 1")
        _require(b <= 256, f"box dimension {b} ({_axis(s.rank, d)}) exceeds 256 elements")
    inner, span = s.inner_box_bytes, swizzle_span(s.swizzle)
    _require(inner % 16 == 0, f"inner box is {inner} B ({s.box_dims[0]} x {s.elem_size} B), "
             "not a multiple of 16 B")
    _require(not span or inner <= span, f"inner box is {inner} B but SWIZZLE_{s.swizzle} allows at most "
             f"{span} B (split the box, or use a wider swizzle)")
    for d, e in enumerate(s.element_strides):
        _require(1 <= e <= 8, f"element stride {e} ({_axis(s.rank, d)}) is outside 1..8")
    _require(s.oob_fill == "zero" or s.dtype in FLOAT_DTYPES,
             f"oob_fill 'nan' needs a float dtype, got {s.dtype}")


def array_info(array) -> ArrayInfo:
    """Describe a NumPy array, torch tensor, CuPy array or ArrayInfo as an ArrayInfo (array order)."""
    if isinstance(array, ArrayInfo):
        return array._replace(shape=_check_ints("shape", array.shape), dtype=_dtype_name(array.dtype),
                              strides_bytes=_check_ints("strides_bytes", array.strides_bytes))
    if isinstance(array, np.ndarray):
        return ArrayInfo(array.shape, array.strides, array.dtype.name, array.ctypes.data)
    module = type(array).__module__.split(".")[0]
    if module == "torch":       # no import needed: a torch tensor describes itself
        size = array.element_size()
        return ArrayInfo(tuple(array.shape), tuple(s * size for s in array.stride()),
                         _dtype_name(array.dtype), array.data_ptr())
    if module == "cupy":
        return ArrayInfo(array.shape, array.strides, array.dtype.name, array.data.ptr)
    raise TypeError(f"expected a NumPy array, torch tensor, CuPy array or ArrayInfo, got {type(array).__name__}")


def make_spec(array, box_shape, *, swizzle="none", element_strides=None, l2_promotion="128B",
              oob_fill="zero") -> TensorMapSpec:
    """Build a validated TensorMapSpec for ``array``; ``box_shape``/``element_strides`` in array order.

    ``array``: NumPy array, torch tensor, CuPy array, or :class:`ArrayInfo`.
    """
    info = array_info(array)
    rank = len(info.shape)
    box_shape = _check_ints("box_shape", box_shape)
    estrides = (1,) * rank if element_strides is None else _check_ints("element_strides", element_strides)
    _require(1 <= rank <= 5, f"rank {rank} is outside 1..5: TMA tensors have 1 to 5 dimensions")
    _require(len(box_shape) == rank, f"box_shape {box_shape} has {len(box_shape)} entries, the array rank {rank}")
    _require(len(estrides) == rank, f"element_strides {estrides} has {len(estrides)} entries, the array rank {rank}")
    _require(len(info.strides_bytes) == rank, f"strides_bytes {info.strides_bytes} has "
             f"{len(info.strides_bytes)} entries, the array rank {rank}")
    _check_dtype(info.dtype)
    for axis, n in enumerate(info.shape):
        _require(1 <= n <= 2**32, f"global dimension {n} ({_axis(rank, rank - 1 - axis)}) must be in 1..2**32")
    size = DTYPES[info.dtype][1]
    _require(info.strides_bytes[-1] == size, f"innermost stride {info.strides_bytes[-1]} B (array axis "
             f"{rank - 1}) must equal the element size {size} B: TMA needs the innermost dimension contiguous")
    return TensorMapSpec(info.dtype, rank, info.address, info.shape[::-1], info.strides_bytes[-2::-1],
                         box_shape[::-1], estrides[::-1], swizzle, l2_promotion, oob_fill)
