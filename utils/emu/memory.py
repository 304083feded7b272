"""The emulator's address spaces and byte-level loads/stores, vectorised across a warp's lanes.

* global: the bytes of the NumPy arrays the launch was given, at their real host addresses (so a
  pointer argument is ``arr.ctypes.data`` and alignment rules are checked on real addresses);
* shared: one ``uint8`` array per CTA; a ``.shared::cta`` address is an offset in it, a
  ``.shared::cluster`` address of another CTA carries ``(rank + 1) << CLUSTER_SHIFT``;
* param: the launch arguments laid out as the kernel's ``.param`` list says, at ``PARAM_WIN``;
* local: per thread, at ``LOCAL_WIN`` (generic addresses only through ``cvta``).

Generic addresses: global = itself, shared = ``SHARED_WIN + offset``, param = the param address.
"""
from __future__ import annotations

import bisect

import numpy as np

from .errors import MemoryFault, MisalignedAddress

SHARED_WIN = 1 << 56
PARAM_WIN = 2 << 56
LOCAL_WIN = 3 << 56
CLUSTER_SHIFT = 24
WIN_MASK = (1 << 56) - 1


def owner(a: np.ndarray) -> np.ndarray:
    """The array that owns ``a``'s memory (following ``.base``), as flat uint8 bytes."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    if not a.flags.c_contiguous:
        raise ValueError("the emulator needs arrays whose owning buffer is contiguous")
    return a.reshape(-1).view(np.uint8)


class GlobalMemory:
    """Registered buffers by host address; loads and stores check every byte is inside one."""

    def __init__(self):
        self.starts, self.regions = [], []

    def register(self, a: np.ndarray) -> None:
        """Make the bytes of ``a`` addressable (just its own span: a pointer past it is a fault).
        Overlapping arrays of one allocation merge into one region."""
        buf = owner(a)
        if any(st < 0 for st in a.strides):
            raise ValueError("the emulator needs arrays with non-negative strides")
        s = a.ctypes.data
        e = s + (a.itemsize + sum((n - 1) * st for n, st in zip(a.shape, a.strides)) if a.size else 0)
        base = buf.ctypes.data
        keep_s, keep_r = [], []
        for st, r in zip(self.starts, self.regions):
            end = st + r.size
            if st <= e and s <= end and base <= st and end <= base + buf.size:
                s, e = min(s, st), max(e, end)
            else:
                keep_s.append(st)
                keep_r.append(r)
        i = bisect.bisect_left(keep_s, s)
        keep_s.insert(i, s)
        keep_r.insert(i, buf[s - base:e - base])
        self.starts, self.regions = keep_s, keep_r

    def find(self, addr: int, size: int):
        """(bytes, offset) of the buffer holding ``[addr, addr+size)``, else None."""
        i = bisect.bisect_right(self.starts, addr) - 1
        if i >= 0 and addr + size <= self.starts[i] + self.regions[i].size:
            return self.regions[i], addr - self.starts[i]
        return None

    def view(self, addr: int, size: int, what: str):
        """The ``size`` bytes at ``addr`` as a writable uint8 view; MemoryFault if unmapped."""
        hit = self.find(addr, size)
        if hit is None:
            raise MemoryFault(f"{what}: global address {addr:#x} (+{size} B) is outside every array "
                              "this launch was given (out of bounds, or a wrong pointer)")
        buf, off = hit
        return buf[off:off + size]


def check_align(addrs: np.ndarray, size: int, what: str, rule: str = "") -> None:
    """MisalignedAddress if any address is not a multiple of ``size``."""
    bad = addrs % np.uint64(size) != 0
    if bad.any():
        a = int(addrs[np.argmax(bad)])
        raise MisalignedAddress(f"{what}: address {a:#x} is not a multiple of {size} B"
                                + (f" ({rule})" if rule else " (an access of N bytes needs an N-byte aligned address)"))


def gather(buf: np.ndarray, offs: np.ndarray, size: int) -> np.ndarray:
    """Bytes ``buf[off:off+size]`` for every offset: an (n, size) uint8 array."""
    if size == 1:
        return buf[offs][:, None]
    return buf[offs[:, None] + np.arange(size)]


def scatter(buf: np.ndarray, offs: np.ndarray, data: np.ndarray) -> None:
    """Write rows of ``data`` (n, size) at the offsets (later lanes win, as one of the GPU's orders)."""
    size = data.shape[1]
    if size == 1:
        buf[offs] = data[:, 0]
    else:
        buf[offs[:, None] + np.arange(size)] = data


def global_offsets(gm: GlobalMemory, addrs: np.ndarray, size: int, what: str):
    """Split lane addresses by buffer: yields (lane indices, buffer, offsets)."""
    a0 = int(addrs[0])
    hit = gm.find(a0, size)
    if hit is not None:
        buf, off = hit
        offs = addrs.astype(np.int64) - (a0 - off)
        if offs.min() >= 0 and offs.max() + size <= buf.size:
            yield np.arange(addrs.size), buf, offs
            return
    for i, a in enumerate(addrs.tolist()):
        hit = gm.find(a, size)
        if hit is None:
            raise MemoryFault(f"{what}: global address {a:#x} (+{size} B) is outside every array this launch "
                              "was given (out of bounds, or a wrong pointer)")
        yield np.array([i]), hit[0], np.array([hit[1]])


def shared_offsets(addrs: np.ndarray, size: int, smem_size: int, what: str, generic: bool = False) -> np.ndarray:
    """Offsets in the CTA's shared memory for shared::cta addresses (or generic shared ones)."""
    a = addrs.astype(np.int64)
    if generic:
        a = a - SHARED_WIN
    if (a < 0).any() or (a + size > smem_size).any():
        bad = int(addrs[np.argmax((a < 0) | (a + size > smem_size))])
        raise MemoryFault(f"{what}: shared address {bad:#x} (+{size} B) is outside this CTA's "
                          f"{smem_size} B of shared memory")
    return a


def space_of(addr: int) -> str:
    """Which window a generic address falls in: "global", "shared", "param" or "local"."""
    return {0: "global", 1: "shared", 2: "param", 3: "local"}.get(addr >> 56, "global")
