"""utils.core.reset: a fresh exercise copy, the learner's copy kept byte for byte, bad paths refused.

Every test works on a temporary copy of the repository's notebooks, never on the day folders.
"""
import datetime as dt
import json
import pathlib
import shutil

import nbformat
import pytest

from utils.core import exercises, reset

ROOT = pathlib.Path(__file__).resolve().parent.parent
NB = "day05_tma/01_tma_concepts.ipynb"
NOW = dt.datetime(2026, 11, 22, 9, 30, 15)


@pytest.fixture
def repo(tmp_path):
    """A copy of solutions/, the exercise notebooks and course/ under tmp_path."""
    shutil.copytree(ROOT / "solutions", tmp_path / "solutions")
    shutil.copytree(ROOT / "course", tmp_path / "course")
    for _, ex in exercises.pairs(ROOT):
        dst = tmp_path / ex.relative_to(ROOT)
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ex, dst)
    exercises.generate(tmp_path)  # in sync with the copied solutions (CI checks the real ones)
    return tmp_path


def learner_edit(path):
    """What a learner's session leaves: an edited cell, outputs, an execution count."""
    doc = json.loads(path.read_text())
    code = next(c for c in doc["cells"] if c["cell_type"] == "code")
    code["source"] = "my_answer = 42  # the learner's work"
    code["execution_count"] = 7
    code["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["done\n"]}]
    path.write_text(json.dumps(doc, indent=1))
    return path.read_bytes()


def test_fresh_copy_equals_generated_exercise_and_backup_is_byte_for_byte(repo):
    path = repo / NB
    mine = learner_edit(path)
    saved = reset.reset(path, root=repo, now=NOW)
    assert saved == repo / "day05_tma/01_tma_concepts.backup-20261122-093015.ipynb"
    assert saved.read_bytes() == mine
    sol = nbformat.read(repo / "solutions" / NB, as_version=4)
    assert path.read_text() == exercises.render(exercises.make_exercise(sol))
    assert path.stat().st_mode & 0o777 == saved.stat().st_mode & 0o777


def test_two_resets_in_the_same_second_keep_both_backups(repo):
    path = repo / NB
    first = learner_edit(path)
    a = reset.reset(path, root=repo, now=NOW)
    path.write_text(path.read_text().replace("not attempted yet", "second try"))
    second = path.read_bytes()
    b = reset.reset(path, root=repo, now=NOW)
    assert a != b and b.name == "01_tma_concepts.backup-20261122-093015-2.ipynb"
    assert a.read_bytes() == first and b.read_bytes() == second


def test_an_unchanged_notebook_is_left_alone(repo):
    before = sorted(p.name for p in (repo / "day05_tma").iterdir())
    assert reset.reset(repo / NB, root=repo, now=NOW) is None
    assert sorted(p.name for p in (repo / "day05_tma").iterdir()) == before


def test_cli_one_and_all(repo, capsys):
    learner_edit(repo / NB)
    (repo / "day01_memory_basics/02_coalescing.ipynb").unlink()
    assert reset.main([str(repo / NB)], root=repo) == 0
    out = capsys.readouterr().out
    assert "saved as day05_tma/01_tma_concepts.backup-" in out and "Reload Notebook from Disk" in out
    learner_edit(repo / NB)
    assert reset.main(["--all"], root=repo) == 0
    out = capsys.readouterr().out
    untouched = len(list(exercises.pairs(repo))) - 2  # all but the edited and the missing one
    assert out.count("already the fresh copy") == untouched
    assert "02_coalescing.ipynb: was missing" in out
    assert len(list((repo / "day05_tma").glob("*.backup-*.ipynb"))) == 2
    assert not exercises.generate(repo, check=True), "every exercise is fresh again"


@pytest.mark.parametrize("arg,why", [
    ("solutions/day05_tma/01_tma_concepts.ipynb", "solution notebooks are the source"),
    ("course/00_welcome.ipynb", "not an exercise notebook"),
    ("day05_tma/01_tma_concept.ipynb", "did you mean day05_tma/01_tma_concepts.ipynb"),
    ("nothing/here.ipynb", "no such exercise notebook"),
    ("day05_tma/01_tma_concepts.backup-20261122-093015.ipynb", "that is a backup"),
])
def test_bad_paths_refused(repo, capsys, arg, why):
    (repo / "day05_tma/01_tma_concepts.backup-20261122-093015.ipynb").write_text("{}")
    before = {p: p.read_bytes() for p in repo.rglob("*.ipynb")}
    with pytest.raises(ValueError, match=why):
        reset.resolve(arg, root=repo)
    assert reset.main([arg], root=repo) == 2
    assert why in capsys.readouterr().err
    assert {p: p.read_bytes() for p in repo.rglob("*.ipynb")} == before, "nothing touched"
