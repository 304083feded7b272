"""On a Hopper GPU: the NumPy TMA model must match the hardware byte for byte.

Random configurations (dtypes, ranks, odd shapes, boxes, element strides, swizzles, boxes that
overhang the edges) are loaded by a real cp.async.bulk.tensor and the raw shared-memory bytes are
compared with utils.tma.smem_bytes. Stores and reduce-adds are compared with the model too.
Set COURSE_HW_CONFIGS to change the count (default 200). The recorded figure comes from
day05/02's own cell (utils.tma.agreement.measure_agreement), not from this test.
"""
import os
import random

import numpy as np
import pytest

torch = pytest.importorskip("torch")
if not (torch.cuda.is_available() and torch.cuda.get_device_capability(0)[0] >= 9):
    pytest.skip("needs a GPU with TMA (compute capability >= 9.0)", allow_module_level=True)
cp = pytest.importorskip("cupy")

from utils import tma  # noqa: E402
from utils.tma import runtime  # noqa: E402

from utils.tma.agreement import hw_matches_model, random_config  # noqa: E402


def test_model_matches_hardware_on_random_configs():
    """The same check day05/02 records (utils.tma.agreement), run here as a test."""
    n = int(os.environ.get("COURSE_HW_CONFIGS", "200"))
    rng = random.Random(int(os.environ.get("COURSE_HW_SEED", "2026")))
    bad = []
    for _ in range(n):
        cfg = random_config(rng)
        print("config", cfg, flush=True)
        if not hw_matches_model(cfg):
            bad.append(cfg)
    assert not bad, f"{len(bad)} of {n} configurations differ, e.g. {bad[:3]}"


def test_store_and_reduce_match_model():
    host = np.random.standard_normal((37, 72)).astype(np.float32)
    tile = np.random.standard_normal((16, 32)).astype(np.float32)
    for coords in [(0, 0), (30, 52), (24, 60)]:
        dev = cp.asarray(host)
        runtime.store_box(dev, tile, coords)
        want, n_written = tma.tma_store(host, tile, coords)
        assert np.array_equal(dev.get(), want) and n_written > 0
        dev = cp.asarray(host)
        runtime.store_box(dev, tile, coords, reduce=True)
        want, _ = tma.tma_reduce_add(host, tile, coords)
        np.testing.assert_allclose(dev.get(), want, rtol=1e-6, atol=1e-6)


def test_misaligned_inner_coordinate_is_refused_before_launch():
    dev = cp.asarray(np.random.standard_normal((64, 64)).astype(np.float16))
    with pytest.raises(ValueError, match="not a multiple of 16 B"):
        runtime.load_dump(dev, (8, 64), (0, 4))


def test_negative_store_start_is_refused_before_launch():
    dev = cp.zeros((37, 72), cp.float32)
    with pytest.raises(ValueError, match="start below 0"):
        runtime.store_box(dev, np.ones((16, 32), np.float32), (-5, 64))


def test_rank1_boxes():
    host = np.random.standard_normal(1000).astype(np.float32)
    for coords in [(0,), (992,), (-16,)]:
        hw = runtime.load_dump(cp.asarray(host), (64,), coords)
        assert np.array_equal(hw[:256], tma.smem_bytes(host, (64,), coords))


def test_wrong_expect_tx_is_a_clear_error_not_a_hang():
    dev = cp.asarray(np.random.standard_normal((64, 64)).astype(np.float16))
    with pytest.raises(RuntimeError, match="expect_tx declared 8200 B but the box delivers 8192 B"):
        runtime.load_dump(dev, (64, 64), (0, 0), expect_bytes=8200)


def test_pipelined_copy_is_exact():
    src = cp.random.standard_normal((1000, 1736), dtype=cp.float32).astype(cp.float16)
    dst = cp.full(src.shape, cp.nan, dtype=cp.float16)
    runtime.copy_pipelined(src, dst, box_shape=(32, 128), stages=3)
    assert bool((dst == src).all())
    dst.fill(cp.nan)
    runtime.copy_tiles(src, dst, box_shape=(64, 64))
    assert bool((dst == src).all())


def _strided_pair(base_len, shape, strides):
    """The same strided view of one random buffer on the host and on the device."""
    base = (np.random.standard_normal(base_len) * 100).astype(np.float16)
    host = np.lib.stride_tricks.as_strided(base, shape, strides)
    dev = cp.lib.stride_tricks.as_strided(cp.asarray(base), shape, strides)
    return host, dev


@pytest.mark.parametrize("base_len, shape, strides, box, coords", [
    (64, (8, 64), (0, 2), (8, 64), (3, 0)),                            # broadcast rows
    (1024, (8, 64), (32, 2), (8, 64), (5, 32)),                        # overlapping rows
    (4096, (4, 8, 64), (256, 128, 2), (2, 8, 64), (2, 4, 0)),          # overlapping planes
    (2048, (8, 4, 64), (128, 1024, 2), (8, 4, 64), (3, 1, 0)),         # permuted outer axes
])
def test_loads_follow_broadcast_overlapping_and_permuted_strides(base_len, shape, strides, box, coords):
    host, dev = _strided_pair(base_len, shape, strides)
    want = tma.smem_bytes(host, box, coords)
    assert np.array_equal(runtime.load_dump(dev, box, coords)[:want.size], want)


def test_store_into_overlapping_rows_is_refused_before_launch():
    _, dev = _strided_pair(1024, (8, 64), (32, 2))
    with pytest.raises(ValueError, match="every element at its own address"):
        runtime.store_box(dev, np.ones((8, 64), np.float16), (0, 0))


def test_store_into_permuted_axes_matches_model():
    host = np.random.standard_normal((4, 8, 64)).astype(np.float32)
    tile = np.random.standard_normal((4, 2, 32)).astype(np.float32)
    dev = cp.asarray(host).transpose(1, 0, 2)
    runtime.store_box(dev, tile, (2, 1, 32))
    want, _ = tma.tma_store(host.transpose(1, 0, 2), tile, (2, 1, 32))
    assert np.array_equal(dev.get(), want)
