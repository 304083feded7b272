"""utils.day05.references: cuBLAS across the course's recordings and the two "what TMA buys" steps,
read from results/ (one device per table, never a mix)."""
import pytest

import utils

T = utils.setup(quiet=True)
from utils.day05 import references  # noqa: E402


@pytest.mark.parametrize("device", ["h100", "h200"])
def test_cublas_runs_one_device_each_notebook(device):
    runs = references.cublas_runs(device)
    assert [r["notebook"] for r in runs] == [n for _, n, _ in references.RUNS]
    assert len({r["device"] for r in runs}) == 1 and device in runs[0]["device"].lower()
    assert all(r["tflops"] > 100 for r in runs)
    assert runs[0]["harness"].startswith("timed alone") and "interleaved" in runs[1]["harness"]
    assert runs[-1]["mhz"] and not runs[1]["mhz"]          # 05 records a clock, 03 does not
    text = references.format_cublas_runs(runs)
    assert "not recorded" in text and "MHz" in text and runs[0]["device"] in text


@pytest.mark.parametrize("device", ["h100", "h200"])
def test_tma_steps_are_kernel_to_kernel_ratios(device):
    steps = references.tma_steps(device)
    assert {(s["dtype"], s["n"]) for s in steps} == {(d, n) for d in ("float16", "bfloat16") for n in (4096, 8192)}
    for s in steps:
        assert s["triton_gain"] == pytest.approx(s["triton"][1] / s["triton"][0])
        assert s["cute_gain"] == pytest.approx(s["cute"][1] / s["cute"][0])
        assert 0 < s["triton_base_ratio"] < 2 and 0 < s["cute_base_ratio"] < 2


def test_unknown_device_is_a_clear_error():
    with pytest.raises(LookupError, match="no recording"):
        references.cublas_runs("b200")
