"""Launch targets and Triton configurations follow the GPU (issue 39): nothing changes on Hopper;
a GPU with TMA but 99 KB of shared memory per block (compute capability 12.x) gets configurations
that fit it, checked by compiling for sm_120a without a GPU."""
import pytest

from utils.core import tier as t
from utils.day05 import gemm
from utils.day05 import skinny_measure as sm

H100, B200, RTX5090, A100 = ((n, cc) for n, cc in (("H100", (9, 0)), ("B200", (10, 0)),
                                                   ("RTX 5090", (12, 0)), ("A100", (8, 0))))
SMEM_12X = 99 * 1024


def tier(gpu, requested=None):
    return t.detect(requested, lambda: gpu)


@pytest.mark.parametrize("gpu", [H100, B200, A100])
def test_gemm_configs_are_hoppers_where_they_fit(gpu):
    for step in gemm.STEPS:
        assert gemm.config(step, "float16", tier(gpu)) == gemm.GPU_CONFIGS[(step, "float16")]
    assert gemm.config("v4", "bfloat16", tier(H100, "tma")) == gemm.GPU_CONFIGS[("v4", "bfloat16")]


def test_gemm_configs_shrink_on_99_kb():
    for step in gemm.STEPS:
        cfg = gemm.config(step, "bfloat16", tier(RTX5090))
        assert cfg["BN"] == 128 and cfg["num_stages"] == 3 and cfg["BM"] == 128
    assert gemm.config("v0", "float16", tier(None)) == gemm.CPU_CONFIGS["v0"]


def test_skinny_and_grouped_configs():
    assert sm.tile_configs(128, 8192, 8192, 132, tier(H100)) == sm.tile_configs(128, 8192, 8192, 132, tier(B200))
    assert sm.tile_configs(128, 8192, 8192, 132, tier(H100))[sm.NARROW]["num_stages"] == 6
    small = sm.tile_configs(128, 8192, 8192, 170, tier(RTX5090))
    assert small[sm.NARROW]["num_stages"] == small[sm.STREAMK]["num_stages"] == 4
    assert sm.grouped_config(tier(H100)) == sm.GROUPED_CFG and sm.grouped_config(tier(RTX5090))["BN"] == 128


def test_small_configs_fit_99_kb_when_compiled_for_sm_120a():
    """Triton 3.9's own shared-memory figure for sm_120a (compile only, any machine)."""
    from utils.day05 import skinny_triton as st
    from utils.triton_lang.compile import triton_compile
    rtx = tier(RTX5090)
    cfg = sm.tile_configs(128, 8192, 8192, 170, rtx)[sm.STREAMK]
    sig = {"a_desc": "tensordesc<fp16[128, 64]>", "b_desc": "tensordesc<fp16[64, 64]>",
           "c_desc": "tensordesc<fp16[128, 64]>", "c_ptr": "*fp16", "M": "i32", "N": "i32", "K": "i32",
           "BM": "constexpr", "BN": "constexpr", "BK": "constexpr", "NUM_PROGS": "constexpr", "TMA_REDUCE": "constexpr"}
    k = triton_compile(st.streamk_kernel, sig, dict(BM=128, BN=64, BK=64, NUM_PROGS=170, TMA_REDUCE=True),
                       num_warps=cfg["num_warps"], num_stages=cfg["num_stages"], arch=120)
    assert k.metadata.shared <= SMEM_12X
    g = sm.grouped_config(rtx)
    sig = {"a_ptr": "*bf16", "b_ptr": "*bf16", "c_ptr": "*bf16", "offs_ptr": "*i32", "tile_start_ptr": "*i32",
           "G": "i32", "N": "i32", "K": "i32", "NUM_PROGS": "constexpr", "BM": "constexpr", "BN": "constexpr",
           "BK": "constexpr", "GROUP_M": "constexpr"}
    k = triton_compile(st.grouped_kernel, sig, dict(NUM_PROGS=170, BM=g["BM"], BN=g["BN"], BK=g["BK"], GROUP_M=g["group_m"]),
                       num_warps=g["num_warps"], num_stages=g["num_stages"], aligned=("a_ptr", "b_ptr", "c_ptr"),
                       arch=120)
    assert k.metadata.shared <= SMEM_12X


@pytest.mark.parametrize("cc,target", [((9, 0), "sm_90a"), ((10, 3), "sm_103a"), ((12, 0), "sm_120a")])
def test_cutedsl_tma_kernels_are_compiled_for_the_gpu_they_run_on(monkeypatch, cc, target):
    import torch
    from utils.cute_dsl import compat
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: cc)
    assert compat.launch_arch() == target


@pytest.mark.parametrize("cc,arch", [("90", "-arch=sm_90a"), ("100", "-arch=sm_100a"), ("121", "-arch=sm_121a")])
def test_tensormap_replace_is_compiled_for_this_gpus_arch_specific_target(monkeypatch, cc, arch):
    import sys
    import types
    from utils.tma import update_run
    made = []
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Device=lambda: types.SimpleNamespace(compute_capability=cc)),
                                 RawModule=lambda code, options: made.append(options) or "module")
    monkeypatch.setitem(sys.modules, "cupy", fake)
    update_run._module.cache_clear()
    try:
        assert update_run._module() == "module" and made == [("-std=c++17", arch)]
    finally:
        update_run._module.cache_clear()
