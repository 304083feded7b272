"""Day 5 · 04: the GEMM of ``cute_gemm`` with its TMA loads replaced by thread-driven ``cp.async``.

Same CTA tile (128 x 256 x 64), same swizzled shared-memory stages, same ``wgmma`` and the same
epilogue (a TMA store, so that only the *load* path differs). What changes:

* every one of the 256 threads copies its share of each stage, 16 bytes per ``cp.async``
  (A: 4 per thread, B: 8), with a tiled copy of 32 x 8 threads;
* completion is per thread (``cp.async.commit_group`` / ``wait_group``), so a CTA barrier and a
  proxy fence (the generic proxy wrote, the ``wgmma`` async proxy reads) come before each stage's
  ``wgmma``, and a second barrier before a buffer is refilled;
* no bounds handling: M, N and K must be multiples of the tile (TMA clips and zero-fills for free).
"""
from __future__ import annotations

from .compat import cpasync, cute, cutlass, sm90, SmemAllocator, warpgroup
from .gemm import TILE_MNK, TmaGemm


class CpAsyncGemm(TmaGemm):
    """``CpAsyncGemm(stages)(a, b, c, stream)``: same tensors as ``TmaGemm``; stages 2..4."""

    def __init__(self, stages: int = 4):
        if not (isinstance(stages, int) and stages >= 2):
            raise ValueError(f"stages must be 2..4 for cp.async (one buffer refills while one is read), got {stages!r}")
        super().__init__(stages, (1, 1))

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        ab, tiled_mma, sa_layout, sb_layout, sc_layout = self.mma_and_layouts(a, b, c, 4)
        atom = cute.make_copy_atom(cpasync.CopyG2SOp(cache_mode=cpasync.LoadCacheMode.GLOBAL), ab,
                                   num_bits_per_copy=128)
        g2s = cute.make_tiled_copy_tv(atom, cute.make_layout((32, 8), stride=(8, 1)), cute.make_layout((1, 8)))
        atom_c, tma_c = self.tma_store_atom(c, sc_layout)

        @cute.struct
        class Storage:
            sA: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sa_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sb_layout)], 1024]
        self.storage = Storage
        grid = cute.ceil_div((c.layout.shape[0], c.layout.shape[1], 1), (TILE_MNK[0], TILE_MNK[1], 1))
        self.cp_kernel(a, b, g2s, atom_c, tma_c, tiled_mma, sa_layout, sb_layout, sc_layout).launch(
            grid=grid, block=[self.threads, 1, 1], cluster=(1, 1, 1), stream=stream)

    @cute.kernel
    def cp_kernel(self, mA: cute.Tensor, mB: cute.Tensor, g2s: cute.TiledCopy, atom_c: cute.CopyAtom,
                  mC: cute.Tensor, tiled_mma: cute.TiledMma, sa_layout: cute.ComposedLayout,
                  sb_layout: cute.ComposedLayout, sc_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        pid_m, pid_n = self.tile_of_cluster()
        storage = SmemAllocator().allocate(self.storage)
        sA, sB, gA, gB, gC = self.tile_views(storage, sa_layout, sb_layout, mA, mB, mC, pid_m, pid_n)
        thr_copy = g2s.get_slice(tidx)
        tAg, tAs = thr_copy.partition_S(gA), thr_copy.partition_D(sA)     # (CPY, m, k, k-tile | stage)
        tBg, tBs = thr_copy.partition_S(gB), thr_copy.partition_D(sB)
        wg = cute.arch.make_warp_uniform(tidx // 128)
        thr_mma = tiled_mma.get_slice(cute.make_layout(2, stride=128)(wg))
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape, cutlass.Float32)
        k_tiles = cute.size(gA, mode=[2])
        for s in cutlass.range_constexpr(self.stages - 1):              # prologue: stages - 1 k-tiles
            if s < k_tiles:
                cute.copy(g2s, tAg[None, None, None, s], tAs[None, None, None, s])
                cute.copy(g2s, tBg[None, None, None, s], tBs[None, None, None, s])
            cute.arch.cp_async_commit_group()
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        for k in cutlass.range(k_tiles, unroll=1):
            buf = k % self.stages
            cute.arch.cp_async_wait_group(self.stages - 2)          # my copies of k-tile k landed
            cute.arch.fence_proxy("async.shared", space="cta")      # generic writes -> wgmma reads
            cute.arch.sync_threads()                                # ... and everybody else's
            warpgroup.fence()
            for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, buf], tCrB[None, None, kb, buf], acc)
            warpgroup.commit_group()
            warpgroup.wait_group(1)                                 # my k-1 wgmmas are done
            cute.arch.sync_threads()                                # ... and the other warpgroup's
            nxt = k + self.stages - 1                               # refill buffer (k - 1) % stages
            if nxt < k_tiles:
                cute.copy(g2s, tAg[None, None, None, nxt], tAs[None, None, None, nxt % self.stages])
                cute.copy(g2s, tBg[None, None, None, nxt], tBs[None, None, None, nxt % self.stages])
            cute.arch.cp_async_commit_group()                       # (empty groups keep the count)
        warpgroup.wait_group(0)
        cute.arch.cp_async_wait_group(0)
        self.epilogue(acc, tiled_mma, atom_c, gC, sA, sc_layout, tidx, warp)


def run_cpasync(a, b, c, stages: int = 4):
    """c = a @ b.T with ``CpAsyncGemm`` (M, N and K multiples of 128, 256 and 64). Returns c."""
    from .gemm import check_operands, operands, run_cached
    check_operands(a, b, c)
    M, K = a.shape
    if M % TILE_MNK[0] or b.shape[0] % TILE_MNK[1] or K % TILE_MNK[2]:
        raise ValueError(f"the cp.async GEMM has no bounds checks: M, N, K must be multiples of "
                         f"{TILE_MNK}, got {(M, b.shape[0], K)}")
    key = ("cpasync", str(a.dtype), tuple(a.shape), tuple(b.shape), stages)
    run_cached(key, lambda: CpAsyncGemm(stages), operands(a, b, c))
    return c
