"""Day 5 · 04: TMA with CuteDSL, the small kernels (tile copy, store, store-reduce, multicast).

* :func:`tile_copy` (``@cute.jit``) and :func:`tile_copy_kernel` (``@cute.kernel``): each CTA
  loads one 128 x 64 tile with a TMA atom into shared memory, waits on an mbarrier, and writes
  it back with a TMA store (``reduce=False``) or a TMA store-reduce-add (``reduce=True``).
* :func:`broadcast` / :func:`broadcast_kernel`: a cluster of ``R`` CTAs needs the same tile;
  without multicast each CTA loads all of it, with multicast each loads 1/R and the copy engine
  delivers it to every CTA of the cluster (the pattern of A and B in a clustered GEMM).
* :func:`ptx_of` compiles any of them for sm_90a with fake tensors (any machine);
  :func:`run_tile_copy` / :func:`run_broadcast` compile them for this GPU and launch them on torch
  tensors (any GPU with TMA that CuteDSL targets: H100, B200, RTX 50; see utils.core.features), after
  checking them on the CPU with the TMA rules of the validator and the NumPy model
  (:mod:`.inputs`, :mod:`utils.tma.rules`): the same bad input gives the same error on a laptop.
"""
from __future__ import annotations

from ..tma import rules
from . import inputs
from .compat import cpasync, cute, cutlass, SmemAllocator

TILE = (128, 64)          # rows x columns of one tile (128 x 64 fp16 = 16 KiB)


@cute.kernel
def tile_copy_kernel(atom_ld: cute.CopyAtom, g_src: cute.Tensor, atom_st: cute.CopyAtom,
                     g_dst: cute.Tensor, s_layout: cute.Layout, dtype: cutlass.Constexpr,
                     row_order: cutlass.Constexpr = False):
    bx, by, _ = cute.arch.block_idx()                     # bx: tile row (M), by: tile column (N)
    if cutlass.const_expr(row_order):                     # consecutive CTAs walk along a row of tiles
        by, bx, _ = cute.arch.block_idx()
    smem = SmemAllocator()
    mbar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)         # one mbarrier
    s_tile = smem.allocate_tensor(dtype, s_layout, byte_alignment=128)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    if warp == 0:
        cpasync.prefetch_descriptor(atom_ld)
        cpasync.prefetch_descriptor(atom_st)
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(mbar, 1)                  # 1 arrival per phase (the producer)
    cute.arch.mbarrier_init_fence()
    cute.arch.barrier()
    g_tiles_src = cute.local_tile(g_src, TILE, (None, None))    # (128, 64, tiles_m, tiles_n)
    g_tiles_dst = cute.local_tile(g_dst, TILE, (None, None))
    t_s, t_g = cpasync.tma_partition(atom_ld, 0, cute.make_layout(1),
                                     cute.group_modes(s_tile, 0, 2), cute.group_modes(g_tiles_src, 0, 2))
    u_s, u_g = cpasync.tma_partition(atom_st, 0, cute.make_layout(1),
                                     cute.group_modes(s_tile, 0, 2), cute.group_modes(g_tiles_dst, 0, 2))
    if warp == 0:
        with cute.arch.elect_one():
            cute.arch.mbarrier_arrive_and_expect_tx(mbar, cute.size_in_bytes(dtype, s_layout))
        cute.copy(atom_ld, t_g[(None, bx, by)], t_s, tma_bar_ptr=mbar)       # G2S, one thread
    cute.arch.mbarrier_wait(mbar, 0)                      # phase 0 completes: all bytes landed
    if warp == 0:
        cute.copy(atom_st, u_s, u_g[(None, bx, by)])      # S2G (or S2G reduce-add)
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)  # smem may be reused after this


@cute.jit
def tile_copy(src: cute.Tensor, dst: cute.Tensor, reduce: cutlass.Constexpr = False,
              row_order: cutlass.Constexpr = False):
    """dst = src (``reduce=False``) or dst += src (``reduce=True``), one TMA tile per CTA.
    The grid is (tiles along M, tiles along N), so consecutive CTAs go down a column of tiles;
    ``row_order=True`` swaps the grid's axes so that they go along a row (day 5 · 01's ablation)."""
    s_layout = cute.make_layout(TILE, stride=(TILE[1], 1))
    atom_ld, g_src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, s_layout, TILE)
    op_st = cpasync.CopyReduceBulkTensorTileS2GOp() if reduce else cpasync.CopyBulkTensorTileS2GOp()
    atom_st, g_dst = cpasync.make_tiled_tma_atom(op_st, dst, s_layout, TILE)
    tiles_m, tiles_n, _ = cute.ceil_div((*src.layout.shape, 1), (*TILE, 1))
    grid = (tiles_n, tiles_m, 1) if cutlass.const_expr(row_order) else (tiles_m, tiles_n, 1)
    tile_copy_kernel(atom_ld, g_src, atom_st, g_dst, s_layout, src.element_type, row_order).launch(
        grid=grid, block=(128, 1, 1))


