"""Exercise 4 of ``day05_tma/07_flash_attention``: one iteration of the overlapped loop with the
two consumer warpgroups ordered by named barriers, FlashAttention-3's way
(``FlashFwd(step="named")``, step 5 of the notebook's ladder, with the learner's ``named_step``).

The step receives ``(self, cw, issue_s, issue_pv, softmax, finish)``: ``cw`` is the consumer
warpgroup (0 or 1); ``issue_s()`` issues ``S_j = Q K_j^T`` and ``issue_pv()`` ``O += P_{j-1}
V_{j-1}`` (each a fence, the wgmmas and one ``commit_group``); ``softmax()`` runs the softmax of
S_j; ``finish()`` rescales O and frees stage j-1. The learner adds the turn (``cute.arch.barrier``
/ ``barrier_arrive`` on named barriers) and the ``warpgroup.wait_group`` calls.

What the CPU check does: it calls the step once per warpgroup (``cw`` = 0 and 1) with recording
stand-ins and follows the order of its calls; it plays the two warpgroups' calls against each
other on a model of named barriers (every interleaving, three iterations, the kernel's head start)
to find a deadlock or two warpgroups issuing GEMMs at once; it compiles the kernel with the step
for sm_90a and reads the PTX. What it cannot show: that the output is right (a race on the
accumulator depends on timing). On Hopper the check also runs the kernel against the float64
reference of :mod:`utils.day05.attention`.
"""
from __future__ import annotations

import contextlib

from ..core.checks import fail, not_attempted, passed, verified
from ..cute_dsl.producer_check import _ANSI

NAME = "overlapped step"
WG_THREADS, ORDER_THREADS = 128, 256
ITERATIONS = 3                      # loop iterations played against each other in the model
RUN_SHAPES = ((1, 2, 640, 128), (2, 1, 384, 64))     # 5 and 3 K/V tiles: the ring (3 or 4 stages) wraps or not

_OVERLAP = ("wait_group(1) after both issues: it waits until at most one group is in flight, the "
            "older one (S_j) done; the softmax of S_j then runs while the PV GEMM is on the tensor cores")
_RACE = ("warpgroup.wait_group(0) before finish(): finish rescales O, the accumulator the PV GEMM "
         "is still adding into, and frees the V stage it is still reading")


def _unwrap(fn):
    """The Python function under ``@cute.jit`` (the step is called outside a compile)."""
    while hasattr(fn, "__wrapped__"):
        fn = fn.__wrapped__
    return fn


@contextlib.contextmanager
def _recording(events: list):
    """Replace the named-barrier and wgmma-group calls with recorders while the step runs."""
    from ..cute_dsl.compat import cute, warpgroup
    arch = cute.arch
    real = {"barrier": arch.barrier, "barrier_arrive": arch.barrier_arrive, "sync_threads": arch.sync_threads,
            "wait_group": warpgroup.wait_group, "commit_group": warpgroup.commit_group, "fence": warpgroup.fence}

    def barrier(*, barrier_id=None, number_of_threads=None, **kw):
        events.append(("sync", barrier_id, number_of_threads))

    def barrier_arrive(*, barrier_id=None, number_of_threads=None, **kw):
        events.append(("arrive", barrier_id, number_of_threads))
    arch.barrier, arch.barrier_arrive = barrier, barrier_arrive
    arch.sync_threads = lambda *a, **kw: events.append(("sync", 0, None))
    warpgroup.wait_group = lambda n, *a, **kw: events.append(("wait_group", n))
    warpgroup.commit_group = lambda *a, **kw: events.append(("commit_group",))
    warpgroup.fence = lambda *a, **kw: events.append(("fence",))
    try:
        yield events
    finally:
        for key in ("barrier", "barrier_arrive", "sync_threads"):
            setattr(arch, key, real[key])
        for key in ("wait_group", "commit_group", "fence"):
            setattr(warpgroup, key, real[key])


def step_events(step_fn, cw: int) -> list:
    """The calls one iteration of ``step_fn`` makes as consumer warpgroup ``cw``, in order:
    ("issue_s",), ("issue_pv",), ("softmax",), ("finish",), ("sync", id, threads),
    ("arrive", id, threads), ("wait_group", n), ("commit_group",), ("fence",)."""
    events: list = []
    marks = {k: (lambda k=k: events.append((k,))) for k in ("issue_s", "issue_pv", "softmax", "finish")}
    with _recording(events):
        _unwrap(step_fn)(None, cw, marks["issue_s"], marks["issue_pv"], marks["softmax"], marks["finish"])
    return events


