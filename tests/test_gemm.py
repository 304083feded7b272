"""utils.day05.gemm (configs, tile order, descriptor rules, the output check) and the checks of
notebook 03's exercises: solutions pass, stubs are "not attempted", planted mistakes fail."""
import pytest

import utils

T = utils.setup(quiet=True)
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from utils.day05 import gemm, gemm_checks  # noqa: E402
from utils.triton_lang.compile import hopper_warp_specialization, triton_compile  # noqa: E402
from utils.triton_lang import compat as triton_compat  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402


def test_config_per_step_and_tier():
    from utils.core.tier import Tier
    cpu, hopper = Tier("cpu", None, None, "test"), Tier("hopper", "H200", (9, 0), "test")
    for step in gemm.STEPS:
        cfg = gemm.config(step, torch.float16, cpu)
        assert cfg["BM"] == 32 and not gemm.block_violations([cfg["BK"], cfg["BN"]], 2)
        cfg["BM"] = 1
        assert gemm.config(step, "float16", cpu)["BM"] == 32      # a fresh copy each time
        assert gemm.config(step, "bfloat16", hopper) == gemm.GPU_CONFIGS[(step, "bfloat16")]
    for (step, dt), cfg in gemm.GPU_CONFIGS.items():
        assert not gemm.block_violations([cfg["BM"], cfg["BK"]], 2), (step, dt)
        assert gemm.smem_bytes(cfg) <= gemm.SMEM_LIMIT, (step, dt)
    with pytest.raises(ValueError, match="step"):
        gemm.config("v9", torch.float16, T)
    with pytest.raises(ValueError, match="fp16 and bf16"):
        gemm.config("v0", torch.float32, T)


def test_tile_order_is_a_grouped_permutation():
    for pm, pn, g in [(5, 3, 2), (8, 8, 8), (1, 4, 3), (7, 2, 1)]:
        tiles = [gemm.tile_order_ref(p, pm, pn, g) for p in range(pm * pn)]
        assert sorted(tiles) == [(i, j) for i in range(pm) for j in range(pn)]
    assert [gemm.tile_order_ref(p, 4, 3, 2) for p in range(3)] == [(0, 0), (1, 0), (0, 1)]
    assert [gemm.tile_order_ref(p, 5, 2, 1) for p in range(2)] == [(0, 0), (0, 1)]  # group 1: row-major


@pytest.mark.parametrize("args,match", [((-1, 2, 2, 2), "pid"), ((4, 2, 2, 2), "past the last"),
                                        ((0, 0, 2, 2), "num_pid_m"), ((0, 2, 2, True), "group_m")])
def test_tile_order_rejects_bad_input(args, match):
    with pytest.raises(ValueError, match=match):
        gemm.tile_order_ref(*args)


def test_block_rules_agree_with_triton():
    TD = triton_compat.tensor_descriptor_class()
    x = torch.zeros(64, 64, dtype=torch.float16)
    for block in ([32, 24], [64, 64], [16, 8], [2048, 1024]):
        broken = gemm.block_violations(block, 2)
        if broken:
            with pytest.raises(ValueError):
                TD.from_tensor(x, block)
        else:
            TD.from_tensor(x, block)
    assert gemm.block_violations([32, 4], 2) == ["last dimension holds 4 x 2 = 8 bytes < 16"]
    assert gemm.stride_violations((64, 36), 2) and not gemm.stride_violations((64, 40), 2)
    for bad in ([], [0, 8], (3.0, 8)):
        with pytest.raises(ValueError):
            gemm.block_violations(bad, 2)
    with pytest.raises(ValueError, match="itemsize"):
        gemm.block_violations([8, 8], 3)


def test_check_gemm_and_tolerance():
    a, b = torch.randn(20, 24).half(), torch.randn(24, 16).half()
    good = (a.float() @ b.float()).half()
    gemm.check_gemm("ok", good, a, b)
    with pytest.raises(CheckFailed, match="still NaN"):
        gemm.check_gemm("nan", torch.full_like(good, float("nan")), a, b)
    bad = good.clone()
    bad[3, 5] += 1
    with pytest.raises(CheckFailed, match=r"index \(3, 5\)"):
        gemm.check_gemm("bad", bad, a, b)
    with pytest.raises(ValueError, match="need A"):
        gemm.matmul_ref(a, a)
    assert gemm.tolerance(torch.bfloat16, 64)["rtol"] > gemm.tolerance(torch.float16, 64)["rtol"]


def test_triton_compat_scheduling_facts():
    assert {"num_stages", "flatten", "warp_specialize"} <= triton_compat.range_options()
    applied, why = hopper_warp_specialization()
    assert isinstance(applied, bool) and triton.__version__ in why
    with pytest.raises(ValueError, match="tensordesc_meta"):
        triton_compat.tensordesc_meta(object())


@triton.jit
def _copy_block_kernel(x_desc, y_desc):
    y_desc.store([0, 0], x_desc.load([0, 0]))


def test_tensordesc_meta_shows_the_box_split():
    d = "tensordesc<fp16[64, 256]>"
    meta = triton_compat.tensordesc_meta(triton_compile(_copy_block_kernel, {"x_desc": d, "y_desc": d}))
    assert meta[0]["block_size"] == [64, 64]


@pytest.mark.parametrize("tiles, sms, want", [
    (512, 132, 128),     # 4096³ with 128 x 256 tiles: 4 waves either way, 128 programs of exactly 4
    (2048, 132, 128),    # 8192³: 16 waves, 128 programs of 16
    (32, 132, 32),       # the skinny shape: fewer tiles than SMs, one program each
    (132, 132, 132), (133, 132, 67), (1, 1, 1),
])
def test_balanced_programs(tiles, sms, want):
    got = gemm.balanced_programs(tiles, sms)
    assert got == want and got <= sms
    waves = -(-tiles // sms)
    assert -(-tiles // got) == waves                     # as many waves as one program per SM
    assert tiles // got >= waves - 1                     # each program takes waves or waves - 1 tiles


@pytest.mark.parametrize("tiles, sms", [(0, 132), (512, 0), (512.0, 132), (True, 132), (512, -1)])
def test_balanced_programs_refuses(tiles, sms):
    with pytest.raises(ValueError, match="must be a positive int"):
        gemm.balanced_programs(tiles, sms)
