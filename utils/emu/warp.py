"""A warp: 32 lanes in lockstep, registers as NumPy arrays, divergence by per-lane program counters.

Scheduling inside a warp: while every running lane is at the same instruction the warp is
"uniform" (one PC). After a divergent branch each lane keeps its own PC and the warp runs the
lanes at the SMALLEST PC first (min-PC reconvergence): the lanes that skipped ahead wait at the
join point until the others catch up, which is where structured code reconverges.

A lane is RUN, EXIT or WAIT (blocked at ``bar.sync`` / ``barrier.cluster.wait``). A warp whose
``try_wait`` / ``test_wait`` found its phase incomplete is *spinning*: the scheduler leaves it
alone until something changes (:attr:`Launch.progress`), so polling loops cost nothing.
"""
from __future__ import annotations

import numpy as np

from .errors import EmulatorError, UnsupportedPTX
from .operands import storage

RUN, EXIT, WAIT = 0, 1, 2
BLOCK = "block"          # handler result: the lanes of the mask wait (bar.sync); PC moves past
SPIN = "spin"            # handler result: a poll found nothing; yield to the scheduler
BIG = np.int64(1 << 40)
LANES = np.arange(32)


class Warp:
    """One warp of a CTA (``wid``), running kernel code compiled by :mod:`.compile`."""

    def __init__(self, cta, wid: int):
        self.cta, self.wid, self.launch = cta, wid, cta.launch
        k = cta.launch.kernel
        self.code, self.handlers = k.code, cta.launch.handlers
        linear = wid * 32 + LANES
        bx, by, _ = cta.launch.block
        self.tid = {"x": (linear % bx).astype(np.uint32), "y": ((linear // bx) % by).astype(np.uint32),
                    "z": (linear // (bx * by)).astype(np.uint32)}
        self.linear = linear
        alive = linear < cta.nthreads
        self.state = np.where(alive, RUN, EXIT).astype(np.int8)
        self._live = self._running = bool(alive.any())     # cached: any lane not EXIT / any lane RUN
        self.pc = np.zeros(32, np.int64)
        self.uniform, self.upc = True, 0
        self.run_mask = alive.copy()
        self.full = bool(alive.all())
        self.regs = {name: np.zeros(32, storage(t)) for name, t in k.regs.items()}
        self.fences = np.zeros(32, np.int64)        # fence.proxy.async executed, per lane
        self.synced = np.zeros(32, np.int64)        # fences count at the lane's last barrier
        self.spin_progress = None                   # launch.progress when a poll last failed
        self.spin_on = None
        self.read_timer = False
        self.cp_open, self.cp_groups = [], []       # cp.async ops not yet committed / committed groups
        self.bulk_open, self.bulk_groups = [], []   # bulk ops (stores) not yet committed / groups
        self.tmap_acquired = {}                     # descriptor address -> launch.tmap_seq at acquire
        self.grace = 0                              # instructions a failed poll may not stop
        self.cluster_seen = -1                      # last cluster barrier generation this warp waited out

    # ---- special registers -------------------------------------------------------------------
    def special(self, name: str):
        """Value of special register ``%name`` for every lane."""
        c, L = self.cta, self.launch
        if name.startswith("tid."):
            return self.tid[name[4:]]
        axis = "xyz".index(name[-1]) if name[-2:-1] == "." else 0
        table = {"ntid": L.block, "ctaid": c.ctaid, "nctaid": L.grid, "clusterid": c.clusterid,
                 "nclusterid": L.nclusters, "cluster_ctaid": c.cluster_ctaid, "cluster_nctaid": L.cluster}
        base = name.split(".")[0]
        if base in table:
            return np.uint32(table[base][axis])
        if name == "laneid":
            return LANES.astype(np.uint32)
        if name == "warpid":
            return np.uint32(self.wid)
        if name == "nwarpid":
            return np.uint32(len(c.warps))
        if name == "cluster_ctarank":
            return np.uint32(c.rank)
        if name == "cluster_nctarank":
            return np.uint32(L.cluster_size)
        if name in ("globaltimer", "globaltimer_lo", "globaltimer_hi"):
            self.read_timer = True
            return np.uint64(L.vclock + L.count)
        if name in ("clock", "clock64"):
            return np.uint64(L.vclock + L.count)
        if name in ("smid", "nsmid", "gridid"):
            return np.uint32(0)
        if name == "dynamic_smem_size":
            return np.uint32(L.dynamic_smem)
        if name == "total_smem_size":
            return np.uint32(c.smem.size)
        if name.startswith("lanemask_"):
            kind = name[9:]
            f = {"eq": LANES[None] == LANES[:, None], "lt": LANES[None] < LANES[:, None],
                 "le": LANES[None] <= LANES[:, None], "gt": LANES[None] > LANES[:, None],
                 "ge": LANES[None] >= LANES[:, None]}[kind]
            return (f * (1 << LANES)).sum(1).astype(np.uint32)
        raise UnsupportedPTX(f"the special register %{name} is not modelled")

    # ---- state ---------------------------------------------------------------------------------
    def runnable(self) -> bool:
        """Has running lanes, and is not spinning on a poll since the last progress."""
        if self.spin_progress is not None and self.spin_progress == self.launch.progress:
            return False
        return self._running

    def live(self) -> bool:
        """Has lanes that did not exit."""
        return self._live

    def _state_changed(self):
        """Refresh the cached :meth:`live` / :meth:`runnable` flags after ``state`` changed."""
        self._live = bool((self.state != EXIT).any())
        self._running = bool((self.state == RUN).any())

    def _diverge(self):
        if self.uniform:
            self.pc[self.run_mask] = self.upc
            self.uniform = False

    def _reconverge(self):
        running = self.state == RUN
        if not running.any():
            return
        pcs = self.pc[running]
        if (pcs == pcs[0]).all():
            self.uniform, self.upc, self.run_mask = True, int(pcs[0]), running
            self.full = bool(running.all())

    def release(self, lanes):
        """Lanes blocked at a barrier resume (at the instruction after it)."""
        self._diverge()
        self.state[lanes & (self.state == WAIT)] = RUN
        self._state_changed()
        self._reconverge()

    def exit_lanes(self, m):
        """Lanes ``m`` exit (ret/exit or falling off the end)."""
        self._diverge()
        self.state[m] = EXIT
        self._state_changed()
        self._reconverge()
        self.cta.on_exit(self)

    # ---- execution -------------------------------------------------------------------------------
    def run(self, budget: int) -> int:
        """Run up to ``budget`` instructions; stop early at a block, a failed poll or exit."""
        self.spin_progress = None
        done = 0
        code, hs, regs = self.code, self.handlers, self.regs
        while done < budget:
            if self.uniform:
                p, act = self.upc, self.run_mask
                if not act.any():
                    return done
            else:
                running = self.state == RUN
                if not running.any():
                    return done
                pcs = np.where(running, self.pc, BIG)
                p = int(pcs.min())
                act = pcs == p
            if p >= len(code):
                self.exit_lanes(act)
                return done
            ins = code[p]
            full = self.uniform and self.full
            if ins.guard is not None:
                g = regs[ins.guard[0]]
                m = act & (~g if ins.guard[1] else g)
                full = False
            else:
                m = act
            done += 1
            self.launch.count += 1
            if self.grace:
                self.grace -= 1
            op = ins.parts[0]
            self.launch.current = ins
            if op == "bra":
                self._branch(act, m, ins.target, p)
                continue
            if op in ("ret", "exit"):
                if m.any():
                    self.exit_lanes(m)
                    rest = act & ~m
                    if rest.any():
                        self._advance(rest, p)
                    return done
                self._advance(act, p)
                continue
            res = None
            if full or m.any():
                try:
                    res = hs[p](self, None if full else m)
                except EmulatorError as e:
                    if e.line is None:
                        raise type(e)(str(e)[len("emulator: "):], ins.line, ins.text,
                                      self.where(m)) from None
                    raise
            if res == BLOCK:
                self._diverge()
                self.pc[act] = p + 1
                self.state[m] = WAIT
                self._state_changed()
                self._reconverge()
                return done
            self._advance(act, p)
            if res == SPIN and not self.grace:
                self.spin_progress = self.launch.progress
                return done
        return done

    def _advance(self, act, p):
        if self.uniform:
            self.upc = p + 1
        else:
            self.pc[act] = p + 1
            self._reconverge()

    def _branch(self, act, taken, target, p):
        if self.uniform:
            t = act & taken
            if (t == act).all():
                self.upc = target
                return
            if not t.any():
                self.upc = p + 1
                return
            self._diverge()
        self.pc[act & taken] = target
        self.pc[act & ~taken] = p + 1
        self._reconverge()

    def where(self, m=None) -> str:
        """Which threads: CTA and thread index of the first lane of ``m``."""
        lanes = np.flatnonzero(self.run_mask if m is None else m)
        lane = int(lanes[0]) if lanes.size else 0
        t = (int(self.tid["x"][lane]), int(self.tid["y"][lane]), int(self.tid["z"][lane]))
        return f"CTA {self.cta.ctaid}, warp {self.wid}, thread {t}" + (
            f" (and {lanes.size - 1} more lanes)" if lanes.size > 1 else "")
