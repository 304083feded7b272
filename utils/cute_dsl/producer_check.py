"""Exercise 3 of ``day05_tma/04_cutedsl_tma_gemm``: the producer's acquire / copy / commit step of
the TMA GEMM. Its structure is followed while CuteDSL compiles the GEMM for sm_90a (any machine):
acquire first, then one copy of A's and one of B's k-tile into the stage's buffer, on the stage's
barrier, each with its own multicast mask; on Hopper the GEMM also runs and is compared with
torch. Split from :mod:`utils.cute_dsl.exercises`, which re-exports it."""
from __future__ import annotations

import re

from ..core.checks import fail, not_attempted, passed, verified

PRODUCER_CLUSTER = (2, 2)      # distinct multicast masks for A and B, so a swap shows


_ANSI = re.compile(r"\x1b\[[0-9;]*m")
_SLICES = ("slice each partition with two indices, None first (the tile's elements stay whole): "
           "tAg[None, state.count] (the k-tile) into tAs[None, state.index] (the buffer)")
COMPILE_HINTS = [  # (a piece of CuteDSL's error message, the hint for it)
    ("must be Tensor", _SLICES), ("expects same size", _SLICES),
    ("tma_bar_ptr", "tma_bar_ptr=pipe.producer_get_barrier(state): the copy's bytes complete the "
                    "stage's barrier"),
    ("mcast_mask", "mcast_mask=mask_a for A's copy, mask_b for B's: the masks your step receives "
                   "(device Int16 values; a multicast copy needs one, a Python int is not one)"),
    ("has no attribute 'index'", "pass the pipeline state itself: pipe.producer_acquire(state), "
                                 "pipe.producer_get_barrier(state)"),
    ("has no attribute 'count'", "pass the pipeline state itself: pipe.producer_acquire(state), "
                                 "pipe.producer_get_barrier(state)")]


def matches_torch(name: str, c, want, hint: str, launched: str) -> None:
    """Fail check ``name`` unless C (fp16, on the GPU) is ``want`` within fp16's tolerance (atol 0.1,
    rtol 0.01), naming the first element that differs; shared by the CuteDSL kernel checks' Hopper runs."""
    import torch
    if not torch.allclose(c.float(), want, atol=0.1, rtol=0.01):
        bad = (~torch.isclose(c.float(), want, atol=0.1, rtol=0.01)).nonzero()[0].tolist()
        fail(name, f"the GEMM ran but C differs from torch, first at {tuple(bad)}: "
             f"{c[tuple(bad)].item()} vs {want[tuple(bad)].item():.3f}", hint, launched=launched)


def _tma_loads(ptx: str) -> int:
    from ..core.ptx import count
    return count(ptx, {"tma load": r"cp\.async\.bulk\.tensor\.\dd\.shared::(cta|cluster)\.global"})["tma load"]


def producer_problems(events: list) -> list:
    """(what is wrong, hint) for one traced call of the producer step (empty: the structure is
    right): acquire first, then one TMA copy of A's and one of B's k-tile ``state.count`` into
    buffer ``state.index``, on the stage's barrier, each with its own multicast mask."""
    pipe = [e[1] for e in events if e[0] == "pipe"]
    copies = [e for e in events if e[0] == "copy"]
    first_copy = next((i for i, e in enumerate(events) if e[0] == "copy"), len(events))
    if not any(e[0] == "pipe" and e[1] == "producer_acquire" for e in events[:first_copy]):
        return [("no pipe.producer_acquire(state) before the copies",
                 "pipe.producer_acquire(state) first: it waits until the consumers released the "
                 "buffer and arms the barrier's expect_tx with the stage's bytes")]
    if pipe.count("producer_acquire") > 1:
        return [(f"pipe.producer_acquire(state) is called {pipe.count('producer_acquire')} times in one "
                 "step", "acquire once per stage: each call arms the barrier's expect_tx with the "
                 "whole stage's bytes again, so the phase would wait for bytes that never come")]
    n_a = sum(c[1] == "atom_a" for c in copies)
    n_b = sum(c[1] == "atom_b" for c in copies)
    if (n_a, n_b) != (1, 1):
        return [(f"your step issues {n_a} tma load(s) with atom_a and {n_b} with atom_b "
                 f"({len(copies)} cute.copy in all)", "each stage needs exactly one copy of A's "
                 "tile (atom_a, tAg -> tAs) and one of B's (atom_b, tBg -> tBs)")]
    out, masks = [], {c[1]: c[5] for c in copies}
    swapped_masks = masks == {"atom_a": "mask_b", "atom_b": "mask_a"}
    for atom, mat, mask in (("atom_a", "A", "mask_a"), ("atom_b", "B", "mask_b")):
        _, _, src, dst, bar, mcast = next(c for c in copies if c[1] == atom)
        g, s = f"t{mat}g", f"t{mat}s"
        if not src.startswith(g + "[") or not dst.startswith(s + "["):
            out.append((f"the {atom} copy goes from {src} to {dst}", f"{atom} copies {mat}'s tile: "
                        f"from {g}[None, state.count] to {s}[None, state.index]"))
        elif src != f"{g}[state.count]" or dst != f"{s}[state.index]":
            swapped = src == f"{g}[state.index]" and dst == f"{s}[state.count]"
            out.append((f"{mat} is copied from {src} to {dst}",
                        ("count and index are swapped: " if swapped else "") +
                        "the global tile is indexed by the k-tile, state.count (it grows with the "
                        "loop); the shared buffer by state.index (it cycles through the stages)"))
        if not (bar or "").startswith("pipe.producer_get_barrier"):
            out.append((f"the {atom} copy's tma_bar_ptr is {bar or 'missing'}",
                        "tma_bar_ptr=pipe.producer_get_barrier(state): the bytes complete that "
                        "stage's barrier"))
        if mcast != mask:
            out.append((f"the {atom} copy's mcast_mask is {mcast or 'missing'}",
                        f"{mask} for {mat}: A's tile is shared by the CTAs of a cluster row, B's by "
                        "those of a column" + (" (the masks are swapped)" if swapped_masks else "")))
    if pipe.count("producer_commit") > 1:
        out.append(("producer_commit is called inside your part too",
                    "the template calls pipe.producer_commit(state) after your lines"))
    return out


