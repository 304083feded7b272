"""Day 5 · 08, the debugging lab: broken TMA kernels read on any machine.

Every lab kernel is the correct ``lab_fixed`` (``lab_fixed.cu``) with one line changed
(:data:`EDITS`; :data:`PAIR`, the last exercise, has two bugs). :func:`listing` numbers a kernel's source, :func:`diff` shows the PTX or SASS
instructions in which it differs from the correct kernel (sm_90a PTX from NVRTC, SASS from the
ptxas in Triton's wheel, no GPU needed), and :func:`fence_gap` finds a path on which the threads'
shared-memory writes reach a TMA store without ``fence.proxy.async``. Running the kernels (in a
subprocess, on Hopper) is :mod:`.lab_run`; the exercise check is :mod:`.lab_checks`.
"""
from __future__ import annotations

import difflib
import functools
import itertools
import pathlib
import re

from . import runtime

FIXED = "lab_fixed"
_FIXED_CU = pathlib.Path(__file__).with_name("lab_fixed.cu").read_text()
_WAIT = "    if (!mbar_wait_bounded(bar, {}, timeout_ns)) {{ if (threadIdx.x == 0) atomicExch(status, 1); return; }}"
_COORDS = "    Coords k = {{{{{}, {}, 0, 0, 0}}}};"
_DOUBLE = "    for (int i = threadIdx.x; i < TILE; i += blockDim.x) tile[i] *= 2.0f;"
_FENCE = '    asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
# Every broken kernel is lab_fixed with these lines replaced (numbered as `listing` prints them):
# the six bugs of the notebook's sections 2.1-2.6, then the seven exercises' mystery kernels.
EDITS = {
    "lab_hang": {6: "  if (threadIdx.x == 0) mbar_init(bar, blockDim.x);"},
    "lab_expect_tx": {11: "      mbar_expect_tx(bar, TILE);"},
    "lab_phase": {14: _WAIT.format("0")},
    "lab_fence": {16: "    __threadfence_block();"},
    "lab_negative": {9: _COORDS.format("(t % tiles_x) * BOX_X", "rows - (t / tiles_x + 1) * BOX_Y")},
    "lab_misaligned": {4: "  float* tile = (float*)(smem_base() + 16);"},
    "lab_mystery_1": {14: _WAIT.format("(it & 1) ^ 1")},
    "lab_mystery_2": {9: _COORDS.format("cols - (t % tiles_x + 1) * BOX_X", "(t / tiles_x) * BOX_Y")},
    "lab_mystery_3": {11: "      mbar_expect_tx(bar, BOX_X * BOX_X * 4);"},
    "lab_mystery_4": {15: _FENCE, 16: _DOUBLE},
    "lab_mystery_5": {4: "  float* tile = (float*)(smem_base() + 64);"},
    "lab_mystery_6": {6: "  if (threadIdx.x == 0) mbar_init(bar, blockDim.x / 32);"},
    # two bugs that interact: the hang of the first hides the race of the second
    "lab_mystery_7": {11: "      mbar_expect_tx(bar, TILE * 4 + 128);",
                      16: '    asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");'},
}
SECTIONS = ("lab_hang", "lab_expect_tx", "lab_phase", "lab_fence", "lab_negative", "lab_misaligned")
MYSTERIES = tuple(f"lab_mystery_{i}" for i in range(1, 7))   # one bug each (lab_checks.check_bug)
PAIR = "lab_mystery_7"                                         # two bugs (lab_checks.check_pair)
PUZZLES = MYSTERIES + (PAIR,)                                  # every exercise's kernel
KERNELS = (FIXED,) + SECTIONS + PUZZLES


def _broken(name: str) -> str:
    """lab_fixed's source renamed to ``name``, with ``EDITS[name]`` applied."""
    start = _FIXED_CU.index(f'extern "C" __global__ void {FIXED}(')
    lines = _FIXED_CU[start:_FIXED_CU.index("\n}\n", start) + 2].splitlines()
    lines[0] = lines[0].replace(f"{FIXED}(", f"{name}(")
    lines[1] = " " * (lines[0].index("(") + 1) + lines[1].lstrip()
    for number, text in EDITS[name].items():
        if lines[number - 1].strip() == text.strip():
            raise ValueError(f"{name}: the edit of line {number} changes nothing")
        lines[number - 1] = text
    return "\n".join(lines) + "\n"


SOURCE = "\n".join([runtime.SOURCE, _FIXED_CU, *(_broken(n) for n in SECTIONS + PUZZLES)])


