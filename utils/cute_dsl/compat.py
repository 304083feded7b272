"""Every CuteDSL (``nvidia-cutlass-dsl`` 4.8.1) version-specific call of the course, in one place.

* :func:`compile_ptx` / :func:`compile_kernel`: compile a ``@cute.jit`` function for Hopper
  (``sm_90a``) on any machine, GPU or not, with *fake* tensors; read its PTX.
  :func:`launch_arch`: the target to compile for before launching on this GPU.
* :func:`fake_tensor`: a fake row-major tensor (shape and dtype only, no memory).
* :func:`to_cute` / :func:`cute_dtype`: torch tensors and dtypes into CuteDSL ones (GPU only).
* :func:`stream`: the current torch stream as a ``CUstream``.

Import this module (or the kernel modules that import it) only after ``utils.setup()``: the
setup sets ``CUTE_DSL_ARCH=sm_90a`` on machines without a Hopper GPU, and this module points
``CUTE_DSL_DUMP_DIR`` (where kept PTX files are written) at a temporary folder.
"""
from __future__ import annotations

import os
import tempfile
import warnings

os.environ.setdefault("CUTE_DSL_DUMP_DIR", tempfile.mkdtemp(prefix="cute_dump_"))

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    import cutlass  # noqa: E402
    import cutlass.cute as cute  # noqa: E402
    import cutlass.pipeline as pipeline  # noqa: E402
    import cutlass.utils as cutlass_utils  # noqa: E402
    import cutlass.utils.hopper_helpers as sm90  # noqa: E402
    from cutlass.cute.nvgpu import cpasync, warpgroup  # noqa: E402
    from cutlass.cute.runtime import from_dlpack, make_fake_compact_tensor  # noqa: E402

from ..core.checks import is_int  # noqa: E402

VERSION = "4.8.1"
SmemAllocator = cutlass.memory.SmemAllocator      # cutlass.utils.SmemAllocator is deprecated in 4.8
DTYPES = {"float16": cutlass.Float16, "bfloat16": cutlass.BFloat16, "float32": cutlass.Float32}

__all__ = ["cutlass", "cute", "pipeline", "cutlass_utils", "sm90", "cpasync", "warpgroup",
           "SmemAllocator", "compile_ptx", "compile_kernel", "launch_arch", "fake_tensor", "fake_stream",
           "to_cute", "cute_dtype", "stream"]


def cute_dtype(dtype):
    """The CuteDSL element type for a torch dtype or a name like ``"float16"``."""
    name = str(dtype).replace("torch.", "")
    if name not in DTYPES:
        raise ValueError(f"dtype must be one of {sorted(DTYPES)}, got {dtype!r}")
    return DTYPES[name]


def fake_tensor(shape, dtype="float16", order=None):
    """A fake tensor for compile-only use: ``shape`` in array order, row-major by default
    (``order`` is CuteDSL's ``stride_order``: 0 marks the stride-1 mode), 16-byte aligned."""
    if not (isinstance(shape, tuple) and shape and all(is_int(s) and s > 0 for s in shape)):   # bools refused
        raise ValueError(f"shape must be a tuple of positive ints, got {shape!r}")
    if order is None:
        order = tuple(range(len(shape) - 1, -1, -1))
    return make_fake_compact_tensor(cute_dtype(dtype), shape, stride_order=order, assumed_align=16)


def fake_stream():
    """A stand-in CUDA stream for compile-only use."""
    return cutlass.runtime.make_fake_stream()


def compile_kernel(fn, *args, arch: str = "sm_90a"):
    """``cute.compile`` for ``arch`` keeping the PTX (``.__ptx__``), warnings silenced."""
    if not callable(fn):
        raise TypeError(f"expected a @cute.jit function or object, got {type(fn).__name__}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return cute.compile[cute.GPUArch(arch), cute.KeepPTX()](fn, *args)


def launch_arch() -> str:
    """The target a kernel is compiled for before it is launched here: this GPU's own
    architecture-specific target (``sm_90a`` on Hopper, ``sm_100a`` on a B200, ``sm_120a`` on an
    RTX 50; :func:`utils.core.features.arch_target`). ``sm_90a`` code runs on Hopper only."""
    import torch
    from ..core.features import arch_target
    target = arch_target(torch.cuda.get_device_capability())
    if target is None:
        raise RuntimeError("CuteDSL's TMA kernels need a GPU of compute capability 9.0 or higher")
    return target


def compile_ptx(fn, *args, arch: str = "sm_90a") -> str:
    """The PTX of ``fn(*args)`` compiled for ``arch`` (fake tensors work: no GPU needed)."""
    ptx = compile_kernel(fn, *args, arch=arch).__ptx__
    if not ptx:
        raise RuntimeError("CuteDSL kept no PTX: is CUTE_DSL_KEEP overridden in the environment?")
    return ptx


def to_cute(t, dynamic: bool = True):
    """A CuteDSL view of the torch CUDA tensor ``t`` (no copy). With ``dynamic`` the shape is a
    runtime value, so one compiled kernel serves every size; the stride-1 mode is kept static."""
    if not getattr(t, "is_cuda", False):
        raise ValueError("to_cute needs a CUDA tensor (TMA kernels run only on a Hopper GPU)")
    ct = from_dlpack(t, assumed_align=16)
    if dynamic:
        ct = ct.mark_layout_dynamic(leading_dim=list(t.stride()).index(1))
    return ct


def stream():
    """The current torch CUDA stream as the ``CUstream`` CuteDSL launches take."""
    import torch
    from cuda.bindings import driver
    return driver.CUstream(torch.cuda.current_stream().cuda_stream)
