"""utils.core.recorded: rows of another notebook's recording, or of every recorded GPU, by name;
the names the notebooks ask for are the ones the producing code writes."""
import json

import pytest

from utils.core import results
from utils.core import recorded


def test_the_null_rows_day1_shows_are_day5s():
    from utils.day05.copy_measure import MEMCPY_AGAIN
    names = (MEMCPY_AGAIN, MEMCPY_AGAIN + ", turns alternating")
    per_device = recorded.by_device("05_gemm_ladder_copy", names)
    assert len(per_device) >= 2 and list(per_device) == sorted(per_device)
    for rows in per_device.values():
        assert set(rows) == set(names) and all(r["ratio_lo"] is not None for r in rows.values())
    nb = json.loads((results.ROOT / "solutions/day01_memory_basics/01_hierarchy_bandwidth.ipynb").read_text())
    assert any(all(n in "".join(c["source"]) for n in names) for c in nb["cells"])


def test_one_device_picks_the_gpu_or_falls_back_to_the_latest(monkeypatch):
    monkeypatch.delenv("COURSE_RESULTS_DEVICE", raising=False)
    names = ("chase ld.global.ca, 262144 KiB",)
    rows, label = recorded.one_device("01_latency_littles_law", names, "H100")
    assert label.startswith("recorded on NVIDIA H100") and set(rows) == set(names)
    rows, label = recorded.one_device("01_latency_littles_law", names, "NVIDIA B200")   # never recorded it
    latest = max(results.documents("01_latency_littles_law"), key=lambda d: d["date"])
    assert label.startswith(f"recorded on {latest['device']}")


def test_a_missing_row_is_named():
    with pytest.raises(KeyError, match="expected one row named 'no such row'"):
        recorded.by_device("01_latency_littles_law", ("no such row",))
    with pytest.raises(KeyError, match="no such row"):
        recorded.one_device("01_latency_littles_law", ("no such row",))


@pytest.mark.parametrize("names", ["torch copy (memcpy)", (), None])
def test_names_must_be_a_tuple(names):
    with pytest.raises(TypeError, match="names must be a non-empty tuple"):
        recorded.by_device("01_latency_littles_law", names)


def test_no_recording_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    with pytest.raises(FileNotFoundError, match="no recording of '01_latency_littles_law'"):
        recorded.by_device("01_latency_littles_law", ("x",))
