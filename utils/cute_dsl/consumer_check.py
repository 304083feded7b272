"""Exercise 4 of ``day05_tma/04_cutedsl_tma_gemm``: the consumer's wait / wgmma / release step of
the TMA GEMM (``TmaGemm.mma``). Its structure is followed while CuteDSL compiles the GEMM for
sm_90a (any machine, no GPU): the wait on stage ``read``, ``wgmma.fence``, one ``cute.gemm`` per
k-block of that stage, ``commit_group``, ``wait_group(k_pipe_mmas)``, then one release of stage
``release`` under the kernel's condition; the PTX confirms the order. On Hopper the GEMM also
runs and is compared with torch. Re-exported by :mod:`utils.cute_dsl.exercises`.

What the CPU cannot show: that the kernel gives the right C (the barriers' timing, a race). A
step that releases a buffer too early can pass every structural rule in a given run and still
be wrong; the rules here are the ones such races break, and Hopper runs the rest."""
from __future__ import annotations

import contextlib
import operator

from ..core.checks import fail, not_attempted, passed, verified
from .producer_check import _ANSI, matches_torch

CONFIGS = ((2, (2, 2)), (1, (1, 1)))    # (stages, cluster): one wgmma group in flight, then none
MNK = (512, 512, 320)                   # 5 k-tiles: more than the stages, so the ring wraps
RUN_MNK = (1000, 776, 1000)             # on Hopper: no extent a multiple of the 128 x 256 x 64 tile

_WAIT = ("pipe.consumer_wait(read) first: it blocks until the stage's TMA bytes have landed (its "
         "full barrier); without it the wgmmas read a buffer the copy engine is still writing")
_RACE = ("release only after wait_group: until then the wgmmas of that stage may still be reading "
         "its buffer, and the producer's next TMA load would overwrite it (a race no test at one "
         "size reliably shows)")
COMPILE_HINTS = [  # (a piece of CuteDSL's error message, the hint for it)
    ("has no attribute 'index'", "pass the pipeline states themselves: pipe.consumer_wait(read), "
                                 "pipe.consumer_release(release); the buffer is read.index"),
    ("support load and store", "index each fragment with four indices: tCrA[None, None, kb, "
                               "read.index] (the MMA's values, its M or N blocks, the k-block, the stage)"),
    ("cute.gemm", "cute.gemm(tiled_mma, acc, tCrA[...], tCrB[...], acc): D = A * B + C, "
                  "accumulating into acc")]
_CMP = {operator.ge: ">=", operator.gt: ">", operator.le: "<=", operator.lt: "<", operator.eq: "==",
        operator.ne: "!="}


class _Rec:
    """Events of one traced call of the step, and what each traced object is."""

    def __init__(self):
        self.events, self.names, self._keep, self.active, self.k_blocks, self.depth = [], {}, [], False, None, 0

    def name(self, obj, what):
        self._keep.append(obj)
        self.names.setdefault(id(obj), what)
        return obj

    def what(self, obj):
        if isinstance(obj, int) and not isinstance(obj, bool):
            return obj
        return self.names.get(id(obj), "something else")

    def event(self, *e):
        if self.active:
            self.events.append(e + (_block(),))


def _block():
    """(the op that owns the current MLIR block, its (lb, ub, step) if an scf.for with constant
    bounds, how many scf.for enclose it): where the traced call is emitted."""
    try:
        from cutlass._mlir import ir
        op = ir.InsertionPoint.current.block.owner
    except Exception:       # outside an MLIR context: nothing to tell
        return (None, None, 0)
    if op is None:
        return (None, None, 0)
    bounds, depth, up = None, 0, op
    if op.name == "scf.for":
        try:
            bounds = tuple(int(str(o.owner.attributes["value"]).split(":")[0]) for o in list(op.operands)[:3])
        except Exception:   # a bound that is not a constant
            bounds = None
    while up is not None and hasattr(up, "name"):
        depth += up.name == "scf.for"
        up = getattr(up, "parent", None)
    return (op.name, bounds, depth)


class _Carried:
    """A recording stand-in that CuteDSL can carry into a run-time ``if`` (the release's): its
    MLIR values are the wrapped object's, and it comes back wrapped."""
    _inner = "_s"

    def __extract_mlir_values__(self):
        from .compat import cutlass
        return cutlass.cutlass_dsl.extract_mlir_values(getattr(self, self._inner))

    def __new_from_mlir_values__(self, values):
        from .compat import cutlass
        new = object.__new__(type(self))
        new.__dict__.update(self.__dict__)
        setattr(new, self._inner, cutlass.cutlass_dsl.new_from_mlir_values(getattr(self, self._inner), values))
        return new


