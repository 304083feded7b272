"""Generate exercise notebooks from solution notebooks (solutions are the source).

In a solution's code cell, the learner's part sits between two marker lines::

        ### BEGIN SOLUTION
        offs = pid * BLOCK + tl.arange(0, BLOCK)
        # STUB: offs = tl.arange(0, BLOCK)  # TODO: the block's offsets
        ### END SOLUTION

The exercise copy gets ``# TODO (N lines)`` and either the ``# STUB:`` lines (uncommented; use
them for kernels, whose body must still compile) or ``raise NotImplementedError``. Inside CUDA
source held in a Python string, write the markers as C++ comments (``// ### BEGIN SOLUTION``,
``// STUB:``); the TODO line is then a C++ comment too. In markdown, text between
``<!-- BEGIN SOLUTION -->`` and ``<!-- END SOLUTION -->`` is removed.

Relative links in markdown keep working in the exercise copy, one folder up from its solution
(``solutions/<day>/`` becomes ``<day>/``): a link to a sibling notebook or another day
(``02_coalescing.ipynb``, ``../day02_pipelining/...``) reaches the exercise twin unchanged, and a
link that climbs out of ``solutions/`` (``../../course/glossary.md``) loses one ``../``.

Usage: ``python -m utils.core.exercises`` writes the day folders; ``--check`` fails on any
difference (CI runs it through ``tests/test_notebooks.py``).
"""
from __future__ import annotations

import pathlib
import re
import sys

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
            out.append(f"{indent}{style} TODO ({len(code)} line{'s' * (len(code) != 1)}): your code here")
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


def generate(root: pathlib.Path = ROOT, check: bool = False) -> list:
    """Write (or with ``check``, compare) every exercise notebook; return the paths that differ."""
    import nbformat
    differ = []
    for sol, ex_path in pairs(root):
        text = render(make_exercise(nbformat.read(sol, as_version=4)))
        old = ex_path.read_text() if ex_path.exists() else None
        if old != text:
            differ.append(ex_path)
            if not check:
                ex_path.parent.mkdir(parents=True, exist_ok=True)
                ex_path.write_text(text)
    return differ


if __name__ == "__main__":
    check = "--check" in sys.argv[1:]
    changed = generate(check=check)
    for p in changed:
        print(("out of date: " if check else "wrote: ") + str(p.relative_to(ROOT)))
    if check and changed:
        print("exercise notebooks differ from solutions: run `python -m utils.core.exercises`")
        sys.exit(1)
    print(f"{'checked' if check else 'generated'}: {len(list(pairs()))} exercise notebooks")
