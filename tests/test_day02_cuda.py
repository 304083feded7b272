"""Day 2 CUDA sources compile for sm_90a (and sm_80, without the TMA-only parts) with NVRTC and
hold the instructions the notebooks teach; launchers reject bad input before touching a GPU;
the Triton PTX helper compiles num_stages variants on any tier."""
import re

import numpy as np
import pytest

from utils.cuda_cpp import day02 as cuda_day02
from utils.core import ptx
from utils.cuda_cpp.nvrtc import nvrtc_ptx
from utils.triton_lang import ptx_subprocess


@pytest.fixture(scope="module")
def sm90():
    return cuda_day02.ptx()


def test_compiles_for_sm90a_with_the_taught_instructions(sm90):
    assert ptx.target(sm90) == "sm_90a"
    for op in ["ld.global.ca.s32", "ld.global.cg.s32", "ld.shared.s32", "cp.async.cg.shared.global",
               "cp.async.commit_group", "cp.async.mbarrier.arrive.noinc", "mbarrier.init",
               "mbarrier.test_wait.parity", "mbarrier.arrive.expect_tx",
               "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes", "%globaltimer"]:
        assert op in sm90, op
    waits = sorted({int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+)", sm90)})
    assert waits == [s - 1 for s in cuda_day02.STAGES]
    for s in cuda_day02.STAGES:
        assert f".entry cp_async_pipeline_s{s}(" in sm90
    for u in cuda_day02.LOADS:
        assert f".entry read_inflight_u{u}(" in sm90


def test_compiles_for_sm80_without_tma(sm90):
    sm80 = cuda_day02.ptx("sm_80")
    assert "cp.async.bulk" not in sm80 and "cp.async.mbarrier.arrive.noinc" in sm80


def test_producer_parity_substitution():
    src = cuda_day02.with_producer_parity("(k / stages) & 1")
    text = nvrtc_ptx(src, name="bug.cu")
    assert ".entry pc_ring(" in text
    with pytest.raises(ValueError, match="may use only k, stages"):
        cuda_day02.with_producer_parity("k; system(1)")
    with pytest.raises(TypeError, match="C expression"):
        cuda_day02.with_producer_parity("")


def test_kernel_source():
    assert "ld.global.ca" in cuda_day02.kernel_source("chase")
    assert "mbar_wait_bounded" in cuda_day02.kernel_source("pc_ring")
    assert "%globaltimer" not in cuda_day02.kernel_source("pc_ring")
    with pytest.raises(ValueError, match="no kernel or function"):
        cuda_day02.kernel_source("nope")


def test_compute_ref():
    x = np.array([0.0, 1.0, -2.0], dtype=np.float32)
    np.testing.assert_allclose(cuda_day02.compute_ref(x, 0), x)
    v = x.astype(np.float64)
    for _ in range(5):
        v = 0.999 * v + 0.001
    np.testing.assert_allclose(cuda_day02.compute_ref(x, 5), v, rtol=1e-6)


def test_launchers_reject_bad_input():
    pytest.importorskip("cupy")
    with pytest.raises(ValueError, match="mode must be one of"):
        cuda_day02.chase_launcher(np.zeros(4, np.int32), 10, mode="l3")
    with pytest.raises(ValueError, match="u \\(loads in flight per thread\\)"):
        cuda_day02.read_inflight(None, None, u=3, blocks_per_sm=1)
    with pytest.raises(ValueError, match="stages must be one of"):
        cuda_day02.pipeline(None, None, stages=5)
    with pytest.raises(ValueError, match="threads must be a multiple of 32"):
        cuda_day02.pipeline(None, None, stages=2, threads=100)
    with pytest.raises(ValueError, match="rounds <= 16"):
        cuda_day02.mbar_phases(rounds=0)
    with pytest.raises(ValueError, match="stages must be an int in 1..8"):
        cuda_day02.ring(None, None, stages=9)


def test_triton_ptx_variants_reject_and_compile():
    import utils
    utils.setup(quiet=True)
    import triton
    import triton.language as tl

    @triton.jit
    def loop_kernel(x_ptr, out_ptr, n, ITERS, BLOCK: tl.constexpr, NS: tl.constexpr):
        acc = tl.zeros((BLOCK,), dtype=tl.float32)
        for i in tl.range(0, ITERS, num_stages=NS):
            offs = (tl.program_id(0) * ITERS + i) * BLOCK + tl.arange(0, BLOCK)
            acc += tl.load(x_ptr + offs, mask=offs < n, other=0.0)
        tl.store(out_ptr + tl.program_id(0) * BLOCK + tl.arange(0, BLOCK), acc)

    with pytest.raises(TypeError, match="non-empty list of option dicts"):
        ptx_subprocess.triton_ptx_variants(loop_kernel, {"x_ptr": "*fp32"}, {}, [])
    sig = {"x_ptr": "*fp32", "out_ptr": "*fp32", "n": "i32", "ITERS": "i32", "BLOCK": "constexpr", "NS": "constexpr"}
    one, four = ptx_subprocess.triton_ptx_variants(loop_kernel, sig, {"BLOCK": 256},
                                                   [{"constexprs": {"NS": 1}}, {"constexprs": {"NS": 4}}],
                                                   aligned=("x_ptr",))
    assert ptx.count(one)["cp.async (Ampere)"] == 0 < ptx.count(four)["cp.async (Ampere)"]
