"""Skinny GEMMs and split-K (issue 15), on the CPU: the memory-bound ceiling from day 1's recorded
bandwidth, the split count rule and its exercise check, and split-K through the TMA reduce-add
model against a float64 reference, within the fp32 bound."""
import itertools
import json
import math

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.day05 import skinny, skinny_checks
from utils.tma import splitk_model


def test_bytes_and_the_memory_bound_ceiling():
    # 128 x 8192 x 8192 fp16: A 2 MiB, B 128 MiB, C 2 MiB
    assert skinny.bytes_moved(128, 8192, 8192, 2) == (128 * 8192 * 2 + 8192 * 8192) * 2
    assert skinny.bytes_moved(128, 8192, 8192, 2, c_itemsize=4) == (2 * 128 * 8192 + 8192 * 8192) * 2 + 128 * 8192 * 2
    ms = skinny.memory_bound_ms(128, 8192, 8192, 2, 3000)
    assert ms == pytest.approx(138412032 / 3e12 * 1e3)
    assert skinny.splitk_extra_bytes(128, 8192, 2) == 2 * 128 * 8192 * 4
    for bad in (0, -3):
        with pytest.raises(ValueError, match="M must be a positive int"):
            skinny.bytes_moved(bad, 8192, 8192, 2)
    for bad in (2.0, True, None):                   # the wrong kind: a TypeError stating the same rule
        with pytest.raises(TypeError, match="M must be a positive int"):
            skinny.bytes_moved(bad, 8192, 8192, 2)
    for bad in (0, -1, "3000", True):
        with pytest.raises(ValueError, match="gbps"):
            skinny.memory_bound_ms(128, 8192, 8192, 2, bad)


def test_recorded_hbm_bandwidth_is_day_ones_memcpy_row():
    h100, h200 = skinny.recorded_hbm_gbps("h100"), skinny.recorded_hbm_gbps("h200")
    assert 2000 < h100 < 3500 and 3500 < h200 < 5000      # 3.35 / 4.8 TB/s peak HBM
    # the row counts read + write bytes, as bytes_moved does: 2 x 512 MiB in the recorded ms
    from utils.core import results
    row = results.pick(results.load(skinny.HBM_STEM, "h100")["rows"], skinny.HBM_ROW)
    assert row["value"] == pytest.approx(2 * 4 * row["shape"][0] / (row["ms"] * 1e6))
    with pytest.raises(LookupError, match="no recorded HBM bandwidth for 'a100'"):
        skinny.recorded_hbm_gbps("a100")


def test_recorded_hbm_bandwidth_absent_or_incomplete(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="day01_memory_basics/01_hierarchy_bandwidth.ipynb"):
        skinny.recorded_hbm_gbps()
    (tmp_path / "nvidia-h200").mkdir()
    row = {"name": "Triton copy", "metric": "GB/s", "value": 4000.0, "reference": None,
           "reference_value": None, "ratio": None, "shape": [8], "dtype": "float32"}
    doc = {"device": "NVIDIA H200", "date": "2026-01-01T00:00:00+00:00", "rows": [row]}
    (tmp_path / "nvidia-h200" / "01_hierarchy_bandwidth.json").write_text(json.dumps(doc))
    with pytest.raises(KeyError, match="torch copy"):
        skinny.recorded_hbm_gbps()


def test_tiles_waves_fill():
    assert skinny.tiles(128, 8192, 128, 128) == 64 and skinny.tiles(100, 200, 64, 64) == 2 * 4
    assert skinny.waves(128, 8192, 128, 128, 132) == 1 and skinny.waves(256, 8192, 128, 64, 132) == 2
    assert skinny.sm_fill(64, 132) == pytest.approx(64 / 132) and skinny.sm_fill(192, 132) == pytest.approx(192 / 264)


