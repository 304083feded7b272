"""The debugging lab (day05_tma/08_below_ptx): the broken kernels compile for sm_90a on any machine
and differ from the correct kernel in the instruction each bug is about; the exercise check accepts
the right answers and rejects every planted wrong one; bad input gets a clear error."""
import json
import pathlib

import pytest

from utils.core.checks import CheckFailed
from utils.tma import lab, lab_checks, lab_run

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_kernel_compiles_for_sm_90a():
    text = lab.ptx()
    assert ".target sm_90a" in text
    for name in lab.KERNELS:
        assert f".entry {name}(" in text
        assert lab.instructions(name), name


def _has(lines, sign, *tokens):
    return any(s.startswith(sign) and all(t in s for t in tokens) for s in lines)


def test_each_section_kernel_differs_in_its_instruction():
    """Token checks, not whole lines: NVRTC releases (13.0 on the GPU machine, 13.5 here) order
    and fold instructions differently."""
    d = {name: lab.diff(name) for name in lab.SECTIONS}
    assert lab.diff("lab_fixed") == []
    assert _has(d["lab_hang"], "+", "%ntid.x")                         # mbarrier.init count
    assert _has(d["lab_expect_tx"], "-", "2048") and _has(d["lab_expect_tx"], "+", "512")
    assert _has(d["lab_phase"], "-", "and.b32")                        # parity it & 1 is gone
    assert _has(d["lab_fence"], "-", "fence.proxy.async") and _has(d["lab_fence"], "+", "membar.cta")
    assert any("-16" in s for s in d["lab_negative"])
    assert _has(d["lab_misaligned"], "-", "128") and _has(d["lab_misaligned"], "+", "16")


def test_sass_differs_too():
    assert _has(lab.diff("lab_expect_tx", "sass"), "+", "0x200")
    fence = lab.diff("lab_fence", "sass")
    assert _has(fence, "-", "FENCE.VIEW.ASYNC") and _has(fence, "+", "MEMBAR")
    assert any("c[0x0][0x0]" in s for s in lab.diff("lab_hang", "sass"))


def test_fence_gap_finds_the_unfenced_kernels_only():
    gapped = {name for name in lab.KERNELS if lab.fence_gap(name)}
    assert gapped == {"lab_fence", "lab_mystery_4", "lab_mystery_7"}
    path = lab.fence_gap("lab_fence")
    assert path[0].startswith("st.shared") and path[-1].startswith("cp.async.bulk.tensor")


def test_each_mystery_changes_one_line_of_the_fixed_kernel():
    fixed = lab.source("lab_fixed").splitlines()
    for name in lab.MYSTERIES:
        mine = lab.source(name).splitlines()
        changed = [i + 1 for i, (a, b) in enumerate(zip(fixed, mine)) if a.split("//")[0].strip().replace(
            "lab_fixed", name) != b.split("//")[0].strip()]
        assert len(mine) == len(fixed) and lab_checks.bug_line(name) in changed, (name, changed)
        assert lab.diff(name), name


@pytest.mark.parametrize("name", lab.MYSTERIES)
def test_check_bug_accepts_the_answer_and_rejects_planted_wrong_ones(name, capsys):
    line, diag = lab_checks.bug_line(name), lab_checks.ANSWERS[name][0]
    lab_checks.check_bug(name, {"line": line, "diagnosis": diag})
    assert "correct" in capsys.readouterr().out
    lab_checks.check_bug(name, {"line": line, "diagnosis": "  " + diag.upper() + " "})  # spelling
    n_lines = len(lab.source(name).splitlines())
    for other in range(1, n_lines + 1):
        if other != line:
            with pytest.raises(CheckFailed, match="not where it lives"):
                lab_checks.check_bug(name, {"line": other, "diagnosis": diag})
    for wrong in lab_checks.DIAGNOSES:
        if wrong != diag:
            with pytest.raises(CheckFailed, match="is not this kernel's bug") as err:
                lab_checks.check_bug(name, {"line": line, "diagnosis": wrong})
            assert "hint:" in str(err.value)


@pytest.mark.parametrize("answer, match", [
    ({"line": None, "diagnosis": "?"}, None),                       # the stub: not attempted
    ({"line": "14", "diagnosis": "phase"}, "line must be an int"),
    ({"line": True, "diagnosis": "phase"}, "line must be an int"),
    ({"line": 14.0, "diagnosis": "phase"}, "line must be an int"),
    ({"line": 0, "diagnosis": "phase"}, "line must be an int from 1"),
    ({"line": 99, "diagnosis": "phase"}, "line must be an int from 1"),
    ({"line": 14, "diagnosis": "parity"}, "is not one of"),
    ({"line": 14, "diagnosis": None}, "is not one of"),
    ({"line": 14}, "expected a dict"),
    ((14, "phase"), "expected a dict"),
])
def test_check_bug_explains_malformed_answers(answer, match, capsys):
    if match is None:
        lab_checks.check_bug("lab_mystery_1", answer)
        assert "not attempted" in capsys.readouterr().out
    else:
        with pytest.raises(CheckFailed, match=match):
            lab_checks.check_bug("lab_mystery_1", answer)


