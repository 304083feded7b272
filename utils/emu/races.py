"""Race detection on shared memory: shadow bytes that remember who wrote what, and which
asynchronous copies still own which bytes.

Per shared-memory byte of a CTA the :class:`Shadow` keeps
  * ``writer``/``wfence``: the thread (linear id) whose generic-proxy store wrote it last, and how
    many ``fence.proxy.async`` that thread had executed then;
  * ``loading``: a TMA/bulk/cp.async load will write it and its mbarrier phase has not completed
    (or its cp.async group was not waited for): reading or writing it now is a race;
  * ``reading``: a bulk/TMA store reads it and the issuing thread has not yet passed a
    ``cp.async.bulk.wait_group.read`` that covers that store: overwriting it is a race;
  * ``landed``: a TMA/bulk load delivered it and its mbarrier phase completed: a thread may read it
    only if it observed that phase (its own try_wait/test_wait, or a barrier with a thread that did;
    ``CTA.observed``).

A TMA store's source bytes must each have been fenced (``fence.proxy.async``) by their writer after
the write: in the issuing thread's own order, or before the barrier that orders the writer with the
issuing thread. Each finding raises :class:`RaceError`, or is recorded in the report when the launch
is not ``strict``.
"""
from __future__ import annotations

import numpy as np

from .errors import RaceError


class Shadow:
    """The shadow state of one CTA's shared memory."""

    def __init__(self, size: int):
        self.writer = np.full(size, -1, np.int32)
        self.wfence = np.zeros(size, np.int64)
        self.loading = np.zeros(size, np.int32)
        self.reading = np.zeros(size, np.int32)
        self.landed = np.zeros(size, np.int32)     # bytes a TMA/bulk load delivered (op id)


def report(launch, message: str, where: str = "", cls=RaceError):
    """Raise (strict) or record a race (``cls``, a RaceError), naming the instruction being executed."""
    ins = launch.current
    err = cls(message, ins.line if ins else None, ins.text if ins else None, where)
    if launch.strict:
        raise err
    text = str(err)[len("emulator: "):]
    if text not in launch.report.races:
        launch.report.races.append(text)


def _rows(offs, size):
    return (offs[:, None] + np.arange(size)).reshape(-1)


def check_read(cta, offs, size, warp, lanes, what):
    """A generic-proxy read of shared bytes: none may still be owed by an async load."""
    idx = _rows(offs, size)
    pend = cta.shadow.loading[idx]
    if pend.any():
        op = cta.launch.op_log.get(int(pend[pend != 0][0]))
        off = int(idx[np.argmax(pend != 0)])
        report(cta.launch, f"{what} reads shared byte {off:#x} before the asynchronous copy that fills it "
               f"({op.describe() if op else 'a load'}) is known complete: wait on its mbarrier phase "
               "(or its cp.async group) first. On a GPU this read may see old bytes.",
               warp.where(_mask(lanes)))
        return
    ld = cta.shadow.landed[idx]
    if ld.any():
        lins = np.repeat(warp.linear[lanes], size)
        hit = _unobserved(cta, ld, lambda oid: np.unique(lins[ld == oid]))
        if hit:
            report(cta.launch, _observed_message(what, hit), warp.where(_mask(lanes)))


def _unobserved(cta, ids, readers):
    """(op, mbarrier, phase) of the first load among ``ids`` whose phase a reader never observed."""
    for oid in np.unique(ids[ids != 0]).tolist():
        op = cta.launch.op_log.get(oid)
        bar, ph = op.phase_of.get(cta.ctaid, (None, None)) if op else (None, None)
        if bar is not None:
            who = readers(oid)
            if (cta.observed[who, bar.slot] <= ph).any():
                return op, bar, ph, int(who[np.argmax(cta.observed[who, bar.slot] <= ph)])
    return None


