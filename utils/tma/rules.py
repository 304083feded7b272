"""Every TMA rule the course checks, in one place.

The validator (:func:`~utils.tma.descriptor.make_spec`), the NumPy model (``tma_load``,
``tma_store``, ``smem_bytes``...) and the runtime check (``runtime.check_coords``, used by every
launcher) all call these functions, so a learner gets the same error, naming the rule and the
offending value, whichever door they come in by. Each rule raises ``ValueError`` (``TypeError``
for a value of the wrong kind) and returns nothing or the cleaned value.

Sources:
  * the ``cuTensorMapEncodeTiled`` requirements (CUDA Driver API, "Tensor Map Object
    Management"): rank, dtype, 16-B aligned address, dims, strides (multiples of 16 B, below
    2**40), box, element strides, swizzle span, NaN fill;
  * measured on an H200: a tile copy whose innermost coordinate is not at a 16-byte boundary,
    or a store box starting below 0, stops the kernel with "illegal instruction";
  * measured on H100 and H200 (driver 580.159, cuda-bindings 13.3.1; the probe script is
    ``.gpu_jobs/h5/stride_probe.py``, its tests are in ``tests/test_tma_hardware.py``): the
    driver accepts stride 0 and overlapping or permuted strides, and loads read
    base + sum(coord x stride), so only stores refuse such tensors (:func:`distinct_elements`);
    strides of 8, 24 and 280 B, not multiples of 16, return CUDA_ERROR_INVALID_VALUE.
  * the PTX ISA (9.0), section 9.7.9.25.5.3 "cp.reduce.async.bulk.tensor", the table "valid
    combinations of .redOp and element type": ``.add`` takes .u32, .s32, .u64, .f32, .f16 and
    .bf16 elements, the element type being the tensor map's (:func:`reduce_add_dtype`).
Dimensions are named both ways, "dim d = array axis a": the driver counts innermost first,
arrays outermost first.

Scalar arguments (sizes, counts, addresses, flags) follow :mod:`utils.core.args`, re-exported
here (``rules.positive``, ``rules.in_range``...): the wrong kind (None, a bool, a float) is a
``TypeError`` naming the argument, a value outside the rule a ``ValueError``.
"""
from __future__ import annotations

import numpy as np

from ..core.args import address, choice, flag, in_range, integer, multiple, positive  # noqa: F401  (re-exported)
from ..core.checks import is_int
from .swizzle import SWIZZLE_MODES, swizzle_span

# numpy-style dtype name -> (driver CUtensorMapDataType suffix, element size in bytes)
DTYPES = {"uint8": ("UINT8", 1), "uint16": ("UINT16", 2), "uint32": ("UINT32", 4),
          "int32": ("INT32", 4), "uint64": ("UINT64", 8), "int64": ("INT64", 8),
          "float16": ("FLOAT16", 2), "float32": ("FLOAT32", 4), "float64": ("FLOAT64", 8),
          "bfloat16": ("BFLOAT16", 2)}
FLOAT_DTYPES = ("float16", "float32", "float64", "bfloat16")
ELEM_SIZES = (1, 2, 4, 8)                      # bytes per element of the TMA tile types
# Element types cp.reduce.async.bulk.tensor .add accepts (PTX ISA 9.0, section 9.7.9.25.5.3,
# table "valid combinations of .redOp and element type": .add -> .u32 .s32 .u64 .f32 .f16
# .bf16). Not int64 (.s64 only has .min/.max), not float64, not 8-bit types.
REDUCE_ADD_DTYPES = ("uint32", "int32", "uint64", "float32", "float16", "bfloat16")
CLUSTER_SIZES = (1, 2, 4)                      # CTAs per cluster the course's multicast kernels are built for
OOB_FILLS = ("zero", "nan")


def where(rank: int, dim: int) -> str:
    """'dim 1 = array axis 0': a driver dimension and the array axis it is."""
    return f"dim {dim} = array axis {rank - 1 - dim}"


def require(ok: bool, message: str) -> None:
    """ValueError(message) unless ``ok``."""
    if not ok:
        raise ValueError(message)


# ---------- kinds and counts ----------

