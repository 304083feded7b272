"""The asynchronous proxy: copies that complete later, at points the launch chooses adversarially.

Every copy becomes an :class:`AsyncOp` in ``launch.ops`` when issued; the scheduler
(:mod:`.launch`) completes it immediately, at a random later step, or as late as possible (only
when no warp can run), as the launch's seed decides. Groups (``cp.async.commit_group`` /
``cp.async.bulk.commit_group``) are kept per warp; a ``wait_group N`` completes every op of the
warp's groups but the newest N on the spot (which the hardware may also do). Here:
``cp.async`` (16/8/4 B per thread, zero fill), ``cp.async.mbarrier.arrive``, and the bulk-group
commits and waits; bulk and tensor copies are in :mod:`.bulk`.
"""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedPTX, cuda_line
from .memory import check_align
from .mbarrier import find
from .operands import address, getter


class AsyncOp:
    """A copy in flight. ``apply`` moves the bytes and signals; ``shadow`` = [(cta, lo, hi, kind)]
    are the shared ranges it owns until released ("loading" or "reading")."""

    def __init__(self, launch, warp, ins, kind: str, apply, shadow=(), mode=None):
        launch.op_seq += 1
        self.id, self.launch, self.warp, self.ins, self.kind = launch.op_seq, launch, warp, ins, kind
        self.apply, self.shadow, self.done, self.deps = apply, list(shadow), False, []
        self.phase_of = {}            # ctaid -> (mbarrier, phase its bytes counted toward)
        self.mode = mode or launch.rng.choice(launch.modes)
        for cta, lo, hi, which in self.shadow:
            getattr(cta.shadow, which)[lo:hi] = self.id
            if which == "loading":
                cta.shadow.landed[lo:hi] = 0
        launch.ops[self.id] = self
        launch.op_log[self.id] = self

    def start(self):
        """Issued: complete now if this op's fate is "now" (call after all bookkeeping)."""
        if self.mode == "now":
            self.complete()
        return self

    def describe(self) -> str:
        """Which copy this is, for messages: kind and PTX line."""
        src = cuda_line(self.ins.line, text=False, inlined=False)
        at = f"PTX line {self.ins.line}" + (f", {src}" if src else "")
        return f"the {self.kind} issued at {at} ({self.ins.text.split()[0]})"

    def complete(self):
        """Land the copy now (its dependencies first); idempotent."""
        if self.done:
            return
        for d in self.deps:
            d.complete()
        self.done = True
        self.launch.ops.pop(self.id, None)
        self.launch.progress += 1
        self.apply()

    def land(self):
        """Its mbarrier phase completed: its bytes move from "loading" to "landed"."""
        for cta, lo, hi, kind in self.shadow:
            if kind == "loading":
                seg, dst = cta.shadow.loading[lo:hi], cta.shadow.landed[lo:hi]
                mine = seg == self.id
                dst[mine] = self.id
                seg[mine] = 0

    def release_shadow(self, which=None):
        """Forget this op's claim on its shared bytes (``which``: only "loading" or "reading")."""
        for cta, lo, hi, kind in self.shadow:
            if which is None or kind == which:
                arr = getattr(cta.shadow, kind)
                seg = arr[lo:hi]
                seg[seg == self.id] = 0


