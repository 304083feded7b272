"""mbarrier objects (phases, pending arrivals, transaction bytes) and the asynchronous operations
that complete on them, with ``cp.async`` (commit/wait groups, ``cp.async.mbarrier.arrive``).

PTX ISA semantics (mbarrier): a phase completes when its pending arrival count AND its tx-count
are both zero; then the next phase starts with pending = the init count and tx-count 0.
``test_wait/try_wait.parity p`` is true when the phase of parity ``p`` is the one that just
completed, i.e. when the current (incomplete) phase's parity differs from ``p`` (so parity 1 is
"complete" right after init). A ``try_wait`` that fails makes the warp yield (:data:`SPIN`).

Visibility of ``mbarrier.init`` (PTX ISA, memory consistency model): the init is an ordinary
(generic-proxy) operation of the thread that runs it, and so is every later use of the mbarrier,
including the complete-tx of a TMA/bulk copy ("this instruction accesses its mbarrier operand
using generic-proxy"). A use is ordered after the init when it is in the initialising thread's own
program order, or after a CTA barrier (``bar.sync``/``__syncthreads``, ``__syncwarp``) with that
thread. A thread of ANOTHER CTA of the cluster (remote arrive, a copy signalling this CTA's
barrier) needs a cluster-scope release after the init (``fence.mbarrier_init.release.cluster``,
which "only applies to the prior mbarrier.init operations executed by the same thread", or a
non-``.relaxed`` ``barrier.cluster.arrive``) and its own ``barrier.cluster.wait`` after it. No
``fence.proxy.async`` is needed for the mbarrier itself (only for data). Any other use is a
:class:`RaceError`: on a GPU it may act on an uninitialised barrier.
"""
from __future__ import annotations

import numpy as np

from . import races
from .errors import MbarrierError, MbarrierInitRace, cuda_line
from .memory import CLUSTER_SHIFT, SHARED_WIN, check_align
from .operands import address, getter, setter
from .warp import SPIN

TX_LIMIT = 2**20 - 1


class Mbar:
    """One mbarrier in a CTA's shared memory at ``offset``."""

    def __init__(self, cta, offset: int, count: int, by: int | None = None, line: int | None = None):
        if not 1 <= count <= TX_LIMIT:
            raise MbarrierError(f"mbarrier.init count {count} is outside 1..{TX_LIMIT}")
        self.cta, self.offset, self.count = cta, offset, count
        self.init_by, self.init_line = by, line
        self.sees_init = np.zeros(cta.nthreads, bool)    # threads of its CTA ordered after the init
        self.released = np.zeros(cta.nthreads, bool)     # ... that then ran a cluster-scope release fence
        self.cluster_gen = None      # cluster barrier generation whose completion publishes the init
        if by is None:
            self.sees_init[:] = True
        else:
            self.sees_init[by] = True
        self.pending, self.tx, self.phase = count, 0, 0
        self.landing = []            # async ops whose bytes count toward the current phase
        self.slot = cta.new_slot()   # its column in cta.observed

    def state(self) -> str:
        """The barrier's phase, pending arrivals and tx-count, in words."""
        return (f"mbarrier at shared {self.offset:#x} of CTA {self.cta.ctaid}: phase {self.phase} "
                f"(parity {self.phase & 1}) incomplete, {self.pending} of {self.count} arrivals pending, "
                f"tx-count {self.tx} B" + (" (NEGATIVE: more bytes arrived than expect_tx declared)"
                                           if self.tx < 0 else " still expected" if self.tx else ""))

    def arrive(self, n: int = 1):
        """``n`` arrivals, one at a time (a phase may complete in between)."""
        for _ in range(n):
            self.pending -= 1
            self._maybe_complete()

    def tx_add(self, nbytes: int):
        """Add ``nbytes`` (negative: complete_tx) to the tx-count; check the PTX range."""
        self.tx += nbytes
        if abs(self.tx) > TX_LIMIT:
            raise MbarrierError(f"the tx-count of the mbarrier at shared {self.offset:#x} reached {self.tx}, "
                                f"outside +-{TX_LIMIT} (the PTX range)")
        self._maybe_complete()

    def _maybe_complete(self):
        launch = self.cta.launch
        launch.progress += 1
        if self.pending == 0 and self.tx == 0:
            self.phase += 1
            self.pending, self.tx = self.count, 0
            keep = []
            for op in self.landing:
                if op.done:
                    op.land()
                else:
                    keep.append(op)
            self.landing = keep

    def parity_done(self, parity) -> np.ndarray:
        """Has the phase of this parity completed (the try_wait.parity answer)?"""
        return (np.asarray(parity).astype(np.int64) & 1) != (self.phase & 1)


