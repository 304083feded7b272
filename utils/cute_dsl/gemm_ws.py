"""Day 5 · 04: the TMA + WGMMA GEMM of ``cute_gemm``, warp-specialized and (optionally) persistent.

After the structure of CUTLASS's ``HopperWgmmaGemmPersistentKernel``
(``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm/dense_gemm_persistent.py``), compactly:

* 384 threads: warpgroup 0 is the producer (DMA) warpgroup, whose warp 0 only issues TMA loads;
  it gives registers back (``setmaxnreg.dec`` to 40), and the two consumer (MMA) warpgroups take
  them (``setmaxnreg.inc`` to 232): they only wait, run ``wgmma`` and release stages;
* a static persistent tile loop hands out the C tiles in the tile order of ``TmaGemm``
  (:func:`cute_gemm.ordered_tile`, so only warp specialization differs between the two):
  ``persistent=True`` launches one cluster per SM and each walks tile numbers ``grid`` apart, so
  the producer already loads the next tile while the consumers run the epilogue of this one;
  ``persistent=False`` launches one cluster per tile (the same kernel, one trip of the loop);
* C goes registers -> its own shared-memory buffers (not A's: the producer is still loading) ->
  TMA store.
"""
from __future__ import annotations

from ..tma import rules
from .compat import cpasync, cute, cutlass, pipeline, SmemAllocator, warpgroup
from .gemm import ORDERS, TILE_MNK, TmaGemm, check_cluster, check_operands, check_tile, ordered_tile

SMEM_BYTES = 227 * 1024
EPI_STAGES = 4
LOAD_REGS, MMA_REGS = 40, 232            # setmaxnreg targets of the official example
H100_SMS = 132                            # compile-only default for the persistent grid


def ws_stages(itemsize: int = 2, tile=TILE_MNK, c_sets: int = 1) -> int:
    """A+B stages that fit next to the epilogue's own C buffers (``c_sets`` rings of 4 x 128 x 32,
    one per warpgroup that stores on its own) and 1 KiB of barriers."""
    itemsize, tile = rules.elem_size(itemsize, "itemsize"), check_tile(tile)
    c_sets = rules.in_range("c_sets", c_sets, 1, 2, " (C rings: one, or one per consumer warpgroup)")
    epi = c_sets * EPI_STAGES * 128 * 32 * itemsize
    return (SMEM_BYTES - 1024 - epi) // ((tile[0] + tile[1]) * tile[2] * itemsize)


