"""CUDA C++ compiled to PTX with NVRTC through ``cuda.bindings``, on any machine (no GPU needed).

:func:`nvrtc_ptx` is what the course's raw CUDA kernels (:mod:`utils.cuda_cpp`, :mod:`utils.tma`)
and the learners' CUDA exercises compile with; read the result with :mod:`utils.core.ptx`.
"""
from __future__ import annotations

import re


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
        raise RuntimeError(f"NVRTC could not compile {name} for {arch}:\n{log.decode(errors='replace').rstrip(chr(0))}")
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    buf = b" " * size
    nvrtc.nvrtcGetPTX(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode().rstrip("\x00")
