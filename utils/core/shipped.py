"""Which notebooks are as the course shipped them, and which hold a learner's edits.

``solutions/shipped.sha256`` lists the SHA-256 of every notebook the course ships (``course/``,
the day folders' exercise notebooks, ``solutions/``), written by ``python -m utils.core.exercises``
when it generates the exercises. A notebook whose bytes differ from its line there is the
learner's working copy (answers filled in, outputs saved by JupyterLab): the course's own
checks leave it alone and nothing overwrites it without a backup.

Two questions are kept apart:

* **drift** (:func:`drift`): do ``solutions/`` and the shipped exercises still agree? Answered
  from the solutions and the manifest alone, without reading a learner's exercise notebook, so a
  learner's answers can never make it fail;
* **learner's edits** (:func:`edited`): does this file differ from what was shipped?

``strict`` mode (CI, developers: ``python -m utils.core.exercises --check --strict``) also
requires every notebook to be exactly as shipped: on a clean checkout that proves the committed
exercises are the generated ones and the manifest is current.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import pathlib
import shutil

ROOT = pathlib.Path(__file__).resolve().parents[2]
MANIFEST = pathlib.PurePosixPath("solutions/shipped.sha256")
BACKUP_MARK = ".backup-"
FOLDERS = ("course", "day01_memory_basics", "day02_pipelining", "day05_tma", "solutions")


class CourseFilesError(RuntimeError):
    """A course file cannot be read or written; the message says which and what to do."""


def digest(data: bytes | str) -> str:
    """SHA-256 (hex) of a notebook's bytes (text is encoded as UTF-8, as it is written)."""
    return hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()


def notebooks(root: pathlib.Path = ROOT) -> list:
    """Every course notebook under ``root`` (no backups, no checkpoints), sorted."""
    root = pathlib.Path(root)
    found = []
    for folder in FOLDERS:
        for p in (root / folder).rglob("*.ipynb"):
            if ".ipynb_checkpoints" not in p.parts and ".backup-" not in p.name:
                found.append(p)
    return sorted(found)


def rel(path: pathlib.Path, root: pathlib.Path = ROOT) -> str:
    """``path`` relative to ``root``, with forward slashes (the manifest's key)."""
    return pathlib.Path(path).resolve().relative_to(pathlib.Path(root).resolve()).as_posix()


def read_manifest(root: pathlib.Path = ROOT) -> dict:
    """{relative path: sha256} from ``solutions/shipped.sha256`` ({} if it is missing)."""
    path = pathlib.Path(root) / MANIFEST
    if not path.exists():
        return {}
    entries = {}
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        parts = line.split()
        if len(parts) != 2 or len(parts[0]) != 64:
            raise CourseFilesError(f"{MANIFEST} line {n} is not '<sha256>  <path>': {line!r}; restore the "
                                   f"file from the course (git checkout -- {MANIFEST}, or a fresh download)")
        entries[parts[1]] = parts[0]
    return entries


def write_manifest(entries: dict, root: pathlib.Path = ROOT) -> pathlib.Path:
    """Write ``entries`` ({relative path: sha256}) as ``solutions/shipped.sha256``."""
    path = pathlib.Path(root) / MANIFEST
    lines = ["# SHA-256 of every notebook as the course ships it; written by `python -m utils.core.exercises`.",
             "# A notebook that differs from its line holds a learner's edits: course checks leave it alone."]
    lines += [f"{h}  {p}" for p, h in sorted(entries.items())]
    try:
        path.write_text("\n".join(lines) + "\n")
    except OSError as exc:
        raise CourseFilesError(f"cannot write {MANIFEST}: {exc.strerror or exc}") from exc
    return path


def edited(path: pathlib.Path, root: pathlib.Path = ROOT, manifest: dict | None = None) -> bool:
    """True when notebook ``path`` differs from the shipped copy (or was never shipped)."""
    manifest = read_manifest(root) if manifest is None else manifest
    want = manifest.get(rel(path, root))
    return want is None or digest(pathlib.Path(path).read_bytes()) != want


def backup_name(path: pathlib.Path, now: _dt.datetime, n: int = 1) -> pathlib.Path:
    """``<stem>.backup-YYYYmmdd-HHMMSS[-n].ipynb`` beside ``path``."""
    suffix = "" if n == 1 else f"-{n}"
    return path.with_name(f"{path.stem}{BACKUP_MARK}{now:%Y%m%d-%H%M%S}{suffix}{path.suffix}")


def backup(path: pathlib.Path, now: _dt.datetime | None = None) -> pathlib.Path:
    """Copy ``path`` byte for byte to a new backup name (claimed exclusively, never overwritten)."""
    data, now, n = path.read_bytes(), now or _dt.datetime.now(), 1
    while True:
        target = backup_name(path, now, n)
        try:
            with open(target, "xb") as f:  # "x": fails if the name exists, even in a race
                f.write(data)
        except FileExistsError:
            n += 1
            continue
        shutil.copystat(path, target)
        return target
