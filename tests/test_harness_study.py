"""utils.day05.harness_study's print helpers (the lab report 05b §3): rows grouped by experiment
and repeat, the cuDNN table divided by cuDNN alone in the same repeat, a clear error for a part
the helpers do not know. measure() needs a Hopper GPU and is not run here."""
import pytest

from utils.day05 import harness_study as hs


def _row(part, ms, name=hs.CUDNN, watts=690.0):
    return {"name": name, "part": part, "ms": ms, "watts": watts}


ROWS = [_row("do_bench #0", 0.95), _row("alone #0", 1.0), _row("turns with idle spin of the sam #0", 0.9),
        _row("alone #1", 2.0, watts=None), _row("notebook 07's set, turns #1", 1.0),
        _row("do_bench #0", 1.1, name=hs.STEP4), _row("notebook 07's set, blocks #0", 1.2, name=hs.STEP4)]


def test_by_experiment_keeps_measure_order_and_repeats():
    got = hs.by_experiment(ROWS)
    assert list(got) == ["do_bench", "alone", "turns with idle spin of the sam", "notebook 07's set, turns"]
    assert got["alone"][1]["ms"] == 2.0 and set(got["alone"]) == {0, 1}
    assert set(hs.by_experiment(ROWS, hs.STEP4)) == {"do_bench", "notebook 07's set, blocks"}


def test_cudnn_table_divides_by_alone_of_the_same_repeat():
    lines = hs.format_cudnn(ROWS).splitlines()
    spin = next(line for line in lines if line.startswith("turns with an idle spin"))
    assert "0.900" in spin and "0.90" in spin.split("0.900")[1] and "690" in spin
    turns = next(line for line in lines if line.startswith("notebook 07's set, in turns"))
    assert "1.000" in turns and "0.50" in turns          # repeat #1's alone is 2.0 ms
    alone = next(line for line in lines if line.startswith("the harness, cuDNN alone"))
    assert alone.rstrip().endswith("-")                  # no power sampled in repeat #1


def test_others_table_names_missing_experiments():
    text = hs.format_others(ROWS)
    assert "1.100" in text and "1.200" in text and "torch's flash kernel" in text


def test_unknown_part_is_named():
    with pytest.raises(ValueError, match="unknown experiment 'warm-up #0'"):
        hs.by_experiment([_row("warm-up #0", 1.0)])