def _observed_message(what, hit):
    op, bar, ph, t = hit
    return (f"{what}: thread {t} reads bytes that {op.describe()} delivered, but it never saw phase {ph} of the "
            f"mbarrier at shared {bar.offset:#x} complete (no successful try_wait/test_wait of its own, and no "
            "barrier with a thread that had one): on a GPU it may read the bytes before they land.")


def check_write(cta, offs, size, warp, lanes, what):
    """A generic-proxy write: not into bytes an async copy still owns; remember the writer."""
    idx = _rows(offs, size)
    sh = cta.shadow
    for kind, arr in (("still being read by", sh.reading), ("still being filled by", sh.loading)):
        pend = arr[idx]
        if pend.any():
            op = cta.launch.op_log.get(int(pend[pend != 0][0]))
            off = int(idx[np.argmax(pend != 0)])
            rule = ("cp.async.bulk.wait_group.read must say the store has read its source before the "
                    "buffer is reused" if arr is sh.reading else "wait for the copy's mbarrier phase first")
            report(cta.launch, f"{what} overwrites shared byte {off:#x}, {kind} "
                   f"{op.describe() if op else 'an asynchronous copy'}: {rule}.", warp.where(_mask(lanes)))
    lin = np.repeat(warp.linear[lanes], size)
    sh.landed[idx] = 0
    sh.writer[idx] = lin
    sh.wfence[idx] = cta.fences[lin]


def _mask(lanes):
    m = np.zeros(32, bool)
    m[lanes] = True
    return m


def check_store_source(cta, start, size, issuer: int, what, where):
    """A TMA/bulk store issued by thread ``issuer`` reads ``[start, start+size)``: every byte
    written by threads must have been fenced by ``fence.proxy.async`` (see module docstring)."""
    sh = cta.shadow
    w = sh.writer[start:start + size]
    written = w >= 0
    if written.any():
        wl = np.where(written, w, 0)
        f = sh.wfence[start:start + size]
        fenced = np.where(wl == issuer, cta.fences[wl] > f, cta.synced[wl] > f)
        bad = written & ~fenced
        if bad.any():
            i = int(np.argmax(bad))
            t = int(wl[i])
            report(cta.launch, f"{what} reads shared byte {start + i:#x}, written by thread {t} with an ordinary "
                   f"store and no fence.proxy.async after that write (before the barrier that orders it with "
                   f"the storing thread). The copy engine (async proxy) may read the old bytes.", where)
    ld = sh.landed[start:start + size]
    if ld.any():
        hit = _unobserved(cta, ld, lambda oid: np.array([issuer]))
        if hit:
            report(cta.launch, _observed_message(what, hit), where)
    pend = sh.loading[start:start + size]
    if pend.any():
        report(cta.launch, f"{what} reads shared byte {start + int(np.argmax(pend != 0)):#x} that an "
               "asynchronous load has not finished filling.", where)


def check_async_write(cta, start, size, what, where):
    """An asynchronous load into ``[start, start+size)``: no store may still be reading those
    bytes, and no other load may still be filling them."""
    sh = cta.shadow
    for arr, rule in ((sh.reading, "a bulk/TMA store still reads them (cp.async.bulk.wait_group.read "
                                   "must come first)"),
                      (sh.loading, "another asynchronous load is still filling them")):
        pend = arr[start:start + size]
        if pend.any():
            op = cta.launch.op_log.get(int(pend[pend != 0][0]))
            report(cta.launch, f"{what} overwrites shared byte {start + int(np.argmax(pend != 0)):#x} while "
                   f"{rule}" + (f": {op.describe()}" if op else "") + ".", where)


def on_cta_exit(cta):
    """A CTA ends: no bulk store may still be reading its shared memory."""
    r = cta.shadow.reading
    if r.any():
        op = cta.launch.op_log.get(int(r[r != 0][0]))
        report(cta.launch, f"CTA {cta.ctaid} exited while {op.describe() if op else 'a bulk store'} may still "
               "read its shared memory: cp.async.bulk.wait_group.read 0 must come before the CTA ends.")
