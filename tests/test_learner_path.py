"""A learner's path, end to end, on a copy of the course: fill in an answer, run the README's test
command, run whatever the course suggests (regenerate, reset); the answer survives every step.
Read-only folders and a corrupt solution end in a clear message, not a traceback."""
import json
import os
import pathlib
import shutil
import subprocess
import sys

import pytest

from utils.core import exercises, shipped

ROOT = pathlib.Path(__file__).resolve().parent.parent
NB = "day05_tma/01_tma_concepts.ipynb"
ANSWER_CELL = "def warp_instructions_per_tile(rows, cols, elem_bytes, vector_bytes=16):"


@pytest.fixture
def course(tmp_path):
    """A copy of what the test command needs: utils/, the notebook tests, every notebook."""
    for folder in (*shipped.FOLDERS, "utils", "results"):
        shutil.copytree(ROOT / folder, tmp_path / folder,
                        ignore=shutil.ignore_patterns("__pycache__", "*.backup-*", ".ipynb_checkpoints"))
    (tmp_path / "tests").mkdir()
    shutil.copy2(ROOT / "tests/test_notebooks.py", tmp_path / "tests")
    for f in ("course.sh", "pyproject.toml", "requirements.txt", "requirements-gpu.txt", "requirements-base.txt"):
        shutil.copy2(ROOT / f, tmp_path / f)
    return tmp_path


