"""The fidelity recording's code paths (utils.emu.fidelity, utils.emu.gpu_agreement) on a machine
without a GPU: the one-command recording refuses clearly; its rows are built right from a GPU report
and the emulator's (here a planted GPU report); the notebook's table reads a recording when one
exists and says "not recorded yet" otherwise; the emulator's findings read as the lab teaches."""
import json
import subprocess
import sys

import numpy as np
import pytest

from utils.core import tier
from utils.emu import course, fidelity
from utils.emu import gpu_agreement as ga
from utils.tma import lab, lab_run

ROOT = __import__("pathlib").Path(__file__).resolve().parents[1]
NO_GPU = not tier.detect().has_gpu


@pytest.mark.skipif(not NO_GPU, reason="this machine has a GPU: the command would record")
def test_record_refuses_without_a_gpu():
    p = subprocess.run([sys.executable, "-m", "utils.emu.gpu_agreement", "--record"], cwd=ROOT,
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 1 and "needs" not in p.stdout
    assert "Hopper GPU" in p.stderr and "nothing was run or recorded" in p.stderr
    with pytest.raises(SystemExit, match="tier cpu"):
        ga.require_hopper(tier.detect("cpu"))
    assert ga.main([]) == 2                                       # no --record: the help, nothing run


def _gpu_report(kind):
    """A lab_run report as a GPU child would give it, for each symptom kind."""
    base = {"cuda_error": None, "wait_timed_out": False, "killed": False, "wrong": 0, "runs": 1}
    return dict(base, **{"none": {}, "hang": {"wait_timed_out": True, "wrong": 4000},
                         "wrong": {"wrong": 17},
                         "illegal": {"cuda_error": "CUDARuntimeError: cudaErrorIllegalInstruction", "runs": 0},
                         "misaligned": {"cuda_error": "CUDARuntimeError: cudaErrorMisalignedAddress"}}[kind])


@pytest.mark.parametrize("name, kind", [("lab_fixed", "none"), ("lab_hang", "hang"), ("lab_phase", "wrong"),
                                        ("lab_fence", "none"), ("lab_negative", "illegal"),
                                        ("lab_misaligned", "misaligned"), (lab.PAIR, "hang")])
def test_lab_rows_match_when_the_emulator_shows_the_symptom_or_a_stricter_one(name, kind):
    x = lab_run.lab_input(course.LAB_SHAPE, 3)
    emu_rep, emu_y = ga.emulate_lab(name, x)
    gpu_y = None if kind in ("illegal", "misaligned") else (2 * x if kind == "none" else emu_y)
    row = ga.lab_row(name, _gpu_report(kind), gpu_y, emu_rep, emu_y, seed=3)
    assert row["match"], row
    assert row["part"] == "lab" and row["gpu"] == kind and row["metric"] == "bytes" and row["value"] == x.nbytes
    if name == "lab_fixed":
        assert row["emulator"] == "ok" and row["differing_bytes"] == 0
    if gpu_y is None:
        assert row["differing_bytes"] is None
    from utils.core.results import validate_rows
    validate_rows([row])


def test_lab_rows_mismatch_when_the_emulator_misses_the_symptom_or_the_bytes_differ():
    x = lab_run.lab_input(course.LAB_SHAPE, 0)
    rep, y = ga.emulate_lab("lab_fixed", x)
    assert not ga.lab_row("lab_fixed", _gpu_report("hang"), y, rep, y)["match"]        # GPU hung, emulator ok
    off = (2 * x).copy()
    off[0, 0] += 1
    row = ga.lab_row("lab_fixed", _gpu_report("none"), off, rep, y)
    assert not row["match"] and 1 <= row["differing_bytes"] <= 4
    rep, y = ga.emulate_lab("lab_fence", x)
    assert not ga.lab_row("lab_fence", _gpu_report("hang"), None, rep, y)["match"]   # a race is not a hang
    failed = dict(_gpu_report("none"), cuda_error="CUDARuntimeError: cudaErrorInsufficientDriver", runs=0)
    row = ga.lab_row("lab_fence", failed, None, rep, y)
    assert row["gpu"] == "error" and not row["match"]                                 # no GPU run, no agreement


def test_emulate_lab_leaves_what_a_gpu_would():
    x = lab_run.lab_input(course.LAB_SHAPE, 1)
    assert np.array_equal(x, lab_run.lab_input(course.LAB_SHAPE, 1))                   # the child's input too
    rep, y = ga.emulate_lab("lab_fixed", x)
    assert rep["error"] is None and np.array_equal(y, 2 * x)
    rep, y = ga.emulate_lab("lab_hang", x)
    assert rep["wait_timed_out"] and np.isnan(y).all()


def test_kernel_rows():
    a = np.arange(8, dtype=np.uint8)
    assert ga.kernel_row("tma_copy_tile", a, a.copy())["match"]
    b = a.copy()
    b[3] = 0
    row = ga.kernel_row("tma_copy_tile", a, b)
    assert not row["match"] and row["differing_bytes"] == 1
    row = ga.kernel_row("tma_copy_tile", None, a, gpu_exc=RuntimeError("boom\nmore"))
    assert not row["match"] and row["gpu"] == "RuntimeError: boom" and row["differing_bytes"] is None


def test_recording_table_says_not_recorded_yet_then_reads_a_recording(tmp_path, monkeypatch):
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    assert "not recorded yet" in fidelity.recording_table() and fidelity.recorded_mismatches() == []
    a = np.zeros(4, np.uint8)
    rows = [ga.kernel_row("mbar_phases", a, a), ga.kernel_row("tma_store_box", a, a + 1)]
    doc = {"device": "NVIDIA H100 80GB HBM3", "date": "2026-11-28T10:00:00+00:00", "rows": rows,
           "command": fidelity.RECORD}
    (tmp_path / "nvidia-h100-80gb-hbm3").mkdir()
    (tmp_path / "nvidia-h100-80gb-hbm3" / f"{fidelity.STEM}.json").write_text(json.dumps(doc))
    text = fidelity.recording_table()
    assert "recorded on NVIDIA H100 80GB HBM3, 2026-11-28" in text and "differing bytes" in text
    assert "mbar_phases" in text and "NO" in text
    assert fidelity.recorded_mismatches() == [("NVIDIA H100 80GB HBM3", "tma_store_box")]


def test_the_stem_belongs_to_notebook_08():
    from utils.core import gallery
    assert gallery.source(fidelity.STEM) == "day05_tma/08_below_ptx"


def test_details_and_classes_read_as_the_lab_teaches():
    hang = course.lab_report("lab_hang")
    assert fidelity.detail(hang).startswith("deadlock") and "127 of 128 arrivals pending" in fidelity.detail(hang)
    phase = fidelity.detail(course.lab_report("lab_phase"))
    assert phase.startswith("RaceError") and "PTX line" not in phase
    assert fidelity.symptom_class("lab_mystery_5") == "a misaligned address"
    assert set(fidelity.CLASSES) >= {k for v in fidelity.AGREES.values() for k in v}
    rows = fidelity.lab_table((lab.FIXED, lab.PAIR))
    text = fidelity.format_table(rows, details=True)
    assert text.startswith("emulator vs recorded GPU symptoms") and "    emulator: deadlock" in text


def test_record_end_to_end_with_the_emulator_standing_in_for_the_gpu(tmp_path, monkeypatch, capsys):
    """The whole --record path on a CPU: the GPU launchers replaced by the emulator's, the lab's
    subprocess by an emulated run that saves its output as the child does; the file it writes is a
    valid recording that the notebook's table reads, every row matching."""
    from utils.core import results
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    monkeypatch.setattr(ga, "require_hopper", lambda tier=None: None)
    monkeypatch.setattr(ga, "_gpu", ga._emu)
    monkeypatch.setattr(results, "machine", lambda: {"device": "Fake GPU", "date": "2026-11-28T00:00:00+00:00"})

    crash = {"TmaRuleError": "cudaErrorIllegalInstruction", "MisalignedAddress": "cudaErrorMisalignedAddress"}

    def fake_run(name, runs, shape, grid, seed, save, timeout_s):
        rep, y = ga.emulate_lab(name, lab_run.lab_input(shape, seed), seed)
        if rep["error"] in crash:        # the context is lost: the child saves nothing
            return {"kernel": name, "runs": 0, "cuda_error": f"CUDARuntimeError: {crash[rep['error']]}"}
        np.save(save, y)
        return {"kernel": name, "runs": 1, "cuda_error": None, "killed": False,
                "wait_timed_out": rep["wait_timed_out"], "wrong": rep["wrong"]}
    monkeypatch.setattr(lab_run, "run", fake_run)
    path = ga.record(seed=2)
    doc = json.loads(open(path).read())
    assert path.endswith(f"fake-gpu/{fidelity.STEM}.json") and doc["command"] == fidelity.RECORD + " --seed 2"
    names = [r["name"] for r in doc["rows"]]
    assert names == list(ga.CASES) + list(lab.KERNELS)
    assert all(r["differing_bytes"] == 0 for r in doc["rows"] if r["part"] == "kernel")
    # the stand-in "GPU" shows a race as wrong values or none, a rule as a lost context: all agree
    assert fidelity.recorded_mismatches() == [], [r for r in doc["rows"] if not r["match"]]
    assert "recorded on Fake GPU, 2026-11-28" in fidelity.recording_table()
    assert "rows match; saved" in capsys.readouterr().out