@cute.kernel
def broadcast_kernel(atom_ld: cute.CopyAtom, g_src: cute.Tensor, atom_st: cute.CopyAtom,
                     g_dst: cute.Tensor, s_layout: cute.Layout, dtype: cutlass.Constexpr, R: cutlass.Constexpr,
                     multicast: cutlass.Constexpr):
    rank = cute.arch.make_warp_uniform(cute.arch.block_idx_in_cluster())   # 0..R-1
    cx, by, _ = cute.arch.cluster_idx()                   # which source tile this cluster needs
    smem = SmemAllocator()
    mbar = smem.allocate_array(cutlass.Int64, 1, byte_alignment=8)
    s_tile = smem.allocate_tensor(dtype, s_layout, byte_alignment=128)
    warp = cute.arch.make_warp_uniform(cute.arch.warp_idx())
    with cute.arch.elect_one():
        cute.arch.mbarrier_init(mbar, 1)
    cute.arch.mbarrier_init_fence()
    cute.arch.cluster_arrive_relaxed()                    # every CTA's barrier is initialised
    cute.arch.cluster_wait()                              # before any multicast may signal it
    g_tiles_src = cute.local_tile(g_src, TILE, (None, None))
    g_tiles_dst = cute.local_tile(g_dst, TILE, (None, None))
    cta_layout = cute.make_layout(R if multicast else 1)  # the tile is cut into R slices
    t_s, t_g = cpasync.tma_partition(atom_ld, rank if multicast else 0, cta_layout,
                                     cute.group_modes(s_tile, 0, 2), cute.group_modes(g_tiles_src, 0, 2))
    u_s, u_g = cpasync.tma_partition(atom_st, 0, cute.make_layout(1),
                                     cute.group_modes(s_tile, 0, 2), cute.group_modes(g_tiles_dst, 0, 2))
    if warp == 0:
        with cute.arch.elect_one():                       # the FULL tile arrives in every CTA
            cute.arch.mbarrier_arrive_and_expect_tx(mbar, cute.size_in_bytes(dtype, s_layout))
        if cutlass.const_expr(multicast):
            mask = cpasync.create_tma_multicast_mask(cute.make_layout((1, R, 1, 1)), (0, rank, 0, 0), 1)
            cute.copy(atom_ld, t_g[(None, cx, by)], t_s, tma_bar_ptr=mbar, mcast_mask=mask)
        else:
            cute.copy(atom_ld, t_g[(None, cx, by)], t_s, tma_bar_ptr=mbar)
    cute.arch.mbarrier_wait(mbar, 0)
    if warp == 0:                                         # replica `rank` of tile (cx, by)
        tiles_m = cute.size(g_tiles_src, mode=[2])
        cute.copy(atom_st, u_s, u_g[(None, rank * tiles_m + cx, by)])
        cute.arch.cp_async_bulk_commit_group()
        cute.arch.cp_async_bulk_wait_group(0, read=True)
    cute.arch.cluster_arrive()                            # no CTA leaves while a peer may still
    cute.arch.cluster_wait()                              # be writing into its shared memory


@cute.jit
def broadcast(src: cute.Tensor, dst: cute.Tensor, R: cutlass.Constexpr, multicast: cutlass.Constexpr, stream):
    """dst (R*M x N) = R copies of src (M x N); a cluster of R CTAs shares each source tile.
    Launched on ``stream`` (torch's current one), so a CUDA graph captures it."""
    s_layout = cute.make_layout(TILE, stride=(TILE[1], 1))
    if cutlass.const_expr(multicast):
        atom_ld, g_src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SMulticastOp(), src,
                                                     s_layout, TILE, num_multicast=R)
    else:
        atom_ld, g_src = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileG2SOp(), src, s_layout, TILE)
    atom_st, g_dst = cpasync.make_tiled_tma_atom(cpasync.CopyBulkTensorTileS2GOp(), dst, s_layout, TILE)
    tiles = cute.ceil_div((*src.layout.shape, 1), (*TILE, 1))
    broadcast_kernel(atom_ld, g_src, atom_st, g_dst, s_layout, src.element_type, R, multicast).launch(
        grid=(tiles[0] * R, tiles[1], 1), block=(128, 1, 1), cluster=(R, 1, 1), stream=stream)