class _State(_Carried):
    def __init__(self, state, label, rec):
        self._s, self._label, self._r = state, label, rec

    def __getattr__(self, key):
        value = getattr(self._s, key)
        return self._r.name(value, f"{self._label}.{key}") if key in ("count", "index", "phase") else value


class _K(_Carried):
    """The k-tile number: records the comparisons the step makes with it (the release's condition)."""
    _inner = "_k"

    def __init__(self, k, rec):
        self._k, self._r = k, rec

    def _cmp(op):
        def f(self, other):
            self._r.event("cmp", _CMP[op], other)
            return op(self._k, other)
        return f
    __ge__, __gt__, __le__, __lt__ = _cmp(operator.ge), _cmp(operator.gt), _cmp(operator.le), _cmp(operator.lt)
    __eq__, __ne__ = _cmp(operator.eq), _cmp(operator.ne)
    __hash__ = object.__hash__

    def __getattr__(self, key):
        return getattr(self._k, key)


class _Pipe(_Carried):
    _inner = "_p"

    def __init__(self, pipe, rec):
        self._p, self._r = pipe, rec

    def __getattr__(self, key):
        method = getattr(self._p, key)

        def call(*args, **kwargs):
            real = [a._s if isinstance(a, _State) else a for a in args]
            state = (args[0]._label if isinstance(args[0], _State) else self._r.what(args[0])) if args else None
            self._r.event("pipe", key, state, max(len(args) - 1, 0) + len(kwargs))
            return method(*real, **kwargs)
        return call


class _Frag(_Carried):
    _inner = "_x"

    def __init__(self, tensor, label, rec):
        self._x, self._label, self._r = tensor, label, rec

    def __getitem__(self, idx):
        out = self._x[idx]
        parts = idx if isinstance(idx, tuple) else (idx,)
        return self._r.name(out, (self._label, tuple(self._r.what(p) for p in parts if p is not None)))

    def __getattr__(self, key):
        return getattr(self._x, key)


@contextlib.contextmanager
def _recorded(rec: _Rec):
    """Wrap ``cute.gemm`` and the three warpgroup calls so that those made while ``rec.active``
    are recorded (the step reaches them through the modules, so every spelling is seen)."""
    from .compat import cute, warpgroup
    real = {"gemm": cute.gemm, "fence": warpgroup.fence, "commit_group": warpgroup.commit_group,
            "wait_group": warpgroup.wait_group, "size": cute.size}

    def size(a, *args, **kw):      # cute.size(tCrA, mode=[2]) on the recording stand-in
        return real["size"](a._x if isinstance(a, _Frag) else a, *args, **kw)

    def gemm(mma, d, a, b, c, **kw):
        rec.event("gemm", rec.what(a), rec.what(b))
        return real["gemm"](mma, d, a, b, c, **kw)

    def fence(*a, **kw):
        rec.event("fence")
        return real["fence"](*a, **kw)

    def commit_group(*a, **kw):
        rec.event("commit_group")
        return real["commit_group"](*a, **kw)

    def wait_group(n, *a, **kw):
        rec.event("wait_group", n)
        return real["wait_group"](n, *a, **kw)
    cute.gemm, cute.size, warpgroup.fence = gemm, size, fence
    warpgroup.commit_group, warpgroup.wait_group = commit_group, wait_group
    try:
        yield rec
    finally:
        cute.gemm, cute.size, warpgroup.fence = real["gemm"], real["size"], real["fence"]
        warpgroup.commit_group, warpgroup.wait_group = real["commit_group"], real["wait_group"]


def _traced(mma_fn, rec: _Rec):
    """An ``mma`` method for a ``TmaGemm`` subclass that calls ``mma_fn`` with recording stand-ins."""
    from .compat import cute

    @cute.jit
    def mma(self, pipe, read, release, k, tiled_mma, acc, tCrA, tCrB):
        rec.k_blocks = cute.size(tCrA, mode=[2])
        rec.depth = _block()[2]             # the kernel's loops around the step
        rec.active = True
        try:
            mma_fn(self, _Pipe(pipe, rec), _State(read, "read", rec), _State(release, "release", rec),
                   _K(k, rec), tiled_mma, acc, _Frag(tCrA, "tCrA", rec), _Frag(tCrB, "tCrB", rec))
        finally:
            rec.active = False
    return mma


