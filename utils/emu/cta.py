"""A CTA: its warps, shared memory (with the race shadows of :mod:`.races`), mbarriers and
``bar.sync`` barriers; and the load/store paths every memory instruction goes through."""
from __future__ import annotations

import numpy as np

from . import races
from .errors import MemoryFault, UnsupportedPTX
from .memory import (CLUSTER_SHIFT, LOCAL_WIN, SHARED_WIN, WIN_MASK, check_align, gather,
                     global_offsets, scatter, shared_offsets)
from .warp import EXIT, WAIT, Warp


class CTA:
    """One thread block: ``ctaid`` (x, y, z), its cluster coordinates, warps and shared memory."""

    def __init__(self, launch, ctaid, cluster_ctaid, clusterid, rank):
        self.launch, self.ctaid, self.cluster_ctaid, self.clusterid, self.rank = \
            launch, ctaid, cluster_ctaid, clusterid, rank
        bx, by, bz = launch.block
        self.nthreads = bx * by * bz
        self.smem = np.zeros(launch.smem_size, np.uint8)
        self.shadow = races.Shadow(launch.smem_size)
        self.mbars = {}
        self.bar_waiting = {}                       # barrier id -> set of warps with lanes waiting
        self.fences = np.zeros(self.nthreads, np.int64)
        self.synced = np.zeros(self.nthreads, np.int64)
        self.observed = np.zeros((self.nthreads, 4), np.int64)   # completed phases seen, per mbarrier slot
        self.local = np.zeros((self.nthreads, max(launch.local_size, 1)), np.uint8)
        self.warps = [Warp(self, w) for w in range(-(-self.nthreads // 32))]
        self.cluster = None                         # list of the cluster's CTAs, set by the launch

    # ---- barriers ------------------------------------------------------------------------------
    def live_threads(self) -> int:
        """Threads of this CTA that have not exited."""
        return int(sum((w.state != EXIT).sum() for w in self.warps))

    def bar_arrive(self, warp, m, bar_id: int, count: int | None):
        """Lanes ``m`` of ``warp`` reach ``bar.sync bar_id``; release everyone when all are there.
        Returns True when this arrival completed the barrier (the lanes need not block)."""
        lin = warp.linear[m]
        self.synced[lin] = self.fences[lin]
        self.bar_waiting.setdefault(bar_id, {})[warp.wid] = warp
        self.launch.progress += 1
        return self._check_bar(bar_id, count, extra=(warp, m))

    def _check_bar(self, bar_id, count=None, extra=None):
        waiting = self.bar_waiting.get(bar_id, {})
        n = sum(int((w.state == WAIT).sum()) for w in waiting.values())
        if extra is not None:
            n += int(extra[1].sum())
        need = count if count else self.live_threads()
        if n >= need and n > 0:
            self.bar_waiting[bar_id] = {}
            self.share_observations()
            for w in waiting.values():
                w.release(np.ones(32, bool))
            return True
        return False

    def on_exit(self, warp):
        """Exited threads no longer count toward ``bar.sync``: maybe release a barrier."""
        for bar_id, waiting in list(self.bar_waiting.items()):
            if waiting:
                self._check_bar(bar_id)
        if self.launch.cluster_size > 1:
            self.launch.check_cluster_barrier(self)
        if all(not w.live() for w in self.warps):
            races.on_cta_exit(self)

    def new_slot(self) -> int:
        """A column of :attr:`observed` for a new mbarrier."""
        slot = getattr(self, "_slots", 0)
        self._slots = slot + 1
        if slot >= self.observed.shape[1]:
            self.observed = np.concatenate([self.observed, np.zeros_like(self.observed)], 1)
        return slot

    def observe(self, lins, bar):
        """Threads ``lins`` saw ``bar``'s phases up to its current one complete (a successful wait)."""
        col = self.observed[:, bar.slot]
        col[lins] = np.maximum(col[lins], bar.phase)

    def share_observations(self, lins=None):
        """A barrier orders the threads ``lins`` (default: the whole CTA): each now knows what any saw."""
        if lins is None:
            self.observed[:] = self.observed.max(0)
        else:
            self.observed[lins] = self.observed[lins].max(0)
        for bar in self.mbars.values():          # ... including an mbarrier.init one of them ran
            if lins is None:
                if not bar.sees_init.all() and bar.sees_init.any():
                    bar.sees_init[:] = True
            elif bar.sees_init[lins].any():
                bar.sees_init[lins] = True

    # ---- memory ----------------------------------------------------------------------------------
    def cta_of(self, rank: int):
        """The CTA of cluster rank ``rank`` (MemoryFault if the cluster has none)."""
        if self.cluster is None or not 0 <= rank < len(self.cluster):
            raise MemoryFault(f"shared::cluster address names CTA rank {rank}, but the cluster has "
                              f"{1 if self.cluster is None else len(self.cluster)} CTA(s)")
        return self.cluster[rank]

    def resolve(self, space: str, addrs: np.ndarray):
        """(space, addresses) with generic addresses turned into their window's space."""
        if space != "generic":
            return space, addrs
        win = addrs >> np.uint64(56)
        w0 = int(win[0])
        if (win != w0).any():
            raise UnsupportedPTX("one generic load/store whose lanes point into different state spaces")
        if w0 == 0:
            return "global", addrs
        if w0 == 1:
            return "shared", addrs - np.uint64(SHARED_WIN)
        if w0 == 2:
            return "param", addrs
        return "local", addrs - np.uint64(LOCAL_WIN)

    def _shared_target(self, addrs, size, what, cluster):
        """(CTA, offsets) for shared addresses; ``cluster`` addresses may name another CTA."""
        a = addrs.astype(np.uint64)
        rank = (a >> np.uint64(CLUSTER_SHIFT)).astype(np.int64)
        target = self
        if cluster and (rank > 0).any():
            r0 = int(rank[0])
            if (rank != r0).any():
                raise UnsupportedPTX("one shared::cluster access whose lanes name different CTAs")
            target = self.cta_of(r0 - 1)
            a = a & np.uint64((1 << CLUSTER_SHIFT) - 1)
        return target, shared_offsets(a, size, target.smem.size, what)

    def load(self, space, addrs, size, warp, lanes, what):
        """Bytes (n, size) read by the lanes ``lanes`` (indices) at ``addrs`` (their addresses)."""
        space, addrs = self.resolve(space, addrs)
        check_align(addrs, min(size, 16), what)
        if space == "global":
            out = np.empty((addrs.size, size), np.uint8)
            for idx, buf, offs in global_offsets(self.launch.gmem, addrs, size, what):
                out[idx] = gather(buf, offs, size)
            return out
        if space in ("shared", "shared::cta", "shared::cluster"):
            cta, offs = self._shared_target(addrs, size, what, space != "shared::cta")
            races.check_read(cta, offs, size, warp, lanes, what)
            return gather(cta.smem, offs, size)
        if space == "param":
            p = self.launch.params
            offs = (addrs & np.uint64(WIN_MASK)).astype(np.int64)
            if (offs < 0).any() or (offs + size > p.size).any() or ((addrs >> np.uint64(56)) != 2).any():
                raise MemoryFault(f"{what}: param address {int(addrs[0]):#x} is outside the kernel's parameters")
            return gather(p, offs, size)
        if space == "local":
            offs = addrs.astype(np.int64)
            lin = warp.linear[lanes]
            return self.local[lin[:, None], offs[:, None] + np.arange(size)]
        raise UnsupportedPTX(f"loads from the .{space} state space are not modelled")

    def store(self, space, addrs, data, warp, lanes, what):
        """Write rows of ``data`` (n, size) for lanes ``lanes`` at ``addrs``."""
        size = data.shape[1]
        space, addrs = self.resolve(space, addrs)
        check_align(addrs, min(size, 16), what)
        self.launch.progress += 1
        if space == "global":
            for idx, buf, offs in global_offsets(self.launch.gmem, addrs, size, what):
                scatter(buf, offs, data[idx])
            if self.launch.tmaps.tracks:
                self.launch.tmaps.written(addrs, size, (self.ctaid, int(warp.linear[lanes[0]])))
            return
        if space in ("shared", "shared::cta", "shared::cluster"):
            cta, offs = self._shared_target(addrs, size, what, space != "shared::cta")
            races.check_write(cta, offs, size, warp, lanes, what)
            scatter(cta.smem, offs, data)
            return
        if space == "local":
            lin = warp.linear[lanes]
            self.local[lin[:, None], addrs.astype(np.int64)[:, None] + np.arange(size)] = data
            return
        if space == "param":
            raise MemoryFault(f"{what}: kernel parameters are read-only")
        raise UnsupportedPTX(f"stores to the .{space} state space are not modelled")

    def smem_bytes(self, offset: int, size: int, what: str):
        """A view of ``size`` bytes of this CTA's shared memory at ``offset`` (bounds-checked)."""
        if offset < 0 or offset + size > self.smem.size:
            raise MemoryFault(f"{what}: shared bytes [{offset:#x}, {offset + size:#x}) are outside this CTA's "
                              f"{self.smem.size} B of shared memory")
        return self.smem[offset:offset + size]

