"""Memory and warp-level instructions: ld/st (vector forms), atom/red, cvta, mapa, shfl/vote,
bar.sync/barrier.sync, barrier.cluster, fences and hints that do nothing to values."""
from __future__ import annotations

import numpy as np

from .errors import UnsupportedPTX
from .memory import CLUSTER_SHIFT, LOCAL_WIN, SHARED_WIN
from .operands import NP, address, getter, setter, vector
from .warp import BLOCK, LANES

SPACES = ("global", "shared", "param", "local", "const", "shared::cta", "shared::cluster")
_NOOP = {"prefetch", "prefetchu", "createpolicy", "discard", "applypriority", "bar.warp", "membar", "pmevent",
         "nanosleep", "griddepcontrol", "setmaxnreg"}


def _space(parts):
    """The state space an ld/st/atom names ("generic" when none)."""
    return next((p for p in parts[1:] if p in SPACES), "generic")


def _lanes(w, m):
    mm = w.run_mask if m is None else m
    return np.flatnonzero(mm), mm


def compile_mem(ins, k, sym):
    """A handler for ``ins`` if it is a memory / warp-level instruction handled here, else None."""
    p, ops = ins.parts, ins.ops
    op = p[0]
    if op in ("ld", "ldu"):
        return _ld(ins, k, sym)
    if op == "st":
        return _st(ins, k, sym)
    if op in ("atom", "red"):
        return _atom(ins, k, sym)
    if op == "cvta":
        to = "to" in p
        space = next(x for x in p if x in ("global", "shared", "param", "local", "const"))
        a, d = getter(ops[1], np.uint64, k, sym), setter(ops[0], k)
        win = {"global": 0, "param": 0, "shared": SHARED_WIN, "local": LOCAL_WIN, "const": 0}[space]
        w_ = np.uint64(win)
        return (lambda w, m: d(w, a(w) - w_, m)) if to else (lambda w, m: d(w, a(w) + w_, m))
    if op == "mapa":
        T = NP[p[-1]]
        a, r, d = getter(ops[1], np.uint64, k, sym), getter(ops[2], np.uint64, k, sym), setter(ops[0], k)
        low = np.uint64((1 << CLUSTER_SHIFT) - 1)

        def h(w, m):
            addr = np.asarray(a(w))
            generic = "shared" not in p[1:] and "shared::cluster" not in p[1:]
            off = (addr - np.uint64(SHARED_WIN) if generic else addr) & low
            res = off | ((np.asarray(r(w)) + np.uint64(1)) << np.uint64(CLUSTER_SHIFT))
            d(w, (res + (np.uint64(SHARED_WIN) if generic else np.uint64(0))).astype(T), m)
        return h
    if op in ("bar", "barrier") and p[1:2] != ["cluster"] and p[1:2] != ["warp"]:
        if "arrive" in p or "red" in p:
            raise UnsupportedPTX(f"{ins.opcode} (split or reducing barriers) is not modelled", ins.line, ins.text)
        bid = getter(ops[0], np.uint32, k, sym) if ops else (lambda w: 0)
        cnt = getter(ops[1], np.uint32, k, sym) if len(ops) > 1 else None

        def h(w, m):
            _, mm = _lanes(w, m)
            done = w.cta.bar_arrive(w, mm, int(np.asarray(bid(w)).flat[0]),
                                    int(np.asarray(cnt(w)).flat[0]) if cnt else None)
            return None if done else BLOCK
        return h
    if op == "barrier" and p[1] == "cluster":
        if "arrive" in p:
            relaxed = "relaxed" in p
            return lambda w, m: w.launch.cluster_arrive(w, _lanes(w, m)[1], relaxed)
        if "wait" in p:
            return lambda w, m: w.launch.cluster_wait(w, _lanes(w, m)[1])
    if op == "shfl":
        return _shfl(ins, k, sym)
    if op == "vote":
        return _vote(ins, k, sym)
    if op == "activemask":
        d = setter(ops[0], k)
        return lambda w, m: d(w, np.uint32((_lanes(w, m)[1] * (1 << LANES)).sum()), m)
    if op == "bar" and p[1] == "warp":
        def hw(w, m):
            w.cta.share_observations(w.linear[w.linear < w.cta.nthreads])
        return hw
    if op == "fence" and "proxy" in p and "async" in p[p.index("proxy") + 1]:
        def h(w, m):
            idx, mm = _lanes(w, m)
            w.cta.fences[w.linear[mm]] += 1
        return h
    if (op == "fence" and "proxy" not in p and any(s in p for s in ("cluster", "gpu", "sys"))) or (
            op == "membar" and any(s in p for s in ("gl", "sys"))):
        only_init = "mbarrier_init" in p

        def hf(w, m):
            lins = w.linear[_lanes(w, m)[1]]
            for bar in w.cta.mbars.values():     # release at cluster scope (mbarrier_init: own inits only)
                mine = (lins == bar.init_by) if only_init else bar.sees_init[lins]
                bar.released[lins[mine]] = True
        return hf
    if op == "fence" or ".".join(p[:2]) in _NOOP or op in _NOOP:
        if op == "fence" and "tensormap::generic" in p:
            return None                     # the tensormap proxy fences: asyncproxy
        return lambda w, m: None
    return None