def _covered(g, depth):
    """The k-blocks one recorded ``cute.gemm`` covers (a constant index inside a loop of the step,
    once per trip), or None if its k-block index is unknown. ``depth``: the kernel's loops."""
    idx = g[1][1] if isinstance(g[1], tuple) else ()
    kb = idx[0] if len(idx) == 2 else None
    where, bounds, loops = g[-1]
    in_loop = where == "scf.for" and loops > depth
    if in_loop and not bounds:
        return None
    trips = len(range(*bounds)) if in_loop else 1
    if isinstance(kb, int):
        return [kb] * trips
    if kb == "something else" and in_loop:
        return list(range(*bounds))
    return None


def consumer_problems(events: list, k_pipe_mmas: int, k_blocks: int, depth: int = 0) -> list:
    """(what is wrong, hint) for one traced call of the consumer step (empty: the structure is
    right). ``events``: ("pipe", method, state, extra args, where), ("gemm", a, b, where),
    ("fence", where), ("commit_group", where), ("wait_group", n, where), ("cmp", op, value, where);
    ``where`` is :func:`_block`'s; ``depth``: the scf.for loops of the kernel around the step."""
    kinds = [e[0] if e[0] != "pipe" else e[1] for e in events]
    first = lambda kind: next((i for i, x in enumerate(kinds) if x == kind), None)  # noqa: E731
    gemms = [e for e in events if e[0] == "gemm"]
    if not gemms:
        return [("your step issues no cute.gemm", "one cute.gemm(tiled_mma, acc, tCrA[None, None, kb, "
                 "read.index], tCrB[None, None, kb, read.index], acc) per k-block kb of the stage")]
    g0 = first("gemm")
    waits = [e for e in events if e[0] == "pipe" and e[1] == "consumer_wait"]
    if first("consumer_wait") is None or first("consumer_wait") > g0:
        return [("no pipe.consumer_wait before the wgmmas", _WAIT)]
    if len(waits) > 1:
        return [(f"pipe.consumer_wait is called {len(waits)} times in one step", "wait once per stage: "
                 "the second wait on the same phase passes at once, on another state it waits for "
                 "a stage that is not this k-tile's")]
    if waits[0][2] != "read":
        return [(f"your step waits on {waits[0][2]}", "wait on read, the stage this k-tile's wgmmas "
                 "read; release lags behind it, so its full barrier completed long ago (or, for a "
                 "new state, the wait is on stage 0, phase 0 every time)")]
    if waits[0][3]:
        return [("pipe.consumer_wait gets a second argument", "pass the state alone: it carries the "
                 "stage's index and its phase; a second argument is a try_wait token (the result of "
                 "consumer_try_wait), and a phase in its place skips the wait half of the time")]
    if first("fence") is None or first("fence") > g0:
        return [("no warpgroup.fence() before the wgmmas", "warpgroup.fence() (wgmma.fence) before "
                 "the first wgmma: it orders the accumulator registers' earlier uses, and the "
                 "shared-memory operands, before the asynchronous wgmma reads them")]
    for g in gemms:
        for pos, frag in ((1, "tCrA"), (2, "tCrB")):
            label, idx = g[pos] if isinstance(g[pos], tuple) else (g[pos], ())
            if label != frag or len(idx) != 2:
                return [(f"an operand of cute.gemm is {label}{list(idx) if idx else ''}", f"operand "
                         f"{'A' if pos == 1 else 'B'} is {frag}[None, None, kb, read.index]: the "
                         "MMA's values and blocks whole (None, None), then k-block and stage")]
            if idx[1] == "release.index":
                return [(f"the wgmmas read stage {idx[1]} of {frag}", "release is the stage handed "
                         "back to the producer (it lags behind); this k-tile's bytes are in "
                         "read.index, the stage you waited on")]
            if idx[1] != "read.index":
                return [(f"the wgmmas read stage {idx[1]} of {frag}", "the stage is read.index, "
                         "which cycles through the buffers; a fixed stage reads one buffer for "
                         "every k-tile")]
    covered = [_covered(g, depth) for g in gemms]
    if any(c is None for c in covered):
        return [("the k-block index of a cute.gemm could not be followed", "index the k-block with "
                 "the loop's variable: for kb in cutlass.range(cute.size(tCrA, mode=[2]), "
                 "unroll_full=True)")]
    blocks = sorted(b for c in covered for b in c)
    if len(set(blocks)) < len(blocks):
        return [(f"your wgmmas cover k-block(s) {blocks} of the stage's {k_blocks}", "a k-block is "
                 "multiplied more than once: index the fragments with the loop's variable kb, not "
                 "a constant")]
    if blocks != list(range(k_blocks)):
        return [(f"your wgmmas cover k-block(s) {blocks} of the stage's {k_blocks}", "one cute.gemm per "
                 f"k-block, each once: the stage's 64 columns of K are {k_blocks} k-blocks of 16, "
                 "cute.size(tCrA, mode=[2])")]
    c_i, w_i = first("commit_group"), first("wait_group")
    if c_i is None or c_i < max(i for i, x in enumerate(kinds) if x == "gemm"):
        return [("no warpgroup.commit_group() after the wgmmas", "warpgroup.commit_group() after the "
                 "last wgmma: it closes the group that wait_group counts")]
    if w_i is None or w_i < c_i:
        return [("no warpgroup.wait_group(...) after the commit", "warpgroup.wait_group(self."
                 "k_pipe_mmas) after commit_group: it waits until at most that many groups are still "
                 "in flight, so the stage before this one is read")]
    n = events[w_i][1]
    if not isinstance(n, int) or n > k_pipe_mmas:
        return [(f"wait_group({n}) with k_pipe_mmas = {k_pipe_mmas}", "wait_group(self.k_pipe_mmas): "
                 "with one stage (k_pipe_mmas = 0) nothing may stay in flight before the release")]
    rels = [(i, e) for i, e in enumerate(events) if e[0] == "pipe" and e[1] == "consumer_release"]
    if not rels:
        return [("your step never calls pipe.consumer_release", "pipe.consumer_release(release) "
                 "at the end: without it the producer waits forever for a free buffer")]
    if len(rels) > 1:
        return [(f"pipe.consumer_release is called {len(rels)} times in one step", "release once per "
                 "stage: a second arrival on the empty barrier completes the next phase too, and the "
                 "producer overwrites a buffer the wgmmas have not read yet")]
    (r_i, rel), = rels
    if r_i < w_i:
        return [("pipe.consumer_release comes before warpgroup.wait_group", _RACE)]
    if rel[2] != "release":
        race = rel[2] == "read" and k_pipe_mmas
        return [(f"your step releases {rel[2]}", "release the state named release: " + (
            "with one wgmma group left in flight (wait_group(1)), this k-tile's wgmmas may still "
            "be reading stage read; the one before it (release) is done" if race else
            "the kernel advances it once per released stage"))]
    cmps = [e for e in events[:r_i] if e[0] == "cmp"]
    if rel[-1][0] != "scf.if" or not cmps:
        return [("the release is not under a condition on k", "if k >= self.k_pipe_mmas: release. "
                 "With a wgmma group in flight there is no earlier stage to release at the first "
                 "k-tile; the kernel advances release under the same condition")]
    op, c = cmps[-1][1], cmps[-1][2]
    ops = {">=": operator.ge, ">": operator.gt, "<=": operator.le, "<": operator.lt, "==": operator.eq,
           "!=": operator.ne}
    if not isinstance(c, int) or any(ops[op](k, c) != (k >= k_pipe_mmas) for k in range(8)):
        return [(f"the release runs when k {op} {c}, with k_pipe_mmas = {k_pipe_mmas}",
                 "if k >= self.k_pipe_mmas: every k-tile from the first whose earlier stage is done "
                 "(with one stage, every k-tile)")]
    return []


