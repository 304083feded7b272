"""PTX operands compiled to getters and setters on a warp's registers (32 lanes as NumPy arrays).

Registers hold raw bits in an unsigned array of their declared size (``bool`` for ``.pred``); an
instruction views them as its own type (``.s32``, ``.f32``...). :func:`getter` returns a function
``warp -> array or scalar`` of the instruction's NumPy type; :func:`setter` one that writes such
values to a register for the lanes of a mask.
"""
from __future__ import annotations

import re
import struct

import numpy as np

from .errors import UnsupportedPTX

NP = {"pred": np.bool_, "b8": np.uint8, "u8": np.uint8, "s8": np.int8, "b16": np.uint16, "u16": np.uint16,
      "s16": np.int16, "f16": np.float16, "bf16": np.uint16, "b32": np.uint32, "u32": np.uint32,
      "s32": np.int32, "f32": np.float32, "b64": np.uint64, "u64": np.uint64, "s64": np.int64,
      "f64": np.float64, "f16x2": np.uint32, "bf16x2": np.uint32}
UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
SIGNED = {1: np.int8, 2: np.int16, 4: np.int32, 8: np.int64}
SPECIAL = re.compile(r"%(tid|ntid|ctaid|nctaid|clusterid|nclusterid|cluster_ctaid|cluster_nctaid)\.([xyz])$")


def storage(typ: str):
    """The NumPy dtype a register of PTX type ``typ`` is stored as."""
    return np.bool_ if typ == "pred" else UNSIGNED[np.dtype(NP[typ]).itemsize]


def convert(vals, T):
    """Raw-bit conversion of an integer/float array to dtype ``T`` (truncate or zero-extend)."""
    vals = np.asarray(vals)
    if vals.dtype == T:
        return vals
    s, t = vals.dtype.itemsize, np.dtype(T).itemsize
    if vals.dtype == np.bool_:
        return vals.astype(T)
    if vals.dtype.kind == "i" and t > s:
        return vals.astype(SIGNED[t]).view(T)
    if s == t:
        return vals.view(T)
    return vals.view(UNSIGNED[s]).astype(UNSIGNED[t]).view(T)


def immediate(tok: str, T):
    """A literal (decimal, hex, 0fXXXXXXXX / 0dXXXXXXXXXXXXXXXX floats) as a 0-d array of ``T``."""
    T = np.dtype(T)
    if re.fullmatch(r"0[fF][0-9a-fA-F]{8}", tok):
        v = np.array(int(tok[2:], 16), np.uint32).view(np.float32)
        return v.astype(T) if T.kind == "f" else convert(v, T)
    if re.fullmatch(r"0[dD][0-9a-fA-F]{16}", tok):
        v = np.array(int(tok[2:], 16), np.uint64).view(np.float64)
        return v.astype(T) if T.kind == "f" else convert(v, T)
    try:
        n = int(tok, 0) if not re.fullmatch(r"-?0\d+", tok) else int(tok, 8)
    except ValueError:
        if T.kind == "f":
            return np.array(float(tok), T)
        raise
    if T.kind == "f":
        return np.array(n, T)
    if T == np.bool_:
        return np.array(bool(n))
    bits = 8 * T.itemsize
    return np.array(n & ((1 << bits) - 1), UNSIGNED[T.itemsize]).view(T)


def getter(tok: str, T, k, symbols: dict):
    """Compile operand ``tok`` of kernel ``k`` into ``warp -> value`` of dtype ``T``."""
    T = np.dtype(T)
    if tok in k.regs:
        S = np.dtype(storage(k.regs[tok]))
        if S == T:
            return lambda w: w.regs[tok]
        if T == np.bool_ or S == np.bool_:
            return lambda w: w.regs[tok].astype(T)
        if S.itemsize == T.itemsize:
            return lambda w: w.regs[tok].view(T)
        U = UNSIGNED[T.itemsize]
        return lambda w: w.regs[tok].astype(U).view(T)
    m = SPECIAL.match(tok)
    if m or tok.startswith("%"):
        name = tok[1:]
        return lambda w: convert(w.special(name), T)
    if tok in symbols:
        v = immediate(str(symbols[tok]), T)
        return lambda w: v
    mm = re.fullmatch(r"([\w$]+)\+(\d+)", tok)
    if mm and mm.group(1) in symbols:
        v = immediate(str(symbols[mm.group(1)] + int(mm.group(2))), T)
        return lambda w: v
    try:
        v = immediate(tok, T)
    except ValueError:
        raise UnsupportedPTX(f"cannot read the operand {tok!r}") from None
    return lambda w: v


def setter(tok: str, k):
    """Compile destination register ``tok`` into ``(warp, values, mask) -> None``."""
    if tok == "_":
        return lambda w, v, m: None
    if tok not in k.regs:
        raise UnsupportedPTX(f"destination {tok!r} is not a declared register")
    S = storage(k.regs[tok])

    def put(w, v, m):
        v = convert(v, S)
        if v.ndim == 0:
            v = np.full(32, v, S)
        if m is None:
            w.regs[tok] = v
        else:
            w.regs[tok] = np.where(m, v, w.regs[tok])
    return put


def address(tok: str, k, symbols: dict):
    """Compile an address operand ``[reg+off]`` / ``[sym]`` / ``[sym+off]`` into ``warp -> uint64``."""
    inner = tok.strip()[1:-1].strip()
    m = re.fullmatch(r"([%\w$#]+)\s*(?:([+-])\s*(-?\w+))?", inner)
    if not m:
        raise UnsupportedPTX(f"cannot read the address {tok!r}")
    base, sign, off = m.groups()
    off = (int(off, 0) * (-1 if sign == "-" else 1)) if off else 0
    if base in k.regs:
        g = getter(base, np.uint64, k, symbols)
        if off == 0:
            return g
        o = np.uint64(off & (2**64 - 1))
        return lambda w: g(w) + o
    if base in symbols:
        v = np.uint64((symbols[base] + off) & (2**64 - 1))
        return lambda w: v
    try:
        v = np.uint64(int(base, 0) + off)
    except ValueError:
        raise UnsupportedPTX(f"unknown symbol {base!r} in address {tok!r}") from None
    return lambda w: v


def vector(tok: str) -> list:
    """``{%r1, %r2}`` -> ``["%r1", "%r2"]``."""
    return [t.strip() for t in tok.strip()[1:-1].split(",")]


def f32_bits(x: float) -> int:
    """Bits of a float32 (for messages and tests)."""
    return struct.unpack("<I", struct.pack("<f", x))[0]
