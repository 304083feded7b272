"""Every memory access of one emulated launch, for checks that judge HOW a kernel moves its data
(bank conflicts, coalescing, barriers), not only what it leaves in memory.

:func:`traced_launch` runs :func:`utils.emu.launch` and records, per warp instruction that touches
global or shared memory: load or store, the PTX line, the CTA, the warp, the threads of the active
lanes, their byte addresses (for shared memory: offsets in the CTA's shared memory) and the access
size. It counts the block barriers each thread passed, and keeps, per shared byte, the thread that last wrote it and how many block barriers its
CTA had completed then, so a read of another thread's write with no ``__syncthreads()`` between is
found (the emulator runs each warp in lockstep, so such a read may happen to see the right value there;
on a GPU it need not).

The addresses are the ones the compiled kernel computes (the emulator executes NVRTC's ``sm_90a`` PTX);
what they cost comes from the bank and sector models of :mod:`.memory_model`: a model, not a counter.
The emulator has no observer hook, so the recording wraps its CTA's ``load``, ``store`` and barrier
methods for the duration of one launch and restores them afterwards.
"""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field

import numpy as np

from . import memory_model as mm
from ..emu.memory import CLUSTER_SHIFT

SHARED = ("shared", "shared::cta", "shared::cluster")


@dataclass
class Access:
    """One warp instruction's memory access: ``op`` "ld" or "st", ``space`` "shared" or "global"."""
    op: str
    space: str
    line: int | None
    text: str
    cta: tuple
    warp: int
    threads: np.ndarray
    addresses: np.ndarray
    size: int

    def wavefronts(self) -> tuple[int, int]:
        """(wavefronts in the bank model, the fewest its bytes could need): the most distinct 4-byte
        words it asks of one bank, and its distinct words / 32 rounded up. Equal: conflict-free."""
        words = np.unique((self.addresses[:, None] // mm.WORD
                           + np.arange(max(1, self.size // mm.WORD))).ravel())
        return mm.conflict_ways(words * mm.WORD), -(-words.size // mm.BANKS)

    def sectors(self) -> tuple[int, int]:
        """(32-byte sectors it touches, the sectors its bytes would touch as one contiguous run from its
        lowest address). Equal: coalesced."""
        lo = int(self.addresses.min())
        need = (lo + self.addresses.size * self.size - 1) // mm.SECTOR - lo // mm.SECTOR + 1
        return mm.sectors_touched(self.addresses, self.size), need


@dataclass
class Trace:
    """What :func:`traced_launch` recorded: ``accesses`` in execution order, the first unsynchronised
    shared read found (``race``: reader, writer, byte offset, PTX text) and the report."""
    accesses: list = field(default_factory=list)
    race: dict | None = None
    report: object = None
    _shadow: dict = field(default_factory=dict, repr=False)
    _arrivals: dict = field(default_factory=dict, repr=False)

    def split_barrier(self) -> dict | None:
        """The first CTA whose threads passed different numbers of ``bar.sync`` (a ``__syncthreads()``
        that some threads skipped: undefined in CUDA, though the emulator, like many GPUs, lets the
        exited threads count): ``{"cta", "counts": {barriers passed: threads}}``, else None."""
        for ctaid, counts in self._arrivals.values():
            if counts.min() != counts.max():
                values, n = np.unique(counts, return_counts=True)
                return {"cta": ctaid, "counts": dict(zip(values.tolist(), n.tolist()))}
        return None

    def of(self, op: str, space: str) -> list:
        """The accesses with this ``op`` ("ld"/"st") in this ``space`` ("shared"/"global")."""
        return [a for a in self.accesses if a.op == op and a.space == space]

    def _note(self, cta, op, space, addrs, size, warp, lanes):
        space, addrs = cta.resolve(space, np.asarray(addrs, np.uint64))
        if space in SHARED:                                 # the offset in its CTA (cluster rank bits off)
            space, addrs = "shared", addrs & np.uint64((1 << CLUSTER_SHIFT) - 1)
        elif space != "global":
            return
        ins = cta.launch.current
        acc = Access(op, space, getattr(ins, "line", None), getattr(ins, "text", ""), cta.ctaid, warp.wid,
                     warp.linear[lanes].copy(), addrs.astype(np.int64), int(size))
        self.accesses.append(acc)
        if space == "shared":
            self._shadow_access(cta, acc)

    def _shadow_access(self, cta, acc):
        sh = self._shadow.setdefault(id(cta), {"writer": np.full(cta.smem.size, -1, np.int64),
                                               "epoch": np.zeros(cta.smem.size, np.int64), "now": 0})
        rows = acc.addresses[:, None] + np.arange(acc.size)
        rows = np.clip(rows, 0, cta.smem.size - 1)
        who = np.broadcast_to(acc.threads[:, None], rows.shape)
        if acc.op == "st":
            sh["writer"][rows], sh["epoch"][rows] = who, sh["now"]
            return
        w, e = sh["writer"][rows], sh["epoch"][rows]
        bad = (w >= 0) & (w != who) & (e == sh["now"])
        if bad.any() and self.race is None:
            i = tuple(np.argwhere(bad)[0])
            self.race = {"reader": int(who[i]), "writer": int(w[i]), "offset": int(rows[i]), "cta": cta.ctaid,
                         "text": acc.text}

    def _barrier(self, cta):
        sh = self._shadow.get(id(cta))
        if sh is not None:
            sh["now"] += 1


@contextlib.contextmanager
def _recording(trace: Trace):
    from ..emu.cta import CTA
    load, store, check_bar, arrive = CTA.load, CTA.store, CTA._check_bar, CTA.bar_arrive

    def traced_load(self, space, addrs, size, warp, lanes, what):
        out = load(self, space, addrs, size, warp, lanes, what)        # faults are raised first
        trace._note(self, "ld", space, addrs, size, warp, lanes)
        return out

    def traced_store(self, space, addrs, data, warp, lanes, what):
        store(self, space, addrs, data, warp, lanes, what)
        trace._note(self, "st", space, addrs, data.shape[1], warp, lanes)

    def traced_bar(self, *args, **kwargs):
        done = check_bar(self, *args, **kwargs)
        if done:
            trace._barrier(self)
        return done

    def traced_arrive(self, warp, m, *args, **kwargs):
        counts = trace._arrivals.setdefault(id(self), (self.ctaid, np.zeros(self.nthreads, np.int64)))[1]
        lin = warp.linear[m]
        counts[lin[lin < self.nthreads]] += 1
        return arrive(self, warp, m, *args, **kwargs)

    CTA.load, CTA.store, CTA._check_bar, CTA.bar_arrive = traced_load, traced_store, traced_bar, traced_arrive
    try:
        yield trace
    finally:
        CTA.load, CTA.store, CTA._check_bar, CTA.bar_arrive = load, store, check_bar, arrive


def traced_launch(source: str, kernel: str, grid, block, args, **launch_kwargs) -> Trace:
    """:func:`utils.emu.launch` with every global and shared access recorded (see module docstring).
    Emulator errors propagate; the trace up to the error is lost with them."""
    from ..emu import launch
    trace = Trace()
    with _recording(trace):
        trace.report = launch(source, kernel, grid, block, args, **launch_kwargs)
    return trace
