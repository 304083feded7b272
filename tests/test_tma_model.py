"""Tests for the NumPy TMA model (utils.tma.model) and the swizzle math (utils.tma.swizzle)."""
import numpy as np
import pytest

from utils.tma import (apply_swizzle, bank_conflict_ways, bank_map, chunk_table, element_offset, make_spec,
                       repeat_bytes, smem_bytes, smem_image, smem_offsets, swizzle_span, swizzled_offset,
                       tma_load, tma_reduce_add, tma_store, tma_traffic)

A = np.arange(40 * 52, dtype=np.float32).reshape(40, 52)      # not a multiple of the boxes below


# ---------- loads ----------

def test_interior_load_equals_slicing():
    assert np.array_equal(tma_load(A, (8, 16), (5, 12)), A[5:13, 12:28])
    b = np.arange(6 * 7 * 32, dtype=np.float16).reshape(6, 7, 32)
    assert np.array_equal(tma_load(b, (2, 3, 8), (1, 2, 16)), b[1:3, 2:5, 16:24])


def test_load_with_spec_matches_plain_arguments():
    spec = make_spec(A, (8, 16), element_strides=(2, 1), oob_fill="nan")
    assert np.array_equal(tma_load(A, spec, (36, 44)),
                          tma_load(A, (8, 16), (36, 44), element_strides=(2, 1), oob_fill="nan"), equal_nan=True)


def test_partial_box_at_the_edge_is_zero_filled():
    tile = tma_load(A, (8, 16), (36, 44))
    assert tile.shape == (8, 16)
    assert np.array_equal(tile[:4, :8], A[36:, 44:])
    assert not tile[4:].any() and not tile[:, 8:].any()


def test_negative_coordinates_and_nan_fill():
    tile = tma_load(A, (4, 8), (-2, -4), oob_fill="nan")
    assert np.isnan(tile[:2]).all() and np.isnan(tile[:, :4]).all()
    assert np.array_equal(tile[2:, 4:], A[:2, :4])
    with pytest.raises(ValueError, match="needs a float dtype"):
        tma_load(A.astype(np.int32), (4, 8), (0, 0), oob_fill="nan")


def test_element_strides_skip_rows_but_never_the_inner_axis():
    tile = tma_load(A, (7, 8), (1, 4), element_strides=(3, 2))   # inner stride 2 is ignored by TMA
    assert tile.shape == (3, 8)
    assert np.array_equal(tile, A[1:8:3, 4:12])


def test_load_rejects_illegal_boxes():
    with pytest.raises(ValueError, match="not a multiple of 16 B"):
        tma_load(A, (4, 3), (0, 0))
    with pytest.raises(ValueError, match="box dimension 300 .* exceeds 256 elements"):
        tma_load(A, (300, 4), (0, 0))
    with pytest.raises(TypeError, match="coords must be 2 ints"):
        tma_load(A, (4, 4), (0.5, 0))


# ---------- stores and reduce-add ----------

def test_store_clips_out_of_bounds_and_counts_writes():
    tile = np.full((8, 16), -1, np.float32)
    out, written = tma_store(A, tile, (36, 44))
    assert written == 4 * 8
    assert (out[36:, 44:] == -1).all()
    out[36:, 44:] = A[36:, 44:]
    assert np.array_equal(out, A)                     # nothing else touched
    assert A[36, 44] != -1                            # the input is not modified


def test_load_then_store_round_trip_covers_the_tensor():
    out = np.zeros_like(A)
    for r in range(0, 40, 16):
        for c in range(0, 52, 32):
            out, _ = tma_store(out, tma_load(A, (16, 32), (r, c)), (r, c))
    assert np.array_equal(out, A)


