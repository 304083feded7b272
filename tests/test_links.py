"""Every relative link in the course resolves: markdown links and images, HTML ``href``/``src``,
in every notebook's markdown cells (course, exercises, solutions) and every ``.md`` file.

A link with an anchor into a markdown file (``glossary.md#cta``) must also name an anchor that
exists there: an explicit ``id``/``name`` or a heading's GitHub-style slug. Anchors into notebooks
are checked against JupyterLab's heading ids. External links (http, https, mailto) are skipped:
CI has no network. Links inside code spans and code blocks are not links and are not checked.
"""
import json
import pathlib
import re
import urllib.parse

import pytest

ROOT = pathlib.Path(__file__).resolve().parent.parent
SKIP_DIRS = {".git", ".venv", ".gpu_jobs", ".ipynb_checkpoints", "node_modules", "__pycache__"}
FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.S | re.M)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
COMMENT = re.compile(r"<!--.*?-->", re.S)
INLINE = re.compile(r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s)]+)(?:\s+(?:\"[^\"]*\"|'[^']*'))?\s*\)")
REFDEF = re.compile(r"^ {0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)", re.M)
HTML = re.compile(r"""<(?:a|img|source)\b[^>]*?\b(?:href|src)\s*=\s*["']([^"']+)["']""", re.I)
EXTERNAL = re.compile(r"^(?:[a-z][a-z0-9+.-]*:|//)", re.I)  # http:, https:, mailto:, data:, //host
ANCHOR_ATTR = re.compile(r"""<[a-z]+\b[^>]*?\b(?:id|name)\s*=\s*["']([^"']+)["']""", re.I)
HEADING = re.compile(r"^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$", re.M)


def course_files(root: pathlib.Path = ROOT) -> list:
    """Every notebook and markdown file of the repository (not the venv, git or scratch)."""
    out = []
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if any(p in SKIP_DIRS or p.endswith(".egg-info") for p in rel.parts[:-1]):
            continue
        if path.suffix in (".md", ".ipynb") and ".backup-" not in path.name and path.is_file():
            out.append(path)
    return out


def markdown_of(path: pathlib.Path) -> str:
    """A markdown file's text, or a notebook's markdown cells joined."""
    if path.suffix == ".md":
        return path.read_text()
    cells = json.loads(path.read_text())["cells"]
    return "\n\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")


def links(markdown: str) -> list:
    """The link targets written in ``markdown``: inline links and images, reference
    definitions, HTML href/src; not those inside code blocks, code spans or comments."""
    text = CODE_SPAN.sub("", FENCE.sub("", COMMENT.sub("", markdown)))
    found = [m.group(1) for pat in (INLINE, REFDEF, HTML) for m in pat.finditer(text)]
    return [t[1:-1] if t.startswith("<") and t.endswith(">") else t for t in found]


def github_slug(heading: str) -> str:
    """GitHub's anchor for a heading: markup dropped, lower case, punctuation removed, spaces to -."""
    text = re.sub(r"<[^>]+>|[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().lower()
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def jupyterlab_slug(heading: str) -> str:
    """JupyterLab's id for a rendered heading: its text with spaces replaced by -."""
    return re.sub(r"<[^>]+>|[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading).strip().replace(" ", "-")


def anchors(path: pathlib.Path) -> set:
    """The anchors a link may name in ``path``."""
    md = markdown_of(path)
    found = set(ANCHOR_ATTR.findall(md))
    for h in HEADING.findall(FENCE.sub("", md)):
        found |= {github_slug(h), jupyterlab_slug(h)}
    return found


def broken(path: pathlib.Path, root: pathlib.Path = ROOT) -> list:
    """'target: why' for every relative link of ``path`` that does not resolve."""
    bad = []
    for target in links(markdown_of(path)):
        if EXTERNAL.match(target):
            continue
        file_part, _, anchor = target.partition("#")
        file_part = urllib.parse.unquote(file_part.split("?")[0])
        dest = (path.parent / file_part).resolve() if file_part else path
        if root.resolve() not in dest.parents and dest != root.resolve():
            bad.append(f"{target}: leaves the repository")
        elif not dest.exists():
            bad.append(f"{target}: no such file {dest.relative_to(root.resolve())}")
        elif anchor and dest.suffix in (".md", ".ipynb") and anchor not in anchors(dest):
            bad.append(f"{target}: no anchor #{anchor} in {dest.relative_to(root.resolve())}")
    return bad


FILES = course_files()


def test_the_course_has_files_to_check():
    names = {p.relative_to(ROOT).as_posix() for p in FILES}
    assert {"README.md", "course/00_welcome.ipynb", "course/glossary.md",
            "day05_tma/01_tma_concepts.ipynb", "solutions/day05_tma/01_tma_concepts.ipynb"} <= names


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_relative_links_resolve(path):
    bad = broken(path)
    assert not bad, f"{path.relative_to(ROOT)} has links that lead nowhere:\n" + "\n".join(bad)


@pytest.mark.parametrize("markdown, expected", [
    ("[a](x.md) and ![img](images/p.png 'title') [b](<with space.md>)", ["x.md", "images/p.png", "with space.md"]),
    ('<img src="a.png" width=3> <a href="b.ipynb#Top">b</a>', ["a.png", "b.ipynb#Top"]),
    ("[ref]: ../course/glossary.md#cta", ["../course/glossary.md#cta"]),
    ("`[not](a-link.md)` and\n```\n[nor](this.md)\n```\n<!-- [nor](that.md) -->", []),
    ("[ext](https://example.com/x) [in](#local)", ["https://example.com/x", "#local"]),
])
def test_links_are_found(markdown, expected):
    assert links(markdown) == expected


def test_broken_links_and_anchors_are_reported(tmp_path):
    (tmp_path / "g.md").write_text('# Glossary\n\n<a id="cta"></a>**CTA**: a block.\n## Bank conflict\n')
    doc = tmp_path / "doc.md"
    doc.write_text("[ok](g.md#cta) [ok](g.md#bank-conflict) [ok](https://x.org/missing) "
                   "[bad](missing.ipynb) [bad](g.md#nope) [bad](../../outside.md)")
    assert broken(doc, tmp_path) == ["missing.ipynb: no such file missing.ipynb",
                                     "g.md#nope: no anchor #nope in g.md",
                                     "../../outside.md: leaves the repository"]


def test_exercise_copies_rewrite_links_that_leave_solutions():
    from utils.core.exercises import relink
    assert relink("[g](../../course/glossary.md#cta) [n](02_x.ipynb) [d](../day02/x.ipynb) "
                  '<img src="../../course/images/a.png">') == (
        "[g](../course/glossary.md#cta) [n](02_x.ipynb) [d](../day02/x.ipynb) "
        '<img src="../course/images/a.png">')