def test_bad_inputs_raise_clear_errors():
    with pytest.raises(ValueError, match="no lab kernel named 'nope'"):
        lab.source("nope")
    with pytest.raises(ValueError, match="no lab kernel named"):
        lab_run.run("tma_copy_tile")                  # a teaching kernel, not a lab kernel
    with pytest.raises(ValueError, match="level must be"):
        lab.diff("lab_hang", "cubin")
    with pytest.raises(ValueError, match="runs must be"):
        lab_run.run("lab_hang", runs=0)
    with pytest.raises(ValueError, match="tool must be one of"):
        lab_run.sanitize("lab_hang", "valgrind")
    with pytest.raises(ValueError, match="no exercise for kernel"):
        lab_checks.check_bug("lab_hang", {"line": 6, "diagnosis": "arrival count"})


def test_describe_reads_reports_and_rows():
    row = {"exit_status": 1, "cuda_error": "CUDARuntimeError: cudaErrorIllegalInstruction", "killed": False,
           "wait_timed_out": False, "elements": 0}
    assert "exit status 1" in lab_run.describe(row) and "IllegalInstruction" in lab_run.describe(row)
    assert "real hang" in lab_run.describe({"killed": True})
    san = {"sanitizer": {"memcheck": {"errors": 3, "findings": ["Program hit X on cuGetProcAddress_v2.",
                                                                 "Invalid __shared__ write"], "cuda_error": None}}}
    lines = lab_run.sanitizer_lines(san)
    assert lines[0].startswith("compute-sanitizer --tool memcheck: 3 errors")
    assert "Invalid __shared__ write" in lines[0] and "cuGetProcAddress" not in lines[0]


def test_recorded_symptoms_are_what_the_notebook_teaches():
    """The H200 recording holds every lab kernel's report, and the report says what the notebook says."""
    doc = json.loads((ROOT / "results" / "nvidia-h200" / "08_below_ptx.json").read_text())
    rows = {r["name"]: r for r in doc["rows"]}
    assert set(lab.SECTIONS + lab.MYSTERIES) <= set(rows)
    for name in ("lab_hang", "lab_expect_tx", "lab_mystery_3", "lab_mystery_6"):
        assert rows[name]["wait_timed_out"] and rows[name]["cuda_error"] is None
    for name in ("lab_negative", "lab_mystery_2"):
        assert "illegal instruction" in rows[name]["cuda_error"]
    for name in ("lab_misaligned", "lab_mystery_5"):
        assert "misaligned address" in rows[name]["cuda_error"]
    for name in ("lab_phase", "lab_mystery_1"):
        assert rows[name]["wrong"] > 0 and not rows[name]["wait_timed_out"]
    for name in ("lab_fence", "lab_mystery_4"):
        assert rows[name]["wrong"] == 0 and rows[name]["runs"] == 10


def test_child_reports_instead_of_crashing_without_a_gpu():
    """Without a usable GPU the child still answers with one JSON line (a CUDA error), never a hang."""
    from utils.core.tier import detect
    if detect().has_gpu:
        pytest.skip("this machine has a GPU; the notebook runs the kernels for real")
    rep = lab_run.run("lab_fixed", runs=1, timeout_s=120)
    assert rep["kernel"] == "lab_fixed" and not rep["killed"]
    assert rep["exit_status"] != 0 and rep["cuda_error"]


def test_broken_kernels_are_lab_fixed_with_their_edited_lines_only():
    fixed = lab.source(lab.FIXED).splitlines()
    for name, edits in lab.EDITS.items():
        lines = lab.source(name).splitlines()
        assert len(lines) == len(fixed), name
        changed = {i for i, (a, b) in enumerate(zip(fixed, lines), 1) if a != b and i > 2}
        assert changed == set(edits), (name, changed)


def test_an_edit_that_changes_nothing_is_refused(monkeypatch):
    monkeypatch.setitem(lab.EDITS, "lab_hang", {6: "  if (threadIdx.x == 0) mbar_init(bar, 1);"})
    with pytest.raises(ValueError, match="changes nothing"):
        lab._broken("lab_hang")
