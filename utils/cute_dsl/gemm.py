"""Day 5 · 04: a TMA + WGMMA GEMM in CuteDSL, C = A @ B.T (A: M x K, B: N x K, both K-major).

A compact course version of the structure of CUTLASS's Hopper example (``HopperWgmmaGemmKernel``
in ``examples/python/CuTeDSL/cute/hopper/kernel/dense_gemm``), with the steps as parameters:

* ``stages``: shared-memory buffers for A and B tiles (1 = load, wait, compute, repeat; more =
  TMA keeps ``stages - 1`` k-tiles in flight while the tensor cores work);
* ``cluster``: ``(1, 1)`` or ``(2, 1)`` / ``(1, 2)`` / ``(2, 2)``: CTAs of a cluster share B (along M)
  or A (along N) tiles through TMA multicast.

The CTA tile is 128 x 256 x 64 with two consumer warpgroups (256 threads); warp 0 issues the
TMA loads, the epilogue goes registers -> shared memory -> TMA store.
"""
from __future__ import annotations

from ..tma import rules
from . import inputs
from .compat import cpasync, cute, cutlass, pipeline, sm90, SmemAllocator, warpgroup

TILE_MNK = (128, 256, 64)
TILES = ((128, 256, 64), (128, 128, 64))  # CTA tiles of the cooperative kernels (2 warpgroups x 64 rows)
ORDERS = ("grouped", "row", "serpentine")  # tile orders (see ordered_tile)
SMEM_BYTES = 227 * 1024
CLUSTERS = ((1, 1), (2, 1), (1, 2), (2, 2))   # (along M, along N)


def check_tile(tile) -> tuple:
    """A CTA tile (M, N, K): three positive ints."""
    tile = rules.ints("tile", tile)
    rules.require(len(tile) == 3, f"tile must be (M, N, K), got {tile}")
    return tuple(rules.positive(f"tile[{i}]", n) for i, n in enumerate(tile))


def check_cluster(cluster) -> tuple:
    """A cluster shape (CTAs along M, along N) the kernels are built for: one of :data:`CLUSTERS`."""
    cluster = rules.ints("cluster", cluster)
    rules.require(cluster in CLUSTERS, f"cluster must be (1, 1), (2, 1), (1, 2) or (2, 2), got {cluster!r}")
    return cluster


def max_stages(tile=TILE_MNK, itemsize: int = 2) -> int:
    """How many A+B stages fit in shared memory (1 KiB kept for barriers), as the example does."""
    tile, itemsize = check_tile(tile), rules.elem_size(itemsize, "itemsize")
    return (SMEM_BYTES - 1024) // ((tile[0] + tile[1]) * tile[2] * itemsize)


GROUP_M = 8               # clusters along M that walk N together (the tile order of every variant)