@pytest.mark.parametrize("case, want", [
    ((128, 8192, 8192, 128, 128, 64, 132), 2),    # 64 tiles: 2 splits = 128 units, one wave
    ((128, 8192, 8192, 128, 256, 64, 132), 4),
    ((128, 8192, 8192, 128, 64, 64, 132), 1),     # 128 tiles already one wave
    ((256, 8192, 8192, 128, 128, 64, 132), 1),
    ((512, 8192, 8192, 128, 128, 64, 132), 1),    # more tiles than SMs
    ((16, 1024, 512, 64, 128, 64, 132), 2),       # 8 K tiles, at least 4 each: capped at 2
    ((16, 1024, 32, 64, 128, 64, 132), 1),        # K < BK
])
def test_split_count(case, want):
    assert skinny.split_k(*case) == want
    M, N, K, BM, BN, BK, sms = case
    s = want
    assert skinny.tiles(M, N, BM, BN) * s <= max(sms, skinny.tiles(M, N, BM, BN))   # one wave (or no split)
    assert s == 1 or math.ceil(K / BK) // s >= 4


def test_split_count_beats_the_naive_rule_in_the_step_model():
    """The docstring's claim: at 128 x 8192 x 8192, s = 3 (smallest s with tiles x s >= sms) is 86
    K-tile steps, s = 2 is 64."""
    t, k_tiles, sms = 64, 128, 132
    steps = {s: math.ceil(t * s / sms) * math.ceil(k_tiles / s) for s in (1, 2, 3)}
    assert steps == {1: 128, 2: 64, 3: 86}
    assert skinny.split_k(128, 8192, 8192, 128, 128, 64, sms) == min(steps, key=steps.get)