def _ptx_problems(ptx: str, k_blocks: int) -> list:
    """What the PTX shows: k_blocks wgmma.mma_async (the loop unrolled), the fence before the
    first, commit and wait after the last. (The full barrier's wait is followed in the trace: in
    the PTX it looks like the producer's wait on the empty barrier, which also comes earlier.)"""
    lines = [ln.strip() for ln in ptx.splitlines()]
    mma = [i for i, ln in enumerate(lines) if ln.startswith("wgmma.mma_async")]
    if len(mma) != k_blocks:
        return [(f"the PTX has {len(mma)} wgmma.mma_async, expected {k_blocks} (one per k-block of "
                 "the stage)", "unroll the k-block loop (cutlass.range(..., unroll_full=True)): the "
                 "course's kernel issues a stage's wgmmas back to back, one instruction each, as "
                 "CUTLASS's does")]
    before = lines[:mma[0]]
    if not any(ln.startswith("wgmma.fence") for ln in before):
        return [("the PTX has no wgmma.fence before the first wgmma", "warpgroup.fence() first")]
    after = lines[mma[-1]:]
    c = next((i for i, ln in enumerate(after) if ln.startswith("wgmma.commit_group")), None)
    if c is None or not any(ln.startswith("wgmma.wait_group") for ln in after[c:]):
        return [("the PTX has no wgmma.commit_group then wgmma.wait_group after the wgmmas",
                 "commit_group, then wait_group(self.k_pipe_mmas)")]
    return []