def ints(name, values) -> tuple:
    """``values`` as a tuple of ints; TypeError for anything else (bools and floats too)."""
    if isinstance(values, (str, bytes)) or not hasattr(values, "__len__"):
        raise TypeError(f"{name} must be a tuple of ints, got {values!r}")
    for v in values:
        if not is_int(v):
            raise TypeError(f"{name} must hold ints, got {v!r} ({type(v).__name__}) in {tuple(values)!r}")
    return tuple(int(v) for v in values)


def count(name, values, want: int, rank: int) -> None:
    """``values`` must have ``want`` entries (one per dimension, or rank-1 for strides)."""
    require(len(values) == want, f"{name} {tuple(values)} has {len(values)} entries but a rank-{rank} "
            f"tensor needs {want}")


def one_of(name, value, allowed) -> None:
    """An enum-like argument (swizzle, l2_promotion, oob_fill) must be one of ``allowed``."""
    require(value in allowed, f"{name} {value!r} is not one of {tuple(allowed)}")


# ---------- the tensor ----------

def rank(r: int) -> None:
    require(1 <= r <= 5, f"rank {r} is outside 1..5: TMA tensors have 1 to 5 dimensions")


def dtype_name(dtype) -> str:
    """'float16' for "float16", np.float16, np.dtype("float16") or torch.float16 (what the
    dtype rules below take). ``None`` is refused: NumPy would read it as float64."""
    if dtype is None:
        raise TypeError("dtype must be a dtype name, NumPy dtype or torch dtype, got None")
    if isinstance(dtype, str):
        return dtype
    if str(dtype).startswith("torch."):
        return str(dtype)[len("torch."):]
    try:
        return np.dtype(dtype).name
    except TypeError:
        raise TypeError(f"dtype must be a dtype name, NumPy dtype or torch dtype, got {dtype!r}") from None


def dtype(name) -> int:
    """The element size of a supported TMA tile type (complex, bool, object, int8... refused)."""
    require(isinstance(name, str) and name in DTYPES, f"dtype {name!r} is not a TMA tile type; supported: "
            f"{', '.join(DTYPES)} (for int8/int16 view the data as uint8/uint16: TMA only moves bytes)")
    return DTYPES[name][1]


def reduce_add_dtype(name) -> None:
    """A TMA reduce-add (``cp.reduce.async.bulk.tensor ... .add``) adds only :data:`REDUCE_ADD_DTYPES`.
    The one rule for the NumPy model, the split-K model and every reduce-add launcher."""
    require(name in REDUCE_ADD_DTYPES, f"dtype {name} cannot be reduce-added by TMA: "
            f"cp.reduce.async.bulk.tensor .add takes {', '.join(REDUCE_ADD_DTYPES)} "
            "(accumulate in float32, e.g. split-K partials)")


def elem_size(size, name: str = "elem_size") -> int:
    """Bytes per element of a TMA tile type: 1, 2, 4 or 8."""
    return choice(name, size, ELEM_SIZES, " (bytes per element of a TMA tile type)")


def cluster_size(R) -> int:
    """CTAs in a 1-D cluster sharing tiles through multicast: one of :data:`CLUSTER_SIZES`."""
    return choice("cluster size R", R, CLUSTER_SIZES)


def global_address(value, name: str = "global address") -> int:
    """A byte address in 0..2**64-1 (None is a TypeError, negative and too large are named as
    such), 16-B aligned (cuTensorMapEncodeTiled; cp.async.bulk needs the same)."""
    value = address(name, value)
    require(value % 16 == 0, f"{name} {value:#x} is not 16-B aligned (address % 16 = {value % 16})")
    return value


def global_shape(name, shape) -> tuple:
    """A global shape (array order): 1 to 5 ints, each in 1..2**32 (a zero extent is refused)."""
    shape = ints(name, shape)
    rank(len(shape))
    for axis, n in enumerate(shape):
        global_dim(n, len(shape), len(shape) - 1 - axis)
    return shape


def global_dim(n: int, rank_: int, dim: int) -> None:
    require(1 <= n <= 2**32, f"global dimension {n} ({where(rank_, dim)}) must be in 1..2**32")