@cute.jit
def grouped_tile(cluster_id, clusters_m, clusters_n):
    """(cid_m, cid_n) of the ``cluster_id``-th cluster in the grouped order every GEMM variant uses:
    clusters walk M in groups of ``GROUP_M`` (M fastest, then N, then the next group; the last group
    holds ``clusters_m % GROUP_M``), so the clusters running together share A and B tiles in L2.
    The order of CUTLASS's ``HopperWgmmaGemmKernel``; Triton's ``GROUP_SIZE_M`` order.
    Needs ``clusters_m >= GROUP_M`` where the values are on the host (on the GPU the unused
    remainder by zero of a smaller grid gives an unspecified value, not a trap)."""
    group = GROUP_M
    s_shape = ((group, clusters_m // group), clusters_n)
    s_layout = cute.make_layout(s_shape, stride=((1, clusters_n * group), group))
    regular = cute.size(s_shape)
    cid_m, cid_n = s_layout.get_flat_coord(cluster_id % regular)
    if cluster_id >= regular:
        tail = cute.make_layout((clusters_m % group, clusters_n), stride=(1, clusters_m % group))
        tail_m, tail_n = tail.get_flat_coord(cluster_id - regular)
        cid_m = cute.size(s_shape, mode=[0]) + tail_m
        cid_n = tail_n
    return cid_m, cid_n


@cute.jit
def ordered_tile(cluster_id, clusters_m, clusters_n, order: cutlass.Constexpr):
    """(cid_m, cid_n) of the ``cluster_id``-th cluster in one of three tile orders:

    * ``"grouped"``: :func:`grouped_tile` (every kernel's default);
    * ``"row"``: row-major, the plain order (consecutive clusters walk N, then the next M);
    * ``"serpentine"``: grouped, with every other group walking N backwards, so a group starts on
      the B tiles the previous one ended on (a boustrophedon, the simplest space-filling curve)."""
    if cutlass.const_expr(order == "row"):
        return cluster_id // clusters_n, cluster_id % clusters_n
    cid_m, cid_n = grouped_tile(cluster_id, clusters_m, clusters_n)
    if cutlass.const_expr(order == "serpentine"):
        if (cid_m // GROUP_M) % 2 == 1:
            cid_n = clusters_n - 1 - cid_n
    return cid_m, cid_n


class TmaGemm:
    """``TmaGemm(stages, cluster)(a, b, c, stream)``: a ``@cute.jit`` GEMM on (M, K, 1), (N, K, 1)
    and (M, N, 1) tensors (the trailing batch mode of the CUTLASS example, size 1). ``tile``: the
    CTA tile (one of ``TILES``); ``order``: the tile order (:func:`ordered_tile`)."""

    tiles = TILES

    def __init__(self, stages: int | None = None, cluster=(1, 1), tile=TILE_MNK, order: str = "grouped",
                 multicast: bool = True):
        if check_tile(tile) not in self.tiles:
            raise ValueError(f"tile must be one of {self.tiles} (M, N, K), got {tile!r}")
        if order not in ORDERS:
            raise ValueError(f"order must be one of {ORDERS}, got {order!r}")
        self.tile, self.order = check_tile(tile), order
        stages = max_stages(self.tile) if stages is None else stages
        rules.in_range("stages", stages, 1, max_stages(self.tile), " (A+B buffers that fit in shared memory)")
        self.stages, self.cluster = int(stages), check_cluster(cluster)
        multicast = rules.flag("multicast", multicast)
        if not multicast and self.cluster == (2, 2):
            raise ValueError("multicast=False is built for clusters (2, 1) and (1, 2): in a 2 x 2 cluster the "
                             "pipeline cannot release a stage to its own CTA alone")
        # the CTAs that share each tile through multicast (all of the cluster, or just this CTA)
        self.share = self.cluster if multicast else (1, 1)
        self.k_pipe_mmas = 0 if stages == 1 else 1      # wgmma groups left in flight
        self.threads = 256                              # two consumer warpgroups, 64 rows each
        self.mma_wgs = 2                                # warpgroups sharing one C tile (cooperative)

    def mma_and_layouts(self, a, b, c, epi_stages: int):
        """Host-side setup shared by every GEMM variant: the warpgroup MMA and the swizzled
        shared-memory layouts of A, B (``self.stages`` deep) and C (``epi_stages`` deep)."""
        ab, self.c_dtype = a.element_type, c.element_type
        a_major, b_major = cutlass.utils.LayoutEnum.from_tensor(a), cutlass.utils.LayoutEnum.from_tensor(b)
        self.c_layout = cutlass.utils.LayoutEnum.from_tensor(c)
        tiled_mma = sm90.make_trivial_tiled_mma(ab, ab, a_major.sm90_mma_major_mode(), b_major.sm90_mma_major_mode(),
                                                cutlass.Float32, (self.mma_wgs, 1, 1),
                                                tiler_mn=(64, self.tile[1]))
        self.epi_tile = sm90.compute_tile_shape_or_override(self.tile, self.c_dtype,
                                                            is_cooperative=self.mma_wgs == 2)
        sa_layout = sm90.make_smem_layout_a(a_major, self.tile, ab, self.stages)
        sb_layout = sm90.make_smem_layout_b(b_major, self.tile, ab, self.stages)
        sc_layout = sm90.make_smem_layout_epi(self.c_dtype, self.c_layout, self.epi_tile, epi_stages)
        return ab, tiled_mma, sa_layout, sb_layout, sc_layout

    def tma_atoms(self, a, b, c, sa_layout, sb_layout, sc_layout):
        """TMA atoms for loading A and B (multicast across the cluster where it has more than one
        CTA along the other dimension) and for storing C."""
        cm, cn = self.share
        # A tiles are shared by the CTAs of a cluster row (along N), B tiles along M.
        op_a = cpasync.CopyBulkTensorTileG2SMulticastOp() if cn > 1 else cpasync.CopyBulkTensorTileG2SOp()
        op_b = cpasync.CopyBulkTensorTileG2SMulticastOp() if cm > 1 else cpasync.CopyBulkTensorTileG2SOp()
        atom_a, tma_a = cpasync.make_tiled_tma_atom(op_a, a, cute.slice_(sa_layout, (None, None, 0)),
                                                    (self.tile[0], self.tile[2]), num_multicast=cn)
        atom_b, tma_b = cpasync.make_tiled_tma_atom(op_b, b, cute.slice_(sb_layout, (None, None, 0)),
                                                    (self.tile[1], self.tile[2]), num_multicast=cm)
        return atom_a, tma_a, atom_b, tma_b, self.tma_store_atom(c, sc_layout)

    def tma_store_atom(self, c, sc_layout):
        """(atom, TMA tensor) for the epilogue's shared -> global stores of C."""
        return cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), c,
                                           cute.slice_(sc_layout, (None, None, 0)), self.epi_tile)

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor, stream):
        ab, tiled_mma, sa_layout, sb_layout, sc_layout = self.mma_and_layouts(a, b, c, 4)
        atom_a, tma_a, atom_b, tma_b, (atom_c, tma_c) = self.tma_atoms(a, b, c, sa_layout, sb_layout, sc_layout)
        cm, cn = self.cluster

        @cute.struct
        class Storage:
            bars: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            sA: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sa_layout)], 1024]
            sB: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sb_layout)], 1024]
        self.storage = Storage
        self.stage_bytes = cute.size_in_bytes(ab, cute.slice_(sa_layout, (None, None, 0))) + \
            cute.size_in_bytes(ab, cute.slice_(sb_layout, (None, None, 0)))
        tiles = cute.ceil_div((c.layout.shape[0], c.layout.shape[1], 1), (self.tile[0], self.tile[1], 1))
        grid = (cute.ceil_div(tiles[0], cm) * cm, cute.ceil_div(tiles[1], cn) * cn, 1)
        self.kernel(atom_a, tma_a, atom_b, tma_b, atom_c, tma_c, tiled_mma, sa_layout, sb_layout,
                    sc_layout).launch(grid=grid, block=[self.threads, 1, 1], cluster=(cm, cn, 1), stream=stream)


    @cute.kernel
    def kernel(self, atom_a: cute.CopyAtom, mA: cute.Tensor, atom_b: cute.CopyAtom, mB: cute.Tensor,
               atom_c: cute.CopyAtom, mC: cute.Tensor, tiled_mma: cute.TiledMma,
               sa_layout: cute.ComposedLayout, sb_layout: cute.ComposedLayout, sc_layout: cute.ComposedLayout):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        if warp == 0:
            cpasync.prefetch_descriptor(atom_a)
            cpasync.prefetch_descriptor(atom_b)
        cta_layout = cute.make_layout((*self.cluster, 1))
        cm, cn = self.share                                         # (1, 1) without multicast
        pid_m, pid_n = self.tile_of_cluster()
        rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())
        crd = cta_layout.get_flat_coord(rank)                       # (m, n, 0) inside the cluster
        mask_a = cute.make_layout_image_mask(cta_layout, crd, mode=1) if cn > 1 else 0
        mask_b = cute.make_layout_image_mask(cta_layout, crd, mode=0) if cm > 1 else 0
        stage_bytes = self.stage_bytes
        storage = SmemAllocator().allocate(self.storage)
        consumers = pipeline.CooperativeGroup(pipeline.Agent.Thread, (cm + cn - 1) * self.threads // 32)
        pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.bars.data_ptr(), num_stages=self.stages,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread), consumer_group=consumers,
            tx_count=stage_bytes, cta_layout_vmnk=cute.make_layout((1, *cta_layout.shape)), defer_sync=True,
            mcast_mode_mn=self.release_mode())
        pipeline.pipeline_init_arrive(cluster_shape_mn=self.cluster, is_relaxed=True)
        sA, sB, gA, gB, gC = self.tile_views(storage, sa_layout, sb_layout, mA, mB, mC, pid_m, pid_n)
        # TMA partitions: with multicast each CTA loads its slice of the tile for all peers
        tAs, tAg = cpasync.tma_partition(atom_a, crd[1] if cn > 1 else 0, cute.make_layout(cn),
                                         cute.group_modes(sA, 0, 2), cute.group_modes(gA, 0, 2))
        tBs, tBg = cpasync.tma_partition(atom_b, crd[0] if cm > 1 else 0, cute.make_layout(cm),
                                         cute.group_modes(sB, 0, 2), cute.group_modes(gB, 0, 2))
        wg = cute.arch.make_warp_uniform(tidx // 128)
        thr_mma = tiled_mma.get_slice(cute.make_layout(2, stride=128)(wg))
        tCrA = tiled_mma.make_fragment_A(thr_mma.partition_A(sA))
        tCrB = tiled_mma.make_fragment_B(thr_mma.partition_B(sB))
        acc = cute.make_rmem_tensor(thr_mma.partition_C(gC).shape, cutlass.Float32)
        pipeline.pipeline_init_wait(cluster_shape_mn=self.cluster)
        k_tiles = cute.size(gA, mode=[2])
        prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
        if warp == 0:                                   # fill the ring: up to `stages` k-tiles
            for _ in cutlass.range(cutlass.min(self.stages, k_tiles), unroll=1):
                self.load(pipe, prod, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b)
                prod.advance()
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        acc.fill(0.0)
        tiled_mma.set(warpgroup.Field.ACCUMULATE, True)
        for k in cutlass.range(k_tiles, unroll=1):
            self.mma(pipe, read, release, k, tiled_mma, acc, tCrA, tCrB)   # consumer step
            read.advance()
            if k >= self.k_pipe_mmas:                   # the step released stage `release`
                release.advance()
                if warp == 0 and prod.count < k_tiles:  # refill the buffer just freed
                    self.load(pipe, prod, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b)
                    prod.advance()
        warpgroup.wait_group(0)
        self.epilogue(acc, tiled_mma, atom_c, gC, sA, sc_layout, tidx, warp)

    def release_mode(self) -> tuple:
        """``mcast_mode_mn`` of the pipeline: which CTAs a consumer frees each stage in. With
        multicast, every CTA that writes into this one (its cluster row and column); without, only
        itself: in a (2, 1) cluster the CTAs in its row (itself), in a (1, 2) one its column."""
        if self.share != (1, 1) or self.cluster == (1, 1):
            return (1, 1)
        return (1, 0) if self.cluster[0] > 1 else (0, 1)

    @cute.jit
    def load(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):
        """Producer step: wait for a free buffer (arms expect_tx), issue both TMA loads."""
        pipe.producer_acquire(state)
        bar = pipe.producer_get_barrier(state)
        cute.copy(atom_a, tAg[(None, state.count)], tAs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_a)
        cute.copy(atom_b, tBg[(None, state.count)], tBs[(None, state.index)], tma_bar_ptr=bar, mcast_mask=mask_b)
        pipe.producer_commit(state)                     # a no-op for TMA: the bytes complete it

    @cute.jit
    def mma(self, pipe, read, release, k, tiled_mma, acc, tCrA, tCrB):
        """Consumer step of k-tile ``k``: wait for stage ``read``, issue its wgmmas, leave
        ``k_pipe_mmas`` groups in flight, then release stage ``release`` (the one before, whose
        wgmmas are done) to the producer; the kernel advances both states."""
        pipe.consumer_wait(read)                        # TMA bytes of this stage have landed
        warpgroup.fence()
        for kb in cutlass.range(cute.size(tCrA, mode=[2]), unroll_full=True):
            cute.gemm(tiled_mma, acc, tCrA[None, None, kb, read.index], tCrB[None, None, kb, read.index], acc)
        warpgroup.commit_group()
        warpgroup.wait_group(self.k_pipe_mmas)          # the previous stage's wgmmas are done
        if k >= self.k_pipe_mmas:                       # from the k_pipe_mmas-th k-tile on
            pipe.consumer_release(release)              # so its buffer goes back to the producer

    @cute.jit
    def tile_of_cluster(self):
        """(pid_m, pid_n) of this CTA: its cluster's place in the grouped order (:func:`grouped_tile`)."""
        cidx, cidy, _ = cute.arch.cluster_idx()
        cdimx, cdimy, _ = cute.arch.cluster_dim()
        cid_m, cid_n = ordered_tile(cidx + cdimx * cidy, cdimx, cdimy, self.order)
        in_cluster = cute.arch.block_in_cluster_idx()
        return cid_m * self.cluster[0] + in_cluster[0], cid_n * self.cluster[1] + in_cluster[1]

    def tile_views(self, storage, sa_layout, sb_layout, mA, mB, mC, pid_m, pid_n):
        """The staged shared-memory buffers of A and B, and this CTA's tiles of A, B (all k-tiles)
        and C in global memory."""
        sA = storage.sA.get_tensor(sa_layout.outer, swizzle=sa_layout.inner)
        sB = storage.sB.get_tensor(sb_layout.outer, swizzle=sb_layout.inner)
        coord = (pid_m, pid_n, None, 0)
        gA = cute.local_tile(mA, self.tile, coord, proj=(1, None, 1))        # (bM, bK, k-tiles)
        gB = cute.local_tile(mB, self.tile, coord, proj=(None, 1, 1))        # (bN, bK, k-tiles)
        gC = cute.local_tile(mC, self.tile, coord, proj=(1, 1, None))        # (bM, bN)
        return sA, sB, gA, gB, gC

    def epilogue_views(self, acc, tiled_mma, atom_c, gC, sC, tidx):
        """What every epilogue needs for one output tile: the registers -> shared copy (stmatrix)
        with its views of ``sC`` and of the accumulators, a register buffer, and the shared ->
        global TMA partition of ``gC`` in epilogue subtiles."""
        r2s = sm90.sm90_get_smem_store_op(self.c_layout, elem_ty_d=self.c_dtype, elem_ty_acc=cutlass.Float32)
        st_atom = cute.make_copy_atom(cute.nvgpu.warp.StMatrix8x8x16bOp(self.c_layout.is_m_major_c(), 4), self.c_dtype)
        tiled_r2s = cute.make_tiled_copy_S(r2s, cute.make_tiled_copy_C_atom(st_atom, tiled_mma))
        thr_r2s = tiled_r2s.get_slice(tidx)
        rD_layout = cute.make_layout(cute.shape(thr_r2s.partition_S(sC))[:3])
        gC_epi = cute.zipped_divide(gC, self.epi_tile)
        bSG_s, bSG_g = cpasync.tma_partition(atom_c, 0, cute.make_layout(1), cute.group_modes(sC, 0, 2), gC_epi)
        return (tiled_r2s, thr_r2s.partition_D(sC), tiled_r2s.retile(acc), rD_layout,
                cute.make_rmem_tensor_like(rD_layout, cutlass.Float32), gC_epi, bSG_s, bSG_g)

    @cute.jit
    def epilogue(self, acc, tiled_mma, atom_c, gC, sA, sc_layout, tidx, warp):
        """Accumulators -> fp16/bf16 -> shared memory (reusing A's buffers) -> TMA store."""
        if cutlass.const_expr(self.cluster != (1, 1)):
            cute.arch.cluster_arrive()                  # no peer may still multicast into sA
            cute.arch.cluster_wait()
        else:
            cute.arch.sync_threads()
        sC = cute.make_tensor(cute.recast_ptr(sA.iterator, sc_layout.inner, dtype=self.c_dtype), sc_layout.outer)
        tiled_r2s, tRS_sC, tRS_acc, rD_layout, rD, gC_epi, bSG_s, bSG_g = self.epilogue_views(
            acc, tiled_mma, atom_c, gC, sC, tidx)
        epi_shape = gC_epi.shape[1]
        epi_layout = cute.make_layout(epi_shape, stride=(epi_shape[1], 1))
        store_pipe = pipeline.PipelineTmaStore.create(
            num_stages=4, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, self.threads))
        for e in cutlass.range_constexpr(cute.size(gC_epi, mode=[1])):
            for v in cutlass.range_constexpr(cute.size(rD)):
                rD[v] = tRS_acc[e * cute.size(rD) + v]
            out = cute.make_rmem_tensor_like(rD_layout, self.c_dtype)
            out.store(rD.load().to(self.c_dtype))
            buf = e % 4
            cute.copy(tiled_r2s, out, tRS_sC[(None, None, None, buf)])
            cute.arch.fence_proxy("async.shared", space="cta")     # generic -> async proxy
            pipeline.sync(barrier_id=1)
            if warp == 0:
                cute.copy(atom_c, bSG_s[(None, buf)], bSG_g[(None, epi_layout.get_hier_coord(e))])
                store_pipe.producer_commit()
                store_pipe.producer_acquire()
            pipeline.sync(barrier_id=1)
        if warp == 0:
            store_pipe.producer_tail()


