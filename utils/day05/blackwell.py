"""Day 5 · 09: what changes on Blackwell, read from code compiled on this machine (any machine).

* :data:`FAMILIES` / :func:`count`: the PTX instructions of a GEMM's data path on Hopper
  (``sm_90a``), data-centre Blackwell (``sm_100a``) and SM 12.x (``sm_120a``);
  :data:`SASS_FAMILIES`: the same in SASS (opcode names as ptxas 13.x prints them; NVIDIA does
  not document SASS, so these names are our reading of the listings).
* :func:`tma_spellings`, :func:`accumulator_registers`, :func:`alloc_columns`: what changed and
  what did not, read from PTX text.
* :data:`PROBES` / :func:`support_table`: ask the ``ptxas`` in Triton's wheel which targets
  assemble one instruction (the assembler's verdict, next to the documents cited below).
* :data:`TARGETS`, :func:`mma_path_ref`: compute capability -> arch-specific target -> the
  tensor-core path (the reference of exercise 4; ``tests/test_blackwell.py`` holds it against
  ``utils.core.features`` and against ptxas).

Sources (PTX ISA 9.x, "Target ISA notes" of each instruction; NVIDIA's ``cuda::ptx`` tables in
CCCL list the same targets): ``wgmma.mma_async`` requires ``sm_90a``; ``tcgen05.*`` requires
``sm_100a``, ``sm_101a`` (renamed ``sm_110a``) or the ``sm_100f`` / ``sm_110f`` families, which
hold ``sm_103a``; ``mma.sync`` ``m16n8k16`` f16 requires ``sm_80`` (``m16n8k8``: ``sm_75``);
``cp.async.bulk.tensor`` and ``mbarrier`` ``expect_tx`` require ``sm_90``, their ``.cta_group::2``
form the tcgen05 targets; ``setmaxnreg``: ``sm_90a``, ``sm_100a``/``103a``/``110a``/``120a``/``121a``;
``clusterlaunchcontrol.try_cancel`` (PTX ISA 8.6): ``sm_100`` and later. Tensor memory: 128 lanes
x 512 columns of 32-bit cells per CTA, allocated in powers of two from 32 to 512 columns (PTX ISA
"Tensor Memory"; CUTLASS ``include/cute/arch/tmem_allocator_sm100.hpp``).
"""
from __future__ import annotations

import concurrent.futures
import os
import re
import subprocess
import tempfile

from ..core import ptx as ptx_reader
from ..triton_lang import sass

FAMILIES = {
    "TMA load": r"\bcp\.async\.bulk\.tensor\.\dd\.shared",
    "mbarrier expect_tx": r"\bmbarrier\.arrive\.expect_tx\b",
    "wgmma.mma_async": r"\bwgmma\.mma_async\b",
    "tcgen05.mma": r"\btcgen05\.mma\b",
    "mma.sync": r"\bmma\.sync\b",
    "tcgen05.alloc": r"\btcgen05\.alloc\b",
    "tcgen05.ld": r"\btcgen05\.ld\b",
    "tcgen05.st": r"\btcgen05\.st\b",
    "tcgen05.commit": r"\btcgen05\.commit\b",
    "setmaxnreg": r"\bsetmaxnreg\.",
    "CLC try_cancel": r"\bclusterlaunchcontrol\.try_cancel\b",
    "cta_group::2": r"\.cta_group::2\b",
    "multicast": r"\.multicast::cluster\b",
}
SASS_FAMILIES = {
    "UTMALDG (TMA load)": r"\bUTMALDG\b", "SYNCS (mbarrier)": r"\bSYNCS\.",
    "HGMMA (wgmma)": r"\bHGMMA\.", "UTCHMMA (tcgen05.mma)": r"\bUTC\w*MMA\b", "HMMA (mma.sync)": r"\bHMMA\.",
    "LDTM (tcgen05.ld)": r"\bLDTM\b", "STTM (tcgen05.st)": r"\bSTTM\b", "UTCBAR (tcgen05.commit)": r"\bUTCBAR\b",
    "USETMAXREG (setmaxnreg)": r"\bUSETMAXREG\.",
}


