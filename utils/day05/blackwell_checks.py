"""Day 5 · 09 exercises: references and checks (conventions: :mod:`utils.core.checks`).

1. :func:`check_count_mma` — count the MMA instructions of PTX text, by family.
2. :func:`check_tmem_columns` — the tensor-memory columns a CTA allocates for its accumulators.
3. :func:`check_pair_masks` — the multicast masks and the barrier's CTA in a cluster of CTA pairs.
4. :func:`check_mma_path` — a GPU's tensor-core path (reference: ``blackwell.mma_path_ref``).

Exercises 2 and 3 live in :mod:`utils.day05.pair_checks` (re-exported here). Each check calls the
learner's function on every case first and names a mistake only when the answers equal that
mistake's on every case (:mod:`utils.core.answers`). NumPy integers count as ints.
"""
from __future__ import annotations

import re

from ..core.answers import answers, named_mistake
from ..core.checks import NOT_ATTEMPTED, fail, is_bool, is_int, not_attempted, passed
from .blackwell import FAMILIES, TARGETS, mma_path_ref
from .pair_checks import (PAIR_CASES, TMEM_CASES, check_pair_masks, check_tmem_columns,  # noqa: F401
                          pair_masks_ref, tmem_columns_ref)

MMA_KEYS = ("wgmma", "tcgen05.mma", "mma.sync")


# ---- 1. counting MMA instructions ----------------------------------------------------------------

def count_mma_ref(ptx_text: str) -> dict:
    """``{"wgmma": n, "tcgen05.mma": n, "mma.sync": n}``: MMA instructions only (not wgmma's fence,
    commit or wait, not tcgen05's ld, st or commit), predicated ones too, comments skipped."""
    from ..core.ptx import count
    c = count(ptx_text, {k: FAMILIES[f] for k, f in zip(MMA_KEYS, ("wgmma.mma_async", "tcgen05.mma", "mma.sync"))})
    return {k: c[k] for k in MMA_KEYS}


_HEAD = ".version 8.8\n.target {}\n.address_size 64\n"
TRAPS = {  # PTX texts where each usual slip gives a wrong count
    "hopper": _HEAD.format("sm_90a") + "\t// wgmma.mma_async waits for the fence below\n\twgmma.fence.sync.aligned;\n"
              "\twgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%r1,%r2}, %rd1, %rd2, %p1, 1, 1, 0, 1;\n"
              "\twgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16 {%r1,%r2}, %rd3, %rd4, 1, 1, 1, 0, 1;\n"
              "\twgmma.commit_group.sync.aligned;\n\n\twgmma.wait_group.sync.aligned 0;\n",
    "blackwell": _HEAD.format("sm_100a") + "\ttcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 256;\n"
                 "\t@%p3 tcgen05.mma.cta_group::1.kind::f16 [%r2+0], %rd6, %rd7, %r4, %p5;\n"
                 "\t@%p3 tcgen05.mma.cta_group::1.kind::f16 [%r2+0], %rd8, %rd9, %r4, 1;\n"
                 "\ttcgen05.mma.cta_group::2.kind::f16 [%r2+0], %rd8, %rd9, %r4, 1; // the pair's MMA\n"
                 "\t@%p3 tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64 [%r6];\n"
                 "\ttcgen05.ld.sync.aligned.32x32b.x64.b32 {%r7, %r8}, [%r2+0];\n",
    "sm120": _HEAD.format("sm_120a") + "\tldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r1,%r2,%r3,%r4}, [%r9];\n"
             "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r5,%r6,%r7,%r8}, {%r1,%r2,%r3,%r4}, {%r9,%r10}, "
             "{%r5,%r6,%r7,%r8};\n\t// mma.sync again for the next k-step: tcgen05.mma and wgmma are not here\n"
             "\tmma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r5,%r6,%r7,%r8}, {%r1,%r2,%r3,%r4}, {%r9,%r10}, "
             "{%r5,%r6,%r7,%r8};\n",
    "copy": _HEAD.format("sm_90a") + "\tcp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes "
            "[%r1], [%rd1, {%r2, %r3}], [%r4];\n\tst.global.v4.b32 [%rd2], {%r5, %r6, %r7, %r8};\n",
}


def _lines(t):
    return [l for l in t.splitlines() if l.strip() and not l.strip().startswith(".")]


COUNT_SLIPS = [
    (lambda t: {"wgmma": sum("wgmma" in l.split("//")[0] for l in _lines(t)),
                **{k: count_mma_ref(t)[k] for k in MMA_KEYS[1:]}},
     "not every wgmma.* line is an MMA: wgmma.fence, commit_group and wait_group are not; count wgmma.mma_async"),
    (lambda t: {k: v for k, v in count_mma_ref(t).items()} | {"mma.sync": sum(
        "mma" in l.split("//")[0] for l in _lines(t))},
     "'mma' is also in wgmma.mma_async and tcgen05.mma: match the opcode mma.sync itself"),
    (lambda t: {k: sum(bool(re.search(r"\b" + re.escape(p), l)) for l in _lines(t))
                for k, p in zip(MMA_KEYS, ("wgmma.mma_async", "tcgen05.mma", "mma.sync"))},
     "a comment (// ...) is not an instruction: drop what follows // before matching"),
    (lambda t: count_mma_ref(t) | {"tcgen05.mma": sum(l.split("//")[0].strip().startswith("tcgen05.mma")
                                                       for l in _lines(t))},
     "an instruction may be predicated: '@%p3 tcgen05.mma ...' is an MMA too (strip a leading @%p guard)"),
    (lambda t: count_mma_ref(t) | {"tcgen05.mma": sum("tcgen05." in l.split("//")[0] for l in _lines(t))},
     "tcgen05.alloc, commit and ld are not MMAs: count tcgen05.mma only"),
]