class WsGemm(TmaGemm):
    """``WsGemm(persistent, cluster, sms, realloc, order)(a, b, c, stream)``: same tensors as
    ``TmaGemm``. ``sms``: the GPU's SM count (the persistent grid launches sms / cluster size
    clusters); ``realloc=False`` leaves out the two ``setmaxnreg`` (every warp keeps the launch's
    registers); ``order``: the tile order (:func:`cute_gemm.ordered_tile`); ``multicast=False``
    keeps the cluster (and with it the tile order and co-scheduling) but has every CTA load its own
    tiles and free its own buffers, as in ``TmaGemm``."""

    def __init__(self, persistent: bool = True, cluster=(1, 1), sms: int = H100_SMS, realloc: bool = True,
                 order: str = "grouped", tile=TILE_MNK, c_sets: int = 1, multicast: bool = True):
        super().__init__(ws_stages(2, tile, c_sets), cluster, tile, order, multicast)
        sms = rules.positive("sms", sms)
        self.persistent, self.realloc = rules.flag("persistent", persistent), rules.flag("realloc", realloc)
        self.max_clusters = sms // (self.cluster[0] * self.cluster[1]) if persistent else 1 << 24
        self.threads = 384                              # 1 producer + 2 consumer warpgroups
        self.mma_threads = 256
        self.c_sets = c_sets
        self.release_warps = 8                          # warps that release each stage (both consumers)
        self.epi_bar = pipeline.NamedBarrier(barrier_id=1, num_threads=self.mma_threads)

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        ab, tiled_mma, sa_layout, sb_layout, sc_layout = self.mma_and_layouts(a, b, c, EPI_STAGES * self.c_sets)
        atom_a, tma_a, atom_b, tma_b, (atom_c, tma_c) = self.tma_atoms(a, b, c, sa_layout, sb_layout, sc_layout)
        cm, cn = self.cluster

        @cute.struct
        class Storage:
            bars: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            order_bars: cute.struct.MemRange[cutlass.Int64, 4]      # used by the ping-pong kernel
            sA: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sa_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sb_layout)], 1024]
            sC: cute.struct.Align[cute.struct.MemRange[self.c_dtype, cute.cosize(sc_layout)], 1024]
        self.storage = Storage
        self.stage_bytes = cute.size_in_bytes(ab, cute.slice_(sa_layout, (None, None, 0))) + \
            cute.size_in_bytes(ab, cute.slice_(sb_layout, (None, None, 0)))
        tiles = cute.ceil_div((c.layout.shape[0], c.layout.shape[1]), (self.tile[0], self.tile[1]))
        clusters_m, clusters_n = cute.ceil_div(tiles[0], cm), cute.ceil_div(tiles[1], cn)
        grid = (cm, cn, cutlass.min(clusters_m * clusters_n, self.max_clusters))     # z: clusters
        # the cluster counts go in as kernel arguments (runtime values), so that ordered_tile
        # runs the same arithmetic as in TmaGemm, where they come from %nclusterid
        self.kernel(atom_a, tma_a, atom_b, tma_b, atom_c, tma_c, tiled_mma, sa_layout, sb_layout,
                    sc_layout, cutlass.Int32(clusters_m), cutlass.Int32(clusters_n)).launch(
                        grid=grid, block=[self.threads, 1, 1], cluster=(cm, cn, 1), min_blocks_per_mp=1,
                        stream=stream)

    @cute.kernel
    def kernel(self, atom_a: cute.CopyAtom, mA: cute.Tensor, atom_b: cute.CopyAtom, mB: cute.Tensor,
               atom_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sa_layout: cute.ComposedLayout, sb_layout: cute.ComposedLayout, sc_layout: cute.ComposedLayout,
               clusters_m: cutlass.Int32, clusters_n: cutlass.Int32):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(atom_a)
            cpasync.prefetch_descriptor(atom_b)
            cpasync.prefetch_descriptor(atom_c)
        cta_layout = cute.make_layout((*self.cluster, 1))
        crd = cta_layout.get_flat_coord(cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster()))
        cm, cn = self.share                             # (1, 1) without multicast
        mask_a = cute.make_layout_image_mask(cta_layout, crd, mode=1) if cn > 1 else 0
        mask_b = cute.make_layout_image_mask(cta_layout, crd, mode=0) if cm > 1 else 0
        storage = SmemAllocator().allocate(self.storage)
        consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, (cm + cn - 1) * self.release_warps)
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread), consumer_group=consumers,
            tx_count=self.stage_bytes, cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)), defer_sync=True,
            mcast_mode_mn=self.release_mode())
        wg = cute.arch.make_warp_uniform(tidx // 128)
        order = self.make_order(storage, wg)            # initialised with the pipeline's barriers
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster, is_relaxed=True)
        sA = storage.sA.get_tensor(sa_layout.outer, swizzle=sa_layout.inner)
        sB = storage.sB.get_tensor(sb_layout.outer, swizzle=sb_layout.inner)
        sC = storage.sC.get_tensor(sc_layout.outer, swizzle=sc_layout.inner)
        bm, bn, bk = self.tile
        gA = cute.local_tile(mA, (bm, bk), (None, None, None))    # (bM, bK, m, k, l)
        gB = cute.local_tile(mB, (bn, bk), (None, None, None))    # (bN, bK, n, k, l)
        gC = cute.local_tile(mC, (bm, bn), (None, None, None))    # (bM, bN, m, n, l)
        tAs, tAg = cpasync.tma_partition(atom_a, crd[1] if cn > 1 else 0, cute.make_layout(cn),
                                         cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBs, tBg = cpasync.tma_partition(atom_b, crd[0] if cm > 1 else 0, cute.make_layout(cm),
                                         cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        thr_mma = tiled_mma.get_slice(self.mma_slice(wg))
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC[(None, None, 0, 0, 0)]).shape, cutlass.Float32)
        k_tiles = cute.size(gA, mode=[3])
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster)

        # warp_roles splits the threads; it gets the producer's loads and the consumers' loop as closures
        def tile_loads(tile):                           # load(prod) for each k-tile of tile number `tile`
            m, n = self.tile_mn(tile, clusters_m, clusters_n, crd)
            tAg_t, tBg_t = tAg[(None, m, None, 0)], tBg[(None, n, None, 0)]
            return lambda prod: self.load(pipe, prod, atom_a, tAg_t, tAs, mask_a, atom_b, tBg_t, tBs, mask_b)

        def consume():                                  # the consumer warpgroups' whole loop
            self.consume(pipe, clusters_m, clusters_n, crd, tiled_mma, tCrA, tCrB, acc, k_tiles, atom_c, gC, sC,
                         tidx, warp, order)
        self.warp_roles(wg, warp, pipe, clusters_m * clusters_n, k_tiles, tile_loads, consume)

    @cute.jit
    def warp_roles(self, wg, warp, pipe, tiles, k_tiles, tile_loads, consume):
        """The warp-specialized role split (rung 3, with rung 4's ``setmaxnreg``): warpgroup 0
        produces, its warp 0 walking this cluster's tile numbers (from :meth:`first_tile`,
        :meth:`tile_step` apart, below ``tiles``) and loading every k-tile of each into the ring;
        warpgroups 1 and 2 consume. Day 5 · 05's Exercise 2 has the learner write it."""
        if wg == 0:                                     # producer warpgroup: few registers
            if cutlass.const_expr(self.realloc):
                cute.arch.setmaxregister_decrease(LOAD_REGS)
            if warp == 0:
                prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                tile = self.first_tile()
                while tile < tiles:                     # this cluster's tiles, a grid apart
                    load = tile_loads(tile)
                    prod.reset_count()                  # .count = k-tile, .index/.phase run on
                    for _ in cutlass.range(k_tiles, unroll=1):
                        load(prod)
                        prod.advance()
                    tile += self.tile_step()
                pipe.producer_tail(prod)                # don't exit while peers may still signal us
        if wg > 0:                                      # consumer warpgroups: many registers
            if cutlass.const_expr(self.realloc):
                cute.arch.setmaxregister_increase(MMA_REGS)
            consume()

    @cute.jit
    def mma_slice(self, wg):
        """The MMA slice of warpgroup ``wg`` (1, 2): its 64-row half of the shared C tile."""
        return cute.make_layout(2, stride=128)(wg - 1)

    def make_order(self, storage, wg):
        """The consumers' ordering barrier: none here (both run every tile together)."""
        return None

    @cute.jit
    def first_tile(self):
        """The first tile number (in the tile order) of this cluster: its index in the grid."""
        return cute.arch.make_warp_uniform(cute.arch.block_idx()[2])

    @cute.jit
    def tile_step(self):
        """How far apart a cluster's tile numbers are: the clusters in the grid."""
        return cute.arch.make_warp_uniform(cute.arch.grid_dim()[2])

    @cute.jit
    def tile_mn(self, tile, clusters_m, clusters_n, crd):
        """(m, n) C tile of this CTA for tile number ``tile``: the cluster's place in the grouped
        order (:func:`cute_gemm.ordered_tile`) plus the CTA's place in the cluster."""
        cid_m, cid_n = ordered_tile(tile, clusters_m, clusters_n, self.order)
        return cid_m * self.cluster[0] + crd[0], cid_n * self.cluster[1] + crd[1]

    @cute.jit
    def consume(self, pipe, clusters_m, clusters_n, crd, tiled_mma, tCrA, tCrB, acc, k_tiles, atom_c, gC, sC,
                tidx, warp, order):
        """Consumer loop: per tile, wait -> wgmma -> release each stage, then the epilogue."""
        tile = self.first_tile()
        done = cutlass.Int32(0)                         # tiles finished (the epilogue's ring position)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        store_pipe = pipeline.PipelineTmaStore.create(
            num_stages=EPI_STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.mma_threads))
        while tile < clusters_m * clusters_n:
            self.mainloop(pipe, read, release, tiled_mma, tCrA, tCrB, acc, k_tiles)
            m, n = self.tile_mn(tile, clusters_m, clusters_n, crd)
            self.ws_epilogue(acc, tiled_mma, atom_c, gC[(None, None, m, n, 0)], sC, store_pipe,
                             tidx - 128, warp, done)
            done += 1
            tile += self.tile_step()
        store_pipe.producer_tail()

    @cute.jit
    def mainloop(self, pipe, read, release, tiled_mma, tCrA, tCrB, acc, k_tiles, order=None, turn=None):
        """One tile's k-loop: wait for a stage -> wgmma -> release the stage before it; then wait
        for the last wgmmas and release the tile's last stage. With an ordering barrier
        (``order``, ping-pong), the turn passes on once the last wgmmas are issued."""
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        for k in cutlass.range(k_tiles, unroll=1):
            pipe.consumer_wait(read)
            warpgroup.fence()
            for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
                cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
            warpgroup.commit_group()
            warpgroup.wait_group(1)                     # the previous stage's wgmmas are done
            read.advance()
            if k >= 1:
                pipe.consumer_release(release)
                release.advance()
        if cutlass.const_expr(order is not None):
            order.arrive(turn)                          # the other warpgroup's mainloop may start
        warpgroup.wait_group(0)
        pipe.consumer_release(release)                  # the tile's last stage
        release.advance()

    @cute.jit
    def ws_epilogue(self, acc, tiled_mma, atom_c, gC, sC, store_pipe, tidx, warp, done, cw=0):
        """Accumulators -> fp16/bf16 -> C's own shared buffers (a ring across tiles) -> TMA store.
        ``cw``: the consumer warpgroup storing alone (ping-pong: its own ring, barrier and warp)."""
        tiled_r2s, tRS_sC, tRS_acc, rD_layout, rD, gC_epi, bSG_s, bSG_g = self.epilogue_views(
            acc, tiled_mma, atom_c, gC, sC, tidx)
        epi_n = cute.size(gC_epi, mode=[1])
        epi_shape = gC_epi.shape[1]
        epi_layout = cute.make_layout(epi_shape, stride=(epi_shape[1], 1))
        for e in cutlass.range_constexpr(epi_n):
            for v in cutlass.range_constexpr(cute.size(rD)):
                rD[v] = tRS_acc[e * cute.size(rD) + v]
            out = cute.make_rmem_tensor_like(rD_layout, self.c_dtype)
            out.store(rD.load().to(self.c_dtype))
            buf = (done * epi_n + e) % EPI_STAGES + cw * EPI_STAGES
            cute.copy(tiled_r2s, out, tRS_sC[(None, None, None, buf)])
            cute.arch.fence_proxy("async.shared", space="cta")
            self.epi_sync(cw)
            if warp == 4 + 4 * cw:                      # the storing group's first warp stores
                cute.copy(atom_c, bSG_s[(None, buf)], bSG_g[(None, epi_layout.get_hier_coord(e))])
                store_pipe.producer_commit()
                store_pipe.producer_acquire()
            self.epi_sync(cw)

    @cute.jit
    def epi_sync(self, cw):
        """Barrier of the threads that store one C tile (here: both consumer warpgroups)."""
        self.epi_bar.arrive_and_wait()


