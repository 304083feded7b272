"""Triton kernels for the shapes real models run (notebook ``day05_tma/06``): a skinny GEMM with
split-K whose partial tiles are combined by TMA reduce-add stores, and a persistent grouped
(MoE) GEMM whose descriptors are built on the device, one per group.

* :func:`skinny_kernel`: C = A @ B, one program per (output tile, K split). A program
  accumulates its K range in fp32; with one split it stores the tile through a descriptor, with
  more it ADDS it into C with ``c_desc.atomic_add`` (PTX ``cp.reduce.async.bulk.tensor ... .add``,
  SASS ``UTMAREDG``). C must hold zeros first. :func:`skinny` launches it.
* :func:`grouped_kernel`: one persistent program per SM walks the tiles of all groups; for each
  group it meets it makes the group's descriptors with ``tl.make_tensor_descriptor`` (a 128-byte
  descriptor written on the device: ``tensormap.replace`` + proxy fences, read in the notebook's
  PTX), and takes the group's tiles in columns of ``GROUP_M`` row blocks (:func:`tile_of`) so
  the programs running together share B's columns in L2. :func:`grouped` launches it.

Both are checked against float64 references (:mod:`utils.day05.skinny`) under the Triton
interpreter on a CPU and on the GPU at full size in the notebook.
"""
from __future__ import annotations

from ..core.tier import current
from ..triton_lang.compat import interpreting, require_triton, tensor_descriptor_class

current()         # decides the tier (TRITON_INTERPRET) before Triton loads
require_triton()
import triton  # noqa: E402
import triton.language as tl  # noqa: E402


@triton.jit
def _add_tile(c_desc, c_ptr, acc, off_m, off_n, M, N, BM: tl.constexpr, BN: tl.constexpr, TMA_REDUCE: tl.constexpr):
    """Add the fp32 tile ``acc`` into C at (off_m, off_n): a TMA reduce-add store, or (the CPU
    interpreter has no descriptor reduce) element atomics through ``c_ptr``."""
    if TMA_REDUCE:
        c_desc.atomic_add([off_m, off_n], acc.to(c_desc.dtype))   # cp.reduce.async.bulk.tensor ... .add
    else:
        rows, cols = off_m + tl.arange(0, BM), off_n + tl.arange(0, BN)
        keep = (rows[:, None] < M) & (cols[None, :] < N)
        tl.atomic_add(c_ptr + rows[:, None] * N + cols[None, :], acc.to(c_desc.dtype), mask=keep)


@triton.jit
def skinny_kernel(a_desc, b_desc, c_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                  BK: tl.constexpr, SPLITS: tl.constexpr, TMA_REDUCE: tl.constexpr):
    """Grid ``(tiles_m * tiles_n, SPLITS)``. Split s covers K tiles
    ``[s * kt // SPLITS, (s + 1) * kt // SPLITS)`` (:func:`utils.day05.skinny.k_ranges`).
    ``TMA_REDUCE=False`` adds the tile with element atomics through ``c_ptr`` instead: only the
    CPU interpreter needs it (it has no descriptor reduce); the GPU and the sm_90a PTX use TMA."""
    tile, s = tl.program_id(0), tl.program_id(1)
    tiles_n = tl.cdiv(N, BN)
    off_m, off_n = (tile // tiles_n) * BM, (tile % tiles_n) * BN
    k_tiles = tl.cdiv(K, BK)
    k0, k1 = s * k_tiles // SPLITS, (s + 1) * k_tiles // SPLITS
    acc = tl.zeros((BM, BN), dtype=tl.float32)
    for kt in range(k0, k1):
        a = a_desc.load([off_m, kt * BK])
        b = b_desc.load([kt * BK, off_n])
        acc = tl.dot(a, b, acc)
    if SPLITS == 1:
        c_desc.store([off_m, off_n], acc.to(c_desc.dtype))
    else:
        _add_tile(c_desc, c_ptr, acc, off_m, off_n, M, N, BM, BN, TMA_REDUCE)


def _check_2d(name, t):
    if getattr(t, "ndim", None) != 2:
        raise ValueError(f"{name} must be a 2-D tensor, got shape {tuple(getattr(t, 'shape', ()))}")


def _check_ab(a, b):
    """Validate A (M, K) and B (K, N) for a TMA GEMM; return (M, K, N)."""
    import torch
    _check_2d("a", a), _check_2d("b", b)
    (M, K), (K2, N) = a.shape, b.shape
    if K != K2:
        raise ValueError(f"A is {M}x{K} but B is {K2}x{N}: inner dimensions differ")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"A and B must both be float16 or both bfloat16, got {a.dtype} and {b.dtype}")
    for name, t in (("A", a), ("B", b)):
        if t.stride(1) != 1 or (t.stride(0) * t.element_size()) % 16:
            raise ValueError(f"{name}'s rows must be contiguous with a row stride that is a multiple of 16 B "
                             f"(a TMA rule), got strides {tuple(t.stride())}")
    return M, K, N