def ptx_of(name: str, shape=(1024, 512), dtype="float16", **options) -> str:
    """PTX of ``"tile_copy"`` or ``"broadcast"`` compiled for sm_90a with fake tensors."""
    from .compat import compile_ptx, fake_stream, fake_tensor
    fns = {"tile_copy": tile_copy, "broadcast": broadcast}
    if name not in fns:
        raise ValueError(f"name must be one of {sorted(fns)}, got {name!r}")
    if name == "tile_copy":
        return compile_ptx(tile_copy, fake_tensor(shape, dtype), fake_tensor(shape, dtype), *options.values())
    R, multicast = options.get("R", 2), options.get("multicast", True)
    return compile_ptx(broadcast, fake_tensor(shape, dtype), fake_tensor((shape[0] * R, shape[1]), dtype), R,
                       multicast, fake_stream())


def _check_2d(t, what, rows_multiple=1):
    """A contiguous 2-D TMA tensor (:func:`.inputs.tma_tensor`) with a multiple of ``rows_multiple`` rows."""
    inputs.tma_tensor(what, t, rank=2)
    if t.shape[0] % rows_multiple:
        raise ValueError(f"{what}: rows must be a multiple of {rows_multiple}, got {t.shape[0]}")


def _check_pair(src, dst, reduce=False, rows_multiple=1):
    """src and dst are TMA tensors of one dtype; a reduce-add also needs a dtype .add takes."""
    _check_2d(src, "src", rows_multiple), _check_2d(dst, "dst", rows_multiple)
    if src.dtype != dst.dtype:
        raise ValueError(f"src and dst differ in dtype: {src.dtype} vs {dst.dtype} (TMA copies bytes, "
                         "it does not convert)")
    if reduce:
        rules.reduce_add_dtype(rules.dtype_name(dst.dtype))


_COMPILED: dict = {}


def _compiled(fn, key, *args):
    """``fn`` compiled for this GPU (:func:`.compat.launch_arch`: sm_90a on Hopper, sm_100a on a
    B200, ...): these kernels use only TMA, mbarriers and clusters, which every such GPU has."""
    from .compat import compile_kernel, launch_arch
    if key not in _COMPILED:
        _COMPILED[key] = compile_kernel(fn, *args, arch=launch_arch())
    return _COMPILED[key]


def run_tile_copy(src, dst, reduce: bool = False, row_order: bool = False):
    """Launch :func:`tile_copy` on torch CUDA tensors (any size with 16-byte rows); returns dst.
    With ``reduce`` dst += src: a dtype the TMA reduce-add takes (:func:`utils.tma.rules.reduce_add_dtype`)."""
    from .compat import to_cute
    reduce, row_order = rules.flag("reduce", reduce), rules.flag("row_order", row_order)
    _check_pair(src, dst, reduce)
    if src.shape != dst.shape or src.dtype != dst.dtype:
        raise ValueError(f"src and dst differ: {tuple(src.shape)} {src.dtype} vs {tuple(dst.shape)} {dst.dtype}")
    a, b = to_cute(src, dynamic=False), to_cute(dst, dynamic=False)
    key = ("copy", tuple(src.shape), src.dtype, bool(reduce), bool(row_order))
    _compiled(tile_copy, key, a, b, bool(reduce), bool(row_order))(a, b)
    return dst


def run_broadcast(src, dst, R: int = 2, multicast: bool = True):
    """Launch :func:`broadcast` (dst = R stacked copies of src); rows a multiple of 128."""
    from .compat import stream, to_cute
    R, multicast = rules.cluster_size(R), rules.flag("multicast", multicast)
    _check_pair(src, dst, rows_multiple=TILE[0])
    if tuple(dst.shape) != (R * src.shape[0], src.shape[1]):
        raise ValueError(f"dst must be ({R} x {src.shape[0]}, {src.shape[1]}), got {tuple(dst.shape)}")
    a, b = to_cute(src, dynamic=False), to_cute(dst, dynamic=False)
    s = stream()
    _compiled(broadcast, ("bcast", tuple(src.shape), src.dtype, R, multicast), a, b, R, multicast, s)(a, b, s)
    return dst


def l2_bytes_read(shape, itemsize: int, R: int, multicast: bool) -> int:
    """Bytes the CTAs of one :func:`broadcast` launch request from L2/HBM: every CTA asks for
    the whole tile without multicast, for 1/R of it with multicast. The arguments follow the
    rules :func:`run_broadcast` applies (a 2-D shape with every extent >= 1, a TMA element size,
    a cluster size of 1, 2 or 4, ``multicast`` True or False)."""
    shape = rules.global_shape("shape", shape)
    rules.count("shape", shape, 2, 2)
    itemsize, R = rules.elem_size(itemsize, "itemsize"), rules.cluster_size(R)
    multicast = rules.flag("multicast", multicast)
    tiles = -(-shape[0] // TILE[0]) * -(-shape[1] // TILE[1])
    tile_bytes = TILE[0] * TILE[1] * itemsize
    return tiles * R * (tile_bytes // R if multicast else tile_bytes)
