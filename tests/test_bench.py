"""The benchmark harness: input rules, throughput arithmetic, and clear errors without a GPU."""
import pytest
import torch

from utils import bench


def test_randn_is_normal_not_integers():
    x = bench.randn((256, 256), torch.float16, "cpu", seed=0)
    assert x.dtype == torch.float16 and x.shape == (256, 256)
    assert abs(float(x.float().mean())) < 0.05 and 0.9 < float(x.float().std()) < 1.1
    assert float((x.float() != x.float().round()).float().mean()) > 0.9


@pytest.mark.parametrize("shape", [(0, 4), (-1,), (2.0, 3), "64", 64])
def test_randn_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match="shape must be a tuple of positive ints"):
        bench.randn(shape, torch.float16, "cpu")


def test_throughput():
    assert bench.throughput(2e9, 1.0, "GB/s") == pytest.approx(2000.0)
    assert bench.throughput(2 * 4096**3, 1.0, "TFLOP/s") == pytest.approx(137.438953472)
    with pytest.raises(ValueError, match="metric must be one of"):
        bench.throughput(1, 1, "GFLOPS")
    with pytest.raises(ValueError, match="must be positive"):
        bench.throughput(1, 0, "GB/s")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-GPU message")
def test_timing_without_gpu_says_why():
    with pytest.raises(RuntimeError, match="timing needs a CUDA GPU"):
        bench.time_ms(lambda: None)


def test_argument_errors_come_before_hardware():
    with pytest.raises(TypeError, match="fn must be callable"):
        bench.time_ms(42)
    with pytest.raises(ValueError, match="reps >= 1"):
        bench.time_ms(lambda: None, reps=0)
    with pytest.raises(TypeError, match="non-empty dict"):
        bench.compare(lambda: (), {}, reference="x", metric="GB/s", amount=1, shape=(1,), dtype="f")
    with pytest.raises(ValueError, match="is not a contender"):
        bench.compare(lambda: (), {"a": print}, reference="b", metric="GB/s", amount=1,
                      shape=(1,), dtype="f")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a GPU")
def test_compare_on_gpu_checks_and_ranks():
    rows = bench.compare(lambda: (bench.randn((1 << 20,), torch.float32, "cuda"),),
                         {"clone": lambda x: x.clone(), "mul": lambda x: x * 1.0},
                         reference="clone", metric="GB/s", amount=8 << 20, shape=(1 << 20,),
                         dtype="float32", check=lambda n, o, r: torch.testing.assert_close(o, r),
                         reps=5)
    assert [r["name"] for r in rows] == ["clone", "mul"] and rows[0]["ratio"] == 1.0
    assert all(r["value"] > 0 and r["metric"] == "GB/s" for r in rows)


def test_sweep_concatenates():
    assert bench.sweep([1, 2], lambda c: [{"c": c}], desc="t") == [{"c": 1}, {"c": 2}]