def _check_out(out, M, N, reduce):
    import torch
    if tuple(out.shape) != (M, N) or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous {M}x{N} tensor, got {tuple(out.shape)}")
    if reduce:
        from ..tma import rules
        rules.reduce_add_dtype(rules.dtype_name(out.dtype))    # the instruction's rule (every door's)
        if out.dtype not in (torch.float32, torch.float16, torch.bfloat16):
            raise ValueError(f"a reduce-add store supports fp32, fp16 and bf16 C here, got {out.dtype}")


def skinny(a, b, *, splits=1, BM=64, BN=128, BK=128, num_warps=4, num_stages=4, out=None):
    """C = A @ B with ``splits`` K splits. ``out``: the C to write (fp16/bf16 like A for one
    split; for more splits it is reduced INTO, so pass zeros: fp32 for fp32 accumulation of the
    partials, or A's dtype to round at every add). Returns ``out``."""
    import torch
    M, K, N = _check_ab(a, b)
    if not (isinstance(splits, int) and 1 <= splits <= triton.cdiv(K, BK)):
        raise ValueError(f"splits must be an int in 1..{triton.cdiv(K, BK)} (one K tile of {BK} each at "
                         f"least), got {splits!r}")
    if out is None:
        out = (torch.empty if splits == 1 else torch.zeros)(
            (M, N), dtype=a.dtype if splits == 1 else torch.float32, device=a.device)
    _check_out(out, M, N, reduce=splits > 1)
    TD = tensor_descriptor_class()
    grid = (triton.cdiv(M, BM) * triton.cdiv(N, BN), splits)
    skinny_kernel[grid](TD.from_tensor(a, [BM, BK]), TD.from_tensor(b, [BK, BN]), TD.from_tensor(out, [BM, BN]),
                        out, M, N, K, BM=BM, BN=BN, BK=BK, SPLITS=splits, TMA_REDUCE=not interpreting(),
                        num_warps=num_warps, num_stages=num_stages)
    return out


