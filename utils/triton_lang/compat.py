"""Triton version differences in one place, and a known-answer smoke test.

The course needs Triton >= 3.4 (``triton.tools.tensor_descriptor.TensorDescriptor`` and
``tl.make_tensor_descriptor``); it is tested on 3.6 (the GPU machine) and 3.9 (CPU, CI). Every
notebook also passed on the cpu tier with 3.6 (given :func:`patch_old_interpreter`) and 3.8.
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
    _snapshot_language()
    if version_tuple(triton.__version__) < MIN_VERSION:
        raise ImportError(
            f"Triton {triton.__version__} is too old: the course uses TensorDescriptor and "
            "tl.make_tensor_descriptor, public from Triton 3.4 (3.3 had only experimental "
            "names, removed in 3.4). Install the pinned version: pip install -r requirements.txt")
    return triton


_LANGUAGE: dict = {}


def _snapshot_language() -> None:
    """Remember ``triton.language``'s attributes before any interpreted kernel runs."""
    if _LANGUAGE or not interpreting():
        return
    import triton.language as tl
    for mod in (tl, tl.core, tl.math, tl.standard, tl.core.tensor, tl.core.tensor_descriptor_base):
        _LANGUAGE[mod] = {k: v for k, v in vars(mod).items()
                          if getattr(v, "__module__", "") != "triton.runtime.interpreter"}


def repair_language() -> int:
    """Undo interpreter patches that leaked into ``triton.language``; return how many.

    Under ``TRITON_INTERPRET=1`` (3.6 and 3.9), a kernel that calls one of Triton's own jitted
    helpers (``tl.zeros``, ``tl.cdiv``, ...) leaves ``triton.language.core`` builtins replaced
    by interpreter versions after it ran; compiling a kernel for sm_90a afterwards then fails
    with obscure errors. :func:`utils.triton_lang.compile.triton_compile` calls this before compiling. The interpreter patches the
    language afresh at every launch, so nothing it needs is lost.
    """
    fixed = 0
    for mod, attrs in _LANGUAGE.items():
        for k, v in attrs.items():
            if vars(mod).get(k) is not v:
                setattr(mod, k, v)
                fixed += 1
    return fixed


INDEX_FIXED_IN = (3, 8)   # the first Triton whose interpreter squeezes a tensor before int()


def patch_old_interpreter(force: bool = False) -> bool:
    """Under the interpreter, make Triton < 3.8 turn a one-element tensor into an int as 3.8 does.

    Triton 3.6's interpreter converts a tensor to a Python int with ``int(handle.data)``, which
    NumPy 2 refuses for a one-element array: a loop bound passed at run time (``for i in
    tl.range(0, iters)``) fails with "only 0-dimensional arrays can be converted to Python
    scalars". Triton 3.8 squeezes the array first. This wraps the interpreter's per-launch patch
    of ``tl.tensor`` so that older versions do the same (``force``: on any version, for tests).
    Returns True if it installed the wrapper now.
    """
    triton = require_triton()
    if not interpreting() or (version_tuple(triton.__version__) >= INDEX_FIXED_IN and not force):
        return False
    from triton.runtime import interpreter
    original = getattr(interpreter, "_patch_lang_tensor", None)
    if original is None or getattr(original, "course_index_fix", False):
        return False

    def patched(tensor, scope):
        original(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data.squeeze()))

    patched.course_index_fix = True
    patched.wrapped = original
    interpreter._patch_lang_tensor = patched
    return True


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


def range_options() -> set:
    """Which scheduling options ``tl.range`` accepts here (``num_stages``, ``flatten``,
    ``warp_specialize``, ...): they were added release by release."""
    import inspect
    require_triton()
    import triton.language as tl
    return set(inspect.signature(tl.range.__init__).parameters) - {"self", "arg1", "arg2", "step"}


def tensordesc_meta(compiled) -> list:
    """Per descriptor argument, the hardware box Triton chose (``block_size``, ``swizzle``,
    ``elem_size``): ``compiled.metadata.tensordesc_meta`` of a ``CompiledKernel``."""
    meta = getattr(getattr(compiled, "metadata", None), "tensordesc_meta", None)
    if meta is None:
        raise ValueError("no tensordesc_meta in this compiled kernel: compile a kernel with "
                         f"tensor descriptors (Triton {_version()})")
    return [dict(m) for m in meta]


def _version() -> str:
    return require_triton().__version__
