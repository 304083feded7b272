"""Is every shared-memory write fenced before a TMA store reads it? Read on every control-flow
path of a kernel's PTX (:mod:`utils.core.ptx_paths`): each thread that wrote runs
``fence.proxy.async`` after its writes, then a barrier that every thread runs, then one thread
issues the store. :func:`fence_problem` finds the first path that breaks the order and
:func:`fence_message` says what is wrong on it, told from where the fences are. Used by the
store-kernel exercise (:mod:`utils.tma.store_check`) and the debugging lab (:mod:`utils.tma.lab`)."""
from __future__ import annotations

import re


def is_smem_write(t):
    """A PTX instruction that writes shared memory (st/atom/red .shared, stmatrix)."""
    return bool(re.match(r"(st|atom|red)(\.\w+)*\.shared|stmatrix", t))


def is_tma_store(t):
    """A TMA store or reduce from shared to global memory (cp[.reduce].async.bulk[.tensor])."""
    return bool(re.match(r"cp(\.reduce)?\.async\.bulk(\.tensor\.\dd)?\.global\.shared", t))


def is_proxy_fence(t):
    """A fence that orders this thread's generic-proxy shared-memory writes before async-proxy
    reads: bidirectional (no state space, or shared::cta / shared::cluster) or the one-way
    generic -> async release form."""
    return bool(re.fullmatch(r"fence\.proxy\.async(\.shared::(cta|cluster)|::generic\.release"
                             r"\.sync_restrict::shared::cta\.cluster)?", t.strip()))


def is_barrier(t):
    """A CTA barrier that waits (``__syncthreads()``: bar.sync; ``__syncthreads_or`` &c.: bar.red;
    not bar.arrive, which does not wait, nor bar.warp.sync, which is one warp's)."""
    return bool(re.match(r"(bar|barrier)(\.cta)?\.(sync|red)\b", t))


def is_commit(t):
    """``cp.async.bulk.commit_group``: closes the bulk group of the stores issued so far."""
    return t.startswith("cp.async.bulk.commit_group")


def is_wait0(t):
    """``cp.async.bulk.wait_group[.read] 0``: waits until every committed bulk group is done (read)."""
    return bool(re.fullmatch(r"cp\.async\.bulk\.wait_group(\.read)?\s+0", t.strip()))


def _reaches(succ, n, start, goal, avoid=()):
    """Is instruction ``goal`` (``n``: the kernel's exit) reachable from ``start`` (entered, not
    avoided) without entering an index in ``avoid``?"""
    seen, todo = {start}, ([] if start in avoid else [start])
    while todo:
        i = todo.pop()
        if i == goal:
            return True
        for j in (succ[i] if i < n else []):
            if j not in seen and j not in avoid:
                seen.add(j)
                todo.append(j)
    return False


def fence_problem(body: str):
    """(state, path) for the first path of the PTX ``body`` on which a thread's shared-memory write
    reaches a TMA store not yet "fenced, then barrier", else None. State 0: no fence.proxy.async
    after the last write; 1: fenced, but no CTA-wide barrier after the fence. A barrier counts only
    if every thread runs it (no path from entry to exit avoids it: not one inside an ``if``); a
    predicated fence or barrier may be skipped, a predicated write may happen."""
    from ..core.ptx_paths import parse, successors
    instrs, labels = parse(body)
    n = len(instrs)
    succ = [successors(instrs, labels, i) for i in range(n)]
    cta_bar = {k for k, ins in enumerate(instrs) if is_barrier(ins.text) and not ins.predicated
               and not _reaches(succ, n, 0, n, avoid={k})}
    found = {}
    for w in (k for k, ins in enumerate(instrs) if is_smem_write(ins.text)):
        parent, todo = {(w, 0): None}, [(w, 0)]
        while todo:
            i, s = todo.pop()
            for j in (succ[i] if i < n else []):
                if j == n:
                    continue
                ins = instrs[j]
                if is_tma_store(ins.text) and s < 2 and s not in found:
                    path, node = [ins.text], (i, s)
                    while node:
                        path.append(instrs[node[0]].text)
                        node = parent[node]
                    found[s] = path[::-1]
                t = 0 if is_smem_write(ins.text) else s
                if not ins.predicated and is_proxy_fence(ins.text):
                    t = max(t, 1)
                if j in cta_bar and t == 1:
                    t = 2
                if (j, t) not in parent:
                    parent[(j, t)] = (i, s)
                    todo.append((j, t))
    return min(found.items()) if found else None


FENCE_HINT = ("every thread that wrote the tile runs asm volatile(\"fence.proxy.async.shared::cta;\" ::: "
              "\"memory\"); after its writes and BEFORE __syncthreads(); then one thread issues the TMA store")


def fence_message(body: str, state: int, path: list) -> str:
    """What is wrong on ``path`` (from :func:`fence_problem`), told from where the fences are."""
    from ..core.ptx_paths import find, path_avoiding
    fences = find(body, lambda t: t.startswith(("fence", "membar")))
    right = [f for f in fences if is_proxy_fence(f)]
    if state == 1:
        last = max(i for i, t in enumerate(path) if is_proxy_fence(t))
        if any(is_barrier(t) for t in path[:last]):
            return (f"your {path[last]} runs after __syncthreads(): nothing then makes the storing "
                    "thread wait until the OTHER threads have fenced their writes (a proxy fence orders "
                    "only the writes of the thread that runs it). The fence must come before the "
                    "barrier, in every thread that wrote")
        if any(is_barrier(t) for t in path[last:]):
            return ("the __syncthreads() (bar.sync) after your fence sits inside an if: not every "
                    "thread runs it, so it does not make the storing thread wait for the others' "
                    "fenced writes (and it may hang)")
        return ("no __syncthreads() (bar.sync) between your fence and the TMA store: the storing "
                "thread does not wait until the other threads have written and fenced the tile")
    if right:
        if not path_avoiding(body, is_smem_write, is_proxy_fence, lambda t: False):
            where = "it comes before the writes: a fence orders only the writes made before it"
        elif path_avoiding(body, is_proxy_fence, is_smem_write, lambda t: False):
            where = "a write comes after it: it must follow each thread's LAST write"
        elif not path_avoiding(body, is_smem_write, is_proxy_fence, is_tma_store):
            where = "it comes after the TMA store, which may already have read the tile"
        else:
            where = "it sits inside an if: not every thread that wrote runs it, e.g. only thread 0"
        return (f"a path from the shared-memory writes to the TMA store skips your {right[0]} ({where}): "
                "every thread that wrote must execute it after its writes, before __syncthreads()")
    if fences:
        return (f"{', '.join(sorted(set(fences)))} is not the fence needed: the tile is in "
                "SHARED memory and TMA reads it through the async proxy: fence.proxy.async.shared::cta")
    return ("no fence.proxy.async between the threads' shared-memory writes and the TMA store (if you "
            "wrote one, the compiler removed it: it sits in code that never runs)")
