"""Day 1 memory model: sectors, banks, padding, roofline and device facts, with bad inputs."""
import numpy as np
import pytest

from utils.day01 import memory_model as mm


def test_warp_addresses_and_sectors():
    assert mm.warp_addresses(1).tolist() == [4 * t for t in range(32)]
    assert mm.warp_addresses(2, offset=3, elem_bytes=2, warp=1)[0] == (3 + 32 * 2) * 2
    assert [mm.sectors_touched(mm.warp_addresses(s)) for s in (1, 2, 4, 8, 32)] == [4, 8, 16, 32, 32]
    assert mm.sectors_touched(mm.warp_addresses(1, offset=1)) == 5
    assert mm.sectors_touched(np.full(32, 100)) == 1                 # one word, broadcast
    assert mm.sectors_touched([24], access_bytes=16) == 2             # straddles a boundary
    assert mm.sectors_touched([0], access_bytes=96) == 3
    assert mm.sectors_touched([]) == 0


def test_efficiency_and_copy_traffic():
    assert mm.strided_read_efficiency(1) == 1.0 and mm.strided_read_efficiency(8) == 0.125
    t = mm.copy_traffic(4096)
    assert t == {"useful": 32768, "requested": 32768, "unique": 32768}
    t8 = mm.copy_traffic(4096, stride=8)
    assert t8["requested"] == t8["unique"] == 32 * (4096 + 4096 // 8)
    t1 = mm.copy_traffic(4096, offset=1)
    assert t1["requested"] == 32768 * 9 // 8 and t1["unique"] == 32768 + 32
    assert mm.copy_traffic(37)["useful"] == 8 * 37


@pytest.mark.parametrize("call, err, rule", [
    (lambda: mm.warp_addresses(0), ValueError, "stride must be >= 1"),
    (lambda: mm.warp_addresses(1.5), TypeError, "stride must be an int"),
    (lambda: mm.warp_addresses(1, offset=-1), ValueError, "offset must be >= 0"),
    (lambda: mm.sectors_touched([1.5, 2.0]), TypeError, "must be integers"),
    (lambda: mm.sectors_touched([-4]), ValueError, ">= 0"),
    (lambda: mm.sectors_touched([0], access_bytes=0), ValueError, "access_bytes must be >= 1"),
    (lambda: mm.copy_traffic(0), ValueError, "n must be >= 1"),
    (lambda: mm.copy_traffic(10, elem_bytes=64), ValueError, "at most 32"),
    (lambda: mm.bank_of(-4), ValueError, "byte_address must be >= 0"),
    (lambda: mm.bank_of("4"), TypeError, "byte_address must be an int"),
    (lambda: mm.bank_of(True), TypeError, "must be an int"),
    (lambda: mm.tile_word(0, 0, cols=24, swizzle=True), ValueError, "power-of-two"),
    (lambda: mm.tile_word(0, 0, pad=1, swizzle=True), ValueError, "pad=0"),
    (lambda: mm.conflict_free_pad(0), ValueError, "tile_cols must be >= 1"),
    (lambda: mm.gemm_intensity(0, 1, 1), ValueError, "M must be >= 1"),
    (lambda: mm.roofline_tflops(-1, 1, 1), ValueError, "intensity must be a positive"),
    (lambda: mm.ridge_point(1, 0), ValueError, "bandwidth_gbs must be a positive"),
    (lambda: mm.datasheet(None), TypeError, "device_name must be a str"),
    (lambda: mm.device_facts("NVIDIA A100"), ValueError, "no datasheet entry"),
])
def test_bad_inputs_name_the_rule(call, err, rule):
    with pytest.raises(err, match=rule):
        call()


def test_banks_and_conflicts():
    assert [mm.bank_of(a) for a in (0, 4, 127, 128, 260)] == [0, 1, 31, 0, 1]
    t = np.arange(32)
    assert mm.conflict_ways(4 * t) == 1
    assert mm.conflict_ways(4 * 32 * t) == 32
    assert mm.conflict_ways(np.zeros(32, dtype=int)) == 1
    assert mm.conflict_ways([]) == 0
    assert mm.conflict_ways(4 * mm.tile_word(t, 0, pad=1)) == 1
    assert mm.conflict_ways(4 * mm.tile_word(t, 5, swizzle=True)) == 1
    assert mm.tile_word(3, 1, swizzle=True) == 3 * 32 + (1 ^ 3)
    assert [mm.conflict_free_pad(c) for c in (32, 33, 16, 8, 64, 65)] == [1, 0, 1, 1, 1, 0]


def test_roofline():
    assert mm.gemm_intensity(8192, 8192, 8192) == pytest.approx(8192 / 3)
    assert mm.gemm_intensity(100, 100, 100, 4) == pytest.approx(2e6 / (4 * 3e4))
    assert mm.roofline_tflops(1, 989, 4800) == pytest.approx(4.8)
    assert mm.roofline_tflops(1e4, 989, 4800) == 989
    assert mm.ridge_point(989, 4800) == pytest.approx(206.04, rel=1e-3)


class FakeProps:
    multi_processor_count, regs_per_multiprocessor, L2_cache_size = 132, 65536, 50 * 2**20
    shared_memory_per_multiprocessor, shared_memory_per_block_optin = 233472, 232448
    total_memory, max_threads_per_multi_processor = 150_000_000_000, 2048


def test_device_facts():
    h200 = mm.device_facts("NVIDIA H200")
    assert h200["hbm_peak_gbs"] == 4800 and h200["sms"] == 132 and "datasheet" in h200["source"]
    assert mm.device_facts("NVIDIA H100 80GB HBM3")["hbm_peak_gbs"] == 3350
    assert mm.device_facts("NVIDIA H100 PCIe")["sms"] == 114
    assert mm.datasheet("NVIDIA H200 NVL")["fp16_tflops"] == 835
    read = mm.device_facts("NVIDIA H200", FakeProps())
    assert read["hbm_bytes"] == 150_000_000_000 and read["source"] == "read off the device"
    other = mm.device_facts("NVIDIA A100-SXM4-80GB", FakeProps())   # sizes yes, peaks unknown
    assert other["sms"] == 132 and other["hbm_peak_gbs"] is None
    class Partial:
        multi_processor_count = 108
    assert mm.device_facts("Some GPU", Partial())["regs_per_sm"] is None


def test_swizzle_story_is_one_story_across_days():
    """day01/03's table and day05/02's column read agree: a column of 16-B chunks of 8 rows placed
    as TMA places them is conflict-free under every mode for rows up to the span; unswizzled it
    is (row bytes / 16)-way conflicted."""
    from utils.tma import swizzle
    from utils.tma.plots import column_read_ways
    rows = np.arange(8)
    for mode in swizzle.SWIZZLE_MODES:
        span = swizzle.swizzle_span(mode)
        for width in (w for w in (16, 32, 64, 128) if not span or w <= span):
            pitch = swizzle.row_pitch(width, mode)
            for chunk in range(width // 16):
                start = swizzle.swizzled_offset(rows, 16 * chunk, mode, row_bytes=pitch)
                ways = mm.conflict_ways((start[:, None] + 4 * np.arange(4)).ravel())
                assert ways == (width // 16 if mode == "none" else 1), (mode, width, chunk)
        assert column_read_ways(mode) == (8 if mode == "none" else 1)   # day05/02, widest rows
