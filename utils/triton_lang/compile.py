"""Triton kernels compiled ahead of time for Hopper (sm_90a) on any machine, GPU or not.

* :func:`triton_ptx` / :func:`triton_compile`: a ``@triton.jit`` kernel compiled with Triton's
  bundled compiler (works under ``TRITON_INTERPRET=1`` too); read the PTX with
  :mod:`utils.core.ptx`. ``arch=100`` or ``120`` compiles for ``sm_100a`` / ``sm_120a`` instead;
  ``options`` passes further backend options (e.g. ``{"clc": True}``, see :func:`compile_options`).
* :func:`hopper_warp_specialization`: does this Triton warp-specialize a TMA loop for sm_90a?
  (decided by compiling it twice).

Version differences live in :mod:`utils.triton_lang.compat`, which this module imports (never
the reverse).
"""
from __future__ import annotations

from .compat import _version, range_options, repair_language, require_triton


def _is_interpreted(obj) -> bool:
    return type(obj).__name__ == "InterpretedFunction"


def _compilable(fn, _seen=None):
    """A ``JITFunction`` for ``fn`` whose globals hold compilable helpers.

    Under the interpreter, ``@triton.jit`` returns ``InterpretedFunction`` objects, including
    ``triton.language``'s own helpers (``tl.zeros``, ``tl.cdiv``, ...); the compiler must see
    ``JITFunction`` objects instead. We rebuild the kernel (and its helpers, recursively) over a
    copy of its globals in which ``triton.language`` is a module view with compilable helpers.
    """
    import types
    import triton.language as tl
    from triton.runtime.jit import JITFunction
    _seen = {} if _seen is None else _seen
    if isinstance(fn, JITFunction):
        return fn
    py = fn.fn if _is_interpreted(fn) else fn
    if py in _seen:
        return _seen[py]
    names = set(py.__code__.co_names)
    scope = dict(py.__globals__)
    free = dict(zip(py.__code__.co_freevars, [c.cell_contents for c in py.__closure__ or ()]))
    cells = tuple(types.CellType(v) for v in free.values()) or None
    clone = types.FunctionType(py.__code__, scope, py.__name__, py.__defaults__, cells)
    clone.__module__, clone.__qualname__ = py.__module__, py.__qualname__
    _seen[py] = jit = JITFunction(clone)
    for name, value in [(n, scope[n]) for n in names & set(scope)] + list(free.items()):
        if _is_interpreted(value):
            value = _compilable(value, _seen)
        elif value is tl:
            if "tl_view" not in _seen:
                view = _seen["tl_view"] = types.ModuleType(tl.__name__)
                view.__dict__.update(tl.__dict__)
                for attr, member in tl.__dict__.items():
                    if _is_interpreted(member):
                        setattr(view, attr, _compilable(member, _seen))
            value = _seen["tl_view"]
        else:
            continue
        if name in free:
            cells[list(free).index(name)].cell_contents = value
        else:
            scope[name] = value
    return jit


def compile_options() -> set:
    """Names of the options this Triton's CUDA backend accepts (``num_warps``, ``num_ctas``, and in
    Triton 3.9 ``clc``, ...): an option a version lacks would otherwise be ignored silently."""
    from triton.backends.nvidia.compiler import CUDAOptions
    return set(CUDAOptions.__dataclass_fields__)


