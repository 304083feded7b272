"""Compile kernels for Hopper (sm_90a) on any machine, GPU or not, and read the PTX.

* :func:`triton_ptx` / :func:`triton_compile`: a ``@triton.jit`` kernel compiled ahead of time
  with Triton's bundled compiler (works under ``TRITON_INTERPRET=1`` too).
* :func:`nvrtc_ptx`: CUDA C++ compiled with NVRTC through ``cuda.bindings`` (no GPU needed).
* :func:`count` / :func:`show`: the instructions that matter for data movement.
"""
from __future__ import annotations

import re

# Instruction families a data-movement lesson looks for, as regexes on PTX opcodes.
FAMILIES = {
    "cp.async.bulk.tensor": r"\bcp\.async\.bulk\.tensor\b",
    "mbarrier": r"\bmbarrier\.",
    "fence.proxy.async": r"\bfence\.proxy\.async\b",
    "wgmma": r"\bwgmma\.",
    "ld.global": r"\bld\.global\b",
    "st.global": r"\bst\.global\b",
    "cp.async (Ampere)": r"\bcp\.async\.(ca|cg)\b",
    "ld.shared": r"\bld\.shared\b",
    "st.shared": r"\bst\.shared\b",
}


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


def triton_compile(kernel, signature: dict, constexprs: dict | None = None, *, arch: int = 90,
                   num_warps: int = 4, num_stages: int = 3, aligned: tuple = ()):
    """A Triton kernel compiled for ``sm_<arch>a`` without launching it (a ``CompiledKernel``:
    ``.asm["ptx"]``, ``.metadata.shared``, ``.metadata.tensordesc_meta``, ...).

    ``signature`` maps each argument to a Triton type string: ``"*fp16"`` (pointer),
    ``"i32"``, ``"tensordesc<fp16[64, 64]>"`` (host tensor descriptor) or ``"constexpr"``.
    ``aligned`` names arguments promised to be multiples of 16 (pointers, row lengths), as
    Triton assumes when it launches with such values; it enables 16-byte vector accesses.
    Works under the interpreter too (jitted helpers the kernel calls are compiled as well).
    """
    import triton
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource
    if not isinstance(signature, dict) or not signature:
        raise TypeError("signature must be a non-empty dict {argument name: type string}")
    fn = getattr(kernel, "fn", None)
    if fn is None or not callable(fn):
        raise TypeError(f"expected a @triton.jit kernel, got {type(kernel).__name__}")
    from .triton_compat import repair_language, require_triton
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
    options = {"num_warps": num_warps, "num_stages": num_stages}
    return triton.compile(src, target=GPUTarget("cuda", arch, 32), options=options)


def triton_ptx(kernel, signature: dict, constexprs: dict | None = None, *, arch: int = 90,
               num_warps: int = 4, num_stages: int = 3, aligned: tuple = ()) -> str:
    """PTX of a Triton kernel compiled for ``sm_<arch>a`` without launching it
    (arguments as for :func:`triton_compile`)."""
    return triton_compile(kernel, signature, constexprs, arch=arch, num_warps=num_warps,
                          num_stages=num_stages, aligned=aligned).asm["ptx"]


def nvrtc_ptx(source: str, *, arch: str = "sm_90a", options: tuple = (), name: str = "kernel.cu") -> str:
    """PTX of CUDA C++ ``source`` compiled by NVRTC for ``arch`` (e.g. ``"sm_90a"``).

    A compile error raises ``RuntimeError`` carrying NVRTC's log.
    """
    from cuda.bindings import nvrtc
    if not isinstance(source, str) or "__global__" not in source:
        raise ValueError("source must be CUDA C++ text containing a __global__ kernel")
    if not re.fullmatch(r"sm_\d+a?", arch):
        raise ValueError(f"arch must look like 'sm_90a', got {arch!r}")
    err, prog = nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], [])
    opts = [f"-arch=compute_{arch[3:]}".encode(), b"-std=c++17"] + [o.encode() for o in options]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), opts)
    if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
        _, size = nvrtc.nvrtcGetProgramLogSize(prog)
        log = b" " * size
        nvrtc.nvrtcGetProgramLog(prog, log)
        raise RuntimeError(f"NVRTC could not compile {name} for {arch}:\n{log.decode(errors='replace')}")
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * size
    nvrtc.nvrtcGetPTX(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode().rstrip("\x00")


def _instructions(ptx: str):
    """PTX instruction lines (comments, labels and directives removed)."""
    if not isinstance(ptx, str) or ".target" not in ptx:
        raise ValueError("expected PTX text (it has a .target line)")
    for line in ptx.splitlines():
        s = line.split("//")[0].strip()
        if s and not s.startswith((".", "{", "}", "$")) and not s.endswith(":"):
            yield s


def count(ptx: str, families: dict | None = None) -> dict:
    """How many PTX instructions of each family the kernel text contains (static count)."""
    families = FAMILIES if families is None else families
    lines = list(_instructions(ptx))
    return {name: sum(1 for s in lines if re.search(rx, s)) for name, rx in families.items()}


def target(ptx: str) -> str:
    """The ``.target`` of a PTX text, e.g. ``"sm_90a"``."""
    m = re.search(r"^\s*\.target\s+(\S+)", ptx, re.M)
    if not m:
        raise ValueError("no .target line: is this PTX?")
    return m.group(1).rstrip(",")


def show(ptx: str, families=("cp.async.bulk.tensor", "mbarrier", "fence.proxy.async", "wgmma",
                             "ld.global", "st.global"), limit: int = 12) -> None:
    """Print the target and up to ``limit`` instructions of the chosen families."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {list(FAMILIES)}")
    print(f".target {target(ptx)}")
    shown = 0
    for s in _instructions(ptx):
        if any(re.search(FAMILIES[f], s) for f in families):
            print("   ", s[:140])
            shown += 1
            if shown >= limit:
                print("    ...")
                break