def test_reduce_add_adds_in_bounds_only():
    rows = A.shape[0]
    out, n = tma_reduce_add(A, np.ones((4, 8), np.float32), (rows - 3, 48))
    assert n == 3 * (A.shape[1] - 48 if A.shape[1] - 48 < 8 else 8)
    assert np.array_equal(out[rows - 3:, 48:56], A[rows - 3:, 48:56] + 1)
    assert np.array_equal(out[:rows - 3], A[:rows - 3])
    with pytest.raises(ValueError, match="does not convert"):
        tma_store(A, np.ones((4, 8), np.float16), (0, 0))


def test_traffic_counts():
    interior = tma_traffic(A.shape, (8, 16), (0, 0), 4)
    assert interior == (128, 128, 0, 512, 512)
    edge = tma_traffic(A.shape, (8, 16), (36, 44), 4)
    assert (edge.in_bounds, edge.oob, edge.global_bytes, edge.smem_bytes) == (32, 96, 128, 512)
    spec = make_spec(A, (7, 8), element_strides=(3, 1))
    assert tma_traffic(A.shape, (7, 8), (0, 0), 4, element_strides=(3, 1)).smem_bytes == spec.box_bytes


# ---------- swizzle ----------

PTX_128B = [[0, 1, 2, 3, 4, 5, 6, 7], [1, 0, 3, 2, 5, 4, 7, 6], [2, 3, 0, 1, 6, 7, 4, 5],
            [3, 2, 1, 0, 7, 6, 5, 4], [4, 5, 6, 7, 0, 1, 2, 3], [5, 4, 7, 6, 1, 0, 3, 2],
            [6, 7, 4, 5, 2, 3, 0, 1], [7, 6, 5, 4, 3, 2, 1, 0]]   # PTX ISA "Tensor swizzling modes"


def test_chunk_tables_match_ptx_isa():
    assert np.array_equal(chunk_table("128B"), PTX_128B)
    assert np.array_equal(chunk_table("64B"), PTX_128B[:4] * 2)      # 64B: 4-row pattern repeats
    assert np.array_equal(chunk_table("32B"), PTX_128B[:2] * 4)      # 32B: 2-row pattern repeats
    assert np.array_equal(chunk_table("none"), [list(range(8))] * 8)