def triton_compile(kernel, signature: dict, constexprs: dict | None = None, *, arch: int = 90,
                   num_warps: int = 4, num_stages: int = 3, aligned: tuple = (),
                   options: dict | None = None):
    """A Triton kernel compiled for ``sm_<arch>a`` without launching it (a ``CompiledKernel``:
    ``.asm["ptx"]``, ``.metadata.shared``, ``.metadata.tensordesc_meta``, ...).

    ``signature`` maps each argument to a Triton type string: ``"*fp16"`` (pointer),
    ``"i32"``, ``"tensordesc<fp16[64, 64]>"`` (host tensor descriptor) or ``"constexpr"``.
    ``aligned`` names arguments promised to be multiples of 16 (pointers, row lengths), as
    Triton assumes when it launches with such values; it enables 16-byte vector accesses.
    Works under the interpreter too (jitted helpers the kernel calls are compiled as well).
    ``options``: further backend options by name (:func:`compile_options`), e.g. ``{"clc": True}``.
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    if not isinstance(signature, dict) or not signature:
        raise TypeError("signature must be a non-empty dict {argument name: type string}")
    fn = getattr(kernel, "fn", None)
    if fn is None or not callable(fn):
        raise TypeError(f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    require_triton()
    repair_language()
    fn = _compilable(kernel)
    constexprs = dict(constexprs or {})
    for name, ty in signature.items():
        if ty == "constexpr" and name not in constexprs:
            raise ValueError(f"constexpr argument {name!r} needs a value in constexprs")
    names = list(signature)
    unknown = [a for a in aligned if a not in names]
    if unknown:
        raise ValueError(f"aligned names {unknown} are not arguments; arguments: {names}")
    attrs = {(names.index(a),): [["tt.divisibility", 16]] for a in aligned} or None
    src = ASTSource(fn=fn, signature=signature, constexprs=constexprs, attrs=attrs)
    extra = dict(options or {})
    unknown = sorted(set(extra) - compile_options())
    if unknown:
        raise ValueError(f"Triton {_version()} has no compile option {unknown}; it has {sorted(compile_options())}")
    options = {"num_warps": num_warps, "num_stages": num_stages, **extra}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def triton_ptx(kernel, signature: dict, constexprs: dict | None = None, *, arch: int = 90,
               num_warps: int = 4, num_stages: int = 3, aligned: tuple = ()) -> str:
    """PTX of a Triton kernel compiled for ``sm_<arch>a`` without launching it
    (arguments as for :func:`triton_compile`)."""
    return triton_compile(kernel, signature, constexprs, arch=arch, num_warps=num_warps,
                          num_stages=num_stages, aligned=aligned).asm["ptx"]


_WS_CACHE: dict = {}


def hopper_warp_specialization() -> tuple:
    """``(applied, reason)``: does ``tl.range(..., warp_specialize=True)`` change the sm_90a
    code this Triton emits for a TMA matmul loop? Decided by compiling the loop twice (any
    machine, about a second); on Triton 3.6 and 3.9 the flag is accepted and changes nothing for sm_90a."""
    if "result" in _WS_CACHE:
        return _WS_CACHE["result"]
    if "warp_specialize" not in range_options():
        return False, f"tl.range has no warp_specialize option in Triton {_version()}"
    import triton
    import triton.language as tl

    @triton.jit
    def ws_probe_kernel(a_desc, b_desc, c_desc, K, WS: tl.constexpr):
        acc = tl.zeros((128, 128), dtype=tl.float32)
        for k in tl.range(0, K, 64, warp_specialize=WS):
            acc = tl.dot(a_desc.load([0, k]), b_desc.load([k, 0]), acc)
        c_desc.store([0, 0], acc.to(tl.float16))

    sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 128]>",
           "c_desc": "tensordesc<fp16[128, 128]>", "K": "i32", "WS": "constexpr"}
    ptx = {}
    for ws in (False, True):
        try:
            ptx[ws] = triton_compile(ws_probe_kernel, sig, {"WS": ws}, num_warps=8).asm["ptx"]
        except Exception as e:  # the pass exists but rejects the loop
            _WS_CACHE["result"] = (False, f"warp_specialize=True fails to compile for sm_90a in "
                                   f"Triton {_version()}: {type(e).__name__}")
            return _WS_CACHE["result"]
    if ptx[True] == ptx[False]:
        res = (False, f"Triton {_version()} accepts warp_specialize=True for sm_90a but emits "
               "the same PTX: it does not warp-specialize for Hopper")
    else:
        res = (True, f"Triton {_version()} warp-specializes the loop for sm_90a")
    _WS_CACHE["result"] = res
    return res