def _ids(x):
    try:
        return int(x)
    except (TypeError, ValueError):
        return x


def order_problems(per_wg: dict, first_id: int) -> list:
    """(what is wrong, hint) for the two warpgroups' recorded iterations (empty: right).
    ``per_wg``: {0: events, 1: events} from :func:`step_events`; ``first_id``: the barrier the
    kernel's head start arrives on (warpgroup 0's turn)."""
    for cw, ev in per_wg.items():
        kinds = [e[0] for e in ev]
        for k in ("issue_s", "issue_pv", "softmax", "finish"):
            if kinds.count(k) != 1:
                return [(f"warpgroup {cw} calls {k}() {kinds.count(k)} times in one iteration",
                         "call each of issue_s, issue_pv, softmax and finish exactly once")]
        if any(k in kinds for k in ("commit_group", "fence")):
            return [("your step calls warpgroup.commit_group or warpgroup.fence",
                     "issue_s() and issue_pv() already fence and commit their own group: add only "
                     "the barriers and the wait_groups")]
        at = {k: kinds.index(k) for k in ("issue_s", "issue_pv", "softmax", "finish")}
        if at["issue_pv"] < at["issue_s"]:
            return [("issue_pv() comes before issue_s()", "issue S_j first: wait_group(1) lets the "
                     "newest group run on and waits for the older ones, so S_j must be the older")]
        if at["softmax"] < at["issue_pv"]:
            return [("softmax() runs before issue_pv()", "issue both GEMMs first: the softmax is "
                     "what hides the PV GEMM, so it must run while that GEMM is in flight")]
        if at["finish"] < at["softmax"]:
            return [("finish() runs before softmax()", "finish rescales O with the new row max, "
                     "which the softmax of S_j computes: softmax first")]
        waits = [(i, e[1]) for i, e in enumerate(ev) if e[0] == "wait_group"]
        early = [n for i, n in waits if i < at["issue_pv"]]
        if early:
            return [(f"a wait_group({early[0]}) comes before issue_pv()", "no wait between or "
                     "before the issues: waiting for S_j before issuing the PV GEMM runs the two "
                     "GEMMs one after the other, and the PV GEMM no longer overlaps the softmax")]
        mid = [n for i, n in waits if at["issue_pv"] < i < at["softmax"]]
        if not mid:
            return [("no wait_group between the issues and softmax()", "the softmax reads S_j's "
                     "registers while its wgmmas may still be writing them: " + _OVERLAP)]
        if mid[-1] == 0:
            return [("wait_group(0) before softmax()", "0 waits for the PV GEMM too, so it has "
                     "finished before the softmax starts: the overlap is gone. " + _OVERLAP)]
        if mid[-1] != 1:
            return [(f"wait_group({mid[-1]}) before softmax()", "with two groups in flight, "
                     f"wait_group({mid[-1]}) waits for neither: " + _OVERLAP)]
        late = [n for i, n in waits if at["softmax"] < i < at["finish"]]
        if not late or late[-1] != 0:
            return [(f"{'wait_group(' + str(late[-1]) + ')' if late else 'no wait_group'} between "
                     "softmax() and finish()", _RACE)]
        turns = [(i, e) for i, e in enumerate(ev) if e[0] in ("sync", "arrive")]
        syncs = [(i, e) for i, e in turns if e[0] == "sync"]
        arrives = [(i, e) for i, e in turns if e[0] == "arrive"]
        if not syncs:
            return [(f"warpgroup {cw} never waits for its turn", "cute.arch.barrier(barrier_id=..., "
                     "number_of_threads=...) before issue_s(): the warpgroups take turns at the tensor cores")]
        if not arrives:
            return [(f"warpgroup {cw} never hands the turn on", "cute.arch.barrier_arrive(...) on the "
                     "other warpgroup's barrier after issuing: without it the other warpgroup waits "
                     "forever (on Hopper the kernel hangs)")]
        if len(syncs) > 1 or len(arrives) > 1:
            return [(f"warpgroup {cw} waits {len(syncs)} and arrives {len(arrives)} times per iteration",
                     "one wait (before the issues) and one arrive (after them) per iteration: the "
                     "barrier counts arrivals, an extra one completes the other warpgroup's next turn too")]
        (s_i, s), (a_i, a) = syncs[0], arrives[0]
        if s_i > at["issue_s"]:
            return [(f"warpgroup {cw} waits for its turn after issue_s()", "wait before issuing: "
                     "the GEMMs issued before the wait run alongside the other warpgroup's")]
        if a_i < at["issue_pv"]:
            return [(f"warpgroup {cw} arrives before issue_pv()" if a_i > at["issue_s"] else
                     f"warpgroup {cw} arrives before its GEMMs", "arrive after issue_pv(): the arrive "
                     "lets the other warpgroup issue, so an earlier one puts its wgmmas between yours")]
        if a_i > at["softmax"]:
            return [(f"warpgroup {cw} arrives after softmax()", "arrive right after issue_pv(): the "
                     "other warpgroup should issue its GEMMs while you run the softmax, not after it")]
        if any(at["issue_pv"] < i < a_i for i, _ in waits):
            return [(f"warpgroup {cw} arrives after a wait_group", "arrive right after issue_pv(), "
                     "before wait_group(1): until you arrive the other warpgroup cannot issue, so "
                     "waiting for S_j first keeps its GEMMs off the tensor cores while yours finish")]
        for what, e in (("waits", s), ("arrives", a)):
            n = _ids(e[2])
            if n != ORDER_THREADS:
                return [(f"warpgroup {cw} {what} with number_of_threads={e[2]}", "number_of_threads="
                         "256: the barrier completes when both warpgroups' 128 threads have arrived "
                         "(one warpgroup's sync and the other's arrive); 128 completes with your own "
                         "sync alone, more than 256 never completes")]
            b = _ids(e[1])
            if not isinstance(b, int) or not 1 <= b <= 15:
                return [(f"warpgroup {cw} {what} on barrier {e[1]}", "named barriers 1..15 (barrier 0 "
                         "is __syncthreads, which the whole CTA, producer included, uses)")]
    w = {cw: _ids(next(e for e in ev if e[0] == "sync")[1]) for cw, ev in per_wg.items()}
    a = {cw: _ids(next(e for e in ev if e[0] == "arrive")[1]) for cw, ev in per_wg.items()}
    if w[0] == w[1]:
        return [(f"both warpgroups wait on barrier {w[0]}", "one barrier per warpgroup: with one "
                 "shared barrier a warpgroup's own arrive and its next wait complete it, so it can "
                 "take two turns in a row while the other is issuing")]
    if w[0] != first_id:
        return [(f"warpgroup 0 waits on barrier {w[0]}", f"the kernel gives warpgroup 0 the first "
                 f"turn by an arrive of warpgroup 1 on barrier ORDER_BARRIER = {first_id}: that is "
                 "warpgroup 0's barrier")]
    for cw in (0, 1):
        if a[cw] != w[1 - cw]:
            return [(f"warpgroup {cw} arrives on barrier {a[cw]}, warpgroup {1 - cw} waits on {w[1 - cw]}",
                     "arrive on the other warpgroup's barrier: your arrive is what lets it take its turn")]
    return []


