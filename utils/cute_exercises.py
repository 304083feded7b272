"""Day 5 · 04 exercises: references and checks (see ``utils.checks`` for the conventions).

1. :func:`check_stage_tx` — the ``expect_tx`` bytes of one pipeline stage (A tile + B tile).
2. :func:`check_mcast_mask` — the 16-bit multicast mask of a CTA in a cluster.
3. :func:`check_producer` — the producer's acquire / copy / commit step of the TMA GEMM,
   compiled for sm_90a (any machine) and, on Hopper, run against torch.
"""
from __future__ import annotations

from .checks import NOT_ATTEMPTED, attempt, fail, not_attempted, passed


def stage_tx_ref(tile_mnk, itemsize: int, cluster=(1, 1)) -> int:
    """Bytes that complete one stage's mbarrier phase: the whole A tile (M x K) and B tile
    (N x K). With multicast each CTA *issues* only a slice, but receives the full tiles."""
    m, n, k = tile_mnk
    return (m * k + n * k) * itemsize


def mcast_mask_ref(cluster_shape, coord, mode: int) -> int:
    """The multicast mask of the CTA at ``coord`` = (m, n) in a cluster of ``cluster_shape``
    (cm, cn): bit r is set for every CTA rank r (column-major, r = m + n * cm) that shares the
    tile. ``mode=1`` (A tiles): the CTAs of the same row m; ``mode=0`` (B tiles): same column n."""
    cm, cn = cluster_shape
    m, n = coord
    if mode == 1:
        return sum(1 << (m + j * cm) for j in range(cn))
    return sum(1 << (i + n * cm) for i in range(cm))


def check_stage_tx(fn) -> None:
    """Check ``fn(tile_mnk, itemsize, cluster)`` against :func:`stage_tx_ref`."""
    name = "stage expect_tx bytes"
    cases = [((128, 256, 64), 2, (1, 1)), ((128, 128, 64), 1, (1, 1)), ((128, 256, 64), 2, (2, 1)),
             ((64, 64, 32), 4, (2, 2))]
    for tile, size, cluster in cases:
        got = attempt(fn, tile, size, cluster)
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return not_attempted(name)
        want = stage_tx_ref(tile, size, cluster)
        if not isinstance(got, int) or isinstance(got, bool):
            fail(name, f"return an int number of bytes, got {type(got).__name__} {got!r}")
        if got != want:
            hint = ("each CTA *receives* the full tiles even when it issues only a slice: do not "
                    "divide by the cluster size" if got * cluster[0] * cluster[1] == want or
                    got * max(cluster) == want else
                    "A is M x K and B is N x K elements, times the element size")
            fail(name, f"got {got} B, expected {want} B", hint, launched=f"tile={tile}, itemsize={size}, cluster={cluster}")
    passed(name, "(128 x 256 x 64 fp16: 49152 B per stage)")


def check_mcast_mask(fn) -> None:
    """Check ``fn(cluster_shape, coord, mode)`` against :func:`mcast_mask_ref` for every CTA of
    clusters 2x1, 1x2, 2x2 and 4x1, both modes."""
    name = "multicast mask"
    for cluster in ((2, 1), (1, 2), (2, 2), (4, 1), (1, 4)):
        for mode in (0, 1):
            for m in range(cluster[0]):
                for n in range(cluster[1]):
                    got = attempt(fn, cluster, (m, n), mode)
                    if isinstance(got, str) and got == NOT_ATTEMPTED:
                        return not_attempted(name)
                    want = mcast_mask_ref(cluster, (m, n), mode)
                    if not isinstance(got, int) or got != want:
                        hint = ("ranks are column-major: r = m + n * cm" if isinstance(got, int) and
                                got == mcast_mask_ref(cluster[::-1], (n, m), mode) else
                                "mode 1 (A) spans the CTAs with the same m; mode 0 (B) the same n")
                        fail(name, f"got {got!r} ({got:#06b})" if isinstance(got, int) else f"got {got!r}",
                             hint + f"; expected {want:#06b}", launched=f"cluster={cluster}, coord={(m, n)}, mode={mode}")
    passed(name)


def _count(ptx: str) -> dict:
    from .ptx import count
    return count(ptx, {"tma load": r"cp\.async\.bulk\.tensor\.\dd\.shared::(cta|cluster)\.global",
                       "mbarrier wait": r"mbarrier\.try_wait", "expect_tx": r"\.expect_tx"})


def check_producer(load_fn, tier=None) -> None:
    """Compile the TMA GEMM with your producer step ``load_fn`` in place of the course's and
    compare the PTX (TMA loads, the acquire's wait and expect_tx) with the reference; on Hopper,
    also run a 512 x 384 x 320 GEMM and compare with torch."""
    from . import cute_gemm
    name = "producer step"

    class Yours(cute_gemm.TmaGemm):
        load = load_fn

    ref, yours = _count(cute_gemm.ptx_of(2)), None
    try:
        yours = _count(cute_gemm.ptx_of(gemm=Yours(2)))
    except NotImplementedError:
        return not_attempted(name)
    except Exception as err:  # a learner's kernel that does not compile
        fail(name, f"your step does not compile: {type(err).__name__}: {str(err)[:300]}",
             "it receives (pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b)")
    if yours["tma load"] == 0 and yours["expect_tx"] <= ref["expect_tx"] - 2:
        return not_attempted(name)
    for key, hint in (("tma load", "one cute.copy for A and one for B, each with tma_bar_ptr=the "
                       "stage's barrier and its mcast_mask, on the stage's buffer index"),
                      ("expect_tx", "pipe.producer_acquire(state) waits for a free buffer and arms expect_tx"),
                      ("mbarrier wait", "pipe.producer_acquire(state) first: it waits until the consumers "
                       "released the buffer")):
        if yours[key] != ref[key]:
            fail(name, f"your kernel's PTX has {yours[key]} '{key}' instructions, the reference {ref[key]}", hint)
    if tier is not None and tier.has_tma:
        import torch
        a, b = (torch.randn(s, device="cuda").half() for s in ((512, 320), (384, 320)))
        c = torch.full((512, 384), float("nan"), device="cuda", dtype=torch.float16)
        cute_gemm.run_gemm(a, b, c, gemm=Yours(2))
        torch.cuda.synchronize()
        if not torch.allclose(c.float(), a.float() @ b.float().T, atol=0.1, rtol=0.01):
            fail(name, "the GEMM ran but C differs from torch", "index the global tile by state.count "
                 "(the k-tile) and shared memory by state.index (the buffer)")
    passed(name, "(PTX matches the reference" + (", and the GEMM matches torch)" if tier is not None
                                                   and tier.has_tma else ")"))
