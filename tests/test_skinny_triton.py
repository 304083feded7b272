"""The Triton kernels of notebook day05_tma/06 (utils.day05.skinny_triton) under the Triton
interpreter on a CPU: split-K (fp32 and fp16 reduce), stream-K and the persistent grouped GEMM,
every element checked against the float64 product with the bound of
utils.day05.skinny.splitk_bound; and the launchers' input checks. Small sizes: the interpreter
runs every program in Python."""

import numpy as np
import pytest

import utils

T = utils.setup(quiet=True)             # the tier (TRITON_INTERPRET=1 on a CPU) before Triton loads
if T.name != "cpu":
    pytest.skip(f"these tests run the kernels under the Triton interpreter on CPU tensors; tier {T.name} "
                "runs them on the GPU in notebook day05_tma/06 (COURSE_TIER=cpu runs them here)",
                allow_module_level=True)

torch = pytest.importorskip("torch")
st = pytest.importorskip("utils.day05.skinny_triton")
from utils.day05 import skinny  # noqa: E402

F16, DT = torch.float16, "float16"


def _ab(M, K, N, seed=0, dtype=F16):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype))


def _assert_within(c, a, b, n, adds, out_dtype, reduce_dtype="float32"):
    """Every element of c within splitk_bound of the float64 A @ B."""
    a64, b64 = a.double(), b.double()
    ref = a64 @ b64
    bound = skinny.splitk_bound(n, adds, a64.abs() @ b64.abs(), ref.abs(), out_dtype=out_dtype,
                                reduce_dtype=reduce_dtype)
    err = (c.double() - ref).abs()
    assert bool(torch.isfinite(c).all())
    assert bool((err <= bound).all()), f"max error/bound {float((err / bound).max()):.3g}"


def _streamk_pieces(M, N, K, BM, BN, BK, P):
    """The most reduce-adds a tile gets (utils.day05.skinny_measure.reduce_adds, itself checked
    against a walk of streamk_kernel in tests/test_skinny_measure.py)."""
    from utils.day05 import skinny_measure
    return skinny_measure.reduce_adds(skinny_measure.STREAMK, dict(BM=BM, BN=BN, BK=BK, programs=P), M, N, K)


# ---- skinny(): split-K ----

@pytest.mark.parametrize("M, K, N", [(32, 256, 64), (20, 80, 40)])     # whole tiles; partial M, N and K tiles
@pytest.mark.parametrize("splits", [1, 2, 3])
def test_skinny_split_k_fp32_reduce(M, K, N, splits):
    a, b = _ab(M, K, N, seed=splits)
    BK = 32
    c = st.skinny(a, b, splits=splits, BM=16, BN=32, BK=BK)
    assert tuple(c.shape) == (M, N) and c.dtype == (F16 if splits == 1 else torch.float32)
    n = max(k1 - k0 for k0, k1 in skinny.k_ranges(K, splits, BK))
    _assert_within(c, a, b, n, splits, DT if splits == 1 else "float32")


@pytest.mark.parametrize("splits", [2, 3])
def test_skinny_split_k_reduces_into_an_fp16_c(splits):
    M, K, N = 32, 256, 64
    a, b = _ab(M, K, N, seed=10 + splits)
    out = torch.zeros(M, N, dtype=F16)
    c = st.skinny(a, b, splits=splits, BM=16, BN=32, BK=32, out=out)
    assert c is out and c.dtype == F16
    n = max(k1 - k0 for k0, k1 in skinny.k_ranges(K, splits, 32))
    _assert_within(c, a, b, n, splits, DT, reduce_dtype=DT)


@pytest.mark.xfail(reason="Triton 3.9's interpreter multiplies bf16 as its raw uint16 bits in tl.dot "
                   "(create_dot: np.matmul on the storage); bf16 is checked on the GPU", strict=False)
def test_skinny_bfloat16():
    a, b = _ab(16, 128, 32, seed=3, dtype=torch.bfloat16)
    c = st.skinny(a, b, splits=2, BM=16, BN=32, BK=32)
    _assert_within(c, a, b, 64, 2, "float32")


# ---- streamk() ----

@pytest.mark.parametrize("programs", [1, 3, 4, 7, 40])      # 40 > the 32 K-iterations: some programs idle
def test_streamk(programs):
    M, K, N, BM, BN, BK = 32, 256, 64, 16, 32, 32
    a, b = _ab(M, K, N, seed=programs)
    c = st.streamk(a, b, programs=programs, BM=BM, BN=BN, BK=BK)
    assert c.dtype == torch.float32 and tuple(c.shape) == (M, N)
    _assert_within(c, a, b, K, _streamk_pieces(M, N, K, BM, BN, BK, programs), "float32")


def test_streamk_partial_tiles_and_fp16_out():
    M, K, N, BM, BN, BK, P = 20, 80, 40, 16, 32, 32, 5
    a, b = _ab(M, K, N, seed=7)
    out = torch.zeros(M, N, dtype=F16)
    c = st.streamk(a, b, programs=P, BM=BM, BN=BN, BK=BK, out=out)
    assert c is out
    _assert_within(c, a, b, K, _streamk_pieces(M, N, K, BM, BN, BK, P), DT, reduce_dtype=DT)