def count(ptx_text: str) -> dict:
    """Static count of each of :data:`FAMILIES` in PTX text (comments and directives skipped)."""
    return ptx_reader.count(ptx_text, FAMILIES)


def _opcode(line: str) -> str:
    return re.sub(r"^@!?%\w+\s+", "", line).split()[0]


def tma_spellings(ptx_text: str) -> set:
    """The distinct opcodes (every qualifier spelled out) of the TMA loads in PTX text."""
    return {_opcode(s) for s in ptx_reader._instructions(ptx_text) if re.search(FAMILIES["TMA load"], s)}


def accumulator_registers(ptx_text: str) -> int:
    """Registers per thread that hold the accumulator: the distinct registers named in the first
    operand (``{...}``) of every ``wgmma.mma_async`` and ``mma.sync``. A ``tcgen05.mma`` names a
    tensor-memory address there (``[%r5]``), no registers, so a tcgen05 kernel gives 0."""
    regs = set()
    for s in ptx_reader._instructions(ptx_text):
        if re.search(FAMILIES["wgmma.mma_async"], s) or re.search(FAMILIES["mma.sync"], s):
            first = re.search(r"\{([^}]*)\}", s)
            regs |= set(re.findall(r"%\w+", first.group(1))) if first else set()
    return len(regs)


def alloc_columns(ptx_text: str) -> list:
    """The columns each ``tcgen05.alloc`` in PTX text asks for (an immediate, or a register set by
    ``mov`` to a constant: what Triton and CuteDSL emit)."""
    out = []
    for m in re.finditer(r"tcgen05\.alloc\S*\s+\[[^\]]*\],\s*(%?\w+)\s*;", ptx_text):
        arg = m.group(1)
        if not arg.startswith("%"):
            out.append(int(arg, 0))
            continue
        mov = re.search(rf"\bmov\.[bu]32\s+{re.escape(arg)},\s*(\d+);", ptx_text)
        if not mov:
            raise ValueError(f"the column count of tcgen05.alloc is {arg}, not set by a constant mov")
        out.append(int(mov.group(1)))
    return out


# One instruction each, in a kernel that is otherwise valid PTX on every target.
PROBES = {
    "mma.sync": "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%f1,%f2,%f3,%f4}, {%r1,%r2,%r3,%r4}, "
                "{%r5,%r6}, {%f1,%f2,%f3,%f4};",
    "TMA load": "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%r1], [%rd1, {%r2, %r3}], [%r4];",
    "mbarrier expect_tx": "mbarrier.arrive.expect_tx.shared::cta.b64 %rd2, [%r4], 16;",
    "fence.proxy.async": "fence.proxy.async.shared::cta;",
    "cluster barrier": "barrier.cluster.arrive;\n barrier.cluster.wait;",
    "TMA multicast": "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster "
                     "[%r1], [%rd1, {%r2, %r3}], [%r4], %rs1;",
    "wgmma": "wgmma.fence.sync.aligned;",
    "setmaxnreg": "setmaxnreg.inc.sync.aligned.u32 240;",
    "tcgen05 (TMEM)": "tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32 [%r1], 32;",
    "TMA cta_group::2": "cp.async.bulk.tensor.2d.cta_group::2.shared::cluster.global.mbarrier::complete_tx::bytes "
                        "[%r1], [%rd1, {%r2, %r3}], [%r4];",
    "CLC try_cancel": "clusterlaunchcontrol.try_cancel.async.shared::cta.mbarrier::complete_tx::bytes.b128 [%r1], [%r4];",
}
_KERNEL = """.version {version}
.target {target}
.address_size 64
.visible .entry probe(.param .u64 p)
{{
 .reg .b32 %r<8>; .reg .b64 %rd<4>; .reg .f32 %f<8>; .reg .b16 %rs<2>;
 ld.param.u64 %rd1, [p];
 mov.b32 %r1, 0; mov.b32 %r2, 0; mov.b32 %r3, 0; mov.b32 %r4, 0; mov.b32 %r5, 0; mov.b32 %r6, 0;
 mov.b16 %rs1, 3; mov.b64 %rd2, 0; mov.f32 %f1, 0f00000000; mov.f32 %f2, 0f00000000;
 mov.f32 %f3, 0f00000000; mov.f32 %f4, 0f00000000;
 {body}
 st.global.f32 [%rd1], %f1;
 ret;
}}
"""


