"""The pure parts of utils.day05.skinny_measure (notebook day05_tma/06), on a CPU: the tile table,
the contenders' configs, the reduce-add count of stream-K (against a brute-force walk of
streamk_kernel), the MoE routing sizes, and the element-by-element checks the GPU measurements
apply (a correct result passes, a planted wrong element does not). Plus the bound they use,
utils.day05.skinny.splitk_bound."""
import math
import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")
from utils.day05 import skinny, skinny_measure as sm  # noqa: E402

U32, U16, UB16 = 2.0 ** -24, 2.0 ** -11, 2.0 ** -8


# ---- tiles and configs ----

@pytest.mark.parametrize("M, BM", [(1, 16), (8, 16), (16, 16), (17, 32), (32, 32), (33, 64), (64, 64),
                                   (65, 128), (128, 128), (129, 256), (256, 256), (257, 256), (4096, 256)])
def test_tile_m(M, BM):
    assert sm.tile_m(M) == BM
    assert sm.tile_m(M, 128) == min(BM, 128)


SHAPES = [(16, 8192, 8192, 132), (128, 8192, 8192, 132), (256, 8192, 8192, 132), (128, 4096, 4096, 132),
          (32, 1024, 4096, 8), (64, 256, 256, 4)]


@pytest.mark.parametrize("M, N, K, sms", SHAPES)
def test_tile_configs(M, N, K, sms):
    cfg = sm.tile_configs(M, N, K, sms)
    assert tuple(cfg) == sm.STEPS
    BM = sm.tile_m(M)
    s = skinny.split_k(M, N, K, min(BM, 128), 128, 64, sms)
    assert cfg[sm.SPLIT32]["splits"] == cfg[sm.SPLIT16]["splits"] == s
    assert cfg[sm.WIDE]["splits"] == cfg[sm.NARROW]["splits"] == 1
    assert cfg[sm.STREAMK]["programs"] == sms and "splits" not in cfg[sm.STREAMK]
    assert (cfg[sm.SPLIT32]["reduce"], cfg[sm.SPLIT16]["reduce"], cfg[sm.STREAMK]["reduce"]) == ("float32", "out", "out")
    assert "reduce" not in cfg[sm.WIDE] and "reduce" not in cfg[sm.NARROW]
    for name in (sm.WIDE, sm.SPLIT32, sm.SPLIT16):
        assert (cfg[name]["BM"], cfg[name]["BN"], cfg[name]["BK"]) == (min(BM, 128), 128, 64)
        assert cfg[name]["num_warps"] == (8 if BM >= 128 else 4)
    for name in (sm.NARROW, sm.STREAMK):
        assert (cfg[name]["BM"], cfg[name]["BN"], cfg[name]["BK"]) == (BM, 64, 64)
        assert cfg[name]["num_stages"] == (5 if BM == 256 else 6)       # 6 stages of 256 x 64 would need 240 KiB


def test_tile_configs_at_m_256_cover_m_with_one_row_of_narrow_tiles():
    """M = 256: the narrow tiles are 256 rows tall, 128 tiles in one row (one wave on 132 SMs); the wide
    ones stay 128 rows tall (128 tiles, one split). With 99 KB of shared memory all stay 128 rows tall."""
    cfg = sm.tile_configs(256, 8192, 8192, 132)
    assert (cfg[sm.WIDE]["BM"], cfg[sm.NARROW]["BM"], cfg[sm.STREAMK]["BM"]) == (128, 256, 256)
    assert cfg[sm.SPLIT16]["splits"] == 1 and skinny.tiles(256, 8192, 256, 64) == 128

    class Small:
        def has(self, f):
            return f == "tma"
    small = sm.tile_configs(256, 8192, 8192, 132, tier=Small())
    assert small[sm.WIDE]["BM"] == small[sm.NARROW]["BM"] == 128 and small[sm.NARROW]["num_stages"] == 4