def check_consumer(mma_fn, tier=None) -> None:
    """Compile the TMA GEMM with your consumer step ``mma_fn`` (2 stages in a 2 x 2 cluster, one
    wgmma group in flight; then 1 stage, none in flight) for sm_90a and follow what it does while
    CuteDSL traces it; then read the PTX. That is all a machine without Hopper can verify; on
    Hopper the check also runs both GEMMs at 1000 x 776 x 1000 and compares C with torch."""
    from . import gemm as cute_gemm
    name = "consumer step"
    if not callable(mma_fn):
        fail(name, f"expected the @cute.jit function, got {type(mma_fn).__name__}")
    for stages, cluster in CONFIGS:
        rec = _Rec()

        class Traced(cute_gemm.TmaGemm):
            mma = _traced(mma_fn, rec)
        gemm = Traced(stages, cluster)
        launched = f"TmaGemm(stages={stages}, cluster={cluster}) compiled for sm_90a with your step"
        try:
            with _recorded(rec):
                ptx = cute_gemm.ptx_of(gemm=gemm, mnk=MNK)
        except NotImplementedError:
            return not_attempted(name)
        except Exception as err:  # a learner's step that does not compile explains itself
            text = " ".join(_ANSI.sub("", str(err)).split())
            fail(name, f"your step does not compile: {type(err).__name__}: {text[:300]}",
                 next((h for key, h in COMPILE_HINTS if key in text), "it receives (pipe, read, "
                      "release, k, tiled_mma, acc, tCrA, tCrB)"), launched=launched)
        if rec.k_blocks is None:
            fail(name, "the kernel never called your step", "assign it as the GEMM's mma method")
        if not rec.events and "wgmma.mma_async" not in ptx:
            return not_attempted(name)          # does what the stub does: nothing
        problems = consumer_problems(rec.events, gemm.k_pipe_mmas, rec.k_blocks, rec.depth) or \
            _ptx_problems(ptx, rec.k_blocks)
        if problems:
            fail(name, problems[0][0], problems[0][1], launched=launched)
    has = getattr(tier, "has", None)
    if not (callable(has) and has("wgmma") and has("cutedsl")):
        return verified(name, "structure OK (wait on read, fence, one wgmma per k-block of stage "
                        "read.index, commit, wait_group(k_pipe_mmas), then one release of the stage "
                        "before, under k >= k_pipe_mmas; the PTX in that order); correctness is "
                        "checked on Hopper.")
    _run_on_hopper(name, mma_fn, cute_gemm)
    return passed(name, "structure OK, and the GEMMs (1 stage; 2 stages in a 2 x 2 cluster) match "
                  "torch at 1000 x 776 x 1000.")


def _run_on_hopper(name, mma_fn, cute_gemm) -> None:
    """Run C = A @ B.T with ``mma_fn`` as the consumer step, C poisoned with NaN; compare with torch."""
    import torch

    class Yours(cute_gemm.TmaGemm):
        mma = mma_fn
    M, N, K = RUN_MNK
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(M, K, device="cuda", generator=gen).half()
    b = torch.randn(N, K, device="cuda", generator=gen).half()
    want = a.float() @ b.float().T
    for stages, cluster in CONFIGS:
        c = torch.full((M, N), float("nan"), device="cuda", dtype=torch.float16)
        cute_gemm.run_gemm(a, b, c, gemm=Yours(stages, cluster))
        torch.cuda.synchronize()
        matches_torch(name, c, want, "the structure looked right: compare your lines with the reference step",
                      f"TmaGemm(stages={stages}, cluster={cluster}), {M} x {N} x {K} fp16")

