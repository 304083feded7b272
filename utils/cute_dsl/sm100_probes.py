"""Day 5 · 09: what CuteDSL computes for Blackwell's tensor cores, read at compile time (any machine).

* :func:`accumulator_columns`: the tensor-memory columns CuteDSL allocates for one fp32 accumulator
  of a ``tcgen05`` MMA tile (the reference of exercise 2 is tested against it);
* :func:`multicast_masks`: the TMA multicast masks ``create_tma_multicast_mask`` gives every CTA of
  a cluster of CTA pairs (exercise 3's reference is tested against it).
"""
from __future__ import annotations

from .compat import cpasync, cute, cutlass

import cutlass.utils.blackwell_helpers as sm100  # noqa: E402
from cutlass.cute.nvgpu import OperandMajorMode, tcgen05  # noqa: E402


def accumulator_columns(tile_m: int, tile_n: int, pair: bool) -> int:
    """The TMEM columns CuteDSL allocates for one fp32 accumulator of a ``tile_m x tile_n``
    ``tcgen05`` fp16 MMA (``pair``: ``cta_group::2``), computed from the MMA's accumulator layout by
    ``cutlass.utils.blackwell_helpers.get_num_tmem_alloc_cols`` at compile time (any machine)."""
    from .compat import compile_kernel
    found = {}

    @cute.jit
    def probe():
        group = tcgen05.CtaGroup.TWO if pair else tcgen05.CtaGroup.ONE
        op = tcgen05.MmaF16BF16Op(cutlass.Float16, cutlass.Float32, (tile_m, tile_n, 16), group,
                                  tcgen05.OperandSource.SMEM, OperandMajorMode.K, OperandMajorMode.K)
        mma = cute.make_tiled_mma(op)
        acc = mma.make_fragment_C(mma.partition_shape_C((tile_m, tile_n)))
        found["columns"] = sm100.get_num_tmem_alloc_cols(acc)
    compile_kernel(probe, arch="sm_100a")
    return found["columns"]


def multicast_masks(cluster) -> dict:
    """``{rank: (mask_a, mask_b)}`` that ``cpasync.create_tma_multicast_mask`` gives every CTA of a
    cluster of CTA pairs (``cluster`` = (along M, along N)), read from a probe kernel's PTX, where
    CuteDSL folds each mask into a constant (any machine)."""
    import re
    from .compat import compile_ptx, make_fake_compact_tensor
    shape, size = (*cluster, 1), cluster[0] * cluster[1]

    @cute.kernel
    def probe_kernel(out: cute.Tensor):
        vmnk = cute.tiled_divide(cute.make_layout(shape), (cute.make_layout(2),))
        for r in cutlass.range_constexpr(size):
            coord = vmnk.get_flat_coord(r)
            out[2 * r] = cpasync.create_tma_multicast_mask(vmnk, coord, mcast_mode=2).to(cutlass.Int32)
            out[2 * r + 1] = cpasync.create_tma_multicast_mask(vmnk, coord, mcast_mode=1).to(cutlass.Int32)

    @cute.jit
    def probe(out: cute.Tensor):
        probe_kernel(out).launch(grid=(1, 1, 1), block=(32, 1, 1))
    out = make_fake_compact_tensor(cutlass.Int32, (2 * size,), stride_order=(0,), assumed_align=16)
    text = compile_ptx(probe, out, arch="sm_100a")
    values = {}
    for m in re.finditer(r"st\.global(?:\.v\d)?\.b32\s+\[%rd\d+(?:\+(\d+))?\],\s*\{?([^};]*)\}?;", text):
        for i, v in enumerate(x.strip() for x in m.group(2).split(",")):
            if v.lstrip("-").isdigit():
                values[int(m.group(1) or 0) // 4 + i] = int(v)
    if sorted(values) != list(range(2 * size)):
        raise RuntimeError("CuteDSL did not fold the masks into constants: cannot read them from the PTX")
    return {r: (values[2 * r] & 0xFFFF, values[2 * r + 1] & 0xFFFF) for r in range(size)}   # Int16 masks
