"""Day 5 · 07: a FlashAttention-3-style forward pass in CuteDSL, built in steps.

``O = softmax(Q K^T * scale) V`` for one (batch x head) per ``blockIdx.y`` and 128 query rows per
CTA (``blockIdx.x``). Two consumer warpgroups own 64 query rows each; the Q tile stays in shared
memory for the whole K/V loop; K and V tiles of ``BLOCK_N`` keys arrive by TMA into a ring of
``stages`` buffers, one mbarrier per stage whose ``expect_tx`` is the K tile plus the V tile.
Both GEMMs are ``wgmma``: ``S = Q K^T`` from shared memory, ``O += P V`` with P (the softmax
probabilities, converted to fp16/bf16) read from registers, so S and P never touch memory.

The steps (:data:`STEPS`), each one change on the previous one:

* ``"pipeline"``: 256 threads, both warpgroups compute; warp 0 also issues the TMA loads,
  refilling a buffer as soon as both warpgroups release it (the ring of day05/04's ``TmaGemm``);
* ``"producer"``: a third warpgroup whose warp 0 only issues TMA loads; it gives registers back
  (``setmaxnreg.dec`` to :data:`LOAD_REGS`) and the consumers take them (``.inc`` to :data:`MMA_REGS`);
* ``"pingpong"``: the two consumer warpgroups take turns issuing their GEMMs (an mbarrier ring,
  CUTLASS's ``PipelineOrder``): while one runs ``wgmma`` the other runs its softmax;
* ``"overlap"``: inside each warpgroup, ``S_j = Q K_j`` is issued before ``O += P_{j-1} V_{j-1}``
  and the softmax of ``S_j`` runs while that PV GEMM is still in flight (FlashAttention-3's
  intra-warpgroup overlap; the rescale of O waits for the PV GEMM);
* ``"named"``: the same loop with the turn passed by **named barriers** (``bar.sync`` /
  ``bar.arrive``, hardware barriers of the SM) instead of the mbarrier ring in shared memory, as
  FlashAttention-3 does. One iteration is then :meth:`FlashFwd.named_step`, which day05/07's
  Exercise 4 writes (``utils.day05.attention_step_check`` plugs the learner's in and checks it);
  the kernel gives warpgroup 0 the first turn.

``causal=True`` masks keys after each query; ``skip=True`` (the default) visits only the K/V tiles
up to the diagonal, ``skip=False`` visits all of them and masks (the ablation of the skip).

Restrictions (checked by :func:`operands`): fp16 or bf16, head dim 64 or 128, sequence length a
multiple of 128, q/k/v/o contiguous ``(B, H, S, D)``.
"""
from __future__ import annotations

from functools import partial

from .compat import cpasync, cute, cutlass, pipeline, sm90, SmemAllocator, warpgroup

STEPS = ("pipeline", "producer", "pingpong", "overlap", "named")
BLOCK_M, WG_M, BLOCK_N = 128, 64, 128       # query rows per CTA / per warpgroup, keys per K/V tile
SMEM_BYTES = 227 * 1024
LOAD_REGS, MMA_REGS = 24, 240                # setmaxnreg of producer / consumer warpgroups
LOG2E = 1.4426950408889634
ORDER_BARRIER = 1           # named barriers 1 and 2 order the consumer warpgroups (0 is __syncthreads)