def _ptx_version() -> str:
    """The newest PTX ISA the assembler surely reads: 9.0 from CUDA 13, 8.(minor - 1) for CUDA 12.x."""
    major, minor = sass.assembler()[1]
    return "9.0" if major >= 13 else f"8.{max(minor - 1, 0)}"


def accepts(probe: str, target: str) -> tuple:
    """``(assembled, ptxas's first error line)``: does the ptxas in Triton's wheel assemble the
    instruction of :data:`PROBES` ``[probe]`` for ``target`` (e.g. ``"sm_120a"``)? ``assembled``
    is None when this ptxas does not know the target at all (``sm_110a`` needs CUDA 13)."""
    if probe not in PROBES:
        raise ValueError(f"probe must be one of {list(PROBES)}, got {probe!r}")
    if not re.fullmatch(r"sm_\d+[af]?", str(target)):
        raise ValueError(f"target must look like 'sm_100a', got {target!r}")
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "p.ptx")
        with open(src, "w") as f:
            f.write(_KERNEL.format(version=_ptx_version(), target=target, body=PROBES[probe]))
        p = subprocess.run([sass.tool(sass.assembler()[0]), f"-arch={target}", src, "-o", os.path.join(d, "p.cubin")],
                           capture_output=True, text=True, timeout=60)
    if "is not defined for option" in p.stderr:
        return None, f"{sass.assembler()[0]} {'.'.join(map(str, sass.assembler()[1]))} does not know {target}"
    errors = [l.split("error   : ")[-1] for l in p.stderr.splitlines() if "error" in l]
    return p.returncode == 0, (errors[0] if errors else "")


def support_table(targets, probes=tuple(PROBES)) -> dict:
    """``{target: {probe: assembled}}`` for every pair (ptxas runs in parallel, ~0.1 s each);
    ``None`` where this ptxas does not know the target."""
    pairs = [(t, p) for t in targets for p in probes]
    with concurrent.futures.ThreadPoolExecutor(8) as pool:
        done = list(pool.map(lambda tp: accepts(tp[1], tp[0])[0], pairs))
    table = {t: {} for t in targets}
    for (t, p), ok in zip(pairs, done):
        table[t][p] = ok
    return table


# compute capability -> the target the course compiles for on that GPU, and GPUs that have it
TARGETS = {(7, 5): "sm_75", (8, 0): "sm_80", (8, 6): "sm_86", (8, 9): "sm_89", (9, 0): "sm_90a",
           (10, 0): "sm_100a", (10, 3): "sm_103a", (11, 0): "sm_110a", (12, 0): "sm_120a", (12, 1): "sm_121a"}
DEVICES = {(9, 0): "H100, H200, GH200", (10, 0): "B200, GB200", (10, 3): "B300, GB300",
           (11, 0): "Jetson Thor", (12, 0): "RTX 50-series, RTX PRO Blackwell", (12, 1): "DGX Spark (GB10)"}


def mma_path_ref(capability) -> tuple:
    """``(MMA instruction, where the accumulator lives, has TMA)`` of a GEMM on a GPU of
    ``capability`` (major, minor), from the target notes cited in the module docstring."""
    cc = tuple(capability) if isinstance(capability, (tuple, list)) else None
    if cc not in TARGETS:
        raise ValueError(f"capability must be one of {sorted(TARGETS)}, got {capability!r}")
    if cc == (9, 0):
        return ("wgmma", "registers", True)
    if cc[0] in (10, 11):
        return ("tcgen05.mma", "tmem", True)
    return ("mma.sync", "registers", cc[0] >= 9)