def simulate(per_wg: dict, first_id: int, iterations: int = ITERATIONS) -> list:
    """Play both warpgroups' steps (``iterations`` each, after the kernel's head start: warpgroup
    1 arrives on ``first_id``) against a model of named barriers, every interleaving: a barrier
    completes when its thread count has arrived (a sync adds 128 and blocks, an arrive adds 128).
    Returns the problems found: a deadlock, or both warpgroups between issue_s and issue_pv at once."""
    progs = {cw: [e for _ in range(iterations) for e in ev] for cw, ev in per_wg.items()}
    progs[1] = [("arrive", first_id, ORDER_THREADS)] + progs[1]

    def issuing(cw, pc):          # inside this iteration's issue_s .. issue_pv
        done = [e[0] for e in progs[cw][:pc]]
        return done.count("issue_s") > done.count("issue_pv")
    start = ((0, 0), (), (False, False))      # pcs, barrier counts {id: arrived}, blocked-at-sync flags
    seen, todo = {start}, [start]
    while todo:
        pcs, counts, blocked = todo.pop()
        bars = dict(counts)
        if issuing(0, pcs[0]) and issuing(1, pcs[1]):
            return [("in the model both warpgroups issue GEMMs at the same time", "each warpgroup "
                     "waits on its own barrier before issue_s() and arrives on the other's after "
                     "issue_pv()")]
        moves = []
        for cw in (0, 1):
            pc = pcs[cw]
            if pc == len(progs[cw]):
                continue
            e = progs[cw][pc]
            nb, npc, nbl = dict(bars), list(pcs), list(blocked)
            if e[0] in ("sync", "arrive"):
                bid, need = _ids(e[1]), _ids(e[2]) or WG_THREADS * 3
                if e[0] == "sync" and blocked[cw]:
                    continue                       # still waiting; released by the other's arrive
                nb[bid] = nb.get(bid, 0) + WG_THREADS
                if e[0] == "sync":
                    nbl[cw] = True
                else:
                    npc[cw] += 1
                if nb[bid] >= need:               # complete: release every warpgroup blocked on it
                    nb[bid] -= need
                    for other in (0, 1):
                        if nbl[other] and progs[other][npc[other]][0] == "sync" and \
                                _ids(progs[other][npc[other]][1]) == bid:
                            nbl[other] = False
                            npc[other] += 1
            else:
                npc[cw] += 1
            moves.append((tuple(npc), tuple(sorted((k, v) for k, v in nb.items() if v)), tuple(nbl)))
        if not moves and any(pcs[cw] < len(progs[cw]) for cw in (0, 1)):
            stuck = [cw for cw in (0, 1) if pcs[cw] < len(progs[cw])]
            return [(f"in the model warpgroup {stuck[0]} waits forever (deadlock)", "every wait needs "
                     "an arrive from the other warpgroup on the same barrier with the same thread "
                     "count; on Hopper the kernel hangs")]
        for m in moves:
            if m not in seen:
                seen.add(m)
                todo.append(m)
    return []