def test_k_ranges_are_balanced_whole_tiles():
    r = skinny.k_ranges(300, 3, 16)
    assert r == [(0, 96), (96, 192), (192, 300)]
    for K, s, BK in [(8192, 3, 64), (100, 7, 8), (5, 5, 1)]:
        r = skinny.k_ranges(K, s, BK)
        assert r[0][0] == 0 and r[-1][1] == K and all(a[1] == b[0] for a, b in zip(r, r[1:]))
        lens = [-(-(k1 - k0) // BK) for k0, k1 in r]
        assert max(lens) - min(lens) <= 1 and all(k0 % BK == 0 for k0, _ in r)
    with pytest.raises(ValueError, match="without work"):
        skinny.k_ranges(64, 3, 32)


def _inputs(M, K, N, kind, seed=0):
    rng = np.random.default_rng(seed)
    a, b = rng.standard_normal((M, K)).astype(np.float32), rng.standard_normal((K, N)).astype(np.float32)
    if kind == "float16":
        return a.astype(np.float16), b.astype(np.float16)
    bf = lambda x: (x.view(np.uint32) & np.uint32(0xFFFF0000)).view(np.float32)   # bf16-valued fp32
    return bf(a), bf(b)


def test_split_k_ref_is_the_product():
    a, b = _inputs(37, 300, 70, "float16")
    for s in (1, 2, 5):
        np.testing.assert_allclose(skinny.split_k_ref(a, b, s, 16), a.astype(np.float64) @ b.astype(np.float64),
                                   rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", ["float16", "bfloat16"])
def test_split_k_through_the_reduce_add_model_meets_the_fp32_bound_in_every_order(kind):
    M, K, N, BM, BN, BK, s = 37, 300, 70, 16, 32, 16, 3     # not multiples of the box anywhere
    a, b = _inputs(M, K, N, kind)
    ref, tol = skinny.split_k_ref(a, b, s, BK), skinny.splitk_tolerance(a, b, s, BK)
    seen = set()
    for order in itertools.permutations(range(s)):
        c, traffic = skinny.split_k_model(a, b, s, BM, BN, BK, order=order)
        assert c.dtype == np.float32 and c.shape == (M, N)
        assert np.all(np.abs(c - ref) <= tol), "fp32 split-K broke the bound"
        assert traffic.reduce_ops == s * math.ceil(M / BM) * math.ceil(N / BN)
        assert traffic.elements_added == s * M * N                     # edge boxes clipped
        assert traffic.smem_bytes == traffic.reduce_ops * BM * BN * 4
        seen.add(c.tobytes())
    assert len(seen) > 1, "the order of the splits should change some last bits (relaxed.gpu adds)"
    assert tol.max() < 1e-3 * np.abs(ref).max(), "the bound should be far below the values"
    # planted wrong results are caught by the same bound
    parts = [a.astype(np.float64)[:, k0:k1] @ b.astype(np.float64)[k0:k1] for k0, k1 in skinny.k_ranges(K, s, BK)]
    for wrong in (ref - parts[1], ref + parts[0], parts[-1]):
        assert not np.all(np.abs(wrong - ref) <= tol)


def test_reduce_adding_into_fp16_breaks_the_fp32_bound():
    a, b = _inputs(64, 512, 64, "float16", seed=1)
    parts = [(a[:, k0:k1].astype(np.float32) @ b[k0:k1].astype(np.float32)).astype(np.float16)
             for k0, k1 in skinny.k_ranges(512, 4, 64)]
    c16, _ = splitk_model.reduce_partials(np.zeros((64, 64), np.float16), parts, (64, 64))
    ref = skinny.split_k_ref(a, b, 4, 64)
    assert not np.all(np.abs(c16 - ref) <= skinny.splitk_tolerance(a, b, 4, 64))
    # what it does meet: one fp16 rounding per partial and per add, relative to sum |A||B|
    mag = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    assert np.all(np.abs(c16 - ref) <= skinny.splitk_tolerance(a, b, 4, 64) + (4 + 4) * 2.0 ** -11 * mag)


def test_integer_reduce_add_is_exact_in_any_order():
    rng = np.random.default_rng(2)
    parts = [rng.integers(-1000, 1000, (20, 36)).astype(np.int32) for _ in range(4)]
    c0 = rng.integers(-5, 5, (20, 36)).astype(np.int32)
    before = c0.copy()
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        c, t = splitk_model.reduce_partials(c0, parts, (8, 16), order)
        np.testing.assert_array_equal(c, before + sum(parts))     # C's old values are kept: it ADDS
    np.testing.assert_array_equal(c0, before)                      # the input C is not modified


@pytest.mark.parametrize("c, parts, box, order, err, match", [
    (np.zeros((8, 8), np.float64), None, (8, 8), None, ValueError, r"float64 cannot be reduce-added.*\.add takes"),
    (np.zeros((8, 16), np.uint8), None, (8, 16), None, ValueError, "uint8 cannot be reduce-added"),
    (np.zeros((8, 8), np.float32), [np.zeros((8, 4), np.float32)], (8, 8), None, ValueError, r"partial 0 is \(8, 4\)"),
    (np.zeros((8, 8), np.float32), [np.zeros((8, 8), np.float16)], (8, 8), None, ValueError, "like C"),
    (np.zeros((8, 8), np.float32), [], (8, 8), None, TypeError, "non-empty list"),
    (np.zeros((8, 8), np.float32), "same", (8, 8), [0, 0], ValueError, "not a permutation"),
    (np.zeros((8, 8), np.float32), "same", (8, 3), None, ValueError, "inner box is 12 B"),
    (np.zeros(8, np.float32), "same", (8,), None, TypeError, "2-D NumPy array"),
])
def test_reduce_partials_refuses_what_tma_cannot_do(c, parts, box, order, err, match):
    if parts is None or parts == "same":
        parts = [np.zeros_like(c), np.zeros_like(c)]
    with pytest.raises(err, match=match):
        splitk_model.reduce_partials(c, parts, box, order)


# ---- the exercise check ----

def _stub(*a):
    raise NotImplementedError


def _naive(M, N, K, BM, BN, BK, sms, mk):
    t = math.ceil(M / BM) * math.ceil(N / BN)
    return max(1, min(math.ceil(sms / t), math.ceil(K / BK) // mk))


PLANTED = [  # (wrong answer, what the hint must say)
    (lambda *a: 1, "SMs get work"),
    (_naive, "second, partial wave"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, sms // (math.ceil(M / BM) * math.ceil(N / BN))), "at least 4 of"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // (math.ceil(M / BM) * math.ceil(N / BN)), K // mk)), "at least 4 of|K TILES"),
    (lambda M, N, K, BM, BN, BK, sms, mk: min(sms // (math.ceil(M / BM) * math.ceil(N / BN)), math.ceil(K / BK) // mk), "at least 1 split"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // ((M // BM) * (N // BN)), math.ceil(K / BK) // mk)), "ceil\\(M / BM\\)"),
    (lambda M, N, K, BM, BN, BK, sms, mk: max(1, min(sms // ((-(-M // BM)) * (-(-N // BN))), math.ceil(K / BK) // mk)) + 1, "expected"),
]


def test_check_split_count_accepts_and_reports_stubs(capsys):
    skinny_checks.check_split_count(skinny.split_k)
    assert "correct" in capsys.readouterr().out
    skinny_checks.check_split_count(_stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("i", range(len(PLANTED)))
def test_check_split_count_rejects_planted_mistakes(i):
    fn, hint = PLANTED[i]
    with pytest.raises(CheckFailed, match=hint):
        skinny_checks.check_split_count(fn)


@pytest.mark.parametrize("fn, match", [(lambda *a: 2.0, "expected an int"), (lambda *a: None, "NoneType"),
                                       (lambda *a: "2", "expected an int"), (2, "expected a function")])
def test_check_split_count_explains_malformed_answers(fn, match):
    with pytest.raises(CheckFailed, match=match):
        skinny_checks.check_split_count(fn)


def test_ceiling_is_the_larger_of_memory_and_compute_time():
    mem = skinny.memory_bound_ms(128, 8192, 8192, 2, 3000)
    assert skinny.ceiling(128, 8192, 8192, 2, 3000) == (mem, "memory")            # no peak: memory alone
    assert skinny.ceiling(128, 8192, 8192, 2, 3000, 989) == (mem, "memory")       # 2.2 us of flops < 46 us of bytes
    comp = 2 * 256 * 8192 * 8192 / 989e12 * 1e3
    assert skinny.ceiling(256, 8192, 8192, 2, 4157, 989) == pytest.approx((comp, "compute"))   # H200 at M = 256
    assert skinny.ceiling(256, 8192, 8192, 2, 2962, 989)[1] == "memory"                         # H100 at M = 256
    for bad in (0, -1, "989", True):
        with pytest.raises(ValueError, match="peak_tflops"):
            skinny.ceiling(128, 8192, 8192, 2, 3000, bad)


@pytest.mark.parametrize("tiles, sms, k_tiles, want", [
    (128, 132, 128, 0),        # one wave, the last wave (the only one) more than half full: data-parallel
    (64, 132, 128, 64),        # one wave under half full: every tile by stream-K
    (264, 132, 128, 0),        # whole waves: no quantization, data-parallel
    (300, 132, 128, 300 - 132),  # 2 full waves + 36: the last two waves' tiles (168) by stream-K
    (150, 132, 128, 150),      # 1 full wave + 18: both waves by stream-K
    (64, 132, 8, 0),           # 8 K tiles or fewer: nothing to split
    (700, 132, 64, 700 - 4 * 132),  # 5 full waves + 40: the last two waves' 172 tiles
])
def test_cutlass_streamk_tiles_follows_the_heuristic(tiles, sms, k_tiles, want):
    assert skinny.cutlass_streamk_tiles(tiles, sms, k_tiles) == want


def test_cutlass_streamk_tiles_refuses_bad_arguments():
    with pytest.raises(ValueError, match="sms must be a positive int"):
        skinny.cutlass_streamk_tiles(64, 0, 128)
    with pytest.raises(TypeError, match="tiles must be a positive int"):
        skinny.cutlass_streamk_tiles(64.0, 132, 128)