def test_streamk_default_programs_on_the_cpu():
    a, b = _ab(16, 64, 32, seed=8)
    _assert_within(st.streamk(a, b, BM=16, BN=32, BK=32), a, b, 64, 2, "float32")


# ---- grouped() ----

def _assert_grouped(c, a, b, sizes):
    offs = np.cumsum([0] + list(sizes))
    assert tuple(c.shape) == (sum(sizes), b.shape[2]) and c.dtype == a.dtype
    for g, m in enumerate(sizes):
        if m:
            sl = slice(offs[g], offs[g + 1])
            _assert_within(c[sl], a[sl], b[g], b.shape[1], 1, str(a.dtype).replace("torch.", ""))


def _grouped_inputs(sizes, K, N, seed=0, dtype=F16):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(sum(sizes), K, generator=g).to(dtype), torch.randn(len(sizes), K, N, generator=g).to(dtype))


@pytest.mark.parametrize("sizes, programs", [([5, 0, 40, 17], 4), ([0, 16, 3, 0], 3), ([33], 1), ([1, 2, 0, 31, 0], 7)])
def test_grouped(sizes, programs):
    K, N = 64, 48                      # N = 48: a partial N tile of BN = 32
    a, b = _grouped_inputs(sizes, K, N, seed=len(sizes) + programs)
    c = st.grouped(a, b, sizes, programs=programs, BM=16, BN=32, BK=32)
    _assert_grouped(c, a, b, sizes)


@pytest.mark.parametrize("group_m", [1, 2, 3, 8])
def test_grouped_tile_order_leaves_the_product_unchanged(group_m):
    sizes, K, N = [50, 0, 7, 33], 64, 80   # 4, 0, 1, 3 row blocks of 16; 3 column blocks of 32 (the last partial)
    a, b = _grouped_inputs(sizes, K, N, seed=group_m)
    out = torch.full((sum(sizes), N), float("nan"), dtype=F16)
    c = st.grouped(a, b, sizes, out=out, programs=5, BM=16, BN=32, BK=32, group_m=group_m)
    _assert_grouped(c, a, b, sizes)


@pytest.mark.parametrize("tiles_m, tiles_n, group_m", [(1, 1, 8), (4, 3, 1), (4, 3, 2), (5, 3, 2), (11, 56, 8), (3, 4, 8)])
def test_tile_order_visits_every_tile_once_in_bands(tiles_m, tiles_n, group_m):
    order = st.tile_order(tiles_m, tiles_n, group_m)
    assert sorted(order) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]
    if group_m == 1:
        assert order == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]      # row by row
    band = group_m * tiles_n
    for i, (m, n) in enumerate(order):     # tile i lies in band i // band, and walks down a column first
        assert m // group_m == i // band
    assert order[:min(group_m, tiles_m)] == [(m, 0) for m in range(min(group_m, tiles_m))]


def test_grouped_with_only_empty_groups():
    a, b = _grouped_inputs([0, 0], 32, 16)
    c = st.grouped(a, b, [0, 0], programs=2, BM=16, BN=16, BK=32)
    assert tuple(c.shape) == (0, 16)


def test_grouped_with_a_plan_and_out():
    sizes, K, N = [7, 0, 20], 96, 32    # K = 96: three K tiles of 32
    a, b = _grouped_inputs(sizes, K, N, seed=5)
    plan = st.grouped_plan(sizes, N, 16, 16, "cpu")
    out = torch.full((sum(sizes), N), float("nan"), dtype=F16)
    c = st.grouped(a, b, plan=plan, out=out, programs=2, BM=16, BN=16, BK=32)
    assert c is out
    _assert_grouped(c, a, b, sizes)


def test_group_tiles_and_plan():
    assert st.group_tiles([5, 0, 40, 17], 48, 16, 32) == [0, 2, 2, 8, 12]
    assert st.group_tiles([], 64, 16, 16) == [0]
    assert st.group_tiles([16, 17], 64, 16, 64) == [0, 1, 3]
    plan = st.grouped_plan([5, 0, 40, 17], 48, 16, 32, "cpu")
    assert plan["offs"].tolist() == [0, 5, 5, 45, 62] and plan["tile_start"].tolist() == [0, 2, 2, 8, 12]
    assert plan["offs"].dtype == plan["tile_start"].dtype == torch.int32
    assert (plan["sizes"], plan["N"], plan["BM"], plan["BN"]) == ([5, 0, 40, 17], 48, 16, 32)
    for bad in ([3, -1], [2.0], [True]):
        with pytest.raises(ValueError, match="group sizes must be ints >= 0"):
            st.group_tiles(bad, 64, 16, 16)


# ---- what the launchers refuse ----

