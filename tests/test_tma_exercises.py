"""Notebook 02's exercise checks accept the solutions and reject planted wrong answers; the
CPU-side parts of the TMA runtime validate their inputs."""
import numpy as np
import pytest

from utils import tma
from utils.checks import CheckFailed
from utils.tma import exercises as ex
from utils.tma import plots, runtime


def encode_args(shape, itemsize, box):
    strides = tuple(int(np.prod(shape[i + 1:])) * itemsize for i in range(len(shape) - 1))[::-1]
    return tuple(shape[::-1]), strides, tuple(box[::-1])


def expect_tx(box, itemsize, es):
    return int(np.prod([-(-b // s) for b, s in zip(box[:-1], es[:-1])])) * box[-1] * itemsize


def swz(r, c, size):
    byte = c * size
    return r * 128 + (((byte // 16) ^ (r % 8)) * 16) + byte % 16


def stub(*args):
    raise NotImplementedError


@pytest.mark.parametrize("check,good", [(ex.check_encode_args, encode_args),
                                        (ex.check_expect_tx, expect_tx),
                                        (ex.check_swizzle_offset, swz)])
def test_solutions_pass_and_stubs_are_not_attempted(check, good, capsys):
    check(good)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong,hint", [
    (lambda s, i, b: (tuple(s), encode_args(s, i, b)[1], tuple(b[::-1])), "innermost first"),
    (lambda s, i, b: (tuple(s[::-1]), tuple(int(np.prod(s[k + 1:])) for k in range(len(s) - 1))[::-1],
                      tuple(b[::-1])), "BYTES"),
    (lambda s, i, b: (tuple(s[::-1]), encode_args(s, i, b)[1], tuple(b)), "box dims"),
    (lambda s, i, b: 42, "three tuples")])
def test_encode_args_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex.check_encode_args(wrong)


@pytest.mark.parametrize("wrong,hint", [(lambda b, i, e: int(np.prod(b)), "elements, not bytes"),
                                        (lambda b, i, e: int(np.prod(b)) * i, "element strides"),
                                        (lambda b, i, e: "8192", "an int")])
def test_expect_tx_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex.check_expect_tx(wrong)


def test_swizzle_offset_rejects_unswizzled():
    with pytest.raises(CheckFailed, match="unswizzled offset"):
        ex.check_swizzle_offset(lambda r, c, s: r * 128 + c * s)


STORE = r"""
struct __align__(64) TensorMap { unsigned long long opaque[16]; };
extern "C" __global__ void store_tile(const __grid_constant__ TensorMap map, const float* in, int x, int y) {
  __shared__ __align__(128) float tile[16 * 32];
  for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) tile[i] = 2.0f * in[i];
  FENCE
  __syncthreads();
  if (threadIdx.x == 0) {
    unsigned src = (unsigned)__cvta_generic_to_shared(tile);
    asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%1, %2}], [%3];"
                 :: "l"(&map), "r"(x), "r"(y), "r"(src) : "memory");
  }
}"""


def test_store_kernel_check(capsys):
    ex.check_store_kernel(STORE.replace("FENCE", 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'))
    assert "correct" in capsys.readouterr().out
    ex.check_store_kernel(STORE.replace("FENCE", "// TODO (1 line): your code here"))
    assert "not attempted" in capsys.readouterr().out
    with pytest.raises(CheckFailed, match="no fence.proxy.async"):
        ex.check_store_kernel(STORE.replace("FENCE", ""))
    with pytest.raises(CheckFailed, match="does not compile"):
        ex.check_store_kernel(STORE.replace("FENCE", "fence();"))
    with pytest.raises(CheckFailed, match="CUDA C\\+\\+ source"):
        ex.check_store_kernel(None)


def test_runtime_cpu_side():
    spec = tma.make_spec(np.zeros((64, 128), np.float16), (8, 64))
    assert runtime.check_coords(spec, (3, 8)) == (8, 3)
    with pytest.raises(ValueError, match="not a multiple of 16 B"):
        runtime.check_coords(spec, (0, 4))
    with pytest.raises(TypeError, match="2 ints"):
        runtime.check_coords(spec, (0,))
    with pytest.raises(ValueError, match="int32"):
        runtime.check_coords(spec, (2**31, 0))
    assert runtime.smem_image_bytes(spec) == 1024
    assert runtime.smem_image_bytes(tma.make_spec(np.zeros((64, 128), np.float16), (9, 32),
                                                   swizzle="128B")) == 2048    # rows 128 B apart
    assert "mbar_wait_bounded" in runtime.kernel_source("tma_load_dump")
    with pytest.raises(ValueError, match="no kernel named"):
        runtime.kernel_source("nope")
    with pytest.raises(ValueError, match="exceeds"):
        runtime.kernel("tma_load_dump", 300 * 1024)
    counts = tma_ptx_counts()
    assert counts["cp.async.bulk.tensor"] >= 10 and counts["fence.proxy.async"] >= 1


def tma_ptx_counts():
    from utils import ptx
    return ptx.count(runtime.ptx())


def test_swizzle_pictures():
    assert plots.column_read_ways("none") == 8 and plots.column_read_ways("128B") == 1
    grid = plots.chunk_grid("128B")
    assert grid.shape == (8, 8) and sorted(grid[5]) == list(range(8)) and grid[1, 0] == 1
    fig = plots.show_swizzle()
    assert len(fig.axes) == 4
