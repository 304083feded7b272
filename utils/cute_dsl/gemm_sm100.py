"""Day 5 · 09: a Blackwell (``sm_100a``) GEMM in CuteDSL, C = A @ B.T (A: M x K, B: N x K, K-major).

Written for the course after CUTLASS's CuTeDSL Blackwell tutorials
(``examples/python/CuTeDSL/cute/blackwell/tutorial/tutorial_gemm/fp16_gemm_0.py``: one CTA per
tile; ``fp16_gemm_1.py``: the 2-CTA MMA and TMA multicast). What is new against notebook 04's
Hopper GEMM is the data path of the tensor cores:

* ``tcgen05.mma`` reads A and B from shared memory (matrix descriptors) and accumulates in
  **tensor memory** (TMEM), allocated with ``tcgen05.alloc`` and read back with ``tcgen05.ld``;
* one thread issues the MMAs; ``tcgen05.commit`` arrives on an mbarrier when they are done;
* ``pair=True``: two CTAs (a *CTA pair*, adjacent ranks of a cluster) run one 256-row MMA
  (``cta_group::2``); each loads its own half of A and of B, and both CTAs' TMA bytes complete the
  barrier of the pair's even CTA (the leader), which issues the MMAs;
* a cluster larger than the pair multicasts A along N and B along M.

Compiles on any machine (fake tensors); runs only on a GPU with tcgen05 (compute capability
10.x or 11.0). M and N must be multiples of the tile (the epilogue stores without bounds checks).
"""
from __future__ import annotations

from .compat import cpasync, cute, cutlass, pipeline

import cutlass.utils.blackwell_helpers as sm100  # noqa: E402
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05  # noqa: E402

CLUSTERS = ((1, 1), (2, 1), (2, 2), (4, 1))     # (CTAs along M, along N)