def check_producer(load_fn, tier=None) -> None:
    """Compile the TMA GEMM (2 stages, 2 x 2 cluster) with your producer step ``load_fn`` and
    follow what it does while CuteDSL traces it (:mod:`utils.cute_dsl.trace`): acquire, which atoms
    copy which slices, barrier and masks. That is all a machine without Hopper can verify; on
    Hopper the check also runs 512 x 512 x 320 fp16 GEMMs (clusters 1 x 1 and 2 x 2) and compares
    C with torch."""
    from . import gemm as cute_gemm
    from .trace import Trace, copies_recorded, traced_step
    name = "producer step"
    if not callable(load_fn):
        fail(name, f"expected the @cute.jit function, got {type(load_fn).__name__}")
    trace = Trace()

    class Traced(cute_gemm.TmaGemm):
        load = traced_step(load_fn, trace)
    try:
        with copies_recorded(trace):
            ptx = cute_gemm.ptx_of(gemm=Traced(2, PRODUCER_CLUSTER), mnk=(512, 512, 320))
    except NotImplementedError:
        return not_attempted(name)
    except Exception as err:  # a learner's step that does not compile explains itself
        text = " ".join(_ANSI.sub("", str(err)).split())
        fail(name, f"your step does not compile: {type(err).__name__}: {text[:300]}",
             next((h for key, h in COMPILE_HINTS if key in text), "it receives (pipe, state, atom_a, "
                  "tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b)"))
    if not trace.calls:
        fail(name, "the kernel never called your step", "assign it as the GEMM's load method")
    only_commit = all(all(e == ("pipe", "producer_commit", True) for e in call) for call in trace.calls)
    if only_commit and not _tma_loads(ptx):
        return not_attempted(name)          # does what the stub does: nothing but the commit
    if not any(e[0] == "copy" for call in trace.calls for e in call) and _tma_loads(ptx):
        fail(name, "your step's copies could not be followed", "call them as cute.copy(atom, src, "
             "dst, tma_bar_ptr=..., mcast_mask=...)")
    for call in trace.calls:
        problems = producer_problems(call)
        if problems:
            fail(name, problems[0][0], problems[0][1], launched="TmaGemm(stages=2, cluster=(2, 2)) "
                 "compiled for sm_90a with your step")
    has = getattr(tier, "has", None)
    if not (callable(has) and has("wgmma") and has("cutedsl")):    # the GEMM is a wgmma kernel
        return verified(name, "structure OK (acquire, then A's and B's k-tile state.count into "
                        "buffer state.index, on the stage's barrier, each with its own multicast "
                        "mask); correctness is checked on Hopper.")
    _run_on_hopper(name, load_fn, cute_gemm)
    return passed(name, "structure OK, and the GEMMs (clusters 1 x 1 and 2 x 2) match torch.")


def _run_on_hopper(name, load_fn, cute_gemm) -> None:
    """Run C = A @ B.T with ``load_fn`` as the producer step; compare with torch."""
    import torch

    class Yours(cute_gemm.TmaGemm):
        load = load_fn
    gen = torch.Generator(device="cuda").manual_seed(0)
    a = torch.randn(512, 320, device="cuda", generator=gen).half()
    b = torch.randn(512, 320, device="cuda", generator=gen).half()
    want = a.float() @ b.float().T
    for cluster in ((1, 1), PRODUCER_CLUSTER):
        c = torch.full((512, 512), float("nan"), device="cuda", dtype=torch.float16)
        cute_gemm.run_gemm(a, b, c, gemm=Yours(2, cluster))
        torch.cuda.synchronize()
        matches_torch(name, c, want, "the structure looked right: compare your lines with the reference step",
                      f"TmaGemm(stages=2, cluster={cluster}), 512 x 512 x 320 fp16")