def ptx_of(stages: int | None = None, cluster=(1, 1), mnk=(4096, 4096, 4096), dtype="float16",
           gemm=None) -> str:
    """PTX of ``TmaGemm(stages, cluster)`` (or of ``gemm``, a ready ``TmaGemm``) compiled for
    sm_90a with fake tensors (any machine)."""
    from .compat import compile_ptx, fake_stream, fake_tensor
    M, N, K = mnk
    a, b = fake_tensor((M, K, 1), dtype, (1, 0, 2)), fake_tensor((N, K, 1), dtype, (1, 0, 2))
    c = fake_tensor((M, N, 1), dtype, (1, 0, 2))
    return compile_ptx(gemm or TmaGemm(stages, cluster), a, b, c, fake_stream())


_COMPILED: dict = {}


def as_mk1(t):
    """A 2-D row-major torch tensor viewed as (rows, cols, 1) with the example's strides."""
    return t.unsqueeze(0).permute(1, 2, 0)


def check_operands(a, b, c) -> None:
    """The CPU-side rules of every GEMM launcher: torch a (M, K), b (N, K), c (M, N), each a
    contiguous TMA tensor (:func:`.inputs.tma_tensor`: every extent >= 1, 16-B aligned, rows of a
    multiple of 16 B, so K and N multiples of 8), of one dtype, fp16 or bf16 (the wgmma operands)."""
    for name, t in (("a", a), ("b", b), ("c", c)):
        inputs.tma_tensor(name, t, rank=2)
    if a.shape[1] != b.shape[1] or tuple(c.shape) != (a.shape[0], b.shape[0]) or not a.dtype == b.dtype == c.dtype:
        raise ValueError(f"need a (M, K), b (N, K), c (M, N) of one dtype; got {tuple(a.shape)} "
                         f"{tuple(b.shape)} {tuple(c.shape)}, {a.dtype} {b.dtype} {c.dtype}")
    inputs.wgmma_dtype(a.dtype)


