"""The input rules of the CuteDSL launchers, checked on the CPU before anything needs a GPU.

A launcher (``run_tile_copy``, ``run_broadcast``, ``run_gemm``, ``run_ws``, ...) checks its torch
tensors here first, so a laptop shows the same error a Hopper machine would, and a tensor the
kernel cannot use never reaches ``to_cute`` (which *assumes* 16-B alignment) or the compiler:

* :func:`tma_tensor`: the rules of the validator and the NumPy model (:mod:`utils.tma.rules`,
  through :func:`utils.tma.descriptor.array_info`): a TMA dtype, every extent >= 1, a 16-B
  aligned address, the innermost axis contiguous, the other strides multiples of 16 B; then the
  layout the course's kernels take (contiguous, ``rank`` axes). The message is the rule's,
  prefixed with the argument's name;
* :func:`wgmma_dtype`: the element types of the course's warpgroup MMAs (fp16, bf16).
"""
from __future__ import annotations

from ..tma import rules
from ..tma.descriptor import ArrayInfo, array_info

WGMMA_DTYPES = ("float16", "bfloat16")     # A and B of the course's wgmma GEMMs and attention


_PASSED: dict = {}     # tensors already found good, by everything the rules read: launchers are timed


def tma_tensor(name: str, t, rank: int | None = None) -> ArrayInfo:
    """Check the torch tensor ``t`` (argument ``name``) as a TMA global tensor of ``rank`` axes,
    contiguous; return its :class:`~utils.tma.descriptor.ArrayInfo`. A tensor described exactly
    as one that passed (shape, strides, dtype, address) is not checked again, so a launcher
    called in a timed loop pays a dictionary lookup, not the rules."""
    if type(t).__module__.split(".")[0] != "torch" or not hasattr(t, "dim"):
        raise TypeError(f"{name} must be a torch tensor, got {type(t).__name__}")
    key = (name, rank, tuple(t.shape), t.stride(), t.dtype, t.data_ptr())
    if key in _PASSED:
        return _PASSED[key]
    if len(_PASSED) > 1024:
        _PASSED.clear()
    _PASSED[key] = info = _check(name, t, rank)
    return info


def _check(name: str, t, rank: int | None) -> ArrayInfo:
    """The rules themselves (see :func:`tma_tensor`)."""
    if rank is not None and t.dim() != rank:
        raise ValueError(f"{name} must be a {rank}-D tensor, got shape {tuple(t.shape)}")
    info = array_info(t)
    try:
        rules.tensor(*info)
    except (TypeError, ValueError) as err:
        raise type(err)(f"{name}: {err}") from None
    if not t.is_contiguous():
        raise ValueError(f"{name} must be a contiguous tensor (the kernel's tiles assume row-major rows), "
                         f"got shape {tuple(t.shape)} with strides {tuple(t.stride())}")
    return info


def wgmma_dtype(dtype) -> str:
    """The operands' dtype name, if a course wgmma takes it (float16 or bfloat16)."""
    name = rules.dtype_name(dtype)
    rules.require(name in WGMMA_DTYPES, f"dtype must be float16 or bfloat16 (wgmma operands), got {dtype}")
    return name