def known(name) -> str:
    """``name`` if it is a lab kernel, else ValueError listing them."""
    if name not in KERNELS:
        raise ValueError(f"no lab kernel named {name!r}; the lab's kernels are {KERNELS}")
    return name


def source(name: str) -> str:
    """The CUDA source of lab kernel ``name`` (from ``extern`` to its closing brace)."""
    start = SOURCE.index(f'extern "C" __global__ void {known(name)}(')
    return SOURCE[start:SOURCE.index("\n}\n", start) + 2]


def with_lines(name: str, lines: dict) -> str:
    """:data:`SOURCE` with lines of kernel ``name`` replaced, ``{number: text}`` as :func:`listing`
    numbers them (e.g. one bug of ``lab_mystery_7`` fixed, to run the kernel again). Runs on the
    emulator (``utils.emu.course.lab_report(name, source=...)``); the GPU runs :data:`SOURCE`."""
    old = source(name)
    new = old.splitlines()
    for number, text in lines.items():
        if not (isinstance(number, int) and 1 <= number <= len(new) and isinstance(text, str)):
            raise ValueError(f"lines must map a line number 1..{len(new)} of {name} to its new text, "
                             f"got {number!r}: {text!r}")
        new[number - 1] = text
    return SOURCE.replace(old, "\n".join(new) + "\n")


def listing(name: str) -> str:
    """:func:`source` with line numbers (the numbers the exercises ask for)."""
    return "\n".join(f"{i:>2}  {line}" for i, line in enumerate(source(name).splitlines(), 1))


@functools.lru_cache(maxsize=None)
def ptx() -> str:
    """sm_90a PTX of the teaching kernels and the lab's kernels (NVRTC; any machine)."""
    from ..cuda_cpp.nvrtc import nvrtc_ptx
    return nvrtc_ptx(SOURCE, name="lab_fixed.cu")


@functools.lru_cache(maxsize=None)
def _sass_functions() -> dict:
    from ..triton_lang import sass
    return sass.functions(sass.sass(ptx()))


def _normal(line: str, name: str) -> str:
    """One instruction with the names that change from kernel to kernel made equal: register
    numbers, labels, the kernel's own name in its parameters, branch targets."""
    line = line.replace(name, "K")
    line = re.sub(r"(%[a-z]+)\d+", r"\1", line)
    line = re.sub(r"\$L__\w+", "$L", line)
    line = re.sub(r"\b(U?R|U?P)\d+\b", r"\1", line)
    return re.sub(r"((?:BRA|BSSY|CALL|JMP)\S*\s.*)0x[0-9a-f]+", r"\1<target>", line)


def body(name: str) -> str:
    """The PTX body of kernel ``name``."""
    from ..core.ptx_paths import kernel_body
    return kernel_body(ptx(), known(name))


def instructions(name: str, level: str = "ptx") -> list:
    """Kernel ``name``'s instructions, normalised (:func:`_normal`), at ``level`` "ptx" or "sass"."""
    from ..core.ptx_paths import parse
    from ..triton_lang import sass
    if level == "ptx":
        lines = [i.text for i in parse(body(name))[0]]
    elif level == "sass":
        lines = sass.instructions(_sass_functions()[known(name)])
    else:
        raise ValueError(f"level must be 'ptx' or 'sass', got {level!r}")
    return [_normal(s, name) for s in lines]


def diff(name: str, level: str = "ptx", against: str = FIXED) -> list:
    """The instructions that differ between kernel ``name`` and ``against`` (the correct kernel):
    ``["- <only in against>", "+ <only in name>", ...]``, in order."""
    a, b = instructions(against, level), instructions(name, level)
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op != "equal":
            out += [f"- {s}" for s in a[i1:i2]] + [f"+ {s}" for s in b[j1:j2]]
    runs = [(line, len(list(group))) for line, group in itertools.groupby(out)]   # one line per run
    return [line if n == 1 else f"{line}   (x{n})" for line, n in runs]


def fence_gap(name: str):
    """A PTX path (list of instructions) of kernel ``name`` from a thread's shared-memory write to a
    TMA store that passes no ``fence.proxy.async``; None when every path is fenced."""
    from ..core.ptx_paths import path_avoiding
    from .fence_paths import is_proxy_fence, is_smem_write, is_tma_store
    return path_avoiding(body(name), is_smem_write, is_tma_store, is_proxy_fence)