def operands(a, b, c) -> list:
    """Check torch CUDA a (M, K), b (N, K), c (M, N) (:func:`check_operands`) and return the launch
    arguments: three CuteDSL views and a stream."""
    from .compat import stream, to_cute
    check_operands(a, b, c)
    return [to_cute(as_mk1(t), dynamic=False) for t in (a, b, c)] + [stream()]


def run_cached(key, make, args):
    """Launch ``make()`` compiled for ``args``: once per ``key``, or every time if ``key`` is None."""
    from .compat import compile_kernel
    if key is None or key not in _COMPILED:
        kernel = compile_kernel(make(), *args)
        if key is None:
            return kernel(*args)
        _COMPILED[key] = kernel
    _COMPILED[key](*args)


def run_gemm(a, b, c, stages: int | None = None, cluster=(1, 1), gemm=None):
    """c = a @ b.T on torch CUDA tensors (see :func:`operands`). ``gemm``: a ready ``TmaGemm`` to
    use instead (compiled, not cached). Returns c."""
    gemm_ = gemm or TmaGemm(stages, cluster)        # its rules first, on the CPU (then the tensors')
    key = None if gemm is not None else ("tma", str(a.dtype), tuple(a.shape), tuple(b.shape), stages, tuple(cluster))
    run_cached(key, lambda: gemm_, operands(a, b, c))
    return c
