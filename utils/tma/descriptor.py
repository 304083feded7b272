"""A validated wrapper over the driver's ``cuTensorMapEncodeTiled`` (the TMA descriptor).

Two orders of dimensions appear, and mixing them up is the classic TMA bug:
  * array order: outermost axis first, like ``arr.shape`` (NumPy, torch, CuPy);
  * driver order: innermost dimension first (dim 0), as ``cuTensorMapEncodeTiled`` takes it.
:func:`make_spec` takes array order; :class:`TensorMapSpec` stores driver order and
offers ``array_*`` properties for the other one. Every documented rule (CUDA Driver
API, ``cuTensorMapEncodeTiled``) is checked in Python before the driver is called, by the
same functions (:mod:`.rules`) the NumPy model and the runtime use.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from . import rules
from .rules import DTYPES, FLOAT_DTYPES  # noqa: F401  (re-exported)
from .swizzle import SWIZZLE_MODES

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




_dtype_name = rules.dtype_name        # kept for older imports


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
        rules.dtype(self.dtype)
        object.__setattr__(self, "rank", rules.integer("rank", self.rank))
        object.__setattr__(self, "elem_size", rules.integer("elem_size", self.elem_size))
        # kind and 0..2**64-1 here, as a Python int; alignment with the other rules in _validate
        object.__setattr__(self, "global_address", rules.address("global address", self.global_address))
        for name in ("global_dims", "global_strides_bytes", "box_dims", "element_strides"):
            object.__setattr__(self, name, rules.ints(name, getattr(self, name)))
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


def _validate(s: TensorMapSpec) -> None:
    """Raise ValueError naming the first broken cuTensorMapEncodeTiled rule and its value."""
    rules.rank(s.rank)
    for name, want in (("global_dims", s.rank), ("global_strides_bytes", s.rank - 1),
                       ("box_dims", s.rank), ("element_strides", s.rank)):
        rules.count(name, getattr(s, name), want, s.rank)
    for name, allowed in (("swizzle", SWIZZLE_MODES), ("l2_promotion", tuple(field_names["l2_promotion"])),
                          ("oob_fill", rules.OOB_FILLS)):
        rules.one_of(name, getattr(s, name), allowed)
    rules.require(s.interleave == "none", f"interleave {s.interleave!r} is not supported here, only 'none' "
                  "(16B/32B interleave is for NC/8HWC8-style layouts, outside this course)")
    size = DTYPES[s.dtype][1]
    rules.require(s.elem_size == size, f"elem_size {s.elem_size} B does not match dtype {s.dtype} ({size} B)")
    rules.tensor_driver(s.global_dims, s.global_strides_bytes, size, s.global_address)
    rules.box(s.array_box_shape, size, element_strides=s.array_element_strides, swizzle=s.swizzle,
              name="box_dims")
    rules.oob_fill(s.oob_fill, s.dtype)


def array_info(array) -> ArrayInfo:
    """Describe a NumPy array, torch tensor, CuPy array or ArrayInfo as an ArrayInfo (array order)."""
    if isinstance(array, ArrayInfo):
        return array._replace(shape=rules.ints("shape", array.shape), dtype=_dtype_name(array.dtype),
                              strides_bytes=rules.ints("strides_bytes", array.strides_bytes))
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

    ``array``: NumPy array, torch tensor, CuPy array, or :class:`ArrayInfo`. A length-1 axis
    whose stride breaks a rule (NumPy's ``x[None]`` has stride 0) gets the smallest legal one:
    TMA never steps along it, so the data read are the same.
    """
    info = array_info(array)
    dims, strides = rules.tensor(info.shape, info.strides_bytes, info.dtype, info.address)
    size = DTYPES[info.dtype][1]
    box_shape, estrides = rules.box(box_shape, size, element_strides=element_strides, swizzle=swizzle,
                                    rank_=len(dims))
    return TensorMapSpec(info.dtype, len(dims), info.address, dims, strides, box_shape[::-1], estrides[::-1],
                         swizzle, l2_promotion, oob_fill)