def shared_address(addr: int) -> int:
    """A shared-window address from a generic one (mbarrier ops without a state space)."""
    return addr - SHARED_WIN if addr >> 56 == 1 else addr


def check_init_seen(bar: Mbar, w, lanes, what: str):
    """Threads ``lanes`` (lane indices) of warp ``w`` use ``bar``: each must be ordered after its
    ``mbarrier.init`` (see the module docstring), else a :class:`RaceError` is reported."""
    lins = w.linear[lanes]
    same = w.cta is bar.cta
    if same and bar.sees_init[lins].all():
        return
    if bar.cluster_gen is not None and w.cluster_seen >= bar.cluster_gen:
        if same:
            bar.sees_init[lins] = True
        return
    t = int(lins[~bar.sees_init[lins]][0]) if same else int(lins[0])
    src = cuda_line(bar.init_line, text=False, inlined=False)
    init = f"mbarrier.init (thread {bar.init_by}, PTX line {bar.init_line}{', ' + src if src else ''})"
    if same:
        rule = "Put __syncthreads() between the init and its use, or use it only from the initialising thread"
    else:
        rule = (f"The barrier belongs to CTA {bar.cta.ctaid}, and __syncthreads() does not order other CTAs: after "
                "the init run fence.mbarrier_init.release.cluster (or a non-.relaxed barrier.cluster.arrive), then "
                "barrier.cluster.arrive/wait")
    races.report(w.launch, f"{what} by thread {t}: for that thread no mbarrier was initialised at shared "
                 f"{bar.offset:#x} yet, as nothing orders the {init} before this use (a GPU may find the barrier "
                 f"uninitialised). {rule}.", w.where(_mask(lanes)), MbarrierInitRace)
    if same:
        bar.sees_init[lins] = True       # report each thread once


def _mask(lanes):
    m = np.zeros(32, bool)
    m[lanes] = True
    return m


def find(cta, addr: int, what: str, w=None, lanes=None) -> Mbar:
    """The mbarrier at shared::cta / shared::cluster address ``addr`` (maybe in another CTA).
    With ``w`` (the warp using it) and ``lanes``, check that the init is visible to those threads."""
    addr = shared_address(addr)
    if addr % 8:
        check_align(np.array([addr], np.uint64), 8, what, "an mbarrier is 8 bytes, 8-byte aligned")
    rank = addr >> CLUSTER_SHIFT
    target = cta.cta_of(rank - 1) if rank else cta
    off = addr & ((1 << CLUSTER_SHIFT) - 1)
    bar = target.mbars.get(off)
    if bar is None:
        raise MbarrierError(f"{what}: no mbarrier was initialised at shared address {off:#x} of CTA "
                            f"{target.ctaid} (mbarrier.init must run first, then __syncthreads() before other "
                            "threads use it)")
    if w is not None:
        check_init_seen(bar, w, lanes, what)
    return bar


def _lane_values(w, m, g):
    idx = np.flatnonzero(w.run_mask if m is None else m)
    return idx, np.broadcast_to(g(w), (32,))[idx]