class Sm100Gemm:
    """``Sm100Gemm(pair, cluster, stages)(a, b, c)``: fp16 in, fp32 accumulated in TMEM, fp16 out.
    CTA tile 128 x 256 x 64; with ``pair`` the MMA tile is 256 x 256 x 64 over two CTAs."""

    def __init__(self, pair: bool = False, cluster=(1, 1), stages: int = 4, tile_n: int = 256):
        if not isinstance(pair, bool):
            raise TypeError(f"pair must be True or False, got {pair!r}")
        if tuple(cluster) not in CLUSTERS:
            raise ValueError(f"cluster must be one of {CLUSTERS} (along M, along N), got {cluster!r}")
        if pair and cluster[0] % 2:
            raise ValueError(f"a CTA pair needs an even number of CTAs along M, got cluster {cluster!r}")
        if not (isinstance(stages, int) and 1 <= stages <= 7) or tile_n not in (64, 128, 256):
            raise ValueError(f"stages must be 1..7 and tile_n 64, 128 or 256, got {stages!r}, {tile_n!r}")
        self.pair, self.cluster, self.stages = pair, (*cluster, 1), stages
        self.mma_tiler = (256 if pair else 128, tile_n, 64)
        self.threads = 128

    @cute.jit
    def __call__(self, a: cute.Tensor, b: cute.Tensor, c: cute.Tensor):
        group = tcgen05.CtaGroup.TWO if self.pair else tcgen05.CtaGroup.ONE
        self.ab_dtype = a.element_type
        op = tcgen05.MmaF16BF16Op(a.element_type, cutlass.Float32, (*self.mma_tiler[:2], 16), group,
                                  tcgen05.OperandSource.SMEM, OperandMajorMode.K, OperandMajorMode.K)
        tiled_mma = cute.make_tiled_mma(op)
        sa = sm100.make_smem_layout_a(tiled_mma, self.mma_tiler, a.element_type, self.stages)
        sb = sm100.make_smem_layout_b(tiled_mma, self.mma_tiler, b.element_type, self.stages)
        vmnk = cute.tiled_divide(cute.make_layout(self.cluster), (tiled_mma.thr_id,))
        g2s = (cpasync.CopyBulkTensorTileG2SMulticastOp(group) if cute.size(self.cluster) > 1
               else cpasync.CopyBulkTensorTileG2SOp(group))
        atom_a, tma_a = cute.nvgpu.make_tiled_tma_atom_A(g2s, a, cute.select(sa, mode=[0, 1, 2]),
                                                          self.mma_tiler, tiled_mma, vmnk.shape)
        atom_b, tma_b = cute.nvgpu.make_tiled_tma_atom_B(g2s, b, cute.select(sb, mode=[0, 1, 2]),
                                                          self.mma_tiler, tiled_mma, vmnk.shape)
        cta_tile = (self.mma_tiler[0] // cute.size(tiled_mma.thr_id), self.mma_tiler[1])
        grid = cute.round_up(cute.ceil_div((*c.layout.shape, 1), cta_tile), self.cluster)
        self.kernel(tiled_mma, atom_a, tma_a, atom_b, tma_b, c, sa, sb, vmnk).launch(
            grid=grid, block=[self.threads, 1, 1], cluster=self.cluster)

    @cute.kernel
    def kernel(self, tiled_mma: cute.TiledMma, atom_a: cute.CopyAtom, mA: cute.Tensor,
               atom_b: cute.CopyAtom, mB: cute.Tensor, mC: cute.Tensor,
               sa: cute.ComposedLayout, sb: cute.ComposedLayout, vmnk: cute.Layout):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        bidx, bidy, _ = cute.arch.block_idx()
        coord = vmnk.get_flat_coord(cute.arch.block_idx_in_cluster())       # (v, m, n, k) in the cluster
        v = bidx % cute.size(vmnk, mode=[0])                                 # 0: leader of the pair
        mma_coord = (bidx // cute.size(vmnk, mode=[0]), bidy, None)

        @cute.struct
        class Storage:
            ab_bar: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            acc_bar: cute.struct.MemRange[cutlass.Int64, 2]
            dealloc_bar: cutlass.Int64
            tmem_addr: cutlass.Int32
        smem = cutlass.memory.SmemAllocator()
        storage = smem.allocate(Storage)
        sA = smem.allocate_tensor(self.ab_dtype, sa.outer, byte_alignment=128, swizzle=sa.inner)
        sB = smem.allocate_tensor(self.ab_dtype, sb.outer, byte_alignment=128, swizzle=sb.inner)

        # the pipelines: TMA -> MMA through the A/B stages, MMA -> epilogue through the accumulator
        pair = cute.size(vmnk, mode=[0])
        stage_bytes = (cute.size_in_bytes(self.ab_dtype, cute.select(sa, mode=[0, 1, 2]))
                       + cute.size_in_bytes(self.ab_dtype, cute.select(sb, mode=[0, 1, 2]))) * pair
        producers = cute.size(vmnk.shape[2]) + cute.size(vmnk.shape[1]) - 1
        ab_prod, ab_cons = pipeline.PipelineTmaUmma.create(
            num_stages=self.stages, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, producers),
            tx_count=stage_bytes, barrier_storage=storage.ab_bar.data_ptr(), cta_layout_vmnk=vmnk,
        ).make_participants()
        acc_prod, acc_cons = pipeline.PipelineUmmaAsync.create(
            num_stages=1, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread),
            consumer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, pair * self.threads),
            barrier_storage=storage.acc_bar.data_ptr(), cta_layout_vmnk=vmnk,
        ).make_participants()

        # tiles of A, B and C, cut for the MMA and for TMA (A multicast along N, B along M)
        gA = cute.local_tile(mA, self.mma_tiler, mma_coord, proj=(1, None, 1))
        gB = cute.local_tile(mB, self.mma_tiler, mma_coord, proj=(None, 1, 1))
        gC = cute.local_tile(mC, self.mma_tiler, mma_coord, proj=(1, 1, None))
        thr = tiled_mma.get_slice(v)
        tCgA, tCgB, tCgC = thr.partition_A(gA), thr.partition_B(gB), thr.partition_C(gC)
        tCrA, tCrB = tiled_mma.make_fragment_A(sA), tiled_mma.make_fragment_B(sB)
        acc = tiled_mma.make_fragment_C(tiled_mma.partition_shape_C(self.mma_tiler[:2]))
        tAsA, tAgA = cpasync.tma_partition(atom_a, coord[2], cute.make_layout(cute.size(vmnk, mode=[2])),
                                           cute.group_modes(sA, 0, 3), cute.group_modes(tCgA, 0, 3))
        tBsB, tBgB = cpasync.tma_partition(atom_b, coord[1], cute.make_layout(cute.size(vmnk, mode=[1])),
                                           cute.group_modes(sB, 0, 3), cute.group_modes(tCgB, 0, 3))
        mask_a = cpasync.create_tma_multicast_mask(vmnk, coord, mcast_mode=2)
        mask_b = cpasync.create_tma_multicast_mask(vmnk, coord, mcast_mode=1)

        # tensor memory: warp 0 allocates the accumulator's columns, everyone reads the address
        tmem = cutlass.memory.TmemAllocator(
            storage.tmem_addr.ptr, barrier_for_retrieve=pipeline.NamedBarrier(barrier_id=1, num_threads=self.threads),
            is_two_cta=pair > 1, two_cta_tmem_dealloc_mbar_ptr=storage.dealloc_bar.ptr)
        columns = sm100.get_num_tmem_alloc_cols(acc)
        tmem.allocate(columns)
        tmem.wait_for_alloc()
        acc = cute.make_tensor(tmem.retrieve_ptr(cutlass.Float32), acc.layout)
        self.mainloop(warp, v, tiled_mma, acc, tCrA, tCrB, atom_a, tAgA, tAsA, mask_a, atom_b, tBgB, tBsB,
                      mask_b, ab_prod, ab_cons, acc_prod, cute.size(gA, mode=[2]))
        tmem.relinquish_alloc_permit()
        self.epilogue(tidx, acc, tCgC, acc_cons)
        if warp == 0:
            ab_prod.tail()
            if v == 0:
                acc_prod.tail()
        pipeline.sync(barrier_id=1)
        tmem.free(acc.iterator, columns)

    @cute.jit
    def mainloop(self, warp, v, tiled_mma, acc, tCrA, tCrB, atom_a, tAgA, tAsA, mask_a, atom_b, tBgB, tBsB,
                 mask_b, ab_prod, ab_cons, acc_prod, k_tiles):
        """Warp 0 of each CTA issues its TMA loads; the leader's warp 0 also issues the MMAs."""
        if warp == 0:
            if v == 0:
                acc_prod.acquire_and_advance()
            for _ in cutlass.range(k_tiles, prefetch_stages=self.stages - 2):
                empty = ab_prod.acquire_and_advance()          # wait for a free stage, arm expect_tx
                cute.copy(atom_a, tAgA[(None, empty.count)], tAsA[(None, empty.index)],
                          tma_bar_ptr=empty.barrier, mcast_mask=mask_a)
                cute.copy(atom_b, tBgB[(None, empty.count)], tBsB[(None, empty.index)],
                          tma_bar_ptr=empty.barrier, mcast_mask=mask_b)
                if v == 0:
                    full = ab_cons.wait_and_advance()          # both CTAs' bytes have landed
                    for kb in cutlass.range_constexpr(cute.size(tCrA, mode=[2])):
                        blk = (None, None, kb, full.index)
                        cute.gemm(tiled_mma, acc, tCrA[blk], tCrB[blk], acc)   # tcgen05.mma
                        tiled_mma.set(tcgen05.Field.ACCUMULATE, True)
                    full.release()                              # tcgen05.commit -> the empty barrier
            if v == 0:
                acc_prod.commit()                               # tcgen05.commit -> the accumulator barrier

    @cute.jit
    def epilogue(self, tidx, acc, tCgC, acc_cons):
        """TMEM -> registers (``tcgen05.ld``, 64 fp32 columns per thread at a time) -> fp16 -> global."""
        sub = (cute.size(acc, mode=[0, 0]), 64)                              # 64 columns at a time
        acc_epi, gC_epi = cute.zipped_divide(acc, (sub,)), cute.zipped_divide(tCgC, (sub,))
        atom = cute.make_copy_atom(tcgen05.Ld32x32bOp(tcgen05.Repetition.x64), cutlass.Float32)
        tiled_copy = tcgen05.make_tmem_copy(atom, acc_epi[None, 0])
        thr_copy = tiled_copy.get_slice(tidx)
        tDtC, tDgC = thr_copy.partition_S(acc_epi), thr_copy.partition_D(gC_epi)
        r_acc = cute.make_rmem_tensor(tDgC[None, None, 0].shape, cutlass.Float32)
        r_c = cute.make_rmem_tensor(tDgC[None, None, 0].shape, tCgC.element_type)
        full = acc_cons.wait_and_advance()
        for i in cutlass.range(cute.size(tDtC, mode=[2])):
            cute.copy(tiled_copy, tDtC[None, None, i], r_acc)
            r_c.store(r_acc.load().to(tCgC.element_type))
            cute.autovec_copy(r_c, tDgC[None, None, i])
        full.release()


