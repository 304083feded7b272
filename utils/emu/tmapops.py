"""Descriptors changed during a kernel: ``tensormap.replace``, ``tensormap.cp_fenceproxy`` and the
tensormap proxy fences, with the order the PTX memory model asks for.

A descriptor in GLOBAL memory that the kernel changes (``tensormap.replace`` or ordinary stores)
must be released to the tensormap proxy by its writer (``fence.proxy.tensormap::generic.release``
or ``tensormap.cp_fenceproxy ... .release``) and acquired by the thread that then uses it
(``fence.proxy.tensormap::generic.acquire [addr], 128``) before a TMA instruction reads it;
changing it while a TMA copy that uses it is in flight is a race too. :class:`TmapTracker`
remembers, per 64-byte granule of global memory, the last such change.
"""
from __future__ import annotations

import numpy as np

from . import races
from .errors import UnsupportedPTX
from .memory import SHARED_WIN
from .operands import address, getter
from .tensormap import replace


class TmapTracker:
    """Global-memory changes that matter for descriptors (ordinary stores are tracked only when the
    kernel has tensormap instructions: ``tracks``)."""

    def __init__(self, launch, tracks: bool):
        self.launch, self.tracks = launch, tracks
        self.seq = 0
        self.writes = {}          # granule -> [seq, writer linear id (CTA, tid), released]
        self.acquired = {}        # (cta, tid, granule) -> seq at acquire

    def written(self, addrs, size, who, released=False):
        """Record a generic-proxy change of global bytes by thread ``who``."""
        for a in np.unique(np.asarray(addrs, np.uint64) & ~np.uint64(63)).tolist():
            for g in range(a, a + max(size, 1), 64):
                self.seq += 1
                self.writes[g] = [self.seq, who, released]

    def release(self, who):
        """``fence.proxy.tensormap::generic.release`` by ``who``: its changes are released."""
        for rec in self.writes.values():
            if rec[1] == who:
                rec[2] = True

    def acquire(self, who, addr):
        """``fence.proxy.tensormap::generic.acquire [addr], 128`` by ``who``."""
        for g in (addr & ~63, (addr & ~63) + 64):
            self.acquired[who + (g,)] = self.seq

    def check_use(self, w, addr, what):
        """A TMA instruction of warp ``w`` reads the descriptor at global ``addr``: check the order."""
        lane = int(np.flatnonzero(w.run_mask)[0]) if w.run_mask.any() else 0
        who = (w.cta.ctaid, int(w.linear[lane]))
        if all(self.acquired.get(who + (g,)) is None for g in (addr & ~63, (addr & ~63) + 64)):
            races.report(self.launch, f"{what} uses the tensor map at {addr:#x} in global memory, which this "
                         "thread never acquired: the tensormap proxy is not acquired from the generic proxy at "
                         "kernel start (PTX memory model), so fence.proxy.tensormap::generic.acquire [addr], 128 "
                         "must come first.", w.where())
            return
        for g in (addr & ~63, (addr & ~63) + 64):
            rec = self.writes.get(g)
            if rec is None:
                continue
            seq, writer, released = rec
            if not released:
                races.report(self.launch, f"{what} uses the tensor map at {addr:#x}, changed in global memory by "
                             f"thread {writer[1]} of CTA {writer[0]} with no release to the tensormap proxy "
                             "(fence.proxy.tensormap::generic.release, or tensormap.cp_fenceproxy) after the change.",
                             w.where())
            elif self.acquired.get(who + (g,), -1) < seq:
                races.report(self.launch, f"{what} uses the tensor map at {addr:#x} after it changed, without "
                             "fence.proxy.tensormap::generic.acquire on it in this thread first: the TMA unit may "
                             "still use the old descriptor.", w.where())


def _who(w, i):
    return (w.cta.ctaid, int(w.linear[i]))


def compile_tmap(ins, k, sym):
    """tensormap.replace / tensormap.cp_fenceproxy / fence.proxy.tensormap::generic.*"""
    p, ops = ins.parts, ins.ops
    if p[0] == "fence":
        if "release" in p:
            def h(w, m):
                for i in np.flatnonzero(w.run_mask if m is None else m).tolist():
                    w.launch.tmaps.release(_who(w, i))
            return h
        a = address(ops[0], k, sym)

        def h2(w, m):
            for i in np.flatnonzero(w.run_mask if m is None else m).tolist():
                w.launch.tmaps.acquire(_who(w, i), int(np.broadcast_to(a(w), (32,))[i]))
        return h2
    if p[1] == "replace":
        field = p[3]
        shared = "shared::cta" in p
        a = address(ops[0], k, sym)
        ordg = getter(ops[1], np.uint32, k, sym) if len(ops) == 3 else None
        val = getter(ops[-1], np.uint64 if p[-1] == "b64" else np.uint32, k, sym)

        def h3(w, m):
            for i in np.flatnonzero(w.run_mask if m is None else m).tolist():
                addr = int(np.broadcast_to(a(w), (32,))[i])
                o = int(np.broadcast_to(ordg(w), (32,))[i]) if ordg else None
                v = int(np.broadcast_to(val(w), (32,))[i])
                if shared:
                    raw = w.cta.smem_bytes(addr, 128, ins.opcode)
                else:
                    raw = w.launch.gmem.view(addr, 128, ins.opcode)
                    for op in list(w.launch.ops.values()):
                        if getattr(op, "tmap", None) == addr:
                            races.report(w.launch, f"{ins.opcode} changes the tensor map at {addr:#x} while "
                                         f"{op.describe()} that uses it is still in flight: that copy may see "
                                         "either descriptor.", w.where())
                    w.launch.tmaps.written([addr], 128, _who(w, i))
                replace(raw, field, o, v)
        return h3
    if p[1] == "cp_fenceproxy":
        g, s = address(ops[0], k, sym), address(ops[1], k, sym)
        n = int(ops[2], 0)

        def h4(w, m):
            idx = np.flatnonzero(w.run_mask if m is None else m)
            i = int(idx[0])                       # .sync.aligned: the warp executes it once
            gd, sd = int(np.broadcast_to(g(w), (32,))[i]), int(np.broadcast_to(s(w), (32,))[i])
            if sd >= SHARED_WIN:
                sd -= SHARED_WIN
            w.launch.gmem.view(gd, n, ins.opcode)[:] = w.cta.smem_bytes(sd, n, ins.opcode)
            w.launch.tmaps.written([gd], n, _who(w, i), released=True)
        return h4
    raise UnsupportedPTX(f"{ins.opcode} is not modelled", ins.line, ins.text)
