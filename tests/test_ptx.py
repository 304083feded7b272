"""sm_90a compilation on any machine: Triton AOT and NVRTC, and the PTX readers."""
import pytest

import utils

utils.setup(quiet=True)
import triton  # noqa: E402  (after setup: the interpreter is chosen at import)
import triton.language as tl  # noqa: E402

from utils.core import ptx  # noqa: E402
from utils.triton_lang.compile import triton_ptx  # noqa: E402
from utils.cuda_cpp.nvrtc import nvrtc_ptx  # noqa: E402


@triton.jit
def desc_copy_kernel(a, b, B: tl.constexpr):
    b.store([tl.program_id(0) * B, 0], a.load([tl.program_id(0) * B, 0]))


@triton.jit
def plain_copy_kernel(x, y, n, B: tl.constexpr):
    o = tl.program_id(0) * B + tl.arange(0, B)
    tl.store(y + o, tl.load(x + o, mask=o < n), mask=o < n)


def test_triton_descriptor_kernel_has_bulk_tensor_copy():
    d = "tensordesc<fp16[64, 64]>"
    text = triton_ptx(desc_copy_kernel, {"a": d, "b": d, "B": "constexpr"}, {"B": 64})
    assert ptx.target(text) == "sm_90a"
    c = ptx.count(text)
    assert c["cp.async.bulk.tensor"] >= 2 and c["mbarrier"] >= 1 and c["ld.global"] == 0


def test_triton_plain_kernel_has_none_and_alignment_vectorises():
    sig = {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"}
    scalar = ptx.count(triton_ptx(plain_copy_kernel, sig, {"B": 512}))
    vector = ptx.count(triton_ptx(plain_copy_kernel, sig, {"B": 512}, aligned=("x", "y", "n")))
    assert scalar["cp.async.bulk.tensor"] == 0
    assert vector["ld.global"] < scalar["ld.global"]


def test_triton_ptx_rejects_bad_arguments():
    with pytest.raises(TypeError, match="non-empty dict"):
        triton_ptx(plain_copy_kernel, {})
    with pytest.raises(ValueError, match="needs a value in constexprs"):
        triton_ptx(plain_copy_kernel, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"})
    with pytest.raises(TypeError, match="expected a @triton.jit kernel"):
        triton_ptx(print, {"x": "i32"})
    with pytest.raises(ValueError, match="are not arguments"):
        triton_ptx(plain_copy_kernel, {"x": "*fp32", "y": "*fp32", "n": "i32", "B": "constexpr"},
                       {"B": 64}, aligned=("z",))


CUDA_SRC = r'''
extern "C" __global__ void fence_kernel(float* x) {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  x[threadIdx.x] = 1.0f;
}'''


def test_nvrtc_compiles_for_sm90a_without_gpu():
    text = nvrtc_ptx(CUDA_SRC)
    assert ptx.target(text) == "sm_90a"
    assert ptx.count(text)["fence.proxy.async"] == 1 and ptx.count(text)["st.global"] == 1


def test_nvrtc_errors_are_readable():
    with pytest.raises(RuntimeError, match="NVRTC could not compile"):
        nvrtc_ptx('extern "C" __global__ void k() { undefined_thing(); }')
    with pytest.raises(ValueError, match="__global__"):
        nvrtc_ptx("int main() {}")
    with pytest.raises(ValueError, match="arch must look like"):
        nvrtc_ptx(CUDA_SRC, arch="hopper")


def test_readers_reject_non_ptx(capsys):
    with pytest.raises(ValueError, match="expected PTX"):
        ptx.count("hello")
    with pytest.raises(ValueError, match="no .target"):
        ptx.target("mov.u32 %r1, 0;")
    with pytest.raises(ValueError, match="unknown families"):
        ptx.show(".target sm_90a\n", families=("tma",))
