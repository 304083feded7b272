"""Day 5 · 02, below PTX: which SASS instruction each TMA/mbarrier PTX instruction becomes.

``opcodes()`` reads the answer off the real machine code of ``tma_copy_tile`` (PTX from NVRTC,
assembled by the ptxas in Triton's wheel: ``utils.triton_lang.sass``), so the exercise is graded
against what ptxas actually emits, not against a table typed in by hand. ``check_sass_map``
grades a learner's ``{ptx instruction: opcode}`` dict: an answer may drop trailing qualifiers
(``UTMALDG`` for ``UTMALDG.2D``) as long as it still names only one of the five opcodes, in any
case, and may be a whole line copied from the listing (predicate and operands are ignored).
"""
from __future__ import annotations

import functools
import re

from ..core.checks import CheckFailed, fail, not_attempted, passed
from ..triton_lang import sass

KERNEL = "tma_copy_tile"
PTX_TO_SASS = {   # PTX instruction -> the SASS opcode family it becomes (the family, not the answer)
    "mbarrier.init": r"SYNCS\.EXCH[\w.]*",
    "mbarrier.arrive.expect_tx": r"SYNCS\.ARRIVE[\w.]*",
    "cp.async.bulk.tensor (load: global -> shared)": r"UTMALDG[\w.]*",
    "mbarrier.try_wait.parity": r"SYNCS\.PHASECHK[\w.]*",
    "cp.async.bulk.tensor (store: shared -> global)": r"UTMASTG[\w.]*",
}
THREAD_OPS = ("LDG", "STG", "LDS", "STS")
THREAD_HINT = "LDG/STG/LDS are thread loads and stores; a tensor copy is one instruction to the TMA unit"
SYNCS_HINT = "SYNCS is the family of every mbarrier operation: name the operation too"


def kernel_sass(name: str = KERNEL) -> str:
    """The SASS listing of one kernel of the course's TMA teaching kernels."""
    from .runtime import ptx
    found = sass.functions(sass.sass(ptx()))
    if name not in found:
        raise RuntimeError(f"no kernel {name!r} in the SASS listing")
    return found[name]


@functools.lru_cache(maxsize=None)
def opcodes() -> dict:
    """``{ptx instruction: the full SASS opcode}`` as this machine's ptxas emits it."""
    ops = {re.sub(r"^@!?U?P\w+ ", "", i).split()[0] for i in sass.instructions(kernel_sass())}
    out = {}
    for ptx_ins, family in PTX_TO_SASS.items():
        hits = sorted(o for o in ops if re.fullmatch(family, o))
        if len(hits) != 1:
            raise RuntimeError(f"this ptxas emits {hits or 'no'} opcode for {ptx_ins} in {KERNEL}; "
                               "the exercise expects exactly one: report it")
        out[ptx_ins] = hits[0]
    return out


def _names_only(answer: str, want: str, others) -> bool:
    """``answer`` is ``want`` or ``want`` without some trailing qualifiers, and no other opcode."""
    parts, full = answer.split("."), want.split(".")
    if parts != full[:len(parts)]:
        return False
    return not any(o.split(".")[:len(parts)] == parts for o in others if o != want)


def _hint(got: str, want: dict) -> str:
    """A true hint for a wrong opcode: which PTX instruction it does belong to, if any."""
    for other, full in want.items():
        if _names_only(got, full, want.values()):
            return f"{got} is what {other} becomes"
    if got.split(".")[0] in THREAD_OPS:
        return THREAD_HINT
    if got == "SYNCS":
        return SYNCS_HINT
    if got.split(".")[0] == "BAR":
        return ("BAR is the CTA barrier (__syncthreads()); every mbarrier operation is a SYNCS "
                "instruction: read the SASS listing above for which one")
    if got.split(".")[0] == "ELECT":
        return ("ELECT picks one thread of the warp for the loop around the copy: it is neither a copy "
                "nor an mbarrier operation")
    return "read the SASS listing above: find the line where the copy or the barrier operation is issued"


def opcode_of(answer: str) -> str:
    """The opcode an answer names: upper case, without a predicate (``@P0``), the operands or the
    address a whole copied listing line carries (``/*0150*/ UTMALDG.2D [UR8], UR4 ;``)."""
    text = re.sub(r"^\s*(/\*[0-9a-fA-Fx]*\*/)?\s*(@!?U?P\w+\s+)?", "", answer.strip().upper())
    return text.split()[0].rstrip(";") if text.split() else ""


def check_sass_map(answers) -> None:
    """Grade ``{ptx instruction: SASS opcode}`` for the five keys of ``PTX_TO_SASS``."""
    name = "sass_map"
    if not isinstance(answers, dict):
        raise CheckFailed(f"[{name}] expected a dict {{PTX instruction: SASS opcode}}, got "
                          f"{type(answers).__name__}")
    if all(str(v).strip() in ("", "?") for v in answers.values()):
        return not_attempted(name)
    want = opcodes()
    missing = [k for k in want if k not in answers]
    if missing:
        fail(name, f"no answer for {missing}", "answer every PTX instruction of the table")
    for ptx_ins, full in want.items():
        got = answers[ptx_ins]
        if not isinstance(got, str):
            fail(name, f"{ptx_ins}: got {got!r}", "write the opcode as a string, e.g. 'FOO.BAR'")
        got = opcode_of(got)
        if got in ("", "?"):
            fail(name, f"no answer yet for {ptx_ins} (still {answers[ptx_ins]!r})",
                 "answer every PTX instruction of the table")
        if not _names_only(got, full, want.values()):
            fail(name, f"{ptx_ins} becomes {full} in this kernel's SASS, you wrote {got}",
                 _hint(got, want))
    passed(name, "one PTX tensor copy is one UTMA instruction, and every mbarrier operation is a "
           "SYNCS instruction.")