def _ld(ins, k, sym):
    p, ops = ins.parts, ins.ops
    space = _space(p)
    n = next((int(x[1:]) for x in p if x in ("v2", "v4", "v8")), 1)
    T = np.dtype(NP[p[-1]])
    size = T.itemsize
    a = address(ops[1], k, sym)
    dsts = vector(ops[0]) if ops[0].startswith("{") else [ops[0]]
    ds = [setter(x, k) for x in dsts]
    what = f"ld.{space}"

    def h(w, m):
        idx, mm = _lanes(w, m)
        addrs = np.broadcast_to(a(w), (32,))[idx]
        raw = w.cta.load(space, addrs, size * n, w, idx, what)
        vals = raw.reshape(-1).view(T).reshape(idx.size, n)
        for j, d in enumerate(ds):
            full = np.zeros(32, T)
            full[idx] = vals[:, j]
            d(w, full, m)
    return h


def _st(ins, k, sym):
    p, ops = ins.parts, ins.ops
    space = _space(p)
    T = np.dtype(NP[p[-1]])
    a = address(ops[0], k, sym)
    srcs = vector(ops[1]) if ops[1].startswith("{") else [ops[1]]
    gs = [getter(x, T, k, sym) for x in srcs]
    what = f"st.{space}"

    def h(w, m):
        idx, mm = _lanes(w, m)
        addrs = np.broadcast_to(a(w), (32,))[idx]
        vals = np.stack([np.broadcast_to(g(w), (32,))[idx] for g in gs], 1).astype(T)
        w.cta.store(space, addrs, vals.view(np.uint8).reshape(idx.size, -1), w, idx, what)
    return h


def _atom(ins, k, sym):
    p, ops = ins.parts, ins.ops
    space = _space(p)
    red = p[0] == "red"
    T = np.dtype(NP[p[-1]])
    kind = next(x for x in p[1:] if x in ("add", "exch", "cas", "min", "max", "and", "or", "xor", "inc", "dec"))
    if "v2" in p or "v4" in p or "noftz" in p and T.kind != "f":
        raise UnsupportedPTX(f"{ins.opcode} is not modelled", ins.line, ins.text)
    a = address(ops[0 if red else 1], k, sym)
    b = getter(ops[1 if red else 2], T, k, sym)
    c = getter(ops[3], T, k, sym) if kind == "cas" else None
    d = None if red else setter(ops[0], k)
    what = f"{p[0]}.{space}.{kind}"

    def h(w, m):
        idx, mm = _lanes(w, m)
        addrs = np.broadcast_to(a(w), (32,))
        bv, cv = np.broadcast_to(b(w), (32,)), (np.broadcast_to(c(w), (32,)) if c else None)
        old = np.zeros(32, T)
        for i in idx:                                   # one lane after another: atomic
            ad = addrs[i:i + 1]
            cur = w.cta.load(space, ad, T.itemsize, w, np.array([i]), what).view(T)[0, 0]
            old[i] = cur
            x = bv[i]
            new = {"add": lambda: cur + x, "exch": lambda: x, "min": lambda: min(cur, x),
                   "max": lambda: max(cur, x), "and": lambda: cur & x, "or": lambda: cur | x,
                   "xor": lambda: cur ^ x, "cas": lambda: cv[i] if cur == x else cur,
                   "inc": lambda: T.type(0) if cur >= x else cur + T.type(1),
                   "dec": lambda: x if (cur == 0 or cur > x) else cur - T.type(1)}[kind]()
            with np.errstate(all="ignore"):
                nv = np.array([new], T)
            w.cta.store(space, ad, nv.view(np.uint8).reshape(1, -1), w, np.array([i]), what)
        if d:
            d(w, old, m)
    return h


def _shfl(ins, k, sym):
    p, ops = ins.parts, ins.ops
    mode = p[2] if p[1] == "sync" else p[1]
    dsts = ops[0].split("|")
    d = setter(dsts[0], k)
    dp = setter(dsts[1], k) if len(dsts) > 1 else None
    a, b, c = (getter(ops[i], np.uint32, k, sym) for i in (1, 2, 3))

    def h(w, m):
        val = np.broadcast_to(a(w), (32,))
        bb = np.broadcast_to(b(w), (32,)).astype(np.int64) & 31
        cc = np.broadcast_to(c(w), (32,)).astype(np.int64)
        clamp, seg = cc & 31, (cc >> 8) & 31
        lane = LANES
        minl = lane & seg
        maxl = minl | (clamp & ~seg)
        if mode == "up":
            j = lane - bb
            ok = j >= maxl
        elif mode == "down":
            j = lane + bb
            ok = j <= maxl
        elif mode == "bfly":
            j = lane ^ bb
            ok = j <= maxl
        else:
            j = minl | (bb & ~seg)
            ok = j <= maxl
        j = np.where(ok, j, lane)
        d(w, val[j], m)
        if dp:
            dp(w, ok, m)
    return h


def _vote(ins, k, sym):
    p, ops = ins.parts, ins.ops
    mode = p[2] if p[1] == "sync" else p[1]
    neg = ops[1].startswith("!")
    a = getter(ops[1].lstrip("!"), np.bool_, k, sym)
    d = setter(ops[0], k)

    def h(w, m):
        idx, mm = _lanes(w, m)
        v = np.broadcast_to(a(w), (32,))
        v = ~v if neg else v
        sel = v[mm]
        if mode == "all":
            r = np.bool_(sel.all())
        elif mode == "any":
            r = np.bool_(sel.any())
        elif mode == "uni":
            r = np.bool_(sel.all() or not sel.any())
        else:
            r = np.uint32(((v & mm) * (1 << LANES)).sum())
        d(w, r, m)
    return h