def test_skinny_and_streamk_refuse_bad_operands():
    a, b = _ab(16, 64, 32)
    for fn in (st.skinny, st.streamk):
        with pytest.raises(ValueError, match="16x64 but B is 48x32: inner dimensions differ"):
            fn(a, torch.zeros(48, 32, dtype=F16))
        with pytest.raises(ValueError, match="must both be float16 or both bfloat16.*float32"):
            fn(a.float(), b.float())
        with pytest.raises(ValueError, match="must both be float16 or both bfloat16"):
            fn(a, b.to(torch.bfloat16))
        with pytest.raises(ValueError, match="a must be a 2-D tensor"):
            fn(a[None], b)
        with pytest.raises(ValueError, match="A's rows must be contiguous"):
            fn(torch.zeros(64, 16, dtype=F16).t(), b)                # column-major A
        with pytest.raises(ValueError, match="B's rows must be contiguous.*16 B"):
            fn(torch.zeros(16, 8, dtype=F16), torch.zeros(8, 12, dtype=F16))   # 24-B rows
        with pytest.raises(ValueError, match="out must be a contiguous 16x32 tensor, got \\(32, 16\\)"):
            fn(a, b, out=torch.zeros(32, 16), BM=16, BN=32, BK=32)
        with pytest.raises(ValueError, match="out must be a contiguous 16x32"):
            fn(a, b, out=torch.zeros(32, 16).t(), BM=16, BN=32, BK=32)
        with pytest.raises(ValueError, match=r"float64 cannot be reduce-added by TMA: .*\.add takes"):
            fn(a, b, out=torch.zeros(16, 32, dtype=torch.float64), BM=16, BN=32, BK=32,
               **({"splits": 2} if fn is st.skinny else {}))


@pytest.mark.parametrize("splits", [0, 3, -1, 1.0, None])
def test_skinny_refuses_splits_out_of_range(splits):
    a, b = _ab(16, 64, 32)                        # 2 K tiles of 32
    with pytest.raises(ValueError, match=r"splits must be an int in 1\.\.2"):
        st.skinny(a, b, splits=splits, BM=16, BN=32, BK=32)


@pytest.mark.parametrize("programs", [0, -2, 1.5])
def test_streamk_refuses_bad_program_counts(programs):
    a, b = _ab(16, 64, 32)
    with pytest.raises(ValueError, match="programs must be a positive int"):
        st.streamk(a, b, programs=programs, BM=16, BN=32, BK=32)


def test_grouped_refuses_bad_inputs():
    sizes, K, N = [5, 0, 11], 64, 32
    a, b = _grouped_inputs(sizes, K, N)
    kw = dict(BM=16, BN=16, BK=32, programs=2)
    with pytest.raises(ValueError, match=r"b must be \(G, K, N\)"):
        st.grouped(a, b[0], sizes, **kw)
    with pytest.raises(ValueError, match="give the group sizes or a plan"):
        st.grouped(a, b, **kw)
    with pytest.raises(ValueError, match="2 group sizes for 3 groups"):
        st.grouped(a[:16], b, [5, 11], **kw)
    plan = st.grouped_plan(sizes, N, 16, 16, "cpu")
    with pytest.raises(ValueError, match="plan was made for N=32, BM=16, BN=16; this call has N=32, BM=32, BN=16"):
        st.grouped(a, b, plan=plan, **dict(kw, BM=32))
    with pytest.raises(ValueError, match="this call has N=32, BM=16, BN=32"):
        st.grouped(a, b, plan=plan, **dict(kw, BN=32))
    with pytest.raises(ValueError, match="plan was made for N=32"):
        st.grouped(a, torch.zeros(3, K, 64, dtype=F16), plan=plan, **kw)
    with pytest.raises(ValueError, match=r"a must be \(16, 64\)"):
        st.grouped(a[:15], b, sizes, **kw)
    with pytest.raises(ValueError, match=r"a must be \(16, 64\)"):
        st.grouped(torch.zeros(16, 32, dtype=F16), b, sizes, **kw)
    with pytest.raises(ValueError, match="must both be float16 or both bfloat16"):
        st.grouped(a.float(), b.float(), sizes, **kw)
    with pytest.raises(ValueError, match="must both be float16 or both bfloat16"):
        st.grouped(a, b.to(torch.bfloat16), sizes, **kw)
    with pytest.raises(ValueError, match="must be multiples of 16 B"):
        st.grouped(torch.zeros(16, 12, dtype=F16), torch.zeros(3, 12, N, dtype=F16), sizes, **kw)
    with pytest.raises(ValueError, match="a and b must be contiguous"):
        st.grouped(torch.zeros(K, 16, dtype=F16).t(), b, sizes, **kw)
    with pytest.raises(ValueError, match="a and b must be contiguous"):
        st.grouped(a, torch.zeros(3, N, K, dtype=F16).transpose(1, 2), sizes, **kw)
    with pytest.raises(ValueError, match=r"out must be a contiguous \(16, 32\)"):
        st.grouped(a, b, sizes, out=torch.empty(16, 16, dtype=F16), **kw)
    with pytest.raises(ValueError, match="group sizes must be ints >= 0"):
        st.grouped(a, b, [6, -1, 11], **kw)
    for bad in (0, -2, 1.5, True, "8"):
        with pytest.raises(ValueError, match="group_m .*must be an int >= 1"):
            st.grouped(a, b, sizes, group_m=bad, **kw)
