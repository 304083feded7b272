"""Generate exercise notebooks from solution notebooks (solutions are the source).

In a solution's code cell, the learner's part sits between two marker lines::

        ### BEGIN SOLUTION
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        # STUB: offs = tl.arange(0, BLOCK)  # TODO: the block's offsets
        ### END SOLUTION

The exercise copy gets ``# TODO (N lines)`` (``N lines; K of them below`` when K stub lines are
solution lines verbatim) and either the ``# STUB:`` lines (uncommented; use
them for kernels, whose body must still compile) or ``raise NotImplementedError``. Inside CUDA
source held in a Python string, write the markers as C++ comments (``// ### BEGIN SOLUTION``,
``// STUB:``); the TODO line is then a C++ comment too. In markdown, text between
``<!-- BEGIN SOLUTION -->`` and ``<!-- END SOLUTION -->`` is removed.

Relative links in markdown keep working in the exercise copy, one folder up from its solution
(``solutions/<day>/`` becomes ``<day>/``): a link to a sibling notebook or another day
(``02_coalescing.ipynb``, ``../day02_pipelining/...``) reaches the exercise twin unchanged, and a
link that climbs out of ``solutions/`` (``../../course/glossary.md``) loses one ``../``.

Usage: ``python -m utils.core.exercises`` writes the day folders and ``solutions/shipped.sha256``
(:mod:`utils.core.shipped`), never overwriting a learner's edits without a backup. ``--check`` (run
by ``bash course.sh test``) fails when ``solutions/`` changed after the exercises were generated,
judged from the solutions and the manifest alone, so a learner's filled-in exercises never make it
fail; ``--check --strict`` (CI) also requires every notebook to be exactly as shipped.
"""
from __future__ import annotations

import pathlib
import re
import sys

from . import shipped

ROOT = pathlib.Path(__file__).resolve().parents[2]
BEGIN, END, STUB = "### BEGIN SOLUTION", "### END SOLUTION", "# STUB:"
MD_BLOCK = re.compile(r"<!-- BEGIN SOLUTION -->.*?<!-- END SOLUTION -->\n?", re.S)
# the start of a relative link target that climbs out of solutions/<day>/: a markdown link
# `](../../`, a reference definition `]: ../../`, or an HTML `src="../../` / `href="../../`
OUT_OF_SOLUTIONS = re.compile(r"""(\]\(<?|\]:[ \t]*<?|(?:src|href)=["'])\.\./\.\./""")


def relink(markdown: str) -> str:
    """A solution notebook's markdown with links that leave ``solutions/`` made one level shorter,
    so they resolve from the exercise copy's folder (one level higher)."""
    return OUT_OF_SOLUTIONS.sub(r"\1../", markdown)


def _marker(stripped: str):
    """("#" or "//", marker) for a marker line, else None."""
    for comment in ("//", ""):
        text = stripped[len(comment):].strip() if stripped.startswith(comment) else None
        if text in (BEGIN, END):
            return comment or "#", text
    return None


def _count(code: list, stubs: list) -> str:
    """"N lines" for a solution of N code lines, and "N lines; K of them below" when K of the
    stub lines are solution lines verbatim (the learner keeps those and writes the rest)."""
    plain = {l.strip() for l in code}
    given = sum(1 for s in stubs if s.strip() and s.strip() in plain)
    text = f"{len(code)} line{'s' * (len(code) != 1)}"
    return f"{text}; {given} of them below" if given else text


def strip_solution(source: str) -> str:
    """Replace every solution block of one code cell's source with its stub."""
    out, block, indent, style = [], None, "", "#"
    for line in source.split("\n"):
        mark = _marker(line.strip())
        if mark and mark[1] == BEGIN:
            if block is not None:
                raise ValueError("nested '### BEGIN SOLUTION'")
            block, indent, style = [], line[: len(line) - len(line.lstrip())], mark[0]
        elif mark and mark[1] == END:
            if block is None:
                raise ValueError("'### END SOLUTION' without a BEGIN")
            stub_prefix = "// STUB:" if style == "//" else STUB
            stubs = [l.strip()[len(stub_prefix):].lstrip() for l in block
                     if l.strip().startswith(stub_prefix)]
            code = [l for l in block if l.strip() and not l.strip().startswith(("#", "//"))]
            out.append(f"{indent}{style} TODO ({_count(code, stubs)}): your code here")
            out.extend(indent + s for s in stubs)
            if not stubs and style == "#":
                out.append(f'{indent}raise NotImplementedError("exercise not attempted yet")')
            block = None
        elif block is not None:
            block.append(line)
        else:
            out.append(line)
    if block is not None:
        raise ValueError("'### BEGIN SOLUTION' without an END")
    return "\n".join(out)


def make_exercise(nb):
    """An exercise copy (nbformat node) of solution notebook ``nb``, outputs cleared."""
    import copy
    ex = copy.deepcopy(nb)
    for cell in ex.cells:
        if cell.cell_type == "code":
            cell.source = strip_solution(cell.source)
            cell.outputs, cell.execution_count = [], None
        elif cell.cell_type == "markdown":
            cell.source = relink(MD_BLOCK.sub("", cell.source))
    return ex


def pairs(root: pathlib.Path = ROOT):
    """(solution path, exercise path) for every solution notebook."""
    for sol in sorted((root / "solutions").glob("*/*.ipynb")):
        yield sol, root / sol.parent.name / sol.name


def render(nb) -> str:
    """The canonical text of a notebook (so regeneration is byte-stable)."""
    import nbformat
    return nbformat.writes(nb, version=4) + "\n"


