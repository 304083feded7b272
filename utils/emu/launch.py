"""``launch``: run one kernel on the emulator, like a GPU launch, and return its :class:`Report`.

The scheduler interleaves the warps of the resident CTAs in a seeded random order, each for a
short random quantum, and completes asynchronous copies adversarially: each copy is given one of
three fates when issued (complete at once, at a random later step, or only when no warp can run).
When every live warp waits and nothing in flight can wake one, it is a deadlock: if the waiting
warps read ``%globaltimer`` (a bounded wait), the virtual clock jumps forward so the kernel's own
timeout path runs, as on a GPU, and the deadlock is recorded in the report; otherwise
:class:`Deadlock` is raised with what each warp waits for.
"""
from __future__ import annotations

import numpy as np

from .cta import CTA
from .errors import Deadlock, InstructionLimit, Report
from .tmapops import TmapTracker
from .warp import WAIT

CLOCK_JUMP = 1 << 40          # virtual nanoseconds added when everything is blocked
MAX_JUMPS = 200
GRACE = 1000                  # instructions a poller may run on when everything else is blocked


def _dim3(v, what):
    t = (v,) if isinstance(v, (int, np.integer)) else tuple(v)
    if not 1 <= len(t) <= 3 or not all(isinstance(x, (int, np.integer)) and x >= 1 for x in t):
        raise ValueError(f"{what} must be a positive int or a tuple of 1-3 positive ints, got {v!r}")
    return tuple(int(x) for x in t) + (1,) * (3 - len(t))


