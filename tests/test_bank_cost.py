"""utils.cuda_cpp.bank_cost: the source compiles on any machine; the helpers check their inputs."""
import pytest

from utils.cuda_cpp import bank_cost
from utils.core import ptx
from utils.cuda_cpp.nvrtc import nvrtc_ptx


def test_source_compiles_for_sm90a_with_vector_shared_loads():
    text = nvrtc_ptx(bank_cost.SOURCE)
    assert ptx.target(text) == "sm_90a"
    assert text.count("ld.volatile.shared.v4.u32") >= 8  # 8 independent reads (loops may unroll)
    assert text.count("ld.shared.v4.u32") >= 1           # the dependent read
    assert "%clock64" in text and "ld.shared.u32" not in text


@pytest.mark.parametrize("ways, fronts", [(1, 4), (2, 8), (4, 16), (8, 32)])
def test_wavefronts(ways, fronts):
    assert bank_cost.wavefronts(ways) == fronts


@pytest.mark.parametrize("ways", [0, 3, 16, "8", 8.0, True])
def test_bad_ways(ways):
    with pytest.raises(ValueError, match="ways must be one of"):
        bank_cost.wavefronts(ways)


def test_fit_line_recovers_a_line_and_rejects_bad_input():
    a, b = bank_cost.fit_line([4, 8, 16, 32], [51, 59, 75, 107])
    assert a == pytest.approx(43, abs=0.5) and b == pytest.approx(2, abs=0.05)
    for xs, ys in [([1], [2]), ([1, 1], [2, 3]), ([1, 2], [3])]:
        with pytest.raises(ValueError, match="at least two points"):
            bank_cost.fit_line(xs, ys)
