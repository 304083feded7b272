"""Day 1 quiz, the CUDA kernel sources (compiled for sm_90a here) and the day-1 figures."""
import matplotlib
import numpy as np
import pytest

matplotlib.use("Agg")

from utils.cuda_cpp import day01 as cuda_day01  # noqa: E402
from utils.day01 import plots as day01_plots, memory_model  # noqa: E402
from utils.core import ptx  # noqa: E402
from utils.cuda_cpp.nvrtc import nvrtc_ptx  # noqa: E402
from utils.core.checks import CheckFailed  # noqa: E402

@pytest.mark.parametrize("name", ["strided_read", *cuda_day01.TRANSPOSE])
def test_cuda_sources_compile_for_sm90a(name):
    text = nvrtc_ptx(cuda_day01.source(name))
    assert ptx.target(text) == "sm_90a"
    c = ptx.count(text)
    assert c["ld.global"] >= 1 and c["st.global"] >= 1
    assert (c["ld.shared"] > 0) == (name not in ("strided_read", "transpose_v0_naive"))


def test_cuda_helpers_reject_bad_input():
    with pytest.raises(ValueError, match="unknown kernel"):
        cuda_day01.source("transpose_v9")
    with pytest.raises(ValueError, match="unknown transpose"):
        cuda_day01.transpose("strided_read", np.zeros((2, 3)), np.zeros((3, 2)))
    with pytest.raises(ValueError, match=r"need x \(M, N\) and y \(N, M\)"):
        cuda_day01.transpose("transpose_v1_smem", np.zeros((2, 3)), np.zeros((2, 3)))
    with pytest.raises(ValueError, match="must stay inside x"):
        cuda_day01.strided_read(np.zeros(10), np.zeros(4), stride=4)


def test_figures_draw():
    t = np.arange(32)
    facts = memory_model.device_facts("NVIDIA H200")
    figs = [day01_plots.show_hierarchy(facts),
            day01_plots.show_roofline(700, 4000, [("add", 1 / 12, 0.3)], "label", datasheet=(989, 4800)),
            day01_plots.show_sweep([1, 2, 4], {"a": [3, 2, 1], "model": [3, 2, 1]}, "t", "x"),
            day01_plots.show_sweep([0, 1, 2], {"a": [3, 2, 1]}, "t", "x", logx=False),
            day01_plots.show_sectors({"s1": 4 * t, "s8": 32 * t}),
            day01_plots.show_banks({"row": 4 * t, "col": 128 * t})]
    assert all(f is not None for f in figs)
    import matplotlib.pyplot as plt
    plt.close("all")
    with pytest.raises(TypeError, match="device_facts"):
        day01_plots.show_hierarchy({})
    with pytest.raises(ValueError, match="one value per x"):
        day01_plots.show_sweep([1, 2], {"a": [1]}, "t", "x")
