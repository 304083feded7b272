"""A kernel ready to run: PTX parsed, every instruction compiled to a handler, the parameter and
shared-memory layouts computed. Cached per (PTX text, kernel name); CUDA C++ source is compiled
to PTX with NVRTC first (cached per source)."""
from __future__ import annotations

import functools

import numpy as np

from .alu import compile_alu
from .asyncops import compile_cp_async
from .bulk import compile_bulk
from .errors import UnsupportedPTX
from .mbarrier import compile_mbarrier
from .memops import compile_mem
from .memory import PARAM_WIN
from .parse import parse_cached


def _align(x: int, a: int) -> int:
    return -(-x // a) * a


@functools.lru_cache(maxsize=32)
def ptx_of(source: str, arch: str = "sm_90a") -> str:
    """PTX text: ``source`` itself if it is PTX, else NVRTC's compilation of the CUDA C++ source."""
    if ".entry" in source and "__global__" not in source:
        return source
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    return nvrtc_ptx(source, arch=arch, options=("-lineinfo",))     # .loc: reports name CUDA lines


class Program:
    """Kernel ``name`` of a parsed module, compiled for the emulator."""

    def __init__(self, ptx: str, name: str):
        mod = parse_cached(ptx)
        if name not in mod.kernels:
            raise ValueError(f"no kernel named {name!r} in this PTX; it has {sorted(mod.kernels)}")
        k = self.kernel = mod.kernels[name]
        self.params, off = [], 0
        for pname, typ, size, align in k.params:
            off = _align(off, align)
            self.params.append((pname, typ, size, off))
            off += size
        self.param_size = max(off, 1)
        # module .global variables: one zeroed buffer for this program
        gsize = sum(_align(v.size, 8) for v in mod.globals) + 8
        self.gbuf = np.zeros(gsize, np.uint8)
        sym, g = {}, 0
        for v in mod.globals:
            sym[v.name] = self.gbuf.ctypes.data + g
            g += _align(v.size, 8)
        for pname, _, _, poff in self.params:
            sym[pname] = PARAM_WIN + poff
        s, self.dyn_align, dyn = 0, 16, []
        for v in mod.shared + k.shared:
            if v.extern or v.size == 0:
                dyn.append(v)
                self.dyn_align = max(self.dyn_align, v.align)
                continue
            s = _align(s, v.align)
            sym[v.name] = s
            s += v.size
        self.static_smem = s
        self.dyn_offset = _align(s, self.dyn_align)
        for v in dyn:
            sym[v.name] = self.dyn_offset
        lo = 0
        for v in k.local:
            lo = _align(lo, v.align)
            sym[v.name] = lo
            lo += v.size
        self.local_size = lo
        self.symbols = sym
        self.handlers = [self._compile(ins) for ins in k.code]
        self.locs = {ins.line: ins.src for ins in k.code if ins.src}

    def _compile(self, ins):
        if ins.parts[0] in ("bra", "ret", "exit"):
            return None
        k, sym = self.kernel, self.symbols
        try:
            for f in (compile_alu, compile_mem, compile_mbarrier, compile_cp_async, compile_bulk):
                h = f(ins, k, sym)
                if h is not None:
                    return h
        except UnsupportedPTX as e:
            return _refuse(ins, str(e)[len("emulator: "):].split("\n")[0])
        except (KeyError, ValueError, IndexError, StopIteration, AttributeError) as e:
            return _refuse(ins, f"cannot decode this instruction ({type(e).__name__}: {e})")
        return _refuse(ins, f"the instruction {ins.opcode} is not modelled by the emulator")

    def smem_size(self, dynamic: int) -> int:
        """Bytes of shared memory per CTA: static variables, alignment, then ``dynamic``."""
        return self.dyn_offset + dynamic


def _refuse(ins, why):
    def h(w, m):
        raise UnsupportedPTX(f"{why}; the run stops here rather than guess", ins.line, ins.text, w.where(m))
    return h


@functools.lru_cache(maxsize=64)
def program(ptx: str, name: str) -> Program:
    """The cached :class:`Program` for kernel ``name`` of ``ptx``."""
    return Program(ptx, name)