def cp_async(ins, k, sym):
    """``cp.async.ca/cg.shared.global [dst], [src], cp-size{, src-size}``: per-thread 4/8/16-byte copies."""
    ops = ins.ops
    dst, src = address(ops[0], k, sym), address(ops[1], k, sym)
    size = int(ops[2], 0)
    # optional src-size (32-bit); a 64-bit operand there is the cache policy (ignored)
    has_size = len(ops) > 3 and k.regs.get(ops[3], "u32") not in ("b64", "u64", "s64")
    srcsize = getter(ops[3], np.uint32, k, sym) if has_size else None
    if size not in (4, 8, 16):
        raise UnsupportedPTX(f"cp.async size {size} (must be 4, 8 or 16)", ins.line, ins.text)

    def h(w, m):
        idx = np.flatnonzero(w.run_mask if m is None else m)
        d = np.broadcast_to(dst(w), (32,))[idx].astype(np.int64)
        s = np.broadcast_to(src(w), (32,))[idx]
        n = np.broadcast_to(srcsize(w), (32,))[idx].astype(np.int64) if srcsize else np.full(idx.size, size)
        check_align(d.astype(np.uint64), size, "cp.async destination")
        check_align(s, size, "cp.async source")
        for off in d.tolist():
            w.cta.smem_bytes(off, size, "cp.async destination")
        cta, launch = w.cta, w.launch
        rows = [(int(a), int(b), int(c)) for a, b, c in zip(d.tolist(), s.tolist(), n.tolist())]
        for a, b, c in rows:
            if c:
                launch.gmem.view(b, c, "cp.async source")

        def apply():
            for a, b, c in rows:
                data = np.zeros(size, np.uint8)
                if c:
                    data[:c] = launch.gmem.view(b, c, "cp.async source")
                cta.smem[a:a + size] = data
                cta.shadow.writer[a:a + size] = -1
            op.release_shadow()
        op = AsyncOp(launch, w, ins, "cp.async", apply, [(cta, a, a + size, "loading") for a, _, _ in rows])
        w.cp_open.append(op)
        op.start()
    return h


def _finish_groups(groups, keep: int, what: str):
    """Complete every op of ``groups`` but the newest ``keep`` groups; return the groups kept."""
    old = groups[:len(groups) - keep] if keep < len(groups) else []
    for g in old:
        for op in g:
            op.complete()
            op.release_shadow("reading")
            op.release_shadow("loading")
    return groups[len(old):]


def cp_async_group(ins, k, sym):
    """cp.async.commit_group / wait_group N / wait_all / mbarrier.arrive(.noinc)."""
    p, ops = ins.parts, ins.ops
    kind = p[2]
    if kind == "commit_group":
        def h(w, m):
            w.cp_groups.append(w.cp_open)
            w.cp_open = []
        return h
    if kind in ("wait_group", "wait_all"):
        n = int(ops[0], 0) if kind == "wait_group" else 0

        def h(w, m):
            if kind == "wait_all":
                w.cp_groups.append(w.cp_open)
                w.cp_open = []
            w.cp_groups = _finish_groups(w.cp_groups, n, ins.opcode)
        return h
    if kind == "mbarrier":
        a = address(ops[0], k, sym)
        noinc = "noinc" in p

        def h(w, m):
            idx = np.flatnonzero(w.run_mask if m is None else m)
            addrs = np.broadcast_to(a(w), (32,))[idx]
            bars = [find(w.cta, int(x), ins.opcode, w, idx[j:j + 1]) for j, x in enumerate(addrs.tolist())]
            if not noinc:
                for b in bars:
                    b.pending += 1
            deps = [op for g in w.cp_groups for op in g] + list(w.cp_open)

            def apply():
                for b in bars:
                    b.arrive(1)
            op = AsyncOp(w.launch, w, ins, "cp.async.mbarrier.arrive", apply)
            op.deps = [d for d in deps if not d.done]
            op.start()
        return h
    return None


def bulk_group(ins, k, sym):
    """cp.async.bulk.commit_group / wait_group(.read) N for the warp's bulk stores."""
    p, ops = ins.parts, ins.ops
    if "commit_group" in p:
        def h(w, m):
            w.bulk_groups.append(w.bulk_open)
            w.bulk_open = []
        return h
    n = int(ops[0], 0)

    def h(w, m):
        w.bulk_groups = _finish_groups(w.bulk_groups, n, ins.opcode)
    return h


def compile_cp_async(ins, k, sym):
    """The handler of a ``cp.async`` copy or group instruction, or None for any other opcode."""
    p = ins.parts
    if p[0] != "cp" or len(p) < 3 or p[1] != "async":
        return None
    if p[2] in ("ca", "cg"):
        return cp_async(ins, k, sym)
    if p[2] in ("commit_group", "wait_group", "wait_all", "mbarrier"):
        return cp_async_group(ins, k, sym)
    return None
