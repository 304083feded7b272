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
from .errors import Deadlock, InstructionLimit, Report, cuda_line
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
        self.current = self.last_warp = None
        self.reads_timer = any("%globaltimer" in o for i in self.kernel.code for o in i.ops)

    # ---- clusters ------------------------------------------------------------------------------
    def cluster_arrive(self, w, m, relaxed: bool = False):
        """``barrier.cluster.arrive`` by lanes ``m`` of warp ``w`` (``relaxed``: no release)."""
        cl = w.cta.cluster_state
        lins = w.linear[m]
        for bar in w.cta.mbars.values():        # a release publishes the inits these threads see
            if bar.cluster_gen is None and (bar.released[lins].any() or
                                            (not relaxed and bar.sees_init[lins].any())):
                bar.cluster_gen = cl["gen"]
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
            w.cluster_seen = max(w.cluster_seen, w.arrive_gen)
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
                w.cluster_seen = max(w.cluster_seen, w.arrive_gen)
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
                ins, w = self.current, self.last_warp
                raise InstructionLimit(f"the kernel ran more than {self.max_instructions} warp-instructions and was "
                                       "still running: an endless loop? (a GPU would hang; raise max_instructions if "
                                       "the kernel really needs more)", ins.line if ins else None,
                                       ins.text if ins else None, w.where() if w else "")
            resident = [cl for cl in resident if any(w.live() for c in cl for w in c.warps)
                        or any(op.warp.cta in cl for op in self.ops.values())]
        for op in list(self.ops.values()):
            if op.mode != "never":
                op.complete()
        self.report.instructions = self.count
        return self.report

    def _step(self, warps):
        runnable = [w for w in warps if w.runnable()]
        ops = [op for op in self.ops.values() if op.mode != "never"]
        if ops:
            soon = [op for op in ops if op.mode == "soon"]
            if not runnable or (soon and self.rng.random() < 0.25):
                pick = soon or ops
                pick[int(self.rng.integers(len(pick)))].complete()
                return
        if runnable:
            w = self.last_warp = runnable[int(self.rng.integers(len(runnable)))]
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
        groups = {}                  # (CTA, what it waits for, PTX line) -> warp ids
        for w in warps:
            if w.spin_on is not None and w.spin_progress is not None:
                bar, parity, line = w.spin_on
                what = f"poll for the phase of parity {parity} of the {bar.state()}"
            elif (w.state == WAIT).any():
                line = self.kernel.code[int(w.pc[w.state == WAIT].min()) - 1].line if not w.uniform else \
                    self.kernel.code[w.upc - 1].line
                what = "wait at a barrier (bar.sync / barrier.cluster) that not every thread reaches"
            else:
                line, what = None, "poll without progress"
            src = cuda_line(line, text=False) if line is not None else ""
            at = f" [{src or f'PTX line {line}'}]" if line is not None else ""
            groups.setdefault((w.cta.ctaid, what, at), []).append(w.wid)
        lines = []
        for (ctaid, what, at), wids in groups.items():
            who = f"warp {wids[0]}" if len(wids) == 1 else f"warps {', '.join(map(str, wids))}"
            lines.append(f"CTA {ctaid}, {who}: {what}{at}")
        text = "every live warp waits and nothing in flight can wake one:\n    " + "\n    ".join(lines[:6]) + (
            f"\n    ... and {len(lines) - 6} more" if len(lines) > 6 else "")
        if self.reads_timer and spinning and self.report.virtual_clock_jumps < MAX_JUMPS:
            self.report.virtual_clock_jumps += 1
            if len(self.report.deadlocks) < 4 and text not in self.report.deadlocks:
                self.report.deadlocks.append(text)
            self.vclock += CLOCK_JUMP
            for w in spinning:
                w.grace, w.spin_progress = GRACE, None
            return
        raise Deadlock(f"hang (a GPU would wait forever): {text}")