def check_count_mma(fn, ptx_texts: dict | None = None) -> None:
    """Check ``fn(ptx_text) -> {"wgmma": n, "tcgen05.mma": n, "mma.sync": n}`` on :data:`TRAPS` and on
    ``ptx_texts`` (e.g. the notebook's three compiles of one kernel)."""
    name = "count_mma"
    texts = dict(TRAPS, **(ptx_texts or {}))
    cases = [(t,) for t in texts.values()]
    got_all = answers(name, fn, cases, show=lambda c: f"(<PTX '{[k for k, v in texts.items() if v is c[0]][0]}'>)")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for label, got in zip(texts, got_all):
        if not isinstance(got, dict) or set(got) != set(MMA_KEYS) or not all(is_int(v) for v in got.values()):
            fail(name, f"on '{label}' got {got!r}", f"return a dict with exactly the keys {list(MMA_KEYS)}, "
                 "each an int (0 when the family is absent)")
    for label, got, case in zip(texts, got_all, cases):
        want = count_mma_ref(*case)
        if {k: int(v) for k, v in got.items()} != want:
            fail(name, f"on the PTX '{label}' got {got}, expected {want}", named_mistake(got_all, cases, COUNT_SLIPS) or
                 "count instruction lines only (skip comments and directives, allow a leading @%p guard) "
                 "whose opcode starts wgmma.mma_async, tcgen05.mma or mma.sync")
    passed(name, f"{len(cases)} PTX texts counted right.")


# ---- 4. the tensor-core path of a GPU ------------------------------------------------------------

PATH_CASES = [(cc,) for cc in sorted(TARGETS)]
PATH_SLIPS = [
    (lambda cc: ("tcgen05.mma", "tmem", True) if cc[0] >= 10 else mma_path_ref(cc),
     "12.x (RTX 50, RTX PRO, DGX Spark) has no tcgen05 and no tensor memory: ptxas refuses tcgen05 for sm_120a"),
    (lambda cc: ("wgmma", "registers", True) if cc[0] >= 9 else mma_path_ref(cc),
     "wgmma exists on sm_90a only: ptxas refuses it for every Blackwell target"),
    (lambda cc: ("wgmma", "registers", True) if cc[0] == 12 else mma_path_ref(cc),
     "12.x has no wgmma (it is sm_90a only): its tensor cores take mma.sync"),
    (lambda cc: ("mma.sync", "registers", True) if cc == (11, 0) else mma_path_ref(cc),
     "11.0 (sm_110a, renamed from sm_101a) is a tcgen05 target like 10.x"),
    (lambda cc: ("tcgen05.mma", "tmem", True) if cc[0] == 10 or cc[0] == 12 else mma_path_ref(cc),
     "12.x has no tcgen05 (sm_120a is not a tcgen05 target); 11.0 has it"),
    (lambda cc: mma_path_ref(cc)[:2] + (cc[0] >= 8,),
     "Ampere and Ada (8.x) have cp.async, not TMA: cp.async.bulk.tensor needs sm_90 or later"),
    (lambda cc: mma_path_ref(cc)[:2] + (cc == (9, 0),),
     "every Blackwell keeps TMA (cp.async.bulk.tensor assembles for sm_100a, sm_110a and sm_120a)"),
    (lambda cc: (mma_path_ref(cc)[0], "tmem" if cc[0] >= 10 else "registers", mma_path_ref(cc)[2]),
     "mma.sync accumulates in registers, on 12.x too: only tcgen05.mma accumulates in tensor memory"),
]
PATH_CHOICES = {"wgmma", "tcgen05.mma", "mma.sync"}, {"registers", "tmem"}


def check_mma_path(fn) -> None:
    """Check ``fn(capability) -> (mma, accumulator, tma)`` against ``blackwell.mma_path_ref``
    for compute capabilities 7.5 to 12.1 (:data:`PATH_CASES`)."""
    name = "mma_path"
    got_all = answers(name, fn, PATH_CASES, show=lambda c: f"({c[0]})")
    if got_all is NOT_ATTEMPTED:
        return not_attempted(name)
    for got, (cc,) in zip(got_all, PATH_CASES):
        ok = (isinstance(got, (tuple, list)) and len(got) == 3 and got[0] in PATH_CHOICES[0]
              and got[1] in PATH_CHOICES[1] and is_bool(got[2]))
        if not ok:
            fail(name, f"mma_path({cc}) returned {got!r}", "return (mma, accumulator, tma): mma one of "
                 f"{sorted(PATH_CHOICES[0])}, accumulator 'registers' or 'tmem', tma True or False")
    for got, (cc,) in zip(got_all, PATH_CASES):
        if (got[0], got[1], bool(got[2])) != mma_path_ref(cc):
            fail(name, f"mma_path({cc}) = {tuple(got)}, expected {mma_path_ref(cc)}",
                 named_mistake(got_all, PATH_CASES, PATH_SLIPS, same=lambda g, w: (g[0], g[1], bool(g[2])) == tuple(w)) or
                 "wgmma on 9.0 only; tcgen05.mma (accumulator in tmem) on 10.x and 11.0; mma.sync elsewhere; "
                 "TMA from 9.0 on")
    passed(name, f"all {len(PATH_CASES)} compute capabilities.")
