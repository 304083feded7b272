"""What a changed kernel did on the emulator, in one word: the answer to a "change this, predict,
then run" question about a CUDA kernel (:mod:`utils.core.predict`).

:func:`outcome` runs one emulated launch and names what happened: ``"works"`` (every value right),
``"wrong values"``, ``"race"`` (the emulator caught a read or a reuse the rules do not order: a GPU
may show wrong values, or nothing, see day 5 · 08 §2.4), ``"hang"`` (a deadlock, or a bounded wait
that fired on the emulator's virtual clock) or ``"fault"`` (an address, alignment or TMA rule broken:
a GPU stops the kernel). Values, never times: the emulator has no clock.
"""
from __future__ import annotations

import numpy as np

from .errors import Deadlock, EmulatorError, InstructionLimit, MbarrierError, RaceError

OUTCOMES = {"works": ("right", "correct", "ok", "fine"), "wrong values": ("wrong", "wrong value"),
            "race": ("data race",), "hang": ("deadlock", "timeout", "hangs"),
            "fault": ("crash", "error", "illegal", "misaligned")}
"""The options of :func:`utils.core.predict.choice` for an emulator question, with their aliases."""


def _word(err: Exception) -> str:
    if isinstance(err, RaceError):
        return "race"
    if isinstance(err, (Deadlock, InstructionLimit)) or (isinstance(err, RuntimeError) and "timed out" in str(err)):
        return "hang"
    if isinstance(err, (EmulatorError, MbarrierError)):
        return "fault"
    raise err


def outcome(run, want, *, atol: float = 1e-5) -> tuple[str, str]:
    """``(word, detail)``: call ``run()`` (one emulated launch returning the output array, or a tuple
    whose first item is it) and compare the output with ``want``. ``detail`` is the emulator's first
    line, or how many elements were wrong. An exception that is not the emulator's (a bug in the
    question) propagates. Raises TypeError if ``run`` is not callable."""
    if not callable(run):
        raise TypeError(f"run must be a function that launches the kernel, got {type(run).__name__}")
    try:
        got = run()
    except (EmulatorError, RuntimeError) as err:
        return _word(err), str(err).splitlines()[0]
    got = np.asarray(got[0] if isinstance(got, tuple) else got)
    want = np.asarray(want)
    if got.shape != want.shape:
        raise ValueError(f"the output has shape {got.shape}, the reference {want.shape}")
    bad = ~np.isclose(got, want, atol=atol)
    if bad.any():
        return "wrong values", f"emulator: {int(bad.sum())} of {bad.size} elements wrong"
    return "works", f"emulator: all {bad.size} elements right"


def from_report(rep: dict) -> tuple[str, str]:
    """``(word, detail)`` for a lab kernel's emulator run, the dict of
    :func:`utils.emu.course.lab_report` (which catches the emulator's errors itself)."""
    if not isinstance(rep, dict) or not rep.get("emulator") or "wrong" not in rep:
        raise TypeError("expected the dict of utils.emu.course.lab_report(name)")
    first = (rep.get("message") or "").splitlines()[0] if rep.get("message") else ""
    if rep["error"] == "RaceError":
        return "race", first
    if rep["error"] in ("Deadlock", "InstructionLimit") or rep["wait_timed_out"] or rep["deadlocks"]:
        return "hang", first or "emulator: the kernel's bounded wait fired (virtual clock)"
    if rep["error"]:
        return "fault", first
    if rep["wrong"]:
        return "wrong values", f"emulator: {rep['wrong']} of {rep['elements']} elements wrong"
    return "works", f"emulator: all {rep['elements']} elements right"