def fill_in(path: pathlib.Path) -> bytes:
    """The solution's answer typed into the exercise cell, saved as JupyterLab saves (outputs too)."""
    sol = json.loads((path.parents[1] / "solutions" / path.parent.name / path.name).read_text())
    doc = json.loads(path.read_text())
    i = next(n for n, c in enumerate(doc["cells"]) if "".join(c["source"]).startswith(ANSWER_CELL))
    body = "".join(line for line in sol["cells"][i]["source"]
                   if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
    doc["cells"][i].update(source=body.replace("    ", "    # my answer\n    ", 1), execution_count=3,
                           outputs=[{"output_type": "stream", "name": "stdout", "text": ["[warp_instructions_per_tile] correct.\n"]}])
    path.write_text(json.dumps(doc, indent=1))
    return path.read_bytes()


def pythonpath(course) -> str:
    """The copy first, then whatever the environment already needs (e.g. a GPU machine's site)."""
    return os.pathsep.join([str(course)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p])


def run(course, *cmd):
    env = {**os.environ, "PYTHONPATH": pythonpath(course)}
    return subprocess.run(cmd, cwd=course, env=env, capture_output=True, text=True, timeout=600)


def stamp_is_current(venv) -> bool:
    """True when course.sh would NOT reinstall into ``venv`` (its stamp matches this checkout's
    requirements and pyproject): a stale stamp would make course.sh, run in a temporary copy,
    re-install the course editable from that copy into the developer's venv."""
    stamp = venv / ".course-installed"
    if not stamp.exists():
        return False
    want = subprocess.run(["bash", "-c", 'if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L >/dev/null 2>&1; '
                           'then REQ=requirements-gpu.txt; else REQ=requirements.txt; fi; '
                           'echo "$(cat "$REQ" requirements-base.txt pyproject.toml | sha256sum | cut -c1-16) $REQ"'],
                          cwd=ROOT, capture_output=True, text=True).stdout.strip()
    return stamp.read_text().strip() == want


def the_test_command(course, *args):
    """README's `bash course.sh test` where this venv is the one course.sh made, else its two steps."""
    venv = pathlib.Path(sys.prefix)
    if stamp_is_current(venv):
        env_venv = {"COURSE_VENV": str(venv)}
        p = subprocess.run(["bash", "course.sh", "test", "-q", *args], cwd=course, capture_output=True, text=True,
                           env={**os.environ, **env_venv, "PYTHONPATH": pythonpath(course)}, timeout=600)
        return p.returncode, p.stdout + p.stderr
    check = run(course, sys.executable, "-m", "utils.core.exercises", "--check")
    if check.returncode:
        return check.returncode, check.stdout + check.stderr
    p = run(course, sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *args)
    return p.returncode, check.stdout + p.stdout + p.stderr


def test_an_answer_survives_the_test_command_regenerate_and_reset(course):
    path = course / NB
    mine = fill_in(path)
    rc, out = the_test_command(course, "tests/test_notebooks.py", NB)
    assert rc == 0, out
    assert "hold your edits" in out and NB in out
    assert path.read_bytes() == mine, "the test command left the learner's notebook as it was"

    # a developer's regenerate, run by the learner: the solution is unchanged, so theirs is kept
    p = run(course, sys.executable, "-m", "utils.core.exercises")
    assert p.returncode == 0 and f"kept: {NB}" in p.stdout, p.stdout + p.stderr
    assert path.read_bytes() == mine

    # the solution changes (a course update), then regenerate: the learner's copy is backed up first
    sol = course / "solutions" / NB
    sol.write_text(sol.read_text().replace("What you'll learn", "What you will learn", 1))
    p = run(course, sys.executable, "-m", "utils.core.exercises")
    assert p.returncode == 0 and "backed up" in p.stdout, p.stdout + p.stderr
    backups = list(path.parent.glob("01_tma_concepts.backup-*.ipynb"))
    assert [b.read_bytes() for b in backups] == [mine]

    # reset: a fresh copy, theirs kept again
    fill_in(path)
    again = path.read_bytes()
    p = run(course, sys.executable, "-m", "utils.core.reset", NB)
    assert p.returncode == 0 and "saved as" in p.stdout, p.stdout + p.stderr
    assert again in [b.read_bytes() for b in path.parent.glob("01_tma_concepts.backup-*.ipynb")]


def test_drift_is_reported_without_destructive_advice(course):
    fill_in(course / NB)
    sol = course / "solutions" / "day05_tma/02_descriptors_cupy.ipynb"
    sol.write_text(sol.read_text().replace("What you'll learn", "What you will learn", 1))
    # the manifest still lists the old solution: the course's files disagree (a developer forgot to regenerate)
    entries = shipped.read_manifest(course)
    entries["solutions/day05_tma/02_descriptors_cupy.ipynb"] = shipped.digest(sol.read_bytes())
    shipped.write_manifest(entries, course)
    p = run(course, sys.executable, "-m", "utils.core.exercises", "--check")
    assert p.returncode == 1
    assert "your answers did not cause this and nothing was changed" in p.stdout
    assert "02_descriptors_cupy.ipynb: solutions/ changed" in p.stdout
    assert "01_tma_concepts.ipynb: solutions/ changed" not in p.stdout


def test_strict_check_fails_on_any_edit(course):
    assert run(course, sys.executable, "-m", "utils.core.exercises", "--check", "--strict").returncode == 0
    fill_in(course / NB)
    p = run(course, sys.executable, "-m", "utils.core.exercises", "--check", "--strict")
    assert p.returncode == 1 and f"{NB}: differs from {shipped.MANIFEST}" in p.stdout


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root writes to read-only folders")
def test_read_only_folder_gives_a_clear_message(course):
    fill_in(course / NB)
    folder = course / "day05_tma"
    folder.chmod(0o555)
    try:
        p = run(course, sys.executable, "-m", "utils.core.reset", NB)
    finally:
        folder.chmod(0o755)
    assert p.returncode == 1 and "Traceback" not in p.stderr
    assert "read-only" in p.stderr and "your notebook was not changed" in p.stderr


def test_read_only_folder_as_root_through_the_function(course, monkeypatch):
    """The same message when the write itself fails (root ignores permission bits, so fail it)."""
    from utils.core import reset
    fill_in(course / NB)

    def refuse(*a, **k):
        raise PermissionError(13, "Permission denied")
    monkeypatch.setattr(reset.tempfile, "mkstemp", refuse)
    with pytest.raises(shipped.CourseFilesError, match="your copy is safe as 01_tma_concepts.backup-.*read-only"):
        reset.reset(course / NB, root=course)


@pytest.mark.parametrize("cmd", [("utils.core.exercises", "--check"), ("utils.core.exercises",),
                                 ("utils.core.reset", NB)])
def test_corrupt_solution_gives_a_clear_message(course, cmd):
    fill_in(course / NB)
    mine = (course / NB).read_bytes()
    (course / "solutions" / NB).write_text('{"cells": [')
    p = run(course, sys.executable, "-m", *cmd)
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "is not a valid notebook" in p.stderr and "restore it" in p.stderr
    assert (course / NB).read_bytes() == mine


def test_the_stamp_formula_is_course_sh_s():
    """stamp_is_current computes course.sh's stamp; if course.sh changes it, change both."""
    assert 'want="$(cat "$REQ" requirements-base.txt pyproject.toml | sha256sum | cut -c1-16) $REQ"' in \
        (ROOT / "course.sh").read_text()