def compile_mbarrier(ins, k, sym):
    """Handlers for ``mbarrier.*`` instructions, else None (``cp.async`` is :mod:`.asyncops`)."""
    p, ops = ins.parts, ins.ops
    if p[0] == "mbarrier":
        kind = p[1]
        if kind == "init":
            a, c = address(ops[0], k, sym), getter(ops[1], np.uint32, k, sym)

            def h(w, m):
                idx, addrs = _lane_values(w, m, a)
                counts = np.broadcast_to(c(w), (32,))[idx]
                for lane, ad, n in zip(idx.tolist(), addrs.tolist(), counts.tolist()):
                    ad = shared_address(ad)
                    check_align(np.array([ad], np.uint64), 8, "mbarrier.init", "an mbarrier is 8-byte aligned")
                    w.cta.smem_bytes(ad, 8, "mbarrier.init")
                    w.cta.mbars[ad] = Mbar(w.cta, ad, int(n), int(w.linear[lane]), ins.line)
                w.launch.progress += 1
            return h
        if kind == "inval":
            a = address(ops[0], k, sym)

            def h(w, m):
                for ad in _lane_values(w, m, a)[1].tolist():
                    w.cta.mbars.pop(shared_address(ad), None)
            return h
        if kind in ("arrive", "arrive_drop", "expect_tx", "complete_tx"):
            tx = "expect_tx" in p or kind == "complete_tx"
            has_dst = kind in ("arrive", "arrive_drop")
            ai = 1 if has_dst else 0
            a = address(ops[ai], k, sym)
            extra = getter(ops[ai + 1], np.uint32, k, sym) if len(ops) > ai + 1 else None
            d = setter(ops[0], k) if has_dst else None
            what = ins.opcode

            def h(w, m):
                idx, addrs = _lane_values(w, m, a)
                vals = np.broadcast_to(extra(w), (32,))[idx].astype(np.int64) if extra else None
                token = np.zeros(32, np.uint64)
                uniform = addrs.size and (addrs == addrs[0]).all()
                for ad in ([addrs[0]] if uniform else np.unique(addrs).tolist()):
                    sel = np.ones(addrs.size, bool) if uniform else addrs == ad
                    bar = find(w.cta, int(ad), what, w, idx[sel])
                    token[idx[sel]] = bar.phase
                    v = vals[sel] if vals is not None else None
                    if kind == "complete_tx":
                        bar.tx_add(-int(v.sum()))
                    elif kind == "expect_tx":
                        bar.tx_add(int(v.sum()))
                    else:
                        n = int(sel.sum())
                        if kind == "arrive_drop":
                            bar.count -= n
                        if tx:
                            bar.tx += int(v.sum())
                            bar.arrive(n)
                        else:
                            bar.arrive(int(v.sum()) if v is not None else n)
                if d:
                    d(w, token, m)
            return h
        if kind in ("test_wait", "try_wait"):
            parity = "parity" in p
            what = ins.opcode
            a = address(ops[1], k, sym)
            s = getter(ops[2], np.uint64, k, sym)
            d = setter(ops[0], k)

            def h(w, m):
                idx, addrs = _lane_values(w, m, a)
                sv = np.broadcast_to(s(w), (32,))[idx]
                ok = np.zeros(32, bool)
                uniform = addrs.size and (addrs == addrs[0]).all()      # the usual case: skip np.unique
                for ad in ([addrs[0]] if uniform else np.unique(addrs).tolist()):
                    sel = np.ones(addrs.size, bool) if uniform else addrs == ad
                    bar = find(w.cta, int(ad), what, w, idx[sel])
                    st = sv[sel]
                    good = bar.parity_done(st) if parity else bar.phase > st.astype(np.int64)
                    ok[idx[sel]] = good
                    if good.any():
                        bar.cta.observe(w.linear[idx[sel][good]], bar)
                    if not good.all():
                        w.spin_on = (bar, int(st[0]) & 1 if parity else None, ins.line)
                d(w, ok, m)
                if not ok[idx].any():
                    return SPIN
                w.spin_on = None
            return h
        return None
    return None