def flash_with(step_fn, D: int = 128, causal: bool = False):
    """A ``FlashFwd(D, "named", causal)`` whose ``named_step`` is ``step_fn``."""
    from ..cute_dsl.attention import FlashFwd

    class Yours(FlashFwd):
        named_step = step_fn
    return Yours(D, "named", causal)


def ptx_problems(ptx: str) -> list:
    """What the PTX of the named-order kernel must show: three ``bar.arrive`` with 256 threads (the
    head start, the first tile's QK turn and the step's), two ``bar.sync`` on a named barrier with
    256 (the first tile's and the step's), and from the step's sync (the last) the order sync,
    commit, commit, arrive, ``wgmma.wait_group 1``, ..., ``wgmma.wait_group 0``."""
    import re
    lines = [" ".join(ln.split()) for ln in ptx.splitlines()]
    arrive = [i for i, ln in enumerate(lines) if re.match(r"(bar|barrier)\.arrive", ln) and ln.rstrip(";").endswith("256")]
    sync = [i for i, ln in enumerate(lines) if re.match(r"(bar|barrier)\.sync", ln) and ln.rstrip(";").endswith("256")]
    if len(arrive) < 3 or len(sync) < 2:
        return [(f"the PTX has {len(sync)} named-barrier sync and {len(arrive)} arrive with 256 threads, "
                 "expected at least 2 and 3 (the step's, plus the kernel's before the loop)", "one "
                 "cute.arch.barrier and one cute.arch.barrier_arrive in your step")]
    want = ["sync", "wgmma.commit_group", "wgmma.commit_group", "arrive", "wgmma.wait_group.sync.aligned 1",
            "wgmma.wait_group.sync.aligned 0"]
    pos = sync[-1]
    for token in want[1:]:
        if token == "arrive":
            nxt = next((i for i in arrive if i > pos), None)
        else:
            nxt = next((i for i in range(pos + 1, len(lines)) if lines[i].startswith(token)), None)
        if nxt is None:
            return [(f"in the PTX after the order barrier, no {token} follows in the expected order",
                     "sync, issue_s, issue_pv, arrive, wait_group(1), softmax, wait_group(0), finish")]
        pos = nxt
    return []