def read_solution(sol: pathlib.Path):
    """Solution notebook ``sol`` (nbformat node); a clear error if it cannot be read."""
    import nbformat
    try:
        return nbformat.read(sol, as_version=4)
    except OSError as exc:
        raise shipped.CourseFilesError(f"cannot read {sol}: {exc.strerror or exc}") from exc
    except Exception as exc:  # invalid JSON or not a notebook
        raise shipped.CourseFilesError(
            f"{sol} is not a valid notebook ({type(exc).__name__}: {str(exc)[:200]}); restore it "
            f"from the course (git checkout -- {sol.name} in its folder, or a fresh download)") from exc


def expected(root: pathlib.Path = ROOT) -> dict:
    """{exercise path: the text generated from its solution} for every solution notebook."""
    return {ex: render(make_exercise(read_solution(sol))) for sol, ex in pairs(root)}


def drift(root: pathlib.Path = ROOT) -> tuple:
    """(stale, unchecked): exercises whose generated text no longer matches what was shipped
    (``solutions/`` changed without regenerating), and solutions skipped because they hold local
    edits. Reads the solutions and the manifest only, never a learner's exercise notebook."""
    manifest, stale, unchecked = shipped.read_manifest(root), [], []
    for sol, ex in pairs(root):
        nb = read_solution(sol)  # a corrupt solution is an error even when it holds local edits
        if shipped.edited(sol, root, manifest):
            unchecked.append(sol)
        elif manifest.get(shipped.rel(ex, root)) != shipped.digest(render(make_exercise(nb))):
            stale.append(ex)
    return stale, unchecked


def _write(path: pathlib.Path, text: str) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    except OSError as exc:
        raise shipped.CourseFilesError(f"cannot write {path}: {exc.strerror or exc} (is the folder "
                                       "read-only? work in a copy of the course you can write to)") from exc


def generate(root: pathlib.Path = ROOT, check: bool = False) -> list:
    """Write the exercise notebooks and the manifest; return the paths that differ from the
    generated text. With ``check``, only compare the files (nothing is written).

    A learner's work is never lost: an exercise that holds edits is left as it is while its
    solution is unchanged, and is backed up (``<stem>.backup-<time>.ipynb``, printed) before a
    changed solution replaces it."""
    root = pathlib.Path(root)
    manifest, differ = shipped.read_manifest(root), []
    for ex, text in expected(root).items():
        old = ex.read_bytes() if ex.exists() else None
        if old == text.encode():
            continue
        differ.append(ex)
        if check:
            continue
        key, new = shipped.rel(ex, root), shipped.digest(text)
        if old is not None and shipped.digest(old) != manifest.get(key):
            if manifest.get(key) == new:
                print(f"kept: {key} holds your edits and its solution is unchanged")
                continue
            print(f"backed up: {key} -> {shipped.backup(ex).name} (your edits), then regenerated")
        _write(ex, text)
    if not check:
        entries = {shipped.rel(p, root): shipped.digest(p.read_bytes()) for p in shipped.notebooks(root)}
        entries.update({shipped.rel(ex, root): shipped.digest(t) for ex, t in expected(root).items()})
        shipped.write_manifest(entries, root)
    return differ


def main(argv: list | None = None, root: pathlib.Path = ROOT) -> int:
    """Command line; see the module docstring. Returns the exit status."""
    args = sys.argv[1:] if argv is None else list(argv)
    root = pathlib.Path(root)
    try:
        if "--check" not in args:
            for p in generate(root):
                print(f"wrote: {shipped.rel(p, root)}")
            print(f"generated: {len(list(pairs(root)))} exercise notebooks; {shipped.MANIFEST} updated")
            return 0
        return check(root, strict="--strict" in args)
    except shipped.CourseFilesError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1


def check(root: pathlib.Path = ROOT, strict: bool = False) -> int:
    """The drift check (``--check``): safe with a learner's answers in the day folders."""
    if not shipped.read_manifest(root):
        print(f"error: {shipped.MANIFEST} is missing: restore it from the course", file=sys.stderr)
        return 1
    stale, unchecked = drift(root)
    for sol in unchecked:
        print(f"note: {shipped.rel(sol, root)} holds local edits; its exercise was not compared with it")
    manifest = shipped.read_manifest(root)
    mine = [p for p in shipped.notebooks(root) if shipped.edited(p, root, manifest)]
    if mine and not strict:
        print(f"note: {len(mine)} notebook(s) hold your edits and are yours: left as they are, and the "
              "course checks on committed notebooks skip them: " + ", ".join(shipped.rel(p, root) for p in mine))
    problems = [f"{shipped.rel(p, root)}: solutions/ changed after this exercise was generated" for p in stale]
    if strict:
        problems += [f"{shipped.rel(p, root)}: differs from {shipped.MANIFEST}" for p in mine]
        problems += [f"{shipped.rel(p, root)}: differs from the notebook generated from its solution"
                     for p in generate(root, check=True) if p not in mine]
        listed = {shipped.rel(p, root) for p in shipped.notebooks(root)}
        problems += [f"{k}: listed in {shipped.MANIFEST} but missing" for k in manifest if k not in listed]
    if problems:
        print("\n".join(problems))
        print("The course's own files disagree; your answers did not cause this and nothing was changed. "
              "Developers: run `python -m utils.core.exercises` (it regenerates the exercises and the "
              "manifest, backing up any exercise notebook that holds edits), then commit.")
        return 1
    print(f"checked: {len(list(pairs(root)))} exercise notebooks agree with solutions/"
          + (" and every notebook is as shipped" if strict else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())
