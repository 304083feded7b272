"""Triton version differences in one place, and a known-answer smoke test.

The course needs Triton >= 3.4 (``triton.tools.tensor_descriptor.TensorDescriptor`` and
``tl.make_tensor_descriptor``); it is tested on 3.6 (the GPU machine) and 3.9 (CPU, CI).
Import this module only after ``utils.setup()``: the interpreter is chosen at import time.
"""
from __future__ import annotations

MIN_VERSION = (3, 4)


def version_tuple(text: str) -> tuple:
    """``"3.6.0+git"`` -> ``(3, 6)``."""
    parts = text.split("+")[0].split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (IndexError, ValueError):
        raise ValueError(f"cannot read a Triton version from {text!r}") from None


def require_triton():
    """Import and return ``triton``, or raise ImportError explaining the version rule."""
    import triton
    if version_tuple(triton.__version__) < MIN_VERSION:
        raise ImportError(
            f"Triton {triton.__version__} is too old: the course uses TensorDescriptor and "
            "tl.make_tensor_descriptor, public from Triton 3.4 (3.3 had only experimental "
            "names, removed in 3.4). Install the pinned version: pip install -r requirements.txt")
    return triton


def tensor_descriptor_class():
    """``TensorDescriptor`` (host-side TMA descriptor) for the installed Triton."""
    require_triton()
    from triton.tools.tensor_descriptor import TensorDescriptor
    return TensorDescriptor


def set_device_allocator(device: str) -> None:
    """Give Triton the global scratch that device-side descriptors need (128 B each).

    Needed on a GPU for ``tl.make_tensor_descriptor``; the interpreter needs none.
    """
    triton = require_triton()
    if device == "cpu":
        return
    import torch

    def alloc(size: int, alignment: int, stream):
        return torch.empty(size, dtype=torch.int8, device=device)

    triton.set_allocator(alloc)


def interpreting() -> bool:
    """True when Triton kernels run under the CPU interpreter."""
    import os
    return os.environ.get("TRITON_INTERPRET") == "1"


def smoke_test(device: str) -> None:
    """Run a known-answer kernel (y = 2x + 1 on 1000 elements, the last block partial) and check it."""
    triton = require_triton()
    import torch
    import triton.language as tl

    @triton.jit
    def axpb_kernel(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(y_ptr + offs, 2 * tl.load(x_ptr + offs, mask=mask) + 1, mask=mask)

    x = torch.arange(1000, dtype=torch.float32, device=device)
    y = torch.full_like(x, float("nan"))
    axpb_kernel[(triton.cdiv(1000, 256),)](x, y, 1000, BLOCK=256)
    if not torch.equal(y, 2 * x + 1):
        raise RuntimeError("Triton smoke test failed: y != 2x + 1; the installation is broken")
    mode = "interpreter" if interpreting() else "GPU"
    print(f"Triton {triton.__version__} smoke test passed ({mode}, device={device}).")
