"""What the emulator reports: one exception class per kind of problem, and the launch report.

Every error names the PTX instruction and its line (where one is to blame) and says which rule was
broken, in words a learner can act on. Nothing here ever states a time: the emulator has none.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

SOURCE = []     # stack of (PTX line -> locations, (file, line) -> CUDA source text) of running launches


def source_lines(source: str, name: str = "kernel.cu") -> dict:
    """(file, line) -> text for every line of CUDA ``source``, following ``#line N "file"`` directives
    (a learner's kernel appended to helpers is numbered from its own first line)."""
    out, f, n = {}, name, 1
    for text in source.splitlines():
        d = re.match(r'\s*#\s*line\s+(\d+)(?:\s+"([^"]*)")?', text)
        if d:
            f, n = (d.group(2) or f).rsplit("/", 1)[-1], int(d.group(1))
            continue
        out[(f, n)] = text
        n += 1
    return out


def cuda_line(ptx_line: int | None, text: bool = True, inlined: bool = True) -> str:
    """Where PTX line ``ptx_line`` came from in the CUDA source being run ("" when unknown, e.g. a
    launch of PTX text): ``CUDA line 113: <that line>``, plus the helper's line if it was inlined."""
    if not SOURCE or ptx_line is None:
        return ""
    locs, lines = SOURCE[-1]
    loc = locs.get(ptx_line)
    if loc is None or loc[0] not in lines:
        return ""
    (f, outer), (fi, inner) = loc
    name = "CUDA line" if f == "kernel.cu" else f"{f} line"
    via = f" (inlined from {'' if fi == f else fi + ' '}line {inner})" if (fi, inner) != (f, outer) and inlined else ""
    code = lines[loc[0]].split("//")[0].strip()[:100]        # the code only: a comment could mislead
    return f"{name} {outer}{via}" + (f": {code}" if text and code else "")


class EmulatorError(Exception):
    """Base class: a problem the emulator found while running a kernel (never a wrong answer).
    The message says what happened, the PTX line (and the CUDA source line, when the kernel was
    given as CUDA C++) and which threads; it starts with "emulator:" (a finding, not a GPU run)."""

    def __init__(self, message: str, line: int | None = None, text: str | None = None, where: str = ""):
        self.line, self.text, self.where = line, text, where
        at = f"\n  at PTX line {line}: {text}" if line is not None and text else ""
        src = cuda_line(line) if at else ""
        at += f"\n  from {src}" if src else ""
        who = f"\n  in {where}" if where else ""
        super().__init__(f"emulator: {message}{at}{who}")


class UnsupportedPTX(EmulatorError):
    """An instruction or directive the emulator does not model: it stops rather than guess."""


class MemoryFault(EmulatorError):
    """An access outside every buffer the launch knows (global), or outside the CTA's shared memory."""


class MisalignedAddress(EmulatorError):
    """An address that breaks an alignment rule (natural alignment, 16 B for bulk copies, 128 B for
    a TMA box in shared memory, 8 B for an mbarrier)."""


class TmaRuleError(EmulatorError):
    """A TMA instruction whose descriptor, box or coordinates break a rule of the course's TMA model
    (the GPU stops such a kernel with "illegal instruction")."""


class MbarrierError(EmulatorError):
    """An mbarrier used wrongly: not initialised, more arrivals than its count, tx-count overflow."""


class Deadlock(EmulatorError):
    """Every live warp waits and nothing in flight can wake any of them (a hang on a GPU)."""


class RaceError(EmulatorError):
    """A race a GPU may or may not show: missing proxy fence, buffer reused before a bulk store read
    it, shared memory read before its mbarrier phase completed, a descriptor used without acquire."""


class MbarrierInitRace(RaceError, MbarrierError):
    """An mbarrier used by a thread (or a copy it issued) that nothing orders after the barrier's
    ``mbarrier.init``: both a race and a misused mbarrier (see :mod:`.mbarrier`)."""


class InstructionLimit(EmulatorError):
    """The launch ran more instructions than ``max_instructions`` (an endless loop?)."""


@dataclass
class Report:
    """What one emulated launch did. ``deadlocks`` lists every hang the kernel's own bounded waits
    escaped (the virtual clock was advanced so their timeout path ran, as on a GPU); ``races`` every
    race found when ``strict`` was off; ``instructions`` counts warp-instructions executed."""
    kernel: str
    grid: tuple
    block: tuple
    instructions: int = 0
    deadlocks: list = field(default_factory=list)
    races: list = field(default_factory=list)
    warnings: list = field(default_factory=list)
    virtual_clock_jumps: int = 0

    @property
    def ok(self) -> bool:
        """No deadlock, race or warning."""
        return not (self.deadlocks or self.races or self.warnings)

    def __repr__(self) -> str:
        lines = [f"emulator: {self.kernel} grid={self.grid} block={self.block}: "
                 f"{self.instructions} warp-instructions (an emulator: no timing)"]
        lines += [f"  DEADLOCK (the kernel's bounded wait timed out on the virtual clock): {d}"
                  for d in self.deadlocks]
        lines += [f"  RACE: {r}" for r in self.races]
        lines += [f"  warning: {w}" for w in self.warnings]
        return "\n".join(lines)

    __str__ = __repr__
