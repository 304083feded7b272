"""The CPU side of utils.day05.skinny_cluster (lab report 06b): one change per step, the shape
rule every door applies before a GPU is asked anything, and the steps' names against the
recording's rows."""
import pytest

pytest.importorskip("torch")
from utils.day05 import skinny_cluster as sc, skinny_measure as sm  # noqa: E402


def test_each_step_changes_one_thing():
    keys = list(sc.STEPS.values())
    assert keys[0] == {"cluster": (1, 1)}
    assert keys[1] == {"cluster": (2, 1), "multicast": False}     # the cluster alone
    assert keys[2] == {"cluster": (2, 1)}                          # + multicast (WsGemm's default)
    assert [sc.CHANGES[n][0] for n in sc.STEPS] == [sc.CUBLAS_NK, *list(sc.STEPS)[:-1]]
    assert sc.MULTICAST == list(sc.STEPS)[-1] and sc.MULTICAST in sc.CLOCK_NAMES


def test_the_tile_is_one_the_kernel_builds():
    from utils.cute_dsl.gemm import check_tile
    assert check_tile(sc.TILE) == sc.TILE


@pytest.mark.parametrize("shape", [(128, 8192, 8192), (320, 8192, 8192), (256, 8000, 8192), (256, 8192, 4),
                                   (0, 8192, 8192)])
def test_shapes_the_cluster_cannot_tile_are_refused(shape):
    with pytest.raises(ValueError, match="multiple of"):
        sc._check_shape(shape)


def test_the_shapes_it_measures_pass():
    assert sc._check_shape(sc.SHAPE) == sc.SHAPE
    assert sc._check_shape((512, 4096, 1024)) == (512, 4096, 1024)


def test_unknown_step_is_refused_before_the_gpu():
    with pytest.raises(ValueError, match="unknown step"):
        sc.run_step(None, None, None, "+ B multicast")


@pytest.mark.parametrize("seconds", [0, 0.5, True, "2"])
def test_clock_window_is_checked_first(seconds):
    with pytest.raises(ValueError, match="seconds must be >= 1"):
        sc.measure_clocks(seconds=seconds)


def test_clock_names_are_rows_of_the_cluster_part():
    assert set(sc.CLOCK_NAMES) <= {sm.CUBLAS, sc.CUBLAS_NK, sm.NARROW, *sc.STEPS}


def test_row_names_of_the_three_parts_never_collide():
    names = [*sc.NAMES, *map(sc.clock_row, sc.CLOCK_NAMES), *map(sc.counter_row, sc.COUNTER_NAMES)]
    assert len(names) == len(set(names))
    assert set(sc.COUNTER_NAMES) == {sc.CUBLAS_NK, *sc.STEPS}
