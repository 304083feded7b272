"""Arithmetic, logic, comparison, conversion and move instructions, compiled to NumPy handlers.

Each handler is ``(warp, mask) -> None`` computing all 32 lanes at once and writing only the lanes
of ``mask`` (None: every lane). Integer arithmetic wraps; division truncates toward zero (PTX);
shifts by the width or more give 0 (or the sign, for ``shr.s``). Float rounding modifiers other
than the default round-to-nearest are not modelled on arithmetic (``fma`` is computed in float64
and rounded once more, which can differ from a true fused multiply-add in the last bit).
"""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedPTX
from .operands import NP, UNSIGNED, getter, setter, vector

_ROUND = {"rn", "rz", "rm", "rp", "rni", "rzi", "rmi", "rpi", "ftz", "sat", "approx", "full", "uni",
          "relu", "satfinite"}
_CMP = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal, "gt": np.greater,
        "ge": np.greater_equal, "lo": np.less, "ls": np.less_equal, "hi": np.greater, "hs": np.greater_equal}


def _tdiv(a, b):
    """Integer division truncating toward zero; x/0 gives all ones (-1 if signed)."""
    a = np.asarray(a)
    b = np.asarray(b).astype(a.dtype)
    z = b == 0
    bb = np.where(z, 1, b).astype(a.dtype)
    if a.dtype.kind == "u":
        q = a // bb
    else:
        q = np.abs(a) // np.abs(bb)
        q = np.where((a < 0) != (bb < 0), -q, q)
    return np.where(z, ~np.zeros((), a.dtype), q).astype(a.dtype)


def _shift(a, s, left, T):
    bits = 8 * np.dtype(T).itemsize
    s = np.asarray(s).astype(np.uint32)
    big = s >= bits
    sc = np.minimum(s, bits - 1).astype(T)
    if left:
        return np.where(big, np.zeros((), T), np.left_shift(a, sc))
    r = np.right_shift(a, sc)
    if np.dtype(T).kind == "i":
        return np.where(big, np.where(a < 0, np.array(-1, T), np.zeros((), T)), r)
    return np.where(big, np.zeros((), T), r)


def _wide(T):
    return {np.dtype(np.int16): np.int32, np.dtype(np.uint16): np.uint32, np.dtype(np.int32): np.int64,
            np.dtype(np.uint32): np.uint64}[np.dtype(T)]


def _mulhi(a, b, T):
    T = np.dtype(T)
    if T.itemsize < 8:
        W = _wide(T)
        return (a.astype(W) * np.asarray(b).astype(W) >> (8 * T.itemsize)).astype(T)
    af = np.broadcast_to(a, (32,)).tolist()
    bf = np.broadcast_to(b, (32,)).tolist()
    return np.array([((x * y) >> 64) & (2**64 - 1) for x, y in zip(af, bf)], np.uint64).view(T)


