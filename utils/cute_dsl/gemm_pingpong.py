"""Day 5 · 05: the warp-specialized persistent GEMM with **ping-pong** consumers.

``WsGemm`` is *cooperative*: both consumer warpgroups work on one 128 x 256 C tile (64 rows
each), so both run the epilogue at the same time and the tensor cores idle meanwhile.
``PingpongGemm`` changes that one thing, after CUTLASS's
``KernelTmaWarpSpecializedPingpong``:

* each consumer warpgroup owns whole 64 x 256 tiles (the same ``m64n256k16`` wgmma as a
  cooperative warpgroup), warpgroup 1 the even tiles of the CTA's sequence, warpgroup 2 the odd
  ones; the producer loads the tiles in sequence into one ring, and each consumer skips the other's
  k-tiles;
* an **ordering barrier** (``pipeline.PipelineOrder``, depth 2 = mainloop and epilogue, length 2 =
  the two warpgroups) makes the mainloops take turns (a warpgroup passes the turn on once its
  last ``wgmma`` is issued), and the epilogues take turns: while one warpgroup stores its tile,
  the other's ``wgmma``\\ s run;
* each warpgroup stores through its own ring of C buffers, with its own named barrier.
"""
from __future__ import annotations

from .compat import cute, cutlass, pipeline
from .gemm_ws import EPI_STAGES, H100_SMS, WsGemm

WG_TILE = (64, 256, 64)          # one consumer warpgroup's C tile (M, N, K)
ORDER_DEPTH = 2                  # ordered sections per tile: mainloop, epilogue


class PingpongGemm(WsGemm):
    """``PingpongGemm(cluster, sms, order)(a, b, c, stream)``: same tensors as ``WsGemm``, always
    persistent with register reallocation."""

    tiles = (WG_TILE,)

    def __init__(self, cluster=(1, 1), sms: int = H100_SMS, order: str = "grouped"):
        super().__init__(True, cluster, sms, True, order, tile=WG_TILE, c_sets=2)
        self.mma_wgs = 1                                # one warpgroup per C tile
        self.release_warps = 4                          # only the owner releases a stage

    @cute.jit
    def mma_slice(self, wg):
        """Every consumer warpgroup computes a whole (64-row) tile: slice 0."""
        return 0

    def make_order(self, storage, wg):
        """The ordering barrier between the two consumer warpgroups (group 0 and 1)."""
        return pipeline.PipelineOrder.create(
            barrier_storage=storage.order_bars.data_ptr(), depth=ORDER_DEPTH, length=2, group_id=wg - 1,
            producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128), defer_sync=True)

    @cute.jit
    def epi_sync(self, cw):
        """Barrier of the 128 threads of consumer warpgroup ``cw`` (named barriers 2 and 3)."""
        cute.arch.barrier(barrier_id=2 + cw, number_of_threads=128)

    @cute.jit
    def consume(self, pipe, clusters_m, clusters_n, crd, tiled_mma, tCrA, tCrB, acc, k_tiles, atom_c, gC, sC,
                tidx, warp, order):
        """Consumer warpgroup ``cw``: tiles cw, cw + 2, ... of the CTA's sequence; mainloop and
        epilogue each in turn with the other warpgroup (``order.wait`` / ``order.arrive``)."""
        cw = cute.arch.make_warp_uniform(warp // 4 - 1)
        tile = self.first_tile() + cw * self.tile_step()
        done = cutlass.Int32(0)
        read = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        release = pipeline.make_pipeline_state(pipeline.PipelineUserType.Consumer, self.stages)
        read.advance(k_tiles * cw)                      # warpgroup 1: the first tile is 0's
        release.advance(k_tiles * cw)
        store_pipe = pipeline.PipelineTmaStore.create(
            num_stages=EPI_STAGES, producer_group=pipeline.CooperativeGroup(pipeline.Agent.Thread, 128))
        while tile < clusters_m * clusters_n:
            # this tile's place in the ordered sequence: 2 sections per tile; warpgroup 0 passes
            # its first two waits on the fresh barriers (phase 1), warpgroup 1 waits for 0
            turn = pipeline.PipelineState(ORDER_DEPTH, done * ORDER_DEPTH, cutlass.Int32(0),
                                          cutlass.Int32(cw == 0) ^ (done % 2))
            order.wait(turn)                            # my turn on the tensor cores
            self.mainloop(pipe, read, release, tiled_mma, tCrA, tCrB, acc, k_tiles, order, turn)
            m, n = self.tile_mn(tile, clusters_m, clusters_n, crd)
            order.wait(turn)                            # my turn to store
            self.ws_epilogue(acc, tiled_mma, atom_c, gC[(None, None, m, n, 0)], sC, store_pipe,
                             tidx % 128, warp, done, cw)
            order.arrive(turn)
            read.advance(k_tiles)                       # step over the other warpgroup's tile
            release.advance(k_tiles)
            done += 1
            tile += 2 * self.tile_step()
        store_pipe.producer_tail()