@pytest.mark.parametrize("mode", ["none", "32B", "64B", "128B"])
def test_swizzle_permutes_16_byte_chunks_within_each_repeat(mode):
    period = repeat_bytes(mode) or 128
    offsets = np.arange(4 * period)
    moved = apply_swizzle(offsets, mode)
    assert np.array_equal(np.sort(moved), offsets)                 # a permutation
    assert np.array_equal(moved // period, offsets // period)      # stays inside its repeat
    assert np.array_equal(moved % 16, offsets % 16)                # 16-B chunks kept whole
    assert np.array_equal(apply_swizzle(moved, mode), offsets)     # its own inverse
    if mode == "none":
        assert np.array_equal(moved, offsets)


def test_hand_computed_examples():
    assert swizzled_offset(1, 0, "128B") == 128 + 16
    assert swizzled_offset(7, 7 * 16, "128B") == 7 * 128 + 0
    assert swizzled_offset(5, 2 * 16 + 3, "128B") == 5 * 128 + 7 * 16 + 3     # chunk 2 ^ 5 = 7
    assert swizzled_offset(8, 0, "128B") == 1024                               # pattern restarts
    assert swizzled_offset(3, 0, "64B") == 3 * 128 + 3 * 16
    assert swizzled_offset(4, 16, "64B") == 4 * 128 + 16                       # 64B repeats every 4 rows
    assert swizzled_offset(1, 0, "32B") == 128 + 16 and swizzled_offset(1, 16, "32B") == 128
    assert swizzled_offset(2, 16, "32B") == 2 * 128 + 16
    assert [swizzle_span(m) for m in ("none", "32B", "64B", "128B")] == [0, 32, 64, 128]
    assert [repeat_bytes(m) for m in ("32B", "64B", "128B")] == [256, 512, 1024]


def test_misaligned_base_follows_cuda_guide_offset_formula():
    base = 3 * 128                                      # offset = (base / 128) % 8 = 3
    for y in range(8):
        for x in range(8):
            got = apply_swizzle(y * 128 + x * 16, "128B", base=base)
            assert got == y * 128 + (((y + 3) % 8) ^ x) * 16


def test_column_read_is_conflict_free_only_with_swizzle():
    rows = np.arange(8)                                 # fp16 tile, 64 elements = 128 B per row
    for mode, distinct in (("128B", 8), ("none", 1)):
        chunks = (element_offset(rows, 5, 2, 128, mode) % 128) // 16
        assert len(set(chunks.tolist())) == distinct
    assert bank_conflict_ways(element_offset(rows, 5, 2, 128, "none")) == 8
    assert bank_conflict_ways(element_offset(rows, 5, 2, 128, "128B")) == 1
    rows32 = np.arange(32)                              # fp32, 32 threads read one column
    assert bank_conflict_ways(element_offset(rows32, 3, 4, 128, "none")) == 32
    assert bank_conflict_ways(element_offset(rows32, 3, 4, 128, "128B")) == 4


def test_bank_map():
    banks = bank_map((8, 64), 2, "none")
    assert banks.shape == (8, 64) and (banks[:, 10] == banks[0, 10]).all()
    assert sorted(bank_map((8, 64), 2, "128B")[:, 0].tolist()) == list(range(0, 32, 4))


def test_smem_image_places_every_byte():
    tile = tma_load(A, (8, 32), (3, 8))
    assert smem_image(tile, "none").tobytes() == tile.tobytes()
    image = smem_bytes(A, make_spec(A, (8, 32), swizzle="128B"), (3, 8))
    offsets = smem_offsets(tile.shape, 4, "128B")
    for r, c in [(0, 0), (1, 0), (7, 31), (5, 9)]:
        assert image[offsets[r, c]:offsets[r, c] + 4].view(np.float32)[0] == tile[r, c]
    assert image[128 + 16:128 + 20].view(np.float32)[0] == tile[1, 0]


def test_short_swizzled_rows_fill_a_whole_span_as_measured_on_h200():
    tile = np.arange(9 * 32, dtype=np.float16).reshape(9, 32)    # 64-B rows, 128B swizzle
    image = smem_image(tile, "128B")
    assert image.size == 9 * 128                                   # each row starts a 128-B line
    # H200 dump (uint16 value = row*256 + col): 16-B chunk positions of the first two lines
    # were "0.0 0.1 0.2 0.3 -- -- -- --  1.1 1.0 1.3 1.2 -- -- -- --" (row.chunk, -- = untouched)
    t = (np.arange(8)[:, None] * 256 + np.arange(32)[None, :]).astype(np.uint16)
    chunks = smem_image(t, "128B").view(np.uint16).reshape(-1, 8)[:16, 0]
    want = [0, 8, 16, 24, 0, 0, 0, 0, 256 + 8, 256, 256 + 24, 256 + 16, 0, 0, 0, 0]
    assert chunks.tolist() == want
    # 64B swizzle, 32-B rows: rows 64 B apart, chunk XOR (row // 2) % 4 ... as dumped:
    # "0.0 0.1 -- -- 1.0 1.1 -- -- 2.1 2.0 -- -- 3.1 3.0 -- --"
    t = (np.arange(8)[:, None] * 256 + np.arange(16)[None, :]).astype(np.uint16)
    chunks = smem_image(t, "64B").view(np.uint16).reshape(-1, 8)[:16, 0]
    assert chunks.tolist() == [0, 8, 0, 0, 256, 264, 0, 0, 520, 512, 0, 0, 776, 768, 0, 0]



def test_store_refuses_negative_start():
    A = np.zeros((8, 16), np.float32)
    with pytest.raises(ValueError, match="start below 0"):
        tma_store(A, np.ones((4, 8), np.float32), (-1, 0))