def ptx_of(pair: bool = False, cluster=(1, 1), stages: int = 4, tile_n: int = 256,
           mnk=(4096, 4096, 4096)) -> str:
    """PTX of ``Sm100Gemm(pair, cluster, stages, tile_n)`` compiled for sm_100a with fake fp16
    tensors (any machine, about a second)."""
    from .compat import compile_ptx, fake_tensor
    M, N, K = mnk
    a, b, c = fake_tensor((M, K)), fake_tensor((N, K)), fake_tensor((M, N))
    return compile_ptx(Sm100Gemm(pair, cluster, stages, tile_n), a, b, c, arch="sm_100a")


def run_gemm(a, b, c, pair: bool = False, cluster=(1, 1), stages: int = 4) -> None:
    """``c = a @ b.T`` with :class:`Sm100Gemm` on a GPU with tcgen05 (compute capability 10.x or
    11.0): torch fp16 ``a`` (M, K), ``b`` (N, K), ``c`` (M, N), M a multiple of 128 x the cluster's
    M, N of 256 x its N, K of 8. Written after CUTLASS's tutorial; the course has no such GPU and has
    not run it (the notebook checks the result against torch where one exists)."""
    import torch
    from .compat import compile_kernel, to_cute
    gemm = Sm100Gemm(pair, cluster, stages)
    (M, K), N = a.shape, b.shape[0]
    if M % (128 * cluster[0]) or N % (256 * cluster[1]) or K % 8 or tuple(c.shape) != (M, N):
        raise ValueError(f"need M % {128 * cluster[0]} == 0, N % {256 * cluster[1]} == 0, K % 8 == 0 and c of "
                         f"shape (M, N); got a {tuple(a.shape)}, b {tuple(b.shape)}, c {tuple(c.shape)}")
    args = [to_cute(t) for t in (a, b, c)]
    major, minor = torch.cuda.get_device_capability(a.device)
    compile_kernel(gemm, *args, arch=f"sm_{major}{minor}a")(*args)      # this GPU's own target
