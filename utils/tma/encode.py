"""Turn a validated :class:`TensorMapSpec` into text (``describe``) and into the driver's
128-byte ``CUtensorMap`` (``encode``, via cuda-python's ``cuTensorMapEncodeTiled``).

Importable on any machine: the CUDA driver is only touched inside :func:`encode`.
"""
from __future__ import annotations

import math

import numpy as np

from .descriptor import TensorMapSpec, field_names, make_spec
from .swizzle import swizzle_span


def describe(spec: TensorMapSpec) -> str:
    """A readable table of every field, in driver order and array order, plus derived numbers."""
    rows = [("field", "driver order (dim 0 = innermost)", "array order (axis 0 = outermost)"),
            ("dtype", f"{spec.dtype} -> {field_names['dtype'][spec.dtype]}", ""),
            ("elem_size", f"{spec.elem_size} B", ""),
            ("rank", str(spec.rank), ""),
            ("global_address", f"{spec.global_address:#x}", ""),
            ("global_dims", str(spec.global_dims), str(spec.array_shape)),
            ("global_strides_bytes", f"{spec.global_strides_bytes} (dim 0 implicit: {spec.elem_size})",
             str(spec.array_strides_bytes)),
            ("box_dims", str(spec.box_dims), str(spec.array_box_shape)),
            ("element_strides", f"{spec.element_strides} ([0] ignored)", str(spec.array_element_strides))]
    for name in ("swizzle", "l2_promotion", "oob_fill", "interleave"):
        value = getattr(spec, name)
        rows.append((name, f"{value} -> {field_names[name][value]}", ""))
    width = [max(len(r[i]) for r in rows) for i in range(3)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r, width)).rstrip() for r in rows]
    span = swizzle_span(spec.swizzle)
    lines += [f"inner box bytes: {spec.inner_box_bytes}" + (f" (swizzle span {span})" if span else ""),
              f"box bytes (expect_tx per load): {spec.box_bytes}, smem tile {spec.smem_box_dims[::-1]} (array order)",
              f"boxes to cover the tensor: {' x '.join(map(str, spec.boxes_per_axis))} = "
              f"{math.prod(spec.boxes_per_axis)} (array order)"]
    return "\n".join(lines)


def _driver_args(spec: TensorMapSpec, drv) -> list:
    """The 11 cuTensorMapEncodeTiled arguments as cuda.bindings objects (wrapper ints required)."""
    enum = lambda cls, field: getattr(getattr(drv, cls), field_names[field][getattr(spec, field)])
    u64, u32 = drv.cuuint64_t, drv.cuuint32_t
    # rank 1 has no strides; an empty list reaches the driver as NULL, which it refuses
    # (CUDA_ERROR_INVALID_VALUE on driver 580), so pass one unused, valid entry.
    strides = spec.global_strides_bytes or (-(-spec.global_dims[0] * spec.elem_size // 16) * 16,)
    return [enum("CUtensorMapDataType", "dtype"), spec.rank, spec.global_address,
            [u64(x) for x in spec.global_dims], [u64(x) for x in strides],
            [u32(x) for x in spec.box_dims], [u32(x) for x in spec.element_strides],
            enum("CUtensorMapInterleave", "interleave"), enum("CUtensorMapSwizzle", "swizzle"),
            enum("CUtensorMapL2promotion", "l2_promotion"), enum("CUtensorMapFloatOOBfill", "oob_fill")]


def encode(spec: TensorMapSpec) -> np.ndarray:
    """Encode ``spec`` with the driver; return the 128-B CUtensorMap as a (1,) ``V128`` array.

    Pass the result straight to a ``cupy.RawKernel`` whose parameter is
    ``const __grid_constant__ CUtensorMap``: a size-1 array is passed by value.
    Raises RuntimeError if cuda-python or the driver is missing, or the driver refuses.
    """
    try:
        from cuda.bindings import driver as drv
    except ImportError as exc:
        raise RuntimeError("encode() needs cuda-python: pip install cuda-bindings") from exc
    args = _driver_args(spec, drv)
    try:
        err, tmap = drv.cuTensorMapEncodeTiled(*args)
        if err == drv.CUresult.CUDA_ERROR_NOT_INITIALIZED:
            drv.cuInit(0)
            err, tmap = drv.cuTensorMapEncodeTiled(*args)
    except Exception as exc:  # e.g. no libcuda.so on a CPU-only machine
        raise RuntimeError(f"could not call the CUDA driver ({type(exc).__name__}: {exc})") from exc
    if err != drv.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuTensorMapEncodeTiled returned {err.name} for\n{describe(spec)}")
    return np.array(tmap.opaque, np.uint64).view("V128")


def encode_tiled(array, box_shape, **kwargs) -> np.ndarray:
    """``encode(make_spec(array, box_shape, **kwargs))``: one call from tensor to descriptor."""
    return encode(make_spec(array, box_shape, **kwargs))
