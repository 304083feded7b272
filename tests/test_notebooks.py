"""Course-wide notebook rules: no stored outputs, exercises in sync with solutions, structure.

The rules on committed notebooks (no outputs, structure) apply to notebooks as shipped; a
notebook that holds a learner's edits (it differs from ``solutions/shipped.sha256``) is theirs and
is skipped with a reason, so filling in exercises never makes the test command fail. CI runs
``python -m utils.core.exercises --check --strict`` too, which requires every notebook as shipped."""
import json
import pathlib

import pytest

from utils.core import exercises, shipped

ROOT = pathlib.Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p for p in ROOT.glob("*/**/*.ipynb")
                   if ".ipynb_checkpoints" not in p.parts and not p.relative_to(ROOT).parts[0].startswith(".")
                   and ".backup-" not in p.name)  # learners' backups made by utils.core.reset
IDS = [str(p.relative_to(ROOT)) for p in NOTEBOOKS]


def cells(path):
    return json.loads(path.read_text())["cells"]


def skip_if_yours(path):
    """Skip a rule on committed notebooks for a learner's working copy."""
    if shipped.edited(path, ROOT):
        pytest.skip(f"{path.relative_to(ROOT)} holds your edits (it differs from {shipped.MANIFEST}): "
                    "rules on committed notebooks do not apply to your working copy")


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 3


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_committed_without_outputs(path):
    skip_if_yours(path)
    stored = [i for i, c in enumerate(cells(path)) if c["cell_type"] == "code"
              and (c.get("outputs") or c.get("execution_count") is not None)]
    assert not stored, f"{path.name}: cells {stored} have stored outputs; clear them before committing"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_valid_nbformat(path):
    """Valid against its declared nbformat: e.g. cell ids only from nbformat 4.5 on (JupyterLab and
    nbconvert flag the notebook otherwise)."""
    import nbformat
    nbformat.validate(nbformat.read(str(path), as_version=nbformat.NO_CONVERT))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_structure(path):
    skip_if_yours(path)
    cs = cells(path)
    text = ["".join(c["source"]) for c in cs]
    assert cs[0]["cell_type"] == "markdown" and text[0].startswith("# "), "starts with a title"
    assert "What you'll learn" in text[0]
    first_code = next(t for c, t in zip(cs, text) if c["cell_type"] == "code")
    assert "utils.setup()" in first_code, "the first code cell prints the tier"
    assert any("## Main takeaways" in t for t in text)
    long = [i for i, (c, t) in enumerate(zip(cs, text)) if c["cell_type"] == "code"
            and len(t.splitlines()) > (KERNEL_LINES if is_kernel_cell(t) else 25)]
    assert not long, f"code cells over 25 lines (a kernel's own cell: {KERNEL_LINES}): {long}"


KERNEL_LINES = 60   # STYLE.md: a kernel's cell holds only the kernel and may be as long as it, ~60 lines
KERNEL_MARKS = ("__global__", "__device__", "@triton.jit", "@cute.kernel", "@cute.jit")


def is_kernel_cell(text: str) -> bool:
    """A cell that holds a kernel: CUDA C++ source, a @triton.jit or a CuteDSL kernel function."""
    return any(mark in text for mark in KERNEL_MARKS)


@pytest.mark.parametrize("text, kernel", [
    ('SRC = r"""\nextern "C" __global__ void k() {}\n"""', True), ("@triton.jit\ndef k(x): pass", True),
    ("@cute.kernel\ndef k(): pass", True), ("x = 1\nprint(x)", False)])
def test_kernel_cells_are_recognised(text, kernel):
    assert is_kernel_cell(text) is kernel


def test_exercises_match_solutions():
    """Drift, judged from solutions/ and the manifest alone (a learner's answers cannot fail it)."""
    stale, _ = exercises.drift()
    assert not stale, (f"solutions/ changed after these exercises were generated: {stale}. Developers: "
                       "`python -m utils.core.exercises` (backs up any exercise that holds edits)")


def test_manifest_lists_every_solution_and_exercise():
    """(A notebook a learner adds is not listed, and is theirs; --strict in CI checks the rest.)"""
    listed = set(shipped.read_manifest(ROOT))
    want = {shipped.rel(p, ROOT) for pair in exercises.pairs(ROOT) for p in pair}
    assert want <= listed, (f"{shipped.MANIFEST} does not list {sorted(want - listed)}: "
                            "developers run `python -m utils.core.exercises`")


def test_every_solution_has_an_exercise_with_stubs():
    pairs = list(exercises.pairs())
    assert pairs
    for sol, ex in pairs:
        assert ex.exists(), ex
        assert "BEGIN SOLUTION" not in ex.read_text()
        assert "### BEGIN SOLUTION" in sol.read_text(), f"{sol} has no exercise"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=IDS)
def test_cell_ids_all_or_none(path):
    """A notebook of nbformat 4.5+ gives every cell an id, or none does: a cell without one gets a
    random id from Jupyter, so the generated exercise copy would differ at every run (and back
    the learner's copy up each time)."""
    cs = cells(path)
    with_id = [i for i, c in enumerate(cs) if "id" in c]
    assert not with_id or len(with_id) == len(cs), \
        f"cells without an id: {[i for i, c in enumerate(cs) if 'id' not in c]} (give each a fixed id)"
