"""Exercise checks for ``day05_tma/08_below_ptx``: find the bug in each mystery kernel
(``lab_fixed`` with one line changed by :data:`utils.tma.lab.EDITS`), :func:`check_bug`; and both
bugs of :data:`utils.tma.lab.PAIR`, whose first bug hides the second, :func:`check_pair`. An answer
names the line (as numbered by :func:`utils.tma.lab.listing`) and the diagnosis, one of
:data:`DIAGNOSES`; ``{"line": None, "diagnosis": "?"}`` is "not attempted".
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
# the two-bug kernel -> its bugs, each (diagnosis, a piece of text found only on its line)
PAIR_ANSWERS = {lab.PAIR: (("expect_tx", "TILE * 4 + 128"), ("proxy fence", "fence.mbarrier_init"))}
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


def bug_line(name: str, text: str | None = None) -> int:
    """The line number (1-based, as :func:`utils.tma.lab.listing` prints it) of the bug (of the
    line holding ``text``, for a kernel with two bugs)."""
    if text is None and name not in ANSWERS:
        raise ValueError(f"no exercise for kernel {name!r}; the exercises are {tuple(ANSWERS)}")
    text = ANSWERS[name][1] if text is None else text
    lines = lab.source(name).splitlines()
    hits = [i for i, line in enumerate(lines, 1) if text in line]
    if len(hits) != 1:
        raise RuntimeError(f"{name}: expected the bug on one line, found {hits}: lab_fixed.cu changed")
    return hits[0]


def _key(diag: str) -> str:
    """A diagnosis as written, reduced to one of :data:`DIAGNOSES` when it is one: case, spaces,
    hyphens and underscores do not matter ("Proxy-Fence", "expect tx", "wait group")."""
    words = re.sub(r"[\s_-]+", " ", diag).strip().lower()
    return next((k for k in DIAGNOSES if re.sub(r"[\s_-]+", " ", k) == words), words)


def _is_stub(answer) -> bool:
    return isinstance(answer, dict) and answer.get("line") is None and str(answer.get("diagnosis")).strip() in ("", "?")


def _read(ex: str, name: str, answer) -> tuple:
    """``(line, diagnosis key)`` of one answer dict, or a clear CheckFailed on malformed input."""
    if not isinstance(answer, dict) or not {"line", "diagnosis"} <= set(answer):
        fail(ex, f"expected a dict {{'line': int, 'diagnosis': str}}, got {answer!r}",
             "e.g. {'line': 7, 'diagnosis': 'phase'}")
    line, diag = answer["line"], answer["diagnosis"]
    n = len(lab.source(name).splitlines())
    if not is_int(line) or not 1 <= line <= n:
        fail(ex, f"line must be an int from 1 to {n} (the numbers lab.listing prints), got {line!r}")
    if not isinstance(diag, str) or _key(diag) not in DIAGNOSES:
        fail(ex, f"diagnosis {diag!r} is not one of {tuple(DIAGNOSES)}")
    return int(line), _key(diag)


def check_bug(name: str, answer) -> None:
    """Grade ``answer = {"line": int, "diagnosis": str}`` for mystery kernel ``name``."""
    right_line = bug_line(name)
    want = ANSWERS[name][0]
    ex = f"find_bug[{name}]"
    if _is_stub(answer):
        return not_attempted(ex)
    line, diag = _read(ex, name, answer)
    lines = lab.source(name).splitlines()
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


def check_pair(name: str, answer) -> None:
    """Grade ``answer``, a list of two ``{"line": int, "diagnosis": str}`` (any order), for the
    kernel ``name`` with two bugs (:data:`PAIR_ANSWERS`): both lines and both diagnoses."""
    if name not in PAIR_ANSWERS:
        raise ValueError(f"no two-bug exercise for kernel {name!r}; it is {tuple(PAIR_ANSWERS)}")
    ex = f"find_both_bugs[{name}]"
    want = {diag: bug_line(name, text) for diag, text in PAIR_ANSWERS[name]}
    if isinstance(answer, dict):
        fail(ex, "this kernel has two bugs: answer with a list of two dicts, one per bug",
             "e.g. [{'line': 7, 'diagnosis': 'phase'}, {'line': 9, 'diagnosis': 'negative store'}]")
    if not isinstance(answer, (list, tuple)) or len(answer) != 2:
        fail(ex, f"expected a list of two dicts {{'line': int, 'diagnosis': str}}, one per bug, got {answer!r}")
    if all(_is_stub(a) for a in answer):
        return not_attempted(ex)
    found = [_read(ex, name, a) for a in answer if not _is_stub(a)]
    for line, diag in found:
        if diag not in want:
            fail(ex, f"'{diag}' is not one of this kernel's bugs",
                 f"a '{diag}' bug shows as: {SIGNS[diag]}. Is that what this kernel's report, lab.diff "
                 "and its source show?")
    if len(found) == 2 and found[0][1] == found[1][1]:
        fail(ex, f"both answers name one bug, '{found[0][1]}'; the kernel has two different ones",
             "the second bug is of another kind, on another line: lab.diff lists every instruction that differs")
    for line, diag in found:
        if line != want[diag]:
            text = lab.source(name).splitlines()[line - 1].strip()
            fail(ex, f"the diagnosis '{diag}' is right, but line {line} (`{text}`) is not where it lives",
                 f"look for the line that causes it: {SIGNS[diag]}")
    if len(found) < 2:
        line, diag = found[0]
        fail(ex, f"line {line} ('{diag}') is one of the two bugs; the other answer is still '?'",
             "the symptom shows only the first bug: with that line fixed, what would the kernel do? "
             "lab.diff and lab.fence_gap show more than the symptom does")
    return passed(ex, "; ".join(f"line {want[d]}: {DIAGNOSES[d]}" for d in sorted(want, key=want.get)) + ".")
