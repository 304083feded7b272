"""Read PTX, whichever compiler made it: the instructions that matter for data movement.

* :func:`count` / :func:`show` / :func:`target`: instruction families, the ``.target``;
  :func:`entry`: one kernel's part of a module's PTX.

The compilers live with their stack: :func:`utils.cuda_cpp.nvrtc.nvrtc_ptx` (CUDA C++ through
NVRTC), :func:`utils.triton_lang.compile.triton_ptx` (Triton, ahead of time),
:func:`utils.cute_dsl.compat.compile_ptx` (CuteDSL). All compile for sm_90a without a GPU.
"""
from __future__ import annotations

import re

# Instruction families a data-movement lesson looks for, as regexes on PTX opcodes.
FAMILIES = {
    "cp.async.bulk.tensor": r"\bcp\.async\.bulk\.tensor\b",
    "mbarrier": r"\bmbarrier\.",
    "fence.proxy.async": r"\bfence\.proxy\.async\b",
    "wgmma": r"\bwgmma\.",
    "ld.global": r"\bld\.global\b",
    "st.global": r"\bst\.global\b",
    "cp.async (Ampere)": r"\bcp\.async\.(ca|cg)\b",
    "ld.shared": r"\bld\.shared\b",
    "st.shared": r"\bst\.shared\b",
}


def _instructions(ptx: str):
    """PTX instruction lines (comments, labels and directives removed)."""
    if not isinstance(ptx, str) or ".target" not in ptx:
        raise ValueError("expected PTX text (it has a .target line)")
    for line in ptx.splitlines():
        s = line.split("//")[0].strip()
        if s and not s.startswith((".", "{", "}", "$")) and not s.endswith(":"):
            yield s


def count(ptx: str, families: dict | None = None) -> dict:
    """How many PTX instructions of each family the kernel text contains (static count)."""
    families = FAMILIES if families is None else families
    lines = list(_instructions(ptx))
    return {name: sum(1 for s in lines if re.search(rx, s)) for name, rx in families.items()}


def entry(ptx: str, name: str) -> str:
    """The text of kernel ``name`` in a PTX module: from its ``.entry`` up to the next one."""
    start = ptx.find(f".entry {name}(")
    if start < 0:
        raise ValueError(f"no kernel {name!r} in this PTX")
    end = ptx.find(".entry", start + 1)
    return ptx[start: end if end > 0 else len(ptx)]


def target(ptx: str) -> str:
    """The ``.target`` of a PTX text, e.g. ``"sm_90a"``."""
    m = re.search(r"^\s*\.target\s+(\S+)", ptx, re.M)
    if not m:
        raise ValueError("no .target line: is this PTX?")
    return m.group(1).rstrip(",")


def show(ptx: str, families=("cp.async.bulk.tensor", "mbarrier", "fence.proxy.async", "wgmma",
                             "ld.global", "st.global"), limit: int = 12) -> None:
    """Print the target and up to ``limit`` instructions of the chosen families."""
    unknown = [f for f in families if f not in FAMILIES]
    if unknown:
        raise ValueError(f"unknown families {unknown}; known: {list(FAMILIES)}")
    print(f".target {target(ptx)}")
    shown = 0
    for s in _instructions(ptx):
        if any(re.search(FAMILIES[f], s) for f in families):
            print("   ", s[:140])
            shown += 1
            if shown >= limit:
                print("    ...")
                break