def check_attention_step(step_fn, tier=None) -> None:
    """Check Exercise 4's step: the calls per warpgroup, the two warpgroups on the model of named
    barriers, the PTX of the kernel compiled with it for sm_90a; on Hopper, the kernel's output."""
    from ..cute_dsl import attention as fa
    if not callable(step_fn):
        fail(NAME, f"expected the step function, got {type(step_fn).__name__}")
    per_wg = {}
    for cw in (0, 1):
        try:
            per_wg[cw] = step_events(step_fn, cw)
        except NotImplementedError:
            return not_attempted(NAME)
        except TypeError as err:
            fail(NAME, f"calling your step as warpgroup {cw} raised TypeError: {err}", "it receives "
                 "(self, cw, issue_s, issue_pv, softmax, finish); the barriers take keywords: "
                 "cute.arch.barrier(barrier_id=..., number_of_threads=...)")
    if not any(e[0] in ("sync", "arrive", "wait_group") for ev in per_wg.values() for e in ev):
        if all(len(ev) == 4 for ev in per_wg.values()):
            return not_attempted(NAME)          # the stub: the four calls and nothing else
    problems = order_problems(per_wg, fa.ORDER_BARRIER) or simulate(per_wg, fa.ORDER_BARRIER)
    if problems:
        fail(NAME, problems[0][0], problems[0][1], launched=f"your step called as warpgroup 0 and 1 "
             f"(ORDER_BARRIER = {fa.ORDER_BARRIER})")
    launched = "FlashFwd(128, 'named') with your step, compiled for sm_90a"
    try:
        ptx = fa.ptx_of(flash=flash_with(step_fn))
    except Exception as err:   # a step that does not compile explains itself
        text = " ".join(_ANSI.sub("", str(err)).split())
        fail(NAME, f"your step does not compile: {type(err).__name__}: {text[:300]}",
             "cute.arch.barrier(barrier_id=..., number_of_threads=...) and cute.arch.barrier_arrive(...)"
             " take keywords; ids and counts are integers", launched=launched)
    problems = ptx_problems(ptx)
    if problems:
        fail(NAME, problems[0][0], problems[0][1], launched=launched)
    has = getattr(tier, "has", None)
    if not (callable(has) and has("wgmma") and has("cutedsl")):
        return verified(NAME, "order OK for both warpgroups (wait on your barrier, issue S then PV, "
                        "arrive on the other's, wait_group(1), softmax, wait_group(0), finish); no "
                        "deadlock or shared turn in the barrier model; the PTX in that order. The "
                        "output is checked on Hopper.")
    worst = _run_on_hopper(step_fn)
    return passed(NAME, f"order OK, and the kernel matches the float64 reference (worst error "
                  f"{worst:.2f} of the bound) at {', '.join('x'.join(map(str, s)) for s in RUN_SHAPES)}, "
                  "causal and not.")


def _run_on_hopper(step_fn) -> float:
    """Run the named-order kernel with ``step_fn`` (output poisoned with NaN) at :data:`RUN_SHAPES`,
    causal and not; compare every element with ``attention_ref`` (float64) under ``output_bound``.
    Returns the worst error / bound."""
    import numpy as np
    import torch
    from . import attention as ref
    from ..cute_dsl import attention as fa
    worst = 0.0
    gen = torch.Generator(device="cuda").manual_seed(0)
    for shape in RUN_SHAPES:
        for causal in (False, True):
            q, k, v = (torch.randn(shape, device="cuda", generator=gen).half() for _ in range(3))
            o = torch.full_like(q, float("nan"))
            fa.run(q, k, v, o, causal=causal, flash=flash_with(step_fn, shape[-1], causal))
            torch.cuda.synchronize()
            want = ref.attention_ref(q.double().cpu().numpy(), k.double().cpu().numpy(),
                                     v.double().cpu().numpy(), causal)
            got = o.double().cpu().numpy()
            launched = f"{'x'.join(map(str, shape))} fp16, causal={causal}"
            if np.isnan(got).any():
                bad = tuple(np.argwhere(np.isnan(got))[0])
                fail(NAME, f"element {bad} of O was never written (still NaN)", "the structure looked "
                     "right: compare with the course's step", launched=launched)
            bound = ref.output_bound("float16", float(v.abs().max()), want)
            ratio = np.abs(got - want) / bound
            if ratio.max() > 1:
                bad = tuple(np.unravel_index(ratio.argmax(), ratio.shape))
                fail(NAME, f"O differs from the reference at {bad}: {got[bad]:.4f} vs {want[bad]:.4f}",
                     "a race on S or O: check which group each wait_group waits for", launched=launched)
            worst = max(worst, float(ratio.max()))
    return worst


__all__ = ["check_attention_step", "flash_with", "order_problems", "simulate", "step_events", "ptx_problems"]