def _binop(op, T, kind):
    if op == "add":
        return np.add
    if op == "sub":
        return np.subtract
    if op in ("and", "or", "xor"):
        return {"and": np.bitwise_and, "or": np.bitwise_or, "xor": np.bitwise_xor}[op] if T != np.bool_ else \
            {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[op]
    if op == "min":
        return np.fmin if kind == "f" else np.minimum        # PTX min/max of a NaN and x give x
    if op == "max":
        return np.fmax if kind == "f" else np.maximum
    if op == "div":
        return (lambda a, b: a / b) if kind == "f" else _tdiv
    if op == "rem":
        return lambda a, b: a - _tdiv(a, b) * np.asarray(b).astype(np.asarray(a).dtype)
    if op == "shl":
        return lambda a, b: _shift(a, b, True, T)
    if op == "shr":
        return lambda a, b: _shift(a, b, False, T)
    if op == "mul" and kind == "f":
        return np.multiply
    if op == "copysign":
        return lambda a, b: np.copysign(b, a)
    return None


def compile_alu(ins, k, sym):
    """A handler for ``ins`` if it is an ALU/move/convert instruction, else None."""
    p, ops = ins.parts, ins.ops
    op = p[0]
    mods = [x for x in p[1:] if x not in _ROUND]
    typ = mods[-1] if mods and mods[-1] in NP else None
    if op in ("add", "sub", "and", "or", "xor", "min", "max", "div", "rem", "shl", "shr", "copysign") or \
            (op == "mul" and typ and typ.startswith("f")):
        T = NP[typ]
        shiftT = np.uint32 if op in ("shl", "shr") else T
        f = _binop(op, T, np.dtype(T).kind)
        a, b, d = getter(ops[1], T, k, sym), getter(ops[2], shiftT, k, sym), setter(ops[0], k)
        if "cc" in p or "cc" in mods:
            raise UnsupportedPTX("carry-chain arithmetic (.cc / addc) is not modelled", ins.line, ins.text)
        if "sat" in p and np.dtype(T).kind != "f":
            raise UnsupportedPTX("saturating integer arithmetic (.sat) is not modelled", ins.line, ins.text)

        def h(w, m):
            with np.errstate(all="ignore"):
                d(w, f(a(w), b(w)), m)
        return h
    if op in ("mul", "mad") and typ:
        T = NP[typ]
        mode = next((x for x in mods if x in ("lo", "hi", "wide")), "lo")
        a, b = getter(ops[1], T, k, sym), getter(ops[2], T, k, sym)
        c = getter(ops[3], _wide(T) if mode == "wide" else T, k, sym) if op == "mad" else None
        d = setter(ops[0], k)

        def h(w, m):
            x, y = a(w), b(w)
            with np.errstate(all="ignore"):
                if mode == "lo":
                    r = x * y
                elif mode == "wide":
                    W = _wide(T)
                    r = np.asarray(x).astype(W) * np.asarray(y).astype(W)
                else:
                    r = _mulhi(np.asarray(x), y, T)
                if c is not None:
                    r = r + c(w)
            d(w, r, m)
        return h
    if op in ("fma",) and typ:
        T = NP[typ]
        a, b, c, d = getter(ops[1], T, k, sym), getter(ops[2], T, k, sym), getter(ops[3], T, k, sym), setter(ops[0], k)
        return lambda w, m: d(w, (np.asarray(a(w), np.float64) * b(w) + c(w)).astype(T), m)
    if op in ("neg", "not", "abs", "popc", "clz", "brev", "rcp", "sqrt", "rsqrt", "ex2", "lg2", "sin", "cos", "cnot"):
        T = NP[typ]
        a, d = getter(ops[1], T, k, sym), setter(ops[0], k)
        fn = {"neg": np.negative, "not": (np.logical_not if T == np.bool_ else np.invert), "abs": np.abs,
              "rcp": lambda x: (1.0 / x).astype(T), "sqrt": np.sqrt, "rsqrt": lambda x: (1.0 / np.sqrt(x)).astype(T),
              "ex2": lambda x: np.exp2(x).astype(T), "lg2": lambda x: np.log2(x).astype(T),
              "sin": np.sin, "cos": np.cos, "cnot": lambda x: (x == 0).astype(T),
              "popc": lambda x: np.array([bin(v).count("1") for v in np.broadcast_to(
                  x.view(UNSIGNED[x.dtype.itemsize]), (32,)).tolist()], np.uint32),
              "clz": lambda x: np.array([8 * x.dtype.itemsize - int(v).bit_length() for v in np.broadcast_to(
                  x.view(UNSIGNED[x.dtype.itemsize]), (32,)).tolist()], np.uint32),
              "brev": lambda x: np.array([int(f"{v:0{8 * x.dtype.itemsize}b}"[::-1], 2) for v in np.broadcast_to(
                  x, (32,)).tolist()], x.dtype)}[op]

        def h(w, m):
            with np.errstate(all="ignore"):
                d(w, fn(np.asarray(a(w))), m)
        return h
    if op == "setp":
        cmp = p[1]
        T = NP[typ]
        a, b = getter(ops[1], T, k, sym), getter(ops[2], T, k, sym)
        dsts = ops[0].split("|")
        d = setter(dsts[0], k)
        d2 = setter(dsts[1], k) if len(dsts) > 1 else None
        comb = next((x for x in ("and", "or", "xor") if x in p[2:]), None)
        c = getter(ops[3].lstrip("!"), np.bool_, k, sym) if comb else None
        neg_c = comb and ops[3].startswith("!")
        unordered = cmp.endswith("u") and cmp not in ("equ",) or cmp == "equ"
        base = cmp[:-1] if (np.dtype(T).kind == "f" and cmp.endswith("u") and cmp != "num") else cmp

        def h(w, m):
            x, y = a(w), b(w)
            with np.errstate(all="ignore"):
                if base == "num":
                    r = ~(np.isnan(x) | np.isnan(y))
                elif base == "nan":
                    r = np.isnan(x) | np.isnan(y)
                else:
                    r = _CMP[base](x, y)
                    if np.dtype(T).kind == "f" and unordered and base != cmp:
                        r = r | np.isnan(x) | np.isnan(y)
            r = np.broadcast_to(r, (32,))
            if comb:
                cv = c(w)
                cv = ~cv if neg_c else cv
                f = {"and": np.logical_and, "or": np.logical_or, "xor": np.logical_xor}[comb]
                r1, r2 = f(r, cv), f(~r, cv)
            else:
                r1, r2 = r, ~r
            d(w, r1, m)
            if d2:
                d2(w, r2, m)
        return h
    if op == "selp":
        T = NP[typ]
        a, b, c, d = getter(ops[1], T, k, sym), getter(ops[2], T, k, sym), getter(ops[3], np.bool_, k, sym), \
            setter(ops[0], k)
        return lambda w, m: d(w, np.where(c(w), a(w), b(w)).astype(T), m)
    if op == "mov":
        T = NP[typ]
        if ops[0].startswith("{") or ops[1].startswith("{"):
            return _pack(ins, k, sym, T)
        a, d = getter(ops[1], T, k, sym), setter(ops[0], k)
        return lambda w, m: d(w, a(w), m)
    if op == "cvt":
        return _cvt(ins, k, sym)
    return None


def _pack(ins, k, sym, T):
    """``mov.b64 d, {a, b}`` (pack, element 0 lowest) and ``mov.b64 {a, b}, d`` (unpack)."""
    ops = ins.ops
    if ops[1].startswith("{"):
        parts = vector(ops[1])
        size = np.dtype(T).itemsize // len(parts)
        U = UNSIGNED[size]
        gs = [getter(x, U, k, sym) for x in parts]
        d = setter(ops[0], k)

        def h(w, m):
            acc = np.zeros(32, T)
            for i, g in enumerate(gs):
                acc = acc | (np.broadcast_to(g(w), (32,)).astype(T) << T(8 * size * i))
            d(w, acc, m)
        return h
    parts = vector(ops[0])
    size = np.dtype(T).itemsize // len(parts)
    U = UNSIGNED[size]
    a = getter(ops[1], T, k, sym)
    ds = [setter(x, k) for x in parts]

    def h2(w, m):
        v = np.broadcast_to(a(w), (32,))
        for i, d in enumerate(ds):
            d(w, (v >> T(8 * size * i)).astype(U), m)
    return h2


def bf16_to_f32(bits):
    """bfloat16 bits (uint16) -> float32 values."""
    return (np.asarray(bits).astype(np.uint32) << np.uint32(16)).view(np.float32)


def f32_to_bf16(x):
    """float32 -> bfloat16 bits, round to nearest even (NaN stays NaN)."""
    b = np.asarray(x, np.float32).view(np.uint32)
    r = (b + np.uint32(0x7FFF) + ((b >> np.uint32(16)) & np.uint32(1))) >> np.uint32(16)
    return np.where(np.isnan(x), np.uint16(0x7FC0), r.astype(np.uint16))


def _cvt(ins, k, sym):
    p = ins.parts
    types = [x for x in p[1:] if x in NP]
    if len(types) != 2:
        raise UnsupportedPTX("cvt needs a destination and a source type", ins.line, ins.text)
    dt, st = types
    rnd = next((x for x in p[1:] if x in ("rni", "rzi", "rmi", "rpi", "rn", "rz", "rm", "rp")), None)
    sat = "sat" in p
    a = getter(ins.ops[1], NP[st], k, sym)
    d = setter(ins.ops[0], k)
    D = NP[dt]

    def h(w, m):
        x = np.asarray(a(w))
        if st == "bf16":
            x = bf16_to_f32(x)
        if dt == "bf16":
            d(w, f32_to_bf16(x.astype(np.float32)), m)
            return
        Dk = np.dtype(D).kind
        with np.errstate(all="ignore"):
            if x.dtype.kind == "f" and Dk in "iu":
                f = {"rni": np.rint, "rmi": np.floor, "rpi": np.ceil}.get(rnd, np.trunc)
                info = np.iinfo(D)
                y = np.clip(np.nan_to_num(f(x.astype(np.float64)), nan=0.0), info.min, info.max).astype(D)
            elif x.dtype.kind == "f" and Dk == "f":
                y = x.astype(D)
                if rnd in ("rni", "rzi", "rmi", "rpi"):
                    y = {"rni": np.rint, "rzi": np.trunc, "rmi": np.floor, "rpi": np.ceil}[rnd](y)
                if sat:
                    y = np.clip(y, 0, 1)
            elif Dk == "f":
                y = x.astype(D)
            else:
                if sat:
                    info = np.iinfo(D)
                    y = np.clip(x.astype(np.float64), info.min, info.max).astype(D)
                else:
                    y = x.astype(D)      # NumPy wraps and sign/zero-extends as PTX does
        d(w, y, m)
    return h