def inner_contiguous(stride: int, elem_size: int, rank_: int) -> None:
    require(stride == elem_size, f"innermost stride {stride} B (array axis {rank_ - 1}) must equal the "
            f"element size {elem_size} B: TMA needs the innermost dimension contiguous")


def global_stride(stride: int, rank_: int, dim: int) -> None:
    """Driver rule for globalStrides (dims 1..rank-1): a multiple of 16 B, below 2**40."""
    at = f"{stride} B ({where(rank_, dim)})"
    require(stride >= 0, f"global stride {at} is negative: TMA cannot walk backwards; pass a copy")
    require(stride % 16 == 0, f"global stride {at} is not a multiple of 16 B "
            "(pad the rows: allocate a wider array and slice it)")
    require(stride < 2**40, f"global stride {at} is not below 2**40 B")


def legal_strides(shape, strides_bytes, elem_size: int) -> tuple:
    """Array order. An axis of length 1 is never stepped along, so its stride does not matter;
    where it would break a stride rule (e.g. 280 B in a (1, 70) float32 array) use the contiguous
    value, rounded up to 16 B, instead."""
    out, spans = list(strides_bytes), elem_size
    for axis in range(len(shape) - 1, -1, -1):
        st, last = out[axis], axis == len(shape) - 1
        ok = st == elem_size if last else (st >= 0 and st % 16 == 0 and st < 2**40)
        if shape[axis] == 1 and not ok:
            out[axis] = st = elem_size if last else -(-spans // 16) * 16
        spans = st * shape[axis]
    return tuple(out)


def distinct_elements(dims, strides, elem_size: int) -> None:
    """Driver order. A STORE target must give every element its own address.

    The driver docs write the strides as nested (``globalStrides[i] = globalStrides[i-1] *
    (globalDim[i] + padding[i])``), but the driver does not enforce it, and TMA loads follow
    plain address arithmetic, base + sum(coord x stride): measured on H100 and H200 (driver
    580.159), broadcast (stride 0), overlapping rows and permuted outer axes all encode and load
    exactly that. So loads accept them. A store into such a tensor would write some addresses
    more than once, in an order nobody documents (and the model's reduce-add would count each
    address once), so stores refuse it. Checked by sorting the axes of length > 1 by stride: each
    must step past all the bytes the smaller-stride axes cover. (That test is sufficient, not
    necessary: a rare interleaving of disjoint elements is refused too.)
    """
    rank_ = len(dims)
    axes = sorted((st, n, d) for d, (n, st) in enumerate(zip(dims, (elem_size,) + tuple(strides))) if n > 1)
    covered = elem_size
    for st, n, d in axes:
        why = "stride 0 sends every index along it to the same address" if st == 0 else "elements would overlap"
        what = "of one element" if covered == elem_size else "the axes with smaller strides cover"
        require(st >= covered, f"a TMA store needs every element at its own address, but global stride {st} B "
                f"({where(rank_, d)}) does not step past the {covered} B {what}: {why} "
                "(loads of such a tensor are fine; store into a contiguous tensor)")
        covered += st * (n - 1)


def tensor(shape, strides_bytes, dtype_name, address) -> tuple:
    """All rules about the global tensor (array order in); returns ``(dims, strides)`` in driver
    order, strides without dim 0, ready for ``cuTensorMapEncodeTiled``."""
    shape, strides_bytes = ints("shape", shape), ints("strides_bytes", strides_bytes)
    r = len(shape)
    rank(r)
    count("strides_bytes", strides_bytes, r, r)
    size = dtype(dtype_name)
    strides_bytes = legal_strides(shape, strides_bytes, size)
    for axis, n in enumerate(shape):
        global_dim(n, r, r - 1 - axis)
    inner_contiguous(strides_bytes[-1], size, r)
    dims, strides = shape[::-1], strides_bytes[-2::-1]
    tensor_driver(dims, strides, size, address)
    return dims, strides


def tensor_driver(dims, strides, elem_size: int, address: int) -> None:
    """The tensor rules in driver order (what :class:`TensorMapSpec` holds)."""
    r = len(dims)
    for d, n in enumerate(dims):
        global_dim(n, r, d)
    for d, st in enumerate(strides, start=1):
        global_stride(st, r, d)
    global_address(address)


# ---------- the box ----------

def box_dim(b: int, rank_: int, dim: int) -> None:
    require(b >= 1, f"box dimension {b} ({where(rank_, dim)}) must be at least 1")
    require(b <= 256, f"box dimension {b} ({where(rank_, dim)}) exceeds 256 elements")


def inner_box(box0: int, elem_size: int) -> None:
    inner = box0 * elem_size
    require(inner % 16 == 0, f"inner box is {inner} B ({box0} x {elem_size} B), not a multiple of 16 B")


def swizzle_inner(inner_bytes: int, mode: str) -> None:
    one_of("swizzle", mode, SWIZZLE_MODES)
    span = swizzle_span(mode)
    fix = "split the box" if mode == "128B" else "split the box, or use a wider swizzle"
    require(not span or inner_bytes <= span, f"inner box is {inner_bytes} B but SWIZZLE_{mode} allows at "
            f"most {span} B ({fix})")


def element_stride(e: int, rank_: int, dim: int) -> None:
    require(1 <= e <= 8, f"element stride {e} ({where(rank_, dim)}) is outside 1..8")


def oob_fill(fill, dtype_name: str) -> None:
    one_of("oob_fill", fill, OOB_FILLS)
    require(fill == "zero" or dtype_name in FLOAT_DTYPES, f"oob_fill 'nan' needs a float dtype, got {dtype_name}")


def box(box_shape, elem_size: int, *, element_strides=None, swizzle: str = "none", rank_=None,
        name: str = "box_shape") -> tuple:
    """All rules about a box (array order in); returns ``(box, element_strides)`` in array order."""
    box_shape = ints(name, box_shape)
    r = len(box_shape) if rank_ is None else rank_
    es = (1,) * r if element_strides is None else ints("element_strides", element_strides)
    count(name, box_shape, r, r)
    count("element_strides", es, r, r)
    for axis, (b, e) in enumerate(zip(box_shape, es)):
        box_dim(b, r, r - 1 - axis)
    inner_box(box_shape[-1], elem_size)
    swizzle_inner(box_shape[-1] * elem_size, swizzle)
    for axis, e in enumerate(es):
        element_stride(e, r, r - 1 - axis)
    return box_shape, es


# ---------- coordinates (what the kernel passes to cp.async.bulk.tensor) ----------

def coords(values, rank_: int, elem_size: int, *, store: bool = False) -> tuple:
    """Box start coordinates, array order: int32 each, the innermost at a 16-byte boundary,
    and for a store none below 0. Returns them as ints (array order)."""
    values = tuple(values) if hasattr(values, "__len__") and not isinstance(values, (str, bytes)) else values
    if not isinstance(values, tuple) or len(values) != rank_ or not all(is_int(c) for c in values):
        raise TypeError(f"coords must be {rank_} ints (array order), got {values!r}")
    values = tuple(int(c) for c in values)
    for axis, c in enumerate(values):
        require(-2**31 <= c < 2**31, f"coordinate {c} ({where(rank_, rank_ - 1 - axis)}) does not fit in "
                "int32: box coordinates are signed 32-bit")
    inner = values[-1] * elem_size
    require(inner % 16 == 0, f"innermost coordinate {values[-1]} is {inner} B from the row start, not a "
            "multiple of 16 B: TMA tile copies start at 16-byte boundaries (measured on H200: otherwise "
            "'illegal instruction', which loses the CUDA context)")
    require(not store or min(values) >= 0, f"store coordinates {values} start below 0: a TMA store box "
            "must start inside the tensor (measured on H200: a negative start coordinate stops the kernel "
            "with 'illegal instruction'); loads may start below 0")
    return values


def same_dtype(tile_dtype: str, dtype_name: str) -> None:
    """A store writes the tile's bytes as they are: its dtype must be the tensor's."""
    require(tile_dtype == dtype_name, f"tile dtype {tile_dtype} differs from global dtype {dtype_name}: "
            "TMA copies bytes, it does not convert")