def sm_count() -> int:
    """SMs of the current GPU (the persistent grid: one cluster per SM, or per cluster-size SMs)."""
    import torch
    return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count


MAX_GRID_Z = 65535                        # CUDA's limit on gridDim.z


def check_grid(M: int, N: int, persistent: bool, cluster=(1, 1), tile=TILE_MNK) -> int:
    """Clusters a launch puts in ``grid.z`` (one per SM-cluster when persistent, one per tile
    cluster otherwise); raises ValueError past CUDA's 65535 instead of failing at launch."""
    M, N = rules.positive("M", M), rules.positive("N", N)
    persistent, (cm, cn), tile = rules.flag("persistent", persistent), check_cluster(cluster), check_tile(tile)
    clusters = -(-(-(-M // tile[0])) // cm) * -(-(-(-N // tile[1])) // cn)
    if not persistent and clusters > MAX_GRID_Z:
        raise ValueError(f"{M} x {N} needs {clusters} clusters of {tile[0]} x {tile[1]} tiles in grid.z, more than "
                         f"CUDA's {MAX_GRID_Z}: use the persistent kernel (persistent=True)")
    return clusters


def run_ws(a, b, c, persistent: bool = True, cluster=(1, 1), realloc: bool = True, order: str = "grouped",
           tile=TILE_MNK, multicast: bool = True):
    """c = a @ b.T with ``WsGemm`` (same inputs as ``cute_gemm.run_gemm``; ``tile`` and ``multicast`` as
    ``WsGemm`` takes them). Returns c."""
    from .gemm import operands, run_cached
    check_operands(a, b, c)                       # every CPU-side rule before the GPU is asked anything
    tile = check_tile(tile)
    check_grid(a.shape[0], b.shape[0], persistent, cluster, tile)
    rules.flag("realloc", realloc), rules.flag("multicast", multicast)
    if order not in ORDERS:
        raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
    sms = sm_count()
    key = ("ws", str(a.dtype), tuple(a.shape), tuple(b.shape), bool(persistent), tuple(cluster), sms, realloc, order,
           tile, multicast)
    run_cached(key, lambda: WsGemm(persistent, cluster, sms, realloc, order, tile=tile, multicast=multicast),
               operands(a, b, c))
    return c
