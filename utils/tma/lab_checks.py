"""Exercise check for ``day05_tma/08_below_ptx``: find the bug in each mystery kernel
(``lab_fixed`` with one line changed by :data:`utils.tma.lab.EDITS`). An answer names the line
(as numbered by :func:`utils.tma.lab.listing`) and the diagnosis, one of :data:`DIAGNOSES`; ``{"line": None, "diagnosis": "?"}`` is "not attempted".
"""
from __future__ import annotations

import re

from ..core.checks import fail, is_int, not_attempted, passed
from . import lab

DIAGNOSES = {
    "arrival count": "mbarrier.init expects more arrivals than the kernel makes",
    "expect_tx": "expect_tx declares a byte count the box does not deliver",
    "phase": "a wait names the wrong phase parity",
    "proxy fence": "the threads' shared-memory writes are not fenced (fence.proxy.async) before TMA reads them",
    "negative store": "a TMA store box starts at a negative coordinate",
    "smem alignment": "a TMA shared-memory address is not aligned as TMA requires",
    "descriptor": "the tensor map describes the wrong tensor or box",
    "wait_group": "shared memory is reused before the TMA store has read it (cp.async.bulk.wait_group)",
}
# kernel -> (diagnosis, a piece of text found only on the buggy line)
ANSWERS = {
    "lab_mystery_1": ("phase", "(it & 1) ^ 1"),
    "lab_mystery_2": ("negative store", "cols - (t % tiles_x + 1) * BOX_X"),
    "lab_mystery_3": ("expect_tx", "BOX_X * BOX_X * 4"),
    "lab_mystery_4": ("proxy fence", "fence.proxy.async"),
    "lab_mystery_5": ("smem alignment", "smem_base() + 64"),
    "lab_mystery_6": ("arrival count", "blockDim.x / 32"),
}
# what each bug looks like, for the hint when a diagnosis is wrong (H200, see the notebook)
SIGNS = {
    "arrival count": "every CTA waits forever at its first tile: the bounded wait fires; in the PTX "
                     "mbarrier.init's count is not 1",
    "expect_tx": "the number in mbarrier.arrive.expect_tx differs from the box's 2048 bytes",
    "phase": "the wait's parity is not `it & 1`: some waits return before their tile has landed",
    "proxy fence": "between the threads' st.shared and the TMA store's cp.async.bulk.tensor, some "
                   "path has no fence.proxy.async",
    "negative store": "a store's start coordinate can be below 0 for some tile",
    "smem alignment": "the tile's shared-memory address is not a multiple of 128 bytes",
    "descriptor": "the descriptors are made by the lab's launcher, the same for every kernel: "
                  "not a bug any kernel here can have",
    "wait_group": "every kernel here keeps cp.async.bulk.wait_group.read 0 before reusing the tile",
}


def bug_line(name: str) -> int:
    """The line number (1-based, as :func:`utils.tma.lab.listing` prints it) of the bug."""
    if name not in ANSWERS:
        raise ValueError(f"no exercise for kernel {name!r}; the exercises are {tuple(ANSWERS)}")
    lines = lab.source(name).splitlines()
    hits = [i for i, line in enumerate(lines, 1) if ANSWERS[name][1] in line]
    if len(hits) != 1:
        raise RuntimeError(f"{name}: expected the bug on one line, found {hits}: lab_fixed.cu changed")
    return hits[0]


def _key(diag: str) -> str:
    """A diagnosis as written, reduced to one of :data:`DIAGNOSES` when it is one: case, spaces,
    hyphens and underscores do not matter ("Proxy-Fence", "expect tx", "wait group")."""
    words = re.sub(r"[\s_-]+", " ", diag).strip().lower()
    return next((k for k in DIAGNOSES if re.sub(r"[\s_-]+", " ", k) == words), words)


def check_bug(name: str, answer) -> None:
    """Grade ``answer = {"line": int, "diagnosis": str}`` for mystery kernel ``name``."""
    right_line = bug_line(name)
    want = ANSWERS[name][0]
    ex = f"find_bug[{name}]"
    if not isinstance(answer, dict) or not {"line", "diagnosis"} <= set(answer):
        fail(ex, f"expected a dict {{'line': int, 'diagnosis': str}}, got {answer!r}",
             "e.g. {'line': 7, 'diagnosis': 'phase'}")
    line, diag = answer["line"], answer["diagnosis"]
    if line is None and str(diag).strip() in ("", "?"):
        return not_attempted(ex)
    lines = lab.source(name).splitlines()
    if not is_int(line) or not 1 <= line <= len(lines):
        fail(ex, f"line must be an int from 1 to {len(lines)} (the numbers lab.listing prints), "
             f"got {line!r}")
    if not isinstance(diag, str) or _key(diag) not in DIAGNOSES:
        fail(ex, f"diagnosis {diag!r} is not one of {tuple(DIAGNOSES)}")
    diag, line = _key(diag), int(line)
    if diag != want:
        fail(ex, f"'{diag}' is not this kernel's bug",
             f"a '{diag}' bug shows as: {SIGNS[diag]}. Is that what this kernel's report, "
             "lab.diff and its source show?")
    if line != right_line:
        text = lines[line - 1].strip()
        moved = line in lab.EDITS[name] and lines[line - 1].strip() == lab.source(lab.FIXED).splitlines()[
            right_line - 1].strip()
        fail(ex, f"the diagnosis is right, but line {line} (`{text}`) is not where it lives",
             f"line {line} is right as it stands (the correct kernel has it too, one line away); the bug "
             "is the line that sits on the wrong side of it" if moved else
             f"look for the line that causes it: {SIGNS[want]}")
    return passed(ex, f"line {right_line}: {DIAGNOSES[want]}.")
