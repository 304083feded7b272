"""What the CUDA kernel exercises of days 1 and 2 share (day 1 · 03's transpose, the ``cp.async`` ring
of day 2 · 02, the mbarrier ring of day 2 · 03): the stub test, NVRTC's compile with the learner's line numbers, the emulator's one-line
label, and where the GPU half of a check may run.

A learner's kernel is compiled after the helpers of ``day02.cu`` (:data:`utils.cuda_cpp.day02.HELPERS`)
and run on the course's PTX emulator (:mod:`utils.emu`) on every tier; on a GPU with ``cp.async``
(compute capability 8.0 or later) it also runs for real.
"""
from __future__ import annotations

import re

from ..core.checks import fail

LABEL = "emulator: values, hangs and races; never a time"
CP_ASYNC_CC = (8, 0)          # cp.async, cp.async.mbarrier.arrive and mbarrier.test_wait: sm_80 (PTX ISA)


def c_tokens(source: str) -> list:
    """CUDA C++ ``source`` as tokens, comments and spacing dropped (string literals kept whole)."""
    code = re.sub(r'("(?:\\.|[^"\\])*")|//[^\n]*|/\*.*?\*/', lambda m: m.group(1) or " ", source, flags=re.S)
    return re.findall(r'"(?:\\.|[^"\\])*"|\w+|\S', code)


def same_as_stub(source: str, stub: str) -> bool:
    """True when ``source`` is the handed-out ``stub`` up to comments and spacing."""
    return c_tokens(source) == c_tokens(stub)


def need_source(name: str, source) -> str:
    """The learner's source, or a failure that says what was expected."""
    if not isinstance(source, str) or "{" not in source:
        fail(name, f"expected your kernel as CUDA C++ source in a string, got {type(source).__name__} "
             f"{str(source)[:60]!r}", "keep the cell's r\"\"\" ... \"\"\" string and edit the code inside it")
    return source


def compile_ptx(name: str, unit: str) -> str:
    """PTX of ``unit`` for sm_90a, or a failure quoting NVRTC's first errors (lines of your kernel)."""
    from .nvrtc import nvrtc_ptx
    try:
        return nvrtc_ptx(unit, arch="sm_90a", name="your_kernel.cu")
    except RuntimeError as err:
        lines = [l for l in str(err).splitlines()[1:] if l.strip()][:8]
        fail(name, "NVRTC could not compile your kernel:\n    " + "\n    ".join(lines),
             "the line numbers count from the first line of your source string; the helpers "
             "(cp_async16, cp_async_commit, cp_async_wait<N>, mbar_*, compute) are declared before it")


def wait_constants(body: str) -> list:
    """The N of every ``cp.async.wait_group N`` in a kernel body (``wait_all`` counts as 0)."""
    return [int(n) for n in re.findall(r"cp\.async\.wait_group\s+(\d+)", body)] + \
        [0] * len(re.findall(r"cp\.async\.wait_all", body))


def source_of(y, want, x, work: int):
    """Whose value the first wrong written element of ``y = compute(x, work)`` holds: "later" (a later
    element's: its stage was refilled too early), "earlier" (an earlier one's, or nothing loaded yet:
    read before its copy landed), or None if every written element is right."""
    import numpy as np
    a = 0.999 ** work
    wrong = np.flatnonzero(~np.isclose(y, want, atol=1e-5) & ~np.isnan(y))
    if not wrong.size:
        return None
    i = int(wrong[0])
    xs = (float(y[i]) - (1 - a)) / a                 # compute() inverted
    j = int(np.argmin(np.abs(x - xs)))
    return "later" if abs(x[j] - xs) < 2e-6 * max(1.0, abs(xs)) and j // 4 > i // 4 else "earlier"


def say_emulated(what: str) -> None:
    """The one line under a cpu-tier cell that ran a CUDA kernel on the emulator."""
    print(f"[{LABEL}] {what}")


def gpu_can_run(tier) -> bool:
    """True when ``tier`` is a GPU with cp.async and mbarrier (compute capability 8.0 or later)."""
    return tier is not None and tier.has("gpu") and tuple(tier.capability or (0, 0)) >= CP_ASYNC_CC
