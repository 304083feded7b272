"""How the emulator represents a ``CUtensorMap``: 128 bytes, like the real one, in its OWN layout.

The driver's encoding is opaque, so the emulator defines a documented one. A kernel sees 128
bytes (in ``.param`` for a ``__grid_constant__`` parameter, or in global/shared memory), copies
them with ordinary loads and stores, rewrites fields with ``tensormap.replace``, and every TMA
instruction decodes them back into a :class:`~utils.tma.descriptor.TensorMapSpec`:

=======  =====  ====================================================================
offset   bytes  field
=======  =====  ====================================================================
0        8      magic ``b"EMUTMAP1"`` (anything else: "not a descriptor")
8        8      global_address (u64)
16       20     global_dims[0..4] (u32, innermost first)
40       32     global_strides_bytes[0..3] (u64: stride of dims 1..4)
72       20     box_dims[0..4] (u32)
92       20     element_strides[0..4] (u32)
112      1      rank; 113 dtype code; 114 swizzle code; 115 oob_fill code; 116 l2 code
=======  =====  ====================================================================

:func:`encode` builds the bytes from a TensorMapSpec (``utils.tma.descriptor.make_spec``), as a
``(1,) V128`` array like :func:`utils.tma.encode.encode` returns for the GPU.
"""
from __future__ import annotations

import struct

import numpy as np

from ..tma.descriptor import TensorMapSpec
from ..tma.rules import DTYPES
from ..tma.swizzle import SWIZZLE_MODES
from .errors import TmaRuleError, UnsupportedPTX

MAGIC = b"EMUTMAP1"
_DTYPES = sorted(DTYPES)
_OOB = ("zero", "nan")
_L2 = ("none", "64B", "128B", "256B")
FIELDS = {"global_address": (8, "<Q", None), "global_dim": (16, "<I", 5), "global_stride": (40, "<Q", 4),
          "box_dim": (72, "<I", 5), "element_stride": (92, "<I", 5)}


def encode(spec: TensorMapSpec) -> np.ndarray:
    """The emulator's 128-byte descriptor for ``spec``, as a ``(1,)`` ``V128`` array."""
    if not isinstance(spec, TensorMapSpec):
        raise TypeError(f"encode takes a TensorMapSpec (utils.tma.descriptor.make_spec), got {type(spec).__name__}")
    r = spec.rank
    pad = lambda t, n: list(t) + [0] * (n - len(t))  # noqa: E731
    raw = (MAGIC + struct.pack("<Q", spec.global_address) + struct.pack("<5I", *pad(spec.global_dims, 5))
           + b"\0" * 4 + struct.pack("<4Q", *pad(spec.global_strides_bytes, 4))
           + struct.pack("<5I", *pad(spec.box_dims, 5)) + struct.pack("<5I", *pad(spec.element_strides, 5))
           + bytes([r, _DTYPES.index(spec.dtype), SWIZZLE_MODES.index(spec.swizzle), _OOB.index(spec.oob_fill),
                    _L2.index(spec.l2_promotion)]))
    buf = np.zeros(128, np.uint8)
    buf[:len(raw)] = np.frombuffer(raw, np.uint8)
    return buf.view("V128")


def decode(raw: np.ndarray, what: str = "descriptor") -> TensorMapSpec:
    """A TensorMapSpec from 128 descriptor bytes; TmaRuleError when they are not a valid descriptor
    (the spec's own validation, the driver's rules, applies to replaced fields too)."""
    b = bytes(np.asarray(raw, np.uint8).reshape(-1)[:128])
    if b[:8] != MAGIC:
        raise TmaRuleError(f"the {what} is not a tensor map made by utils.emu.tensormap.encode (the first bytes "
                           f"are {b[:8].hex()}): pass the kernel an emulator descriptor (utils.emu.tensor_map)")
    r = b[112]
    dims = struct.unpack_from("<5I", b, 16)[:r]
    strides = struct.unpack_from("<4Q", b, 40)[:r - 1]
    box = struct.unpack_from("<5I", b, 72)[:r]
    es = struct.unpack_from("<5I", b, 92)[:r]
    try:
        return TensorMapSpec(_DTYPES[b[113]], r, struct.unpack_from("<Q", b, 8)[0], dims, strides, box, es,
                             SWIZZLE_MODES[b[114]], _L2[b[116]], _OOB[b[115]])
    except (ValueError, TypeError, IndexError) as e:
        raise TmaRuleError(f"the {what} breaks a tensor-map rule: {e}") from None


def replace(raw: np.ndarray, field: str, ordinal: int | None, value: int) -> None:
    """``tensormap.replace`` on 128 descriptor bytes in place (``raw``: a writable uint8 view)."""
    if field not in FIELDS:
        raise UnsupportedPTX(f"tensormap.replace of field .{field} is not modelled "
                             f"(modelled: {', '.join(FIELDS)})")
    off, fmt, n = FIELDS[field]
    if n is not None:
        if ordinal is None or not 0 <= ordinal < n:
            raise TmaRuleError(f"tensormap.replace .{field}: ordinal {ordinal} is out of range 0..{n - 1}")
        off += ordinal * struct.calcsize(fmt)
    size = struct.calcsize(fmt)
    raw[off:off + size] = np.frombuffer(struct.pack(fmt, value & ((1 << (8 * size)) - 1)), np.uint8)