def kv_stages(D: int, itemsize: int = 2) -> int:
    """K+V stages that fit next to the resident Q tile (and 1 KiB of barriers), at most 4."""
    q = BLOCK_M * D * itemsize
    return min(4, (SMEM_BYTES - 1024 - q) // (2 * BLOCK_N * D * itemsize))


class FlashFwd:
    """``FlashFwd(D, step, causal, skip)(q, k, v, o, scale_log2, stream)``: q, k, o are
    ``(S, D, B*H)`` views with D contiguous, v is ``(D, S, B*H)`` (the same memory, D contiguous:
    the MN-major B operand of ``P V``); see :func:`operands`."""

    def __init__(self, D: int = 128, step: str = "overlap", causal: bool = False, skip: bool = True,
                 stages: int | None = None):
        if D not in (64, 128):
            raise ValueError(f"head dim D must be 64 or 128, got {D!r}")
        if step not in STEPS:
            raise ValueError(f"step must be one of {STEPS}, got {step!r}")
        most = kv_stages(D)
        stages = most if stages is None else stages
        if isinstance(stages, bool) or not isinstance(stages, int) or not 2 <= stages <= most:
            raise ValueError(f"stages must be 2..{most} for D={D} (shared memory), got {stages!r}")
        self.D, self.step, self.causal, self.skip, self.stages = D, step, bool(causal), bool(skip), stages
        self.ws = step != "pipeline"
        self.pingpong = step in STEPS[2:]
        self.overlap = step in STEPS[3:]
        self.named = step == "named"
        self.threads = 384 if self.ws else 256

    # --- host side -----------------------------------------------------------------------------
    @cute.jit
    def __call__(self, q: cute.Tensor, k: cute.Tensor, v: cute.Tensor, o: cute.Tensor,
                 scale_log2: cutlass.Float32, stream):
        ab = q.element_type
        self.ab = ab
        kmaj = cutlass.utils.LayoutEnum.from_tensor(q)
        vmaj = cutlass.utils.LayoutEnum.from_tensor(v)
        D = self.D
        qk_tiler, pv_tiler = (WG_M, BLOCK_N, D), (WG_M, D, BLOCK_N)      # (M, N, K) of each GEMM
        qk_mma = sm90.make_trivial_tiled_mma(ab, ab, kmaj.sm90_mma_major_mode(), kmaj.sm90_mma_major_mode(),
                                             cutlass.Float32, (1, 1, 1), tiler_mn=qk_tiler[:2])
        pv_mma = sm90.make_trivial_tiled_mma(ab, ab, warpgroup.OperandMajorMode.K, vmaj.sm90_mma_major_mode(),
                                             cutlass.Float32, (1, 1, 1), tiler_mn=pv_tiler[:2],
                                             a_source=warpgroup.OperandSource.RMEM)
        sq_layout = sm90.make_smem_layout_a(kmaj, qk_tiler, ab, 2)           # one 64-row half per warpgroup
        sk_layout = sm90.make_smem_layout_b(kmaj, qk_tiler, ab, self.stages)
        sv_layout = sm90.make_smem_layout_b(vmaj, pv_tiler, ab, self.stages)
        g2s = cpasync.CopyBulkTensorTileG2SOp()
        atom_q, tma_q = cpasync.make_tiled_tma_atom(g2s, q, cute.slice_(sq_layout, (None, None, 0)), (WG_M, D))
        atom_k, tma_k = cpasync.make_tiled_tma_atom(g2s, k, cute.slice_(sk_layout, (None, None, 0)), (BLOCK_N, D))
        atom_v, tma_v = cpasync.make_tiled_tma_atom(g2s, v, cute.slice_(sv_layout, (None, None, 0)), (D, BLOCK_N))

        @cute.struct
        class Storage:
            q_bar: cute.struct.MemRange[cutlass.Int64, 2]
            kv_bars: cute.struct.MemRange[cutlass.Int64, self.stages * 2]
            order_bars: cute.struct.MemRange[cutlass.Int64, 2]
            sQ: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sq_layout)], 1024]
            sK: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sk_layout)], 1024]
            sV: cute.struct.Align[cute.struct.MemRange[ab, cute.cosize(sv_layout)], 1024]
        self.storage = Storage
        self.q_bytes = 2 * cute.size_in_bytes(ab, cute.slice_(sq_layout, (None, None, 0)))
        self.kv_bytes = cute.size_in_bytes(ab, cute.slice_(sk_layout, (None, None, 0))) + \
            cute.size_in_bytes(ab, cute.slice_(sv_layout, (None, None, 0)))
        grid = (cute.ceil_div(q.layout.shape[0], BLOCK_M), q.layout.shape[2], 1)
        self.kernel(atom_q, tma_q, atom_k, tma_k, atom_v, tma_v, o, qk_mma, pv_mma, sq_layout, sk_layout,
                    sv_layout, scale_log2).launch(grid=grid, block=[self.threads, 1, 1], stream=stream,
                                                  min_blocks_per_mp=1)

    # --- device side ---------------------------------------------------------------------------
    @cute.kernel
    def kernel(self, atom_q: cute.CopyAtom, mQ: cute.Tensor, atom_k: cute.CopyAtom, mK: cute.Tensor,
               atom_v: cute.CopyAtom, mV: cute.Tensor, mO: cute.Tensor, qk_mma: cute.TiledMma,
               pv_mma: cute.TiledMma, sq_layout: cute.ComposedLayout, sk_layout: cute.ComposedLayout,
               sv_layout: cute.ComposedLayout, scale_log2: cutlass.Float32):
        tidx, _, _ = cute.arch.thread_idx()
        warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
        m_tile, bh, _ = cute.arch.block_idx()
        if warp == 0:
            cpasync.prefetch_descriptor(atom_q)
            cpasync.prefetch_descriptor(atom_k)
            cpasync.prefetch_descriptor(atom_v)
        storage = SmemAllocator().allocate(self.storage)
        consumer_warps = pipeline.CooperativeGroup(pipeline.Agent.Thread, 8)
        one = pipeline.CooperativeGroup(pipeline.Agent.Thread)
        q_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.q_bar.data_ptr(), num_stages=1, producer_group=one,
            consumer_group=consumer_warps, tx_count=self.q_bytes, defer_sync=True)
        kv_pipe = pipeline.PipelineTmaAsync.create(
            barrier_storage=storage.kv_bars.data_ptr(), num_stages=self.stages, producer_group=one,
            consumer_group=consumer_warps, tx_count=self.kv_bytes, defer_sync=True)
        wg = cute.arch.make_warp_uniform(tidx // 128)
        cw = wg - 1 if cutlass.const_expr(self.ws) else wg           # consumer warpgroup 0 or 1
        order = pipeline.PipelineOrder.create(
            barrier_storage=storage.order_bars.data_ptr(), depth=1, length=2, group_id=cw,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), defer_sync=True)
        pipeline.pipeline_init_arrive(is_relaxed=True)
        sQ = storage.sQ.get_tensor(sq_layout.outer, swizzle=sq_layout.inner)
        sK = storage.sK.get_tensor(sk_layout.outer, swizzle=sk_layout.inner)
        sV = storage.sV.get_tensor(sv_layout.outer, swizzle=sv_layout.inner)
        gQ = cute.local_tile(mQ[(None, None, bh)], (WG_M, self.D), (None, 0))       # (64, D, q tiles)
        gK = cute.local_tile(mK[(None, None, bh)], (BLOCK_N, self.D), (None, 0))    # (bN, D, kv tiles)
        gV = cute.local_tile(mV[(None, None, bh)], (self.D, BLOCK_N), (0, None))    # (D, bN, kv tiles)
        tQs, tQg = cpasync.tma_partition(atom_q, 0, cute.make_layout(1), cute.group_modes(sQ, 0, 2),
                                         cute.group_modes(gQ, 0, 2))
        tKs, tKg = cpasync.tma_partition(atom_k, 0, cute.make_layout(1), cute.group_modes(sK, 0, 2),
                                         cute.group_modes(gK, 0, 2))
        tVs, tVg = cpasync.tma_partition(atom_v, 0, cute.make_layout(1), cute.group_modes(sV, 0, 2),
                                         cute.group_modes(gV, 0, 2))
        n_tiles = self.kv_tiles(m_tile, cute.size(gK, mode=[2]))
        loads = (atom_q, tQg, tQs, atom_k, tKg, tKs, atom_v, tVg, tVs)
        pipeline.pipeline_init_wait()
        if cutlass.const_expr(self.ws):
            if wg == 0:                                  # producer warpgroup: few registers
                cute.arch.setmaxregister_decrease(LOAD_REGS)
                if warp == 0:
                    self.load_q(q_pipe, m_tile, loads)
                    prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
                    for _ in cutlass.range(n_tiles, unroll=1):
                        self.load_kv(kv_pipe, prod, loads)
                        prod.advance()
                    kv_pipe.producer_tail(prod)
            if wg > 0:                                   # consumer warpgroups: many registers
                cute.arch.setmaxregister_increase(MMA_REGS)
                self.consume(q_pipe, kv_pipe, order, None, loads, n_tiles, m_tile, cw, warp, tidx,
                             sQ, sK, sV, qk_mma, pv_mma, mO, bh, scale_log2)
        else:
            prod = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, self.stages)
            if warp == 0:                                # fill the ring before computing
                self.load_q(q_pipe, m_tile, loads)
                for _ in cutlass.range(cutlass.min(self.stages, n_tiles), unroll=1):
                    self.load_kv(kv_pipe, prod, loads)
                    prod.advance()
            self.consume(q_pipe, kv_pipe, order, prod, loads, n_tiles, m_tile, cw, warp, tidx,
                         sQ, sK, sV, qk_mma, pv_mma, mO, bh, scale_log2)

    @cute.jit
    def kv_tiles(self, m_tile, all_tiles):
        """K/V tiles this CTA visits: all of them, or with the causal skip the ones up to the
        diagonal (keys ``< (m_tile + 1) * BLOCK_M``)."""
        n = all_tiles
        if cutlass.const_expr(self.causal and self.skip):
            n = cutlass.min(all_tiles, cute.ceil_div((m_tile + 1) * BLOCK_M, BLOCK_N))
        return n

    @cute.jit
    def load_q(self, q_pipe, m_tile, loads):
        """Both 64-row halves of this CTA's Q tile onto one mbarrier (the producer's first act)."""
        atom_q, tQg, tQs = loads[0], loads[1], loads[2]
        state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Producer, 1)
        q_pipe.producer_acquire(state)
        bar = q_pipe.producer_get_barrier(state)
        for h in cutlass.range_constexpr(2):
            cute.copy(atom_q, tQg[(None, m_tile * 2 + h)], tQs[(None, h)], tma_bar_ptr=bar)

    @cute.jit
    def load_kv(self, kv_pipe, state, loads):
        """Wait for a free stage (arms expect_tx = K + V bytes), then issue the K and V loads of
        K/V tile ``state.count`` into it."""
        atom_k, tKg, tKs, atom_v, tVg, tVs = loads[3:]
        kv_pipe.producer_acquire(state)
        bar = kv_pipe.producer_get_barrier(state)
        cute.copy(atom_k, tKg[(None, state.count)], tKs[(None, state.index)], tma_bar_ptr=bar)
        cute.copy(atom_v, tVg[(None, state.count)], tVs[(None, state.index)], tma_bar_ptr=bar)

    @cute.jit
    def consume(self, q_pipe, kv_pipe, order, prod, loads, n_tiles, m_tile, cw, warp, tidx, sQ, sK, sV,
                qk_mma, pv_mma, mO, bh, scale_log2):
        """One consumer warpgroup: 64 query rows against every visited K/V tile, then the output."""
        lane = tidx % 128
        qk_thr, pv_thr = qk_mma.get_slice(lane), pv_mma.get_slice(lane)
        tSrQ = qk_mma.make_fragment_A(qk_thr.partition_A(sQ))        # (MMA, M, K-blocks, half)
        tSrK = qk_mma.make_fragment_B(qk_thr.partition_B(sK))        # (MMA, N, K-blocks, stage)
        tOrV = pv_mma.make_fragment_B(pv_thr.partition_B(sV))
        acc_s = cute.make_rmem_tensor(qk_thr.partition_shape_C((WG_M, BLOCK_N)), cutlass.Float32)
        acc_o = cute.make_rmem_tensor(pv_thr.partition_shape_C((WG_M, self.D)), cutlass.Float32)
        # (row, key) of every score this thread holds, within the 64 x BLOCK_N tile
        tScS = qk_thr.partition_C(cute.make_identity_tensor((WG_M, BLOCK_N)))
        rows = cute.size(acc_s) // (BLOCK_N // 4)                   # 2 rows per thread
        m_run = cute.make_rmem_tensor(cute.make_layout(rows), cutlass.Float32)
        l_run = cute.make_rmem_tensor(cute.make_layout(rows), cutlass.Float32)
        m_run.fill(-cutlass.Float32.inf)
        l_run.fill(0.0)
        acc_o.fill(0.0)
        row0 = m_tile * BLOCK_M + cw * WG_M                         # first query row of this warpgroup
        tOgO = pv_thr.partition_C(cute.local_tile(mO[(None, None, bh)], (WG_M, self.D), (row0 // WG_M, 0)))
        pv_mma.set(warpgroup.Field.ACCUMULATE, True)                # O accumulates from the start (zeros)
        q_state = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, 1)
        q_pipe.consumer_wait(q_state)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        if cutlass.const_expr(self.overlap):
            self.loop_overlap(kv_pipe, order, read, n_tiles, m_tile, row0, cw, tSrQ, tSrK, tOrV,
                              acc_s, acc_o, tScS, m_run, l_run, qk_mma, pv_mma, scale_log2)
        else:
            for j in cutlass.range(n_tiles, unroll=1):
                kv_pipe.consumer_wait(read)
                self.gemm_qk(order, qk_mma, tSrQ, tSrK, acc_s, cw, read.index)
                warpgroup.wait_group(0)
                self.softmax(acc_s, acc_o, tScS, m_run, l_run, j, m_tile, row0, scale_log2, True)
                self.gemm_pv(order, pv_mma, acc_s, tOrV, acc_o, read.index)
                warpgroup.wait_group(0)
                kv_pipe.consumer_release(read)
                read.advance()
                if cutlass.const_expr(not self.ws):
                    if warp == 0 and prod.count < n_tiles:  # refill the stage both warpgroups freed
                        self.load_kv(kv_pipe, prod, loads)
                        prod.advance()
        self.store_o(acc_o, l_run, tOgO)

    @cute.jit
    def loop_overlap(self, kv_pipe, order, read, n_tiles, m_tile, row0, cw, tSrQ, tSrK, tOrV, acc_s,
                     acc_o, tScS, m_run, l_run, qk_mma, pv_mma, scale_log2):
        """FlashAttention-3's intra-warpgroup overlap: issue ``S_j = Q K_j`` and ``O += P_{j-1}
        V_{j-1}`` back to back, then run the softmax of ``S_j`` while the PV GEMM is in flight;
        O is rescaled only once that GEMM is done."""
        if cutlass.const_expr(self.named):
            if cw == 1:                                        # warpgroup 0 takes the first turn
                cute.arch.barrier_arrive(barrier_id=ORDER_BARRIER, number_of_threads=256)
        kv_pipe.consumer_wait(read)
        self.gemm_qk(order, qk_mma, tSrQ, tSrK, acc_s, cw, read.index)
        warpgroup.wait_group(0)
        self.softmax(acc_s, acc_o, tScS, m_run, l_run, 0, m_tile, row0, scale_log2, False)
        prev = read.clone()
        read.advance()
        alpha = cute.make_rmem_tensor(m_run.layout, cutlass.Float32)
        for j in cutlass.range(1, n_tiles, unroll=1):
            p = self.to_operand(acc_s)                         # P_{j-1} leaves the S registers
            kv_pipe.consumer_wait(read)
            if cutlass.const_expr(self.named):
                self.named_step(cw, partial(self.issue_qk, qk_mma, tSrQ, tSrK, acc_s, cw, read.index),
                                partial(self.issue_pv, pv_mma, p, tOrV, acc_o, prev.index),
                                partial(self.softmax_next, alpha, acc_s, acc_o, tScS, m_run, l_run, j, m_tile,
                                        row0, scale_log2),
                                partial(self.finish_pv, kv_pipe, prev, acc_o, m_run, alpha, scale_log2))
            else:
                self.overlap_step(order, partial(self.issue_qk, qk_mma, tSrQ, tSrK, acc_s, cw, read.index),
                                  partial(self.issue_pv, pv_mma, p, tOrV, acc_o, prev.index),
                                  partial(self.softmax_next, alpha, acc_s, acc_o, tScS, m_run, l_run, j, m_tile,
                                          row0, scale_log2),
                                  partial(self.finish_pv, kv_pipe, prev, acc_o, m_run, alpha, scale_log2))
            prev.advance()
            read.advance()
        p = self.to_operand(acc_s)
        self.gemm_pv(order, pv_mma, p, tOrV, acc_o, prev.index, converted=True)
        warpgroup.wait_group(0)
        kv_pipe.consumer_release(prev)

    @cute.jit
    def overlap_step(self, order, issue_s, issue_pv, softmax, finish):
        """One iteration of the overlapped loop, in the course's kernel: in this warpgroup's turn
        (the mbarrier ring ``order``) issue ``S_j = Q K_j`` then ``O += P_{j-1} V_{j-1}``, hand
        the turn on, wait for S_j only, run its softmax while the PV GEMM runs, then wait for
        that GEMM before ``finish`` rescales O and frees stage j-1."""
        order.wait()
        issue_s()
        issue_pv()
        order.arrive()
        warpgroup.wait_group(1)                            # S_j is ready; PV_{j-1} may still run
        softmax()
        warpgroup.wait_group(0)                            # PV_{j-1} done: rescale O, free its stage
        finish()

    @cute.jit
    def named_step(self, cw, issue_s, issue_pv, softmax, finish):
        """One iteration of the overlapped loop in step ``"named"``: :meth:`overlap_step` with the
        turn passed by named barriers. Warpgroup ``cw`` waits on barrier ``ORDER_BARRIER + cw``
        (``bar.sync``: its 128 threads and the other warpgroup's 128 arrivals), issues both GEMMs,
        and arrives on the other's barrier (``bar.arrive``: no wait). day05/07's Exercise 4 writes
        this method; the check plugs the learner's into a subclass
        (:func:`utils.day05.attention_step_check.flash_with`)."""
        cute.arch.barrier(barrier_id=ORDER_BARRIER + cw, number_of_threads=256)
        issue_s()
        issue_pv()
        cute.arch.barrier_arrive(barrier_id=ORDER_BARRIER + 1 - cw, number_of_threads=256)
        warpgroup.wait_group(1)                            # S_j is ready; PV_{j-1} may still run
        softmax()
        warpgroup.wait_group(0)                            # PV_{j-1} done: rescale O, free its stage
        finish()

    @cute.jit
    def softmax_next(self, alpha, acc_s, acc_o, tScS, m_run, l_run, j, m_tile, row0, scale_log2):
        """The overlapped loop's softmax of S_j: keep the old row max in ``alpha`` (for the later
        rescale of O), then update m, l and S in place, leaving O alone."""
        for r in cutlass.range_constexpr(cute.size(m_run)):
            alpha[r] = m_run[r]
        self.softmax(acc_s, acc_o, tScS, m_run, l_run, j, m_tile, row0, scale_log2, False)

    @cute.jit
    def finish_pv(self, kv_pipe, prev, acc_o, m_run, alpha, scale_log2):
        """After ``O += P_{j-1} V_{j-1}`` is done: rescale O by the new row max, free stage j-1."""
        self.rescale(acc_o, m_run, alpha, scale_log2)
        kv_pipe.consumer_release(prev)

    @cute.jit
    def gemm_qk(self, order, qk_mma, tSrQ, tSrK, acc_s, cw, stage):
        """Issue ``S = Q K^T``, in this warpgroup's turn when the warpgroups ping-pong: the turn
        through the mbarrier ring ``order``, or (step ``"named"``) through the named barriers."""
        if cutlass.const_expr(self.named):
            cute.arch.barrier(barrier_id=ORDER_BARRIER + cw, number_of_threads=256)
        elif cutlass.const_expr(self.pingpong):
            order.wait()
        self.issue_qk(qk_mma, tSrQ, tSrK, acc_s, cw, stage)
        if cutlass.const_expr(self.named):
            cute.arch.barrier_arrive(barrier_id=ORDER_BARRIER + 1 - cw, number_of_threads=256)
        elif cutlass.const_expr(self.pingpong):
            order.arrive()

    @cute.jit
    def issue_qk(self, qk_mma, tSrQ, tSrK, acc_s, cw, stage):
        """``wgmma.fence``, the ``S = Q K^T`` wgmmas of one K stage, one ``commit_group``."""
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(tSrQ, mode=[2])):
            qk_mma.set(warpgroup.Field.ACCUMULATE, kb != 0)
            cute.gemm(qk_mma, acc_s, tSrQ[None, None, kb, cw], tSrK[None, None, kb, stage], acc_s)
        warpgroup.commit_group()

    @cute.jit
    def gemm_pv(self, order, pv_mma, s_or_p, tOrV, acc_o, stage, converted=False):
        """Issue ``O += P V`` (P converted from the S registers unless ``converted``), in turn."""
        p = s_or_p
        if cutlass.const_expr(not converted):
            p = self.to_operand(s_or_p)
        if cutlass.const_expr(self.pingpong and not self.overlap):
            order.wait()
        self.issue_pv(pv_mma, p, tOrV, acc_o, stage)
        if cutlass.const_expr(self.pingpong and not self.overlap):
            order.arrive()

    @cute.jit
    def issue_pv(self, pv_mma, p, tOrV, acc_o, stage):
        """``wgmma.fence``, the ``O += P V`` wgmmas of one V stage, one ``commit_group``."""
        warpgroup.fence()
        for kb in cutlass.range_constexpr(cute.size(p, mode=[2])):
            cute.gemm(pv_mma, acc_o, p[None, None, kb], tOrV[None, None, kb, stage], acc_o)
        warpgroup.commit_group()

    @cute.jit
    def to_operand(self, acc_s):
        """P in fp16/bf16 as the A operand of ``wgmma`` from registers. The accumulator of
        ``m64nNk16`` and the A fragment of ``m64nNk16`` hold the same (row, column) pairs in
        the same register order (PTX ISA, wgmma register fragments), so converting element by
        element is the whole job: k-block ``kb`` of A is columns ``16 kb .. 16 kb + 15`` of S."""
        n = cute.size(acc_s)
        p = cute.make_rmem_tensor(cute.make_layout(((2, 2, 2), 1, n // 8)), self.ab)
        cute.make_tensor(p.iterator, acc_s.layout).store(acc_s.load().to(self.ab))
        return p

    @cute.jit
    def softmax(self, acc_s, acc_o, tScS, m_run, l_run, j, m_tile, row0, scale_log2, rescale_now):
        """Online softmax of one S tile in place (S becomes P = exp2(S*scale_log2 - m*scale_log2)):
        mask (causal tiles on or past the diagonal), new row max (4 threads share a row), update
        the running sum, and rescale O now (``rescale_now``) or leave it to :meth:`rescale`."""
        per_row = BLOCK_N // 4                                  # scores per row in one thread
        if cutlass.const_expr(self.causal):
            if (j + 1) * BLOCK_N > m_tile * BLOCK_M:            # this tile reaches past the first row
                for i in cutlass.range(cute.size(acc_s), unroll_full=True):
                    row, key = tScS[i]
                    if j * BLOCK_N + key > row0 + row:
                        acc_s[i] = -cutlass.Float32.inf
        for r in cutlass.range_constexpr(cute.size(m_run)):
            m_old = m_run[r]
            mx = m_old
            for c in cutlass.range_constexpr(per_row):
                mx = cute.arch.fmax(mx, acc_s[self.flat(r, c)])
            mx = cute.arch.warp_reduction_max(mx, threads_in_group=4)
            m_run[r] = mx
            shift = mx * scale_log2
            total = 0.0
            for c in cutlass.range_constexpr(per_row):
                i = self.flat(r, c)
                acc_s[i] = cute.math.exp2(acc_s[i] * scale_log2 - shift, fastmath=True)
                total = total + acc_s[i]
            alpha = cute.math.exp2(m_old * scale_log2 - shift, fastmath=True)   # 0 on the first tile
            l_run[r] = l_run[r] * alpha + total
            if cutlass.const_expr(rescale_now):
                for c in cutlass.range_constexpr(self.D // 4):
                    acc_o[self.flat(r, c)] = acc_o[self.flat(r, c)] * alpha

    @cute.jit
    def rescale(self, acc_o, m_new, m_old, scale_log2):
        """O *= exp2((m_old - m_new) * scale_log2), row by row (after the PV GEMM that used it)."""
        for r in cutlass.range_constexpr(cute.size(m_new)):
            alpha = cute.math.exp2((m_old[r] - m_new[r]) * scale_log2, fastmath=True)
            for c in cutlass.range_constexpr(self.D // 4):
                acc_o[self.flat(r, c)] = acc_o[self.flat(r, c)] * alpha

    @staticmethod
    def flat(r: int, c: int) -> int:
        """Register index of a thread's c-th value of its r-th row in a wgmma accumulator
        ``((2, 2, N/8), 1, 1)``: pairs of columns, then the row half (+8 rows), then 8-column groups."""
        return (c % 2) + 2 * r + 4 * (c // 2)

    @cute.jit
    def store_o(self, acc_o, l_run, tOgO):
        """O = acc / l (the sum reduced over the 4 threads of a row), fp16/bf16, stored straight
        from registers (each thread writes pairs of adjacent columns)."""
        for r in cutlass.range_constexpr(cute.size(l_run)):
            inv = cute.arch.rcp_approx(cute.arch.warp_reduction_sum(l_run[r], threads_in_group=4))
            for c in cutlass.range_constexpr(self.D // 4):
                acc_o[self.flat(r, c)] = acc_o[self.flat(r, c)] * inv
        out = cute.make_rmem_tensor(acc_o.layout, self.ab)
        out.store(acc_o.load().to(self.ab))
        cute.autovec_copy(out, tOgO)


def views(t, v_operand: bool = False):
    """A contiguous torch (B, H, S, D) tensor as the kernel sees it: (S, D, B*H) with D
    contiguous, or for V (``v_operand``) (D, S, B*H), the same memory."""
    B, H, S, D = t.shape
    t3 = t.reshape(B * H, S, D)
    return t3.permute(2, 1, 0) if v_operand else t3.permute(1, 2, 0)


def operands(q, k, v, o) -> list:
    """Check torch CUDA q, k, v, o (one (B, H, S, D) shape and fp16/bf16 dtype, contiguous, S a
    multiple of 128, D 64 or 128) and return the CuteDSL views (q, k, v, o) and a stream."""
    import torch
    from . import inputs
    from .compat import stream, to_cute
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        if not torch.is_tensor(t) or t.dim() != 4:
            raise ValueError(f"{name} must be a (B, H, S, D) torch tensor")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be contiguous (B, H, S, D): TMA reads rows of D elements")
    if not q.shape == k.shape == v.shape == o.shape or not q.dtype == k.dtype == v.dtype == o.dtype:
        raise ValueError(f"q, k, v, o must share one shape and dtype, got {[tuple(t.shape) for t in (q, k, v, o)]}"
                         f" {[str(t.dtype) for t in (q, k, v, o)]}")
    if q.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"dtype must be float16 or bfloat16 (wgmma operands), got {q.dtype}")
    B, H, S, D = q.shape
    if D not in (64, 128):
        raise ValueError(f"head dim D must be 64 or 128, got {D}")
    if S % BLOCK_M:
        raise ValueError(f"sequence length {S} is not a multiple of {BLOCK_M} (the CTA's query rows)")
    for name, t in (("q", q), ("k", k), ("v", v), ("o", o)):
        inputs.tma_tensor(name, t, rank=4)        # the TMA rules: no empty axis, 16-B aligned...
    cv = [to_cute(views(t, name == "v"), dynamic=False) for name, t in zip("qkvo", (q, k, v, o))]
    return cv + [stream()]


_COMPILED: dict = {}


def run(q, k, v, o=None, causal: bool = False, step: str = "overlap", skip: bool = True,
        stages: int | None = None, flash: FlashFwd | None = None):
    """o = softmax(q k^T / sqrt(D)) v with :class:`FlashFwd` (compiled once per configuration;
    ``flash``: a ready kernel object instead, compiled on every call). Returns o (allocated when
    not given; pass a NaN-filled one to see every element written)."""
    import torch
    if o is None:
        o = torch.empty_like(q)
    args = operands(q, k, v, o)
    key = (str(q.dtype), tuple(q.shape), bool(causal), step, bool(skip), stages)
    scale = cutlass.Float32(q.shape[-1] ** -0.5 * LOG2E)
    if flash is not None:
        from .compat import compile_kernel
        compile_kernel(flash, *args[:4], scale, args[4])(*args[:4], scale, args[4])
        return o
    if key not in _COMPILED:
        from .compat import compile_kernel
        _COMPILED[key] = compile_kernel(FlashFwd(q.shape[-1], step, causal, skip, stages), *args[:4], scale, args[4])
    _COMPILED[key](*args[:4], scale, args[4])
    return o


def ptx_of(D: int = 128, step: str = "overlap", causal: bool = False, skip: bool = True, S: int = 4096,
           BH: int = 16, dtype: str = "float16", flash: FlashFwd | None = None) -> str:
    """PTX of one step compiled for sm_90a with fake tensors (any machine, no GPU); ``flash``: a
    ready :class:`FlashFwd` (or subclass) to compile instead of ``FlashFwd(D, step, causal, skip)``."""
    from .compat import compile_ptx, fake_stream, fake_tensor
    q = fake_tensor((S, D, BH), dtype, (1, 0, 2))
    v = fake_tensor((D, S, BH), dtype, (0, 1, 2))
    return compile_ptx(flash or FlashFwd(D, step, causal, skip), q, q, v, q, cutlass.Float32(0.125 * LOG2E), fake_stream())