class Launch:
    """The state of one emulated launch (see module docstring)."""

    def __init__(self, prog, grid, block, params, gmem, smem_dynamic, cluster, seed, strict, max_instructions):
        self.prog, self.kernel, self.handlers = prog, prog.kernel, prog.handlers
        self.grid, self.block, self.cluster = grid, block, cluster
        self.cluster_size = cluster[0] * cluster[1] * cluster[2]
        self.nclusters = tuple(g // c for g, c in zip(grid, cluster))
        self.params, self.gmem = params, gmem
        self.dynamic_smem = smem_dynamic
        self.smem_size = prog.smem_size(smem_dynamic)
        self.local_size = prog.local_size
        self.rng = np.random.default_rng(seed)
        self.modes = ("now", "soon", "late")
        self.strict, self.max_instructions = strict, max_instructions
        self.report = Report(self.kernel.name, grid, block)
        self.vclock, self.progress, self.count, self.op_seq = 1_000_000, 0, 0, 0
        self.ops = {}                 # id -> AsyncOp in flight
        self.op_log = {}              # id -> every AsyncOp issued (to name it in reports)
        uses_tmap = any(i.parts[0] == "tensormap" or "tensormap::generic" in i.parts for i in self.kernel.code)
        self.tmaps = TmapTracker(self, uses_tmap)
        self.clusters = {}
        self.grace_progress = -1
        self.current = None
        self.reads_timer = any("%globaltimer" in o for i in self.kernel.code for o in i.ops)

    # ---- clusters ------------------------------------------------------------------------------
    def cluster_arrive(self, w, m):
        """``barrier.cluster.arrive`` by lanes ``m`` of warp ``w``."""
        cl = w.cta.cluster_state
        cl["arrived"][(w.cta.rank, w.wid)] = cl["arrived"].get((w.cta.rank, w.wid), 0) | int(
            (m * (1 << np.arange(32))).sum())
        w.arrive_gen = cl["gen"]
        self.progress += 1
        self.check_cluster_barrier(w.cta)

    def cluster_wait(self, w, m):
        """``barrier.cluster.wait``: pass if the cluster completed this warp's arrival, else block."""
        from .warp import BLOCK
        cl = w.cta.cluster_state
        if getattr(w, "arrive_gen", -1) < cl["gen"]:
            return None
        cl["waiting"].append(w)
        return BLOCK

    def check_cluster_barrier(self, cta):
        """Release the cluster barrier when every live thread of the cluster arrived."""
        cl = getattr(cta, "cluster_state", None)
        if cl is None:
            return
        live = sum(c.live_threads() for c in cta.cluster)
        arrived = sum(bin(v).count("1") for v in cl["arrived"].values())
        if arrived >= live and arrived:
            cl["gen"] += 1
            cl["arrived"] = {}
            for w in cl["waiting"]:
                w.release(np.ones(32, bool))
            cl["waiting"] = []

    # ---- scheduling ----------------------------------------------------------------------------
    def _make_cluster(self, cid):
        cx, cy, cz = self.cluster
        ctas = []
        for r in range(self.cluster_size):
            lx, ly, lz = r % cx, (r // cx) % cy, r // (cx * cy)
            ctaid = (cid[0] * cx + lx, cid[1] * cy + ly, cid[2] * cz + lz)
            ctas.append(CTA(self, ctaid, (lx, ly, lz), cid, r))
        state = {"gen": 0, "arrived": {}, "waiting": []}
        for c in ctas:
            c.cluster, c.cluster_state = ctas, state
        return ctas

    def run(self, max_resident: int = 4):
        """Run every CTA (clusters whole, ``max_resident`` CTAs at a time); return the report."""
        ids = [(x, y, z) for z in range(self.nclusters[2]) for y in range(self.nclusters[1])
               for x in range(self.nclusters[0])]
        resident = []
        while ids or resident:
            while ids and len(resident) < max(1, max_resident // self.cluster_size):
                resident.append(self._make_cluster(ids.pop(0)))
            warps = [w for cl in resident for c in cl for w in c.warps if w.live()]
            if not warps:
                for op in list(self.ops.values()):
                    if op.warp.cta in [c for cl in resident for c in cl]:
                        op.complete()
                resident = []
                continue
            self._step(warps)
            if self.count > self.max_instructions:
                raise InstructionLimit(f"more than {self.max_instructions} warp-instructions: an endless loop? "
                                       "(raise max_instructions if the kernel really needs more)")
            resident = [cl for cl in resident if any(w.live() for c in cl for w in c.warps)
                        or any(op.warp.cta in cl for op in self.ops.values())]
        for op in list(self.ops.values()):
            op.complete()
        self.report.instructions = self.count
        return self.report

    def _step(self, warps):
        runnable = [w for w in warps if w.runnable()]
        ops = list(self.ops.values())
        if ops:
            soon = [op for op in ops if op.mode == "soon"]
            if not runnable or (soon and self.rng.random() < 0.25):
                pick = soon or ops
                pick[int(self.rng.integers(len(pick)))].complete()
                return
        if runnable:
            w = runnable[int(self.rng.integers(len(runnable)))]
            w.run(int(self.rng.integers(1, 24)))
            return
        self._deadlock(warps)

    def _deadlock(self, warps):
        spinning = [w for w in warps if w.spin_progress is not None]
        if spinning and self.grace_progress != self.progress:
            # a failed poll may have been a probe, not a wait: let the pollers run on before judging
            self.grace_progress = self.progress
            for w in spinning:
                w.grace, w.spin_progress = GRACE, None
            return
        lines = []
        for w in warps:
            if w.spin_on is not None and w.spin_progress is not None:
                bar, parity = w.spin_on
                lines.append(f"{w.where()} polls for the phase of parity {parity} of the {bar.state()}")
            elif (w.state == WAIT).any():
                lines.append(f"{w.where(w.state == WAIT)} waits at a barrier (bar.sync / barrier.cluster) "
                             "that not every thread reaches")
            else:
                lines.append(f"{w.where()} polls without progress")
        text = "every live warp waits and nothing in flight can wake one:\n    " + "\n    ".join(lines[:8]) + (
            f"\n    ... and {len(lines) - 8} more warps" if len(lines) > 8 else "")
        if self.reads_timer and spinning and self.report.virtual_clock_jumps < MAX_JUMPS:
            self.report.virtual_clock_jumps += 1
            if len(self.report.deadlocks) < 4 and text not in self.report.deadlocks:
                self.report.deadlocks.append(text)
            self.vclock += CLOCK_JUMP
            for w in spinning:
                w.grace, w.spin_progress = GRACE, None
            return
        raise Deadlock(text)