@triton.jit
def streamk_kernel(a_desc, b_desc, c_desc, c_ptr, M, N, K, BM: tl.constexpr, BN: tl.constexpr,
                   BK: tl.constexpr, NUM_PROGS: tl.constexpr, TMA_REDUCE: tl.constexpr):
    """Stream-K: the ``tiles x k_tiles`` K-iterations of the whole GEMM are cut into NUM_PROGS
    equal ranges, one per program (one per SM), regardless of tile boundaries. A program walks its
    range tile piece by tile piece and reduce-adds every piece into C (zeros first): a tile cut
    between two programs gets two adds. Every SM gets the same work, so none idles."""
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    k_tiles = tl.cdiv(K, BK)
    total = tl.cdiv(M, BM) * tiles_n * k_tiles
    it, end = pid * total // NUM_PROGS, (pid + 1) * total // NUM_PROGS
    while it < end:
        tile = it // k_tiles
        k0 = it % k_tiles
        k1 = tl.minimum(k_tiles, k0 + (end - it))
        off_m, off_n = (tile // tiles_n) * BM, (tile % tiles_n) * BN
        acc = tl.zeros((BM, BN), dtype=tl.float32)
        for kt in range(k0, k1):
            acc = tl.dot(a_desc.load([off_m, kt * BK]), b_desc.load([kt * BK, off_n]), acc)
        _add_tile(c_desc, c_ptr, acc, off_m, off_n, M, N, BM, BN, TMA_REDUCE)
        it += k1 - k0


def streamk(a, b, *, programs=None, BM=128, BN=64, BK=64, num_warps=4, num_stages=6, out=None):
    """C = A @ B by :func:`streamk_kernel` with ``programs`` programs (default: the SM count).
    ``out`` is reduced into: zeros, fp32 or A's dtype (see :func:`skinny`). Returns ``out``."""
    import torch
    M, K, N = _check_ab(a, b)
    if out is None:
        out = torch.zeros((M, N), dtype=torch.float32, device=a.device)
    _check_out(out, M, N, reduce=True)
    if programs is None:
        programs = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == "cuda" else 4
    if not (isinstance(programs, int) and programs >= 1):
        raise ValueError(f"programs must be a positive int, got {programs!r}")
    TD = tensor_descriptor_class()
    streamk_kernel[(programs,)](TD.from_tensor(a, [BM, BK]), TD.from_tensor(b, [BK, BN]), TD.from_tensor(out, [BM, BN]),
                                out, M, N, K, BM=BM, BN=BN, BK=BK, NUM_PROGS=programs,
                                TMA_REDUCE=not interpreting(), num_warps=num_warps, num_stages=num_stages)
    return out


@triton.jit
def grouped_kernel(a_ptr, b_ptr, c_ptr, offs_ptr, tile_start_ptr, G, N, K, NUM_PROGS: tl.constexpr,
                   BM: tl.constexpr, BN: tl.constexpr, BK: tl.constexpr, GROUP_M: tl.constexpr):
    """Persistent grouped GEMM: C[offs[g]:offs[g+1]] = A[offs[g]:offs[g+1]] @ B[g] for every group g.

    A (total_M, K) and C (total_M, N) hold the groups' rows one after another (tokens sorted by
    expert), B is (G, K, N). ``tile_start[g]`` is the first tile of group g (cumulative, G + 1
    entries). Program p takes tiles p, p + NUM_PROGS, ... of the whole list; it makes a group's
    three descriptors once, when it meets the group. They have the GROUP's row count, so a tile
    that runs past the group's last row loads zeros (TMA out-of-bounds fill) and its store is
    clipped at that row: no masks, no padding.

    Inside a group, tile number ``local`` is placed in columns of ``GROUP_M`` row blocks
    (:func:`tile_of`): ``GROUP_M = 1`` walks the group row by row (every row block streams all of
    B[g] again); ``GROUP_M = 8`` lets the programs running together share B[g]'s columns in L2.
    """
    pid = tl.program_id(0)
    tiles_n = tl.cdiv(N, BN)
    for g in range(G):
        t0 = tl.load(tile_start_ptr + g)
        t1 = tl.load(tile_start_ptr + g + 1)
        first = t0 + (pid + NUM_PROGS - t0 % NUM_PROGS) % NUM_PROGS     # this program's first tile >= t0
        if first < t1:
            row0 = tl.load(offs_ptr + g)
            rows = tl.load(offs_ptr + g + 1) - row0
            a_desc = tl.make_tensor_descriptor(a_ptr + row0 * K, shape=[rows, K], strides=[K, 1], block_shape=[BM, BK])
            b_desc = tl.make_tensor_descriptor(b_ptr + g * K * N, shape=[K, N], strides=[N, 1], block_shape=[BK, BN])
            c_desc = tl.make_tensor_descriptor(c_ptr + row0 * N, shape=[rows, N], strides=[N, 1], block_shape=[BM, BN])
            for t in range(first, t1, NUM_PROGS):
                bm, bn = tile_of(t - t0, tl.cdiv(rows, BM), tiles_n, GROUP_M)
                acc = tl.zeros((BM, BN), dtype=tl.float32)
                for kt in range(0, tl.cdiv(K, BK)):
                    acc = tl.dot(a_desc.load([bm * BM, kt * BK]), b_desc.load([kt * BK, bn * BN]), acc)
                c_desc.store([bm * BM, bn * BN], acc.to(c_desc.dtype))


@triton.jit
def tile_of(local, tiles_m, tiles_n, GROUP_M: tl.constexpr):
    """(row block, column block) of a group's tile number ``local``: tiles are numbered down
    columns ``GROUP_M`` row blocks tall (the last band may be shorter), bands one after another."""
    band = GROUP_M * tiles_n
    first_m = (local // band) * GROUP_M
    height = tl.minimum(tiles_m - first_m, GROUP_M)
    return first_m + (local % band) % height, (local % band) // height


def tile_order(tiles_m, tiles_n, group_m) -> list:
    """:func:`tile_of` in Python, for the notebook and the tests: ``[(row block, column block)]``
    in tile-number order."""
    out = []
    for local in range(tiles_m * tiles_n):
        band = group_m * tiles_n
        first_m = (local // band) * group_m
        height = min(tiles_m - first_m, group_m)
        out.append((first_m + (local % band) % height, (local % band) // height))
    return out


def group_tiles(sizes, N, BM, BN) -> list:
    """``tile_start``: the first tile of each group, cumulative (G + 1 entries; a group of 0 rows
    has none)."""
    tiles_n = -(-N // BN)
    out = [0]
    for m in sizes:
        if isinstance(m, bool) or not isinstance(m, int) or m < 0:
            raise ValueError(f"group sizes must be ints >= 0, got {m!r}")
        out.append(out[-1] + -(-m // BM) * tiles_n)
    return out


def grouped_plan(sizes, N, BM, BN, device) -> dict:
    """What :func:`grouped_kernel` reads besides the operands, as device tensors: ``offs`` (the
    first row of each group, G + 1 entries) and ``tile_start`` (:func:`group_tiles`). In a model
    the router produces these on the GPU; here they are made once, outside any timing."""
    import torch
    sizes = list(sizes)
    starts = group_tiles(sizes, N, BM, BN)
    offs = [0]
    for m in sizes:
        offs.append(offs[-1] + m)
    return {"sizes": sizes, "N": N, "BM": BM, "BN": BN,
            "offs": torch.tensor(offs, dtype=torch.int32, device=device),
            "tile_start": torch.tensor(starts, dtype=torch.int32, device=device)}


def grouped(a, b, sizes=None, *, plan=None, out=None, programs=None, BM=128, BN=128, BK=64, num_warps=4,
            num_stages=4, group_m=8):
    """Run :func:`grouped_kernel`: ``a`` (sum(sizes), K), ``b`` (G, K, N), ``sizes`` the rows of
    each group (ints >= 0), or a ``plan`` from :func:`grouped_plan` made for the same sizes, N
    and tile. ``programs``: persistent programs (default: the SM count). ``group_m``: the height
    of the tile order's columns in row blocks (1: row by row)."""
    import torch
    from ..triton_lang.compat import set_device_allocator
    if getattr(b, "ndim", None) != 3:
        raise ValueError(f"b must be (G, K, N), got shape {tuple(getattr(b, 'shape', ()))}")
    G, K, N = b.shape
    if plan is None:
        if sizes is None:
            raise ValueError("give the group sizes or a plan from grouped_plan")
        plan = grouped_plan(sizes, N, BM, BN, a.device)
    if (plan["N"], plan["BM"], plan["BN"]) != (N, BM, BN):
        raise ValueError(f"the plan was made for N={plan['N']}, BM={plan['BM']}, BN={plan['BN']}; "
                         f"this call has N={N}, BM={BM}, BN={BN}")
    sizes = plan["sizes"]
    if len(sizes) != G:
        raise ValueError(f"{len(sizes)} group sizes for {G} groups of B")
    _check_2d("a", a)
    if a.shape[0] != sum(sizes) or a.shape[1] != K:
        raise ValueError(f"a must be ({sum(sizes)}, {K}) (the groups' rows stacked), got {tuple(a.shape)}")
    if a.dtype != b.dtype or a.dtype not in (torch.float16, torch.bfloat16):
        raise ValueError(f"A and B must both be float16 or both bfloat16, got {a.dtype} and {b.dtype}")
    if (K * a.element_size()) % 16 or (N * a.element_size()) % 16:
        raise ValueError(f"row strides K*{a.element_size()} = {K * a.element_size()} B and N*{a.element_size()} = "
                         f"{N * a.element_size()} B must be multiples of 16 B (a TMA rule)")
    if not (a.is_contiguous() and b.is_contiguous()):
        raise ValueError("a and b must be contiguous")
    if isinstance(group_m, bool) or not isinstance(group_m, int) or group_m < 1:
        raise ValueError(f"group_m (row blocks per column of the tile order) must be an int >= 1, got {group_m!r}")
    out = torch.empty((a.shape[0], N), dtype=a.dtype, device=a.device) if out is None else out
    if tuple(out.shape) != (a.shape[0], N) or not out.is_contiguous():
        raise ValueError(f"out must be a contiguous ({a.shape[0]}, {N}) tensor")
    set_device_allocator(a.device.type)
    if programs is None:
        programs = torch.cuda.get_device_properties(a.device).multi_processor_count if a.device.type == "cuda" else 4
    grouped_kernel[(programs,)](a, b, out, plan["offs"], plan["tile_start"], G, N, K, NUM_PROGS=programs,
                                BM=BM, BN=BN, BK=BK, GROUP_M=group_m, num_warps=num_warps, num_stages=num_stages)
    return out