def test_tile_configs_at_the_ladder_shape():
    # 64 wide tiles, 128 K tiles of 64 on 132 SMs: two splits fill one wave (skinny.split_k's docstring)
    assert sm.tile_configs(*sm.LADDER_SHAPE, 132)[sm.SPLIT32]["splits"] == 2


def test_step_changes_name_the_steps():
    assert set(sm.STEP_CHANGES) == set(sm.STEPS) - {sm.WIDE}          # every step but the first says what changed
    for name, (prev, what) in sm.STEP_CHANGES.items():
        assert prev in sm.STEPS and prev != name
        assert sm.STEPS.index(prev) < sm.STEPS.index(name)
        assert isinstance(what, str) and what
    assert len(set(sm.STEPS)) == len(sm.STEPS) and sm.CUBLAS not in sm.STEPS


# ---- reduce-adds: stream-K against a walk of streamk_kernel ----

def _walk_streamk(M, N, K, BM, BN, BK, P):
    """streamk_kernel's loop, in Python: the pieces (reduce-adds) each tile receives."""
    tiles_n, k_tiles = math.ceil(N / BN), math.ceil(K / BK)
    total = math.ceil(M / BM) * tiles_n * k_tiles
    adds = [0] * (total // k_tiles)
    for pid in range(P):
        it, end = pid * total // P, (pid + 1) * total // P
        while it < end:
            k0 = it % k_tiles
            k1 = min(k_tiles, k0 + (end - it))
            adds[it // k_tiles] += 1
            it += k1 - k0
    return adds


@pytest.mark.parametrize("M, N, K, sms", SHAPES + [(16, 64, 256, 3), (16, 64, 256, 7), (20, 100, 300, 5),
                                                   (16, 64, 64, 9), (128, 512, 640, 1)])
def test_reduce_adds_of_streamk_is_the_walks_maximum(M, N, K, sms):
    cfg = sm.tile_configs(M, N, K, sms)[sm.STREAMK]
    adds = _walk_streamk(M, N, K, cfg["BM"], cfg["BN"], cfg["BK"], cfg["programs"])
    assert sm.reduce_adds(sm.STREAMK, cfg, M, N, K) == max(adds)
    assert sum(adds) >= len(adds)                                       # every tile gets at least one add


def test_reduce_adds_of_the_split_contenders():
    cfg = sm.tile_configs(128, 8192, 8192, 132)
    assert [sm.reduce_adds(n, cfg[n], 128, 8192, 8192) for n in sm.STEPS[:4]] == [1, 2, 2, 1]
    assert sm.reduce_adds(sm.CUBLAS, {}, 128, 8192, 8192) == 1
    # a hand-checked case: 4 tiles x 3 K tiles = 12 iterations over 5 programs (cuts 0 2 4 7 9 12)
    cfg = dict(BM=16, BN=16, BK=16, programs=5)
    assert _walk_streamk(32, 32, 48, 16, 16, 16, 5) == [2, 2, 2, 1]
    assert sm.reduce_adds(sm.STREAMK, cfg, 32, 32, 48) == 2


# ---- MoE routing sizes ----

def test_mix_sizes():
    sizes = sm.mix_sizes(8, 100, 2, seed=3)
    assert len(sizes) == 8 and sum(sizes) == 200 and all(isinstance(m, int) and 0 <= m <= 100 for m in sizes)
    assert sm.mix_sizes(8, 100, 2, seed=3) == sizes                     # deterministic per seed
    assert any(sm.mix_sizes(8, 100, 2, seed=s) != sizes for s in range(4, 8))
    assert sm.mix_sizes(4, 10, 4) == [10, 10, 10, 10]                   # every token picks every expert
    for G, tokens, top_k, _, _ in sm.MIXES.values():
        got = sm.mix_sizes(G, tokens, top_k)
        assert len(got) == G and sum(got) == tokens * top_k and max(got) <= tokens


@pytest.mark.parametrize("args, match", [((0, 10, 1), "groups must be a positive int"),
                                         ((4, -1, 1), "tokens must be a positive int"),
                                         ((4, 10, True), "top_k must be a positive int"),
                                         ((4, 10, 2.0), "top_k must be a positive int"),
                                         ((4.0, 10, 2), "groups must be a positive int"),
                                         ((4, 10, 5), "top_k 5 > groups 4")])
def test_mix_sizes_refuses_bad_arguments(args, match):
    with pytest.raises(ValueError, match=match):
        sm.mix_sizes(*args)


# ---- the element-by-element checks ----

def _ab(M, K, N, seed=0, dtype=torch.float16):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(M, K, generator=g).to(dtype), torch.randn(K, N, generator=g).to(dtype)


def _fp32_product(a, b):
    return (a.float() @ b.float()).to(a.dtype)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_check_skinny_accepts_a_correct_result_and_rejects_a_planted_element(dtype):
    M, K, N, sms = 16, 1024, 64, 8
    a, b = _ab(M, K, N, dtype=dtype)
    cfgs = sm.tile_configs(M, N, K, sms)
    assert cfgs[sm.SPLIT32]["splits"] == 4
    c = _fp32_product(a, b)
    for name, cfg in cfgs.items():
        worst = sm.check_skinny(name, cfg, c, a, b)
        assert 0 <= worst <= 1
    # split-K reduced in C's dtype: round at every add, as SPLIT16 does; its own bound holds
    c16 = torch.zeros(M, N, dtype=dtype)
    for k0, k1 in skinny.k_ranges(K, 4, 64):
        c16 = (c16.float() + a[:, k0:k1].float() @ b[k0:k1].float()).to(dtype)
    assert sm.check_skinny(sm.SPLIT16, cfgs[sm.SPLIT16], c16, a, b) <= 1
    bad = c.clone()
    bad[5, 17] += 64.0                             # beyond even the bf16 reduce bound (8 adds x 2^-8 x |A| @ |B|)
    for name, cfg in cfgs.items():
        with pytest.raises(AssertionError, match=re.escape(name) + ": error .* exceeds the bound"):
            sm.check_skinny(name, cfg, bad, a, b)
    nan = c.clone()
    nan[0, 0] = float("nan")
    with pytest.raises(AssertionError, match="exceeds the bound"):
        sm.check_skinny(sm.WIDE, cfgs[sm.WIDE], nan, a, b)


def test_check_skinny_with_a_zero_row_still_sees_a_planted_element():
    M, K, N = 16, 256, 32
    a, b = _ab(M, K, N, seed=1)
    a[3] = 0                                       # a zero row: bound 0 on row 3, 0/0 there
    c = _fp32_product(a, b)
    cfg = sm.tile_configs(M, N, K, 4)[sm.WIDE]
    assert sm.check_skinny(sm.WIDE, cfg, c, a, b) <= 1
    bad = c.clone()
    bad[7, 2] += 1.0
    with pytest.raises(AssertionError, match="exceeds the bound"):
        sm.check_skinny(sm.WIDE, cfg, bad, a, b)
    bad = c.clone()
    bad[3, 2] = 1e-3                               # not zero where the product is exactly zero
    with pytest.raises(AssertionError, match="exceeds the bound"):
        sm.check_skinny(sm.WIDE, cfg, bad, a, b)


def test_check_skinny_refuses_a_wrong_dtype_or_shape():
    a, b = _ab(16, 128, 32)
    cfg = sm.tile_configs(16, 32, 128, 4)[sm.WIDE]
    c = _fp32_product(a, b)
    with pytest.raises(AssertionError, match="C is torch.float32 .* expected torch.float16"):
        sm.check_skinny(sm.WIDE, cfg, c.float(), a, b)
    with pytest.raises(AssertionError, match=r"\(16, 31\), expected"):
        sm.check_skinny(sm.WIDE, cfg, c[:, :31], a, b)


def _grouped(sizes, K, N, seed=0):
    g = torch.Generator().manual_seed(seed)
    a = torch.randn(sum(sizes), K, generator=g).to(torch.bfloat16)
    b = torch.randn(len(sizes), K, N, generator=g).to(torch.bfloat16)
    offs = np.cumsum([0] + sizes)
    c = torch.empty(sum(sizes), N, dtype=torch.bfloat16)
    for i, m in enumerate(sizes):
        c[offs[i]:offs[i + 1]] = _fp32_product(a[offs[i]:offs[i + 1]], b[i])
    return a, b, c


def test_check_grouped_accepts_a_correct_result_and_rejects_a_planted_element():
    sizes = [5, 0, 12, 3]
    a, b, c = _grouped(sizes, 128, 32)
    assert sm.check_grouped("g", c, a, b, sizes) is None
    bad = c.clone()
    bad[5 + 4, 7] += 1.0                           # group 2's fifth row
    with pytest.raises(AssertionError, match=r"g: group 2 \(12 rows\) has 1 elements beyond the bound"):
        sm.check_grouped("g", bad, a, b, sizes)
    nan = c.clone()
    nan[-1, -1] = float("nan")                     # what a poisoned output left unwritten holds
    with pytest.raises(AssertionError, match=r"group 3 \(3 rows\) has 1 elements"):
        sm.check_grouped("g", nan, a, b, sizes)


# ---- the bound ----

def test_splitk_bound_numpy_and_torch():
    mag, ref = np.array([1.0, 2.0, 8.0]), np.array([0.5, 1.0, 0.0])
    got = skinny.splitk_bound(10, 2, mag, ref, out_dtype="float16")
    np.testing.assert_array_equal(got, 12 * U32 * mag + U16 * ref)
    assert isinstance(got, np.ndarray)
    np.testing.assert_array_equal(skinny.splitk_bound(10, 2, mag, ref), 12 * U32 * mag)     # fp32 out: no rounding
    t = skinny.splitk_bound(10, 2, torch.tensor(mag), torch.tensor(ref), out_dtype="bfloat16")
    assert isinstance(t, torch.Tensor)
    np.testing.assert_array_equal(t.numpy(), 12 * U32 * mag + UB16 * ref)


@pytest.mark.parametrize("reduce_dtype, u", [("float32", 0.0), ("float16", U16), ("bfloat16", UB16)])
@pytest.mark.parametrize("splits", [1, 3])
def test_splitk_bound_reduce_dtype_adds_splits_u_mag(reduce_dtype, u, splits):
    mag, ref = np.array([1.0, 3.0]), np.array([0.25, 2.0])
    base = skinny.splitk_bound(64, splits, mag, ref, out_dtype="float16")
    got = skinny.splitk_bound(64, splits, mag, ref, out_dtype="float16", reduce_dtype=reduce_dtype)
    np.testing.assert_allclose(got - base, splits * u * mag, rtol=1e-12, atol=0)


@pytest.mark.parametrize("kw, err, match", [
    (dict(out_dtype="float64"), ValueError, "out_dtype must be one of"),
    (dict(reduce_dtype="int8"), ValueError, "reduce_dtype must be one of"),
    (dict(out_dtype=None), ValueError, "out_dtype must be one of"),
    (dict(n=0), ValueError, "n must be a positive int"),
    (dict(splits=True), TypeError, r"splits must be a positive int, got True \(bool, not an int\)"),
    (dict(splits=1.5), TypeError, r"splits must be a positive int, got 1\.5 \(float, not an int\)"),
])
def test_splitk_bound_refuses_bad_arguments(kw, err, match):
    args = dict(n=8, splits=1, mag=np.ones(2), abs_ref=np.ones(2))
    args.update(kw)
    with pytest.raises(err, match=match):
        skinny.splitk_bound(**args)


# ---- the ceiling of recorded rows, and the flush re-time's names ----

def test_peak_tflops_is_the_datasheets():
    assert sm.peak_tflops("NVIDIA H100 80GB HBM3") == sm.peak_tflops("NVIDIA H200") == 989
    assert sm.peak_tflops("NVIDIA A100-SXM4-80GB") is None


def test_roofline_recomputes_the_ceiling_and_names_the_bound():
    row = {"name": sm.CUBLAS, "shape": [256, 8192, 8192], "ms": 0.054, "hbm_gbps": 4157.0,
           "ceiling_ms": 0.0343, "of_ceiling": 0.64}                 # an old row: memory time alone
    got, = sm.roofline([row], "NVIDIA H200")
    comp = 2 * 256 * 8192 * 8192 / 989e12 * 1e3
    assert got["bound"] == "compute" and got["ceiling_ms"] == pytest.approx(comp)
    assert got["of_ceiling"] == pytest.approx(comp / 0.054)
    assert "bound" not in row                                       # a copy: the recording is not changed
    h100, = sm.roofline([dict(row, hbm_gbps=2962.0)], "NVIDIA H100 80GB HBM3")
    assert h100["bound"] == "memory" and h100["ceiling_ms"] == pytest.approx(skinny.memory_bound_ms(256, 8192, 8192, 2, 2962.0))
    unknown, = sm.roofline([row], "NVIDIA A100-SXM4-80GB")          # no datasheet peak: memory alone
    assert unknown["bound"] == "memory" and unknown["peak_tflops"] is None


def test_gap_names():
    assert sm.gap_name(sm.CUBLAS, "read") == "cuBLAS (torch.matmul), L2 flushed by a read"
    assert len(set(sm.GAP_NAMES)) == 4 and all(sm.gap_name(n, f) in sm.GAP_NAMES
                                                for n in (sm.CUBLAS, sm.NARROW) for f in sm.FLUSHES)
    with pytest.raises(ValueError, match="flush must be one of"):
        sm.gap_name(sm.CUBLAS, "none")


# ---- the sweep a live default run shows beside its M = 128 rows ----

class _Tier:
    def __init__(self, name, tma=True):
        self.device_name, self._tma = name, tma

    def has(self, feature):
        return self._tma and feature == "tma"


STEM = "06_skinny_grouped"


@pytest.mark.parametrize("gpu", ["NVIDIA H100 80GB HBM3", "NVIDIA H200"])
def test_a_short_live_run_shows_its_gpus_recorded_sweep(gpu):
    live = [{"name": sm.CUBLAS, "shape": list(sm.LADDER_SHAPE), "dtype": "float16"}]
    rows, label = sm.sweep(live, "measured now on x", STEM, _Tier(gpu), full=False)
    assert gpu in label and "COURSE_FULL=1" in label and rows is not live
    assert {tuple(r["shape"]) for r in rows} == set(sm.SKINNY_SHAPES)
    assert {r["name"] for r in rows} == {sm.CUBLAS, *sm.STEPS}
    assert all(r["ceiling_ms"] > 0 and r["bound"] in ("memory", "compute") for r in rows)


@pytest.mark.parametrize("full, tma", [(True, True), (False, False), (True, False)])
def test_the_full_run_and_a_recording_are_their_own_sweep(full, tma):
    rows = [{"name": sm.CUBLAS}]
    assert sm.sweep(rows, "lab", STEM, _Tier("NVIDIA H100 80GB HBM3", tma), full) == (rows, "lab")


def test_padded_sizes_round_each_group_up_to_whole_tiles():
    assert sm.padded_sizes([0, 1, 128, 129, 216]) == [0, 128, 128, 256, 256]
    assert sm.padded_sizes([5, 17], BM=16) == [16, 32]
    real = sm.grouped_sizes(sm.LARGE_MIX)
    assert sum(sm.padded_sizes(real)) > sum(real)        # the large mix has partial tiles to pad


def test_grouped_targets_and_names():
    assert sm.GROUPED_TARGETS[sm.LARGE_MIX] == 1.0 and all(v == 1.2 for m, v in sm.GROUPED_TARGETS.items() if m != sm.LARGE_MIX)
    assert set(sm.DRAM_ROWS) == {sm.ROW_BY_ROW, sm.TRITON_GROUPED}
    assert sm.GROUPED_CFG["group_m"] == 8 and sm.grouped_config()["group_m"] == 8
    with pytest.raises(ValueError, match="measured in bfloat16"):
        sm.measure_grouped(dtype="float16")


def test_measure_grouped_dram_rows_from_ncu(monkeypatch):
    """The rows from two profiled launches (ncu faked): valid result rows, in launch order."""
    from utils.core import ncu, results
    got = {}

    def fake_profile(argv, kernel_regex, metrics, cwd=None, **kw):
        got.update(argv=argv, regex=kernel_regex)
        return [{"kernel": "grouped_kernel", "dram__bytes_read.sum": gb * 1e9, "dram__bytes_write.sum": 0.2e9,
                 "lts__t_sectors_op_read.sum": 1e9, "lts__t_sectors_srcunit_tex_op_read.sum": 1e9} for gb in (3.0, 1.1)]
    monkeypatch.setattr(ncu, "profile", fake_profile)
    rows = sm.measure_grouped_dram()
    results.validate_rows(rows)
    assert [r["contender"] for r in rows] == [sm.ROW_BY_ROW, sm.TRITON_GROUPED]
    assert [r["name"] for r in rows] == [sm.DRAM_ROWS[sm.ROW_BY_ROW], sm.DRAM_ROWS[sm.TRITON_GROUPED]]
    b_bytes = 2 * 8 * 4096 * 14336
    assert rows[0]["value"] == 3.0e9 and rows[0]["ratio"] == rows[0]["times_b"] == 3.0e9 / b_bytes
    assert rows[1]["l2_read_gb"] == 32.0 and got["regex"] == "grouped_kernel" and "run_grouped_orders" in got["argv"][-1]
    monkeypatch.setattr(ncu, "profile", lambda *a, **k: fake_profile(*a, **k)[:1])
    with pytest.raises(RuntimeError, match="expected 2 profiled launches"):
        sm.measure_grouped_dram()


# ---- what the cuBLAS loop runs (06 §12) ----

@pytest.mark.parametrize("name, tile", [
    ("nvjet_sm90_tst_192x208_64x4_1x1_h_bz_coopB_NNN", (208, 192, 64, 4, "1x1")),     # rows are the second number
    ("nvjet_sm90_tst_128x216_64x4_4x1_v_bz_coopA_NNT", (216, 128, 64, 4, "4x1")),
    ("nvjet_sm90_tst_64x16_64x16_4x1_v_bz_splitK_NNT", (16, 64, 64, 16, "4x1")),
    ("nvjet_sm100a_tss_256x128_64x4_2x1_v_bz_NNT", (128, 256, 64, 4, "2x1")),
    ("void cublasLt::splitKreduce_kernel<32, 16, int, float>(cublasLt::cublasSplitKParams<float>)", None),
    ("ampere_bf16_s16816gemm_bf16_128x128_ldg8_f2f_stages_64x3_tn", None),            # other families: no reading
    ("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64_warpgroupsize2x1x1", None),
    ("Memset (Device)", None)])
def test_cublas_tile_reads_nvjet_names_only(name, tile):
    got = sm.cublas_tile(name)
    assert (got if got is None else (got["height"], got["width"], got["bk"], got["stages"], got["cluster"])) == tile


def test_measure_loop_kernels_pairs_each_expert_with_its_own_kernels(monkeypatch):
    """A fake profiler: each torch.mm 'launches' a memset, a split-K GEMM and its reduce for the
    small experts, one plain GEMM for the others; rows keep every kernel but the memset, read the
    tile from the GEMM (not the reduce), and round each expert up to that tile."""
    import torch.profiler as tp
    sizes = [5, 0, 130, 40]
    monkeypatch.setitem(sm.MIXES, "tiny", (4, 50, 4, 16, 24))
    monkeypatch.setattr(sm, "grouped_inputs", lambda mix, seed=0: (sizes, torch.ones(sum(sizes), 16), torch.ones(4, 16, 24)))
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *a: None)
    calls = []
    real_mm = torch.mm
    monkeypatch.setattr(torch, "mm", lambda x, y, out: calls.append(x.shape[0]) or real_mm(x, y, out=out))

    class Event:
        def __init__(self, name):
            self.name, self.device_type = name, torch.autograd.DeviceType.CUDA

    class Profile:
        def __init__(self, activities):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            m = calls[-1]
            gemm = f"nvjet_sm90_tst_64x{16 if m < 64 else 72}_64x8_1x1_v_bz_{'splitK_' if m < 64 else ''}NNT"
            self._events = [Event("Memset (Device)"), Event(gemm)] + ([Event("splitKreduce_kernel<...>")] if m < 64 else [])

        def events(self):
            return self._events
    monkeypatch.setattr(tp, "profile", Profile)
    rows = sm.measure_loop_kernels(["tiny"])
    assert [r["value"] for r in rows] == [5, 130, 40] and [r["group"] for r in rows] == [0, 2, 3]   # empty group skipped
    assert calls == [5, 5, 130, 130, 40, 40]                 # each expert: once to warm up, once profiled
    assert [len(r["kernels"]) for r in rows] == [2, 1, 2] and all("Memset" not in k for r in rows for k in r["kernels"])
    assert [r["tile"]["height"] for r in rows] == [16, 72, 16] and [r["padded_rows"] for r in rows] == [16, 144, 48]
    assert all(r["metric"] == "count" and r["mix"] == "tiny" and not r["padded"] for r in rows)
    calls.clear()
    monkeypatch.setattr(sm.bench, "randn", lambda shape, dtype, device, seed=0: torch.ones(shape))
    both = sm.measure_loop_kernels(["tiny"], padded=["tiny"])          # then every group padded to whole tiles
    pad = [r for r in both if r["padded"]]
    assert [r["value"] for r in pad] == [128, 256, 128] and calls[6:] == [128, 128, 256, 256, 128, 128]
    assert all(r["name"].endswith(sm.PADDED) for r in pad) and len({r["name"] for r in both}) == 6
    with pytest.raises(ValueError, match="unknown mixes to pad"):
        sm.measure_loop_kernels(["tiny"], padded=["8 experts"])


def test_recorded_loop_kernels_agree_with_their_names():
    from utils.core import results
    for doc in results.documents(sm.LOOP_STEM):
        for r in doc["rows"]:
            assert r["tile"] == sm.cublas_tile(r["kernels"][0]), r["name"]
            if r["tile"]:
                assert r["padded_rows"] == -(-r["value"] // r["tile"]["height"]) * r["tile"]["height"] >= r["value"]


def _fake_clock_gpu(monkeypatch, mhz=1400.0):
    """The GPU stood in for: tiny inputs, contenders that return the right product, a fixed power
    limit, and nvidia-smi samples from ``mhz`` (a number or an iterator)."""
    from utils.day05 import ladder_measure as LM
    sizes = [5, 0, 40]
    a, b = torch.randn(sum(sizes), 16, dtype=torch.float64), torch.randn(3, 16, 24, dtype=torch.float64)
    offs = np.cumsum([0] + sizes)
    want = torch.cat([a[offs[g]:offs[g + 1]] @ b[g] for g in range(3)])
    out, checked = torch.empty_like(want), []
    monkeypatch.setitem(sm.MIXES, "tiny", (3, 20, 2, 16, 24))
    monkeypatch.setattr(sm, "grouped_inputs", lambda mix, seed=0: (sizes, a, b))
    monkeypatch.setattr(sm, "grouped_contenders", lambda a, b, sizes: {
        n: (lambda: out.copy_(want)) for n in (sm.LOOP, sm.GRAPH, sm.GROUPED_MM, sm.ROW_BY_ROW, sm.TRITON_GROUPED)})
    monkeypatch.setattr(sm, "check_grouped", lambda name, c, a, b, sizes: checked.append(name))
    monkeypatch.setattr(sm, "power_limit_w", lambda: 700.0)
    monkeypatch.setattr(sm.bench, "graphed", lambda fns: {n: (lambda f=f: checked.append("replay") or f()) for n, f in fns.items()})
    monkeypatch.setattr(LM, "_run_for", lambda fn, seconds: (10, seconds))
    it = mhz if not isinstance(mhz, float) else iter(lambda: mhz, None)
    monkeypatch.setattr(LM, "_sample_gpu", lambda fn, seconds: {"mhz": float(next(it)), "watts": 695.0,
                                                                 "calls_per_s": 1000.0, "samples": 20})
    return sizes, checked


def test_measure_grouped_clocks_rows_are_recordable(monkeypatch):
    """Three contenders per mix, each checked, two passes averaged; rows the results format accepts,
    each contender's work per clock from the groups' rows only and its clock over the loop's."""
    from utils.core import results
    sizes, checked = _fake_clock_gpu(monkeypatch, mhz=iter(range(1000, 2000, 10)))
    rows = sm.measure_grouped_clocks(["tiny"], seconds=1)
    results.validate_rows(rows)
    assert [r["contender"] for r in rows] == [sm.LOOP, sm.GROUPED_MM, sm.TRITON_GROUPED]
    assert [c for c in checked if c != "replay"] == [r["contender"] for r in rows] and checked.count("replay") == 6
    assert all(r["launch"] == sm.bench.LAUNCH_GRAPH for r in rows)     # replays poisoned, then checked
    for r in rows:
        assert len(r["passes"]) == 2 and r["value"] == pytest.approx(sum(r["passes"]) / 2)
        assert r["tflops"] == pytest.approx(2 * sum(sizes) * 16 * 24 * 1000.0 / 1e12)
        assert r["tflops_per_ghz"] == pytest.approx(r["tflops"] / (r["value"] / 1e3))
        assert r["power_limit"] == 700.0 and r["ratio"] == pytest.approx(r["value"] / rows[0]["value"])
    assert rows[0]["passes"] == [1000.0, 1050.0]         # the second pass runs in reverse order


@pytest.mark.parametrize("kw, match", [(dict(seconds=0.5), "seconds must be >= 1"),
                                       (dict(seconds=True), "seconds must be >= 1"),
                                       (dict(mixes=["8 experts"]), "unknown mixes")])
def test_measure_grouped_clocks_refuses_bad_arguments(monkeypatch, kw, match):
    _fake_clock_gpu(monkeypatch)
    with pytest.raises(ValueError, match=match):
        sm.measure_grouped_clocks(**dict(dict(mixes=["tiny"]), **kw))


def test_plot_skinny_gives_a_contender_one_colour_in_both_dtypes():
    """The legend says solid fp16, dotted bf16: a contender's two lines must share its colour."""
    import matplotlib
    matplotlib.use("Agg")
    rows = [dict(name=n, dtype=dt, shape=[m, 8192, 8192], ratio=0.9, of_ceiling=0.7)
            for n in (sm.CUBLAS, *sm.STEPS) for dt in ("float16", "bfloat16") for m in (16, 128)]
    fig = sm.plot_skinny(rows)
    lines = [l for l in fig.axes[0].get_lines() if l.get_marker() == "o"]      # not the 1.0x line
    assert len(lines) == 2 * len(sm.STEPS)
    fp16, bf16 = lines[:len(sm.STEPS)], lines[len(sm.STEPS):]
    assert [l.get_color() for l in fp16] == [l.get_color() for l in bf16]
    assert len({l.get_color() for l in fp16}) == len(sm.STEPS)
