"""Give a learner a fresh copy of an exercise notebook, keeping theirs as a backup.

Usage, from the repository root::

    python -m utils.core.reset day05_tma/01_tma_concepts.ipynb    # one notebook
    python -m utils.core.reset --all                             # every exercise notebook

The fresh copy is generated from the solution notebook with ``utils.core.exercises.make_exercise``,
exactly as CI generates the committed exercises (so it equals them), but without needing git:
it works from a zip download, and after a learner has committed their own edits (where
``git checkout`` of HEAD would give back their edits, not the exercise).

The learner's copy is first saved next to it as ``<stem>.backup-YYYYmmdd-HHMMSS.ipynb``
(``-2``, ``-3`` ... appended if that name exists; a backup is never overwritten), then the
notebook is replaced atomically. A copy identical to the fresh one is left alone.
"""
from __future__ import annotations

import datetime as _dt
import difflib
import os
import pathlib
import sys
import tempfile

from . import exercises, shipped

ROOT = exercises.ROOT
BACKUP_MARK = shipped.BACKUP_MARK
backup, backup_name = shipped.backup, shipped.backup_name
RELOAD_ADVICE = ("If the notebook is open in JupyterLab: choose File > Reload Notebook from Disk "
                 "(or 'Revert' if JupyterLab says the file changed on disk), do not save the old "
                 "tab over it, and restart the kernel.")


def exercise_notebooks(root: pathlib.Path = ROOT) -> dict:
    """{exercise path: solution path} for every exercise notebook under ``root``."""
    return {ex.resolve(): sol for sol, ex in exercises.pairs(pathlib.Path(root))}


def resolve(arg: str, root: pathlib.Path = ROOT) -> pathlib.Path:
    """The exercise notebook that ``arg`` names (relative to the cwd or to ``root``).

    Raises ValueError saying why for anything else: a solution, another notebook, a backup,
    a typo (with the closest exercise name suggested).
    """
    root = pathlib.Path(root).resolve()
    known = exercise_notebooks(root)
    p = pathlib.Path(arg)
    for cand in ([p] if p.is_absolute() else [pathlib.Path.cwd() / p, root / p]):
        if cand.resolve() in known:
            return cand.resolve()
    names = sorted(str(e.relative_to(root)) for e in known)
    try:
        rel = (p if p.is_absolute() else root / p).resolve().relative_to(root).as_posix()
    except ValueError:
        rel = arg
    if rel.startswith("solutions/"):
        why = "solution notebooks are the source the exercises come from; reset never touches them."
    elif BACKUP_MARK in rel:
        why = "that is a backup made by reset; open it in JupyterLab to copy your work back."
    elif (root / rel).exists() or pathlib.Path(arg).exists():
        why = "not an exercise notebook (only the day folders' notebooks with a solution are)."
    else:
        close = difflib.get_close_matches(rel, names, n=1, cutoff=0.5)
        why = "no such exercise notebook" + (f" (did you mean {close[0]}?)" if close else "")
    raise ValueError(f"refusing to reset {arg!r}: {why}\nExercise notebooks: {', '.join(names)}")


def fresh_text(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """The exercise notebook ``path`` as generated from its solution (a clear
    :class:`~utils.core.shipped.CourseFilesError` if the solution is unreadable)."""
    sol = exercise_notebooks(root)[pathlib.Path(path).resolve()]
    return exercises.render(exercises.make_exercise(exercises.read_solution(sol)))


def reset(path: pathlib.Path, root: pathlib.Path = ROOT, now: _dt.datetime | None = None):
    """Back up and replace one exercise notebook. Returns the backup path, or None when the
    notebook was already fresh (nothing to save) or missing (just written)."""
    path = pathlib.Path(path).resolve()
    text, saved = fresh_text(path, root), None
    try:
        if path.exists():
            if path.read_bytes() == text.encode():
                return None
            saved = backup(path, now)
        mode = path.stat().st_mode & 0o777 if path.exists() else 0o644
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.stem}.", suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        os.chmod(tmp, mode)  # mkstemp makes 0600 files; keep the notebook's own permissions
        os.replace(tmp, path)  # atomic: an open JupyterLab tab never sees a half-written file
    except OSError as exc:
        kept = f"; your copy is safe as {saved.name}" if saved else "; your notebook was not changed"
        raise shipped.CourseFilesError(
            f"cannot write in {path.parent} ({exc.strerror or exc}){kept}. Is the folder read-only? "
            "Work in a copy of the course that you can write to.") from exc
    return saved


def main(argv: list | None = None, root: pathlib.Path = ROOT) -> int:
    """Command line: reset the notebooks named in ``argv`` (or ``--all``); print what was done."""
    args = sys.argv[1:] if argv is None else list(argv)
    root = pathlib.Path(root).resolve()
    if not args or args in (["-h"], ["--help"]):
        print("usage: python -m utils.core.reset NOTEBOOK.ipynb [...]  |  python -m utils.core.reset --all",
              file=sys.stderr)
        return 2
    try:
        paths = sorted(exercise_notebooks(root)) if args == ["--all"] else [resolve(a, root) for a in args]
    except ValueError as e:
        print(e, file=sys.stderr)
        return 2
    replaced = 0
    for path in paths:
        rel = path.relative_to(root)
        existed = path.exists()
        try:
            saved = reset(path, root)
        except shipped.CourseFilesError as exc:
            print(f"{rel}: {exc}", file=sys.stderr)
            return 1
        if saved is not None:
            replaced += 1
            print(f"{rel}: your copy is saved as {saved.relative_to(root)}; fresh copy written")
        elif existed:
            print(f"{rel}: already the fresh copy; nothing changed")
        else:
            print(f"{rel}: was missing; fresh copy written")
    if replaced:
        print(RELOAD_ADVICE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
