"""SASS, the machine code the GPU runs, on any machine: PTX -> cubin with the ``ptxas`` that ships
in Triton's wheel, then ``cuobjdump -sass``. PTX is what the compilers emit; SASS is what ptxas
made of it, and ptxas optimizes (it can merge loads, reorder, pick instructions), so a claim about
what executes is checked here.

``sass(ptx_text)`` returns the listing, ``count(listing)`` counts instruction families
(``FAMILIES``: TMA ``UTMALDG``/``UTMASTG``/``UTMAPF``/``UTMAREDG``, bulk ``UBLKCP``, barriers
``SYNCS``, tensor cores ``HGMMA``, shared/global loads and stores), ``registers(ptx_text)`` reads
the registers per thread from the cubin's resource usage. Both also take a cubin (``bytes``) that a
compiler already assembled (Triton's ``compiled.asm["cubin"]``: the machine code it would run).
``main_loop``/``loop_mix`` find a kernel's main loop (a backward branch) and count inside it.
"""
from __future__ import annotations

import functools
import os
import re
import subprocess
import tempfile

FAMILIES = {
    "TMA load (UTMALDG)": r"\bUTMALDG\b", "TMA store (UTMASTG)": r"\bUTMASTG\b",
    "TMA reduce (UTMAREDG)": r"\bUTMAREDG\b", "TMA prefetch (UTMAPF)": r"\bUTMAPF\b",
    "bulk copy (UBLKCP)": r"\bUBLKCP\b", "mbarrier (SYNCS)": r"\bSYNCS\.", "tensor core (HGMMA)": r"\bHGMMA\.",
    "cp.async (LDGSTS)": r"\bLDGSTS\b", "shared load (LDS)": r"\bLDS(\.|\s)", "shared store (STS)": r"\bSTS(\.|\s)",
    "global load (LDG)": r"\bLDG\.", "global store (STG)": r"\bSTG\.",
}
ASSEMBLERS = ("ptxas-blackwell", "ptxas")   # Triton ships both; the first is the newer toolkit


def _bin_dir() -> str:
    import triton
    return os.path.join(os.path.dirname(triton.__file__), "backends", "nvidia", "bin")


@functools.lru_cache(maxsize=None)
def tool(name: str) -> str:
    """Path of a CUDA tool shipped in Triton's wheel (``ptxas``, ``cuobjdump``, ``nvdisasm``).
    (It lives here, in ``triton_lang``, because it comes with Triton and changes with it.)"""
    path = os.path.join(_bin_dir(), name)
    if not os.access(path, os.X_OK):
        raise RuntimeError(f"{name} is not in Triton's wheel at {path}: SASS needs Triton's CUDA tools")
    return path


@functools.lru_cache(maxsize=None)
def assembler() -> tuple:
    """(name, (major, minor)) of the ptxas that :func:`cubin` tries first, e.g.
    ``("ptxas-blackwell", (13, 4))`` with Triton 3.9, ``(13, 0)`` with Triton 3.6. What ptxas emits
    changes between versions, so a claim read from SASS names the version it was read with."""
    name = next((a for a in ASSEMBLERS if os.access(os.path.join(_bin_dir(), a), os.X_OK)), "ptxas")
    m = re.search(r"release (\d+)\.(\d+)", _run([tool(name), "--version"]).stdout)
    if not m:
        raise RuntimeError(f"could not read the version of {tool(name)}")
    return name, (int(m.group(1)), int(m.group(2)))


def _run(cmd) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def cubin(ptx_text: str, arch: str = "sm_90a") -> bytes:
    """Assemble PTX for ``arch``. A PTX ISA newer than the assembler knows (NVRTC is newer than
    Triton's ptxas) is declared down to the assembler's version, which works while the kernel uses
    no newer instruction; otherwise ptxas's own error is raised."""
    if not isinstance(ptx_text, str) or ".entry" not in ptx_text:
        raise ValueError("expected PTX text with at least one .entry (a kernel)")
    errors = []
    with tempfile.TemporaryDirectory() as d:
        src, out = os.path.join(d, "k.ptx"), os.path.join(d, "k.cubin")
        for name in [a for a in ASSEMBLERS if os.access(os.path.join(_bin_dir(), a), os.X_OK)] or ["ptxas"]:
            text = ptx_text
            for _ in range(2):
                with open(src, "w") as f:
                    f.write(text)
                p = _run([tool(name), f"-arch={arch}", src, "-o", out])
                if p.returncode == 0:
                    with open(out, "rb") as f:
                        return f.read()
                m = re.search(r"Unsupported \.version [\d.]+; current version is '([\d.]+)'", p.stderr)
                if not m:
                    break
                text = re.sub(r"^\.version [\d.]+", f".version {m.group(1)}", text, count=1, flags=re.M)
            errors.append(f"{name}: {p.stderr.strip()[-400:]}")
    raise RuntimeError("ptxas could not assemble this PTX:\n" + "\n".join(errors))


def _dump(source, arch: str, flag: str) -> str:
    if isinstance(source, (bytes, bytearray)) and not bytes(source[:4]) == b"\x7fELF":
        raise ValueError("expected a cubin (an ELF file, starting with b'\\x7fELF') or PTX text")
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(source if isinstance(source, (bytes, bytearray)) else cubin(source, arch))
        p = _run([tool("cuobjdump"), flag, path])
    if p.returncode:
        raise RuntimeError(f"cuobjdump {flag} failed: {p.stderr.strip()[-400:]}")
    return p.stdout


def sass(source, arch: str = "sm_90a") -> str:
    """The SASS listing of every kernel in ``source`` (PTX text, or a cubin as ``bytes``)."""
    return _dump(source, arch, "-sass")


_LINE = re.compile(r"\s*/\*([0-9a-f]{4,})\*/\s*([^;]*);")


def _addressed(listing: str) -> list:
    """``[(address, instruction)]`` of every instruction line of a listing."""
    return [(int(m.group(1), 16), " ".join(m.group(2).split()))
            for m in map(_LINE.match, listing.splitlines()) if m]


def instructions(listing: str) -> list:
    """The instructions of a listing, one string each (``"UTMALDG.2D [UR4], [UR16]"``): the
    address comment, the trailing ``;`` and the encoding are dropped, comments are skipped."""
    return [i for _, i in _addressed(listing)]


def functions(listing: str) -> dict:
    """``{kernel name: its part of the listing}``."""
    return {part.split()[0]: part for part in re.split(r"\n\s*Function : ", listing)[1:]}


def executed(listing: str) -> list:
    """``instructions(listing)`` without those guarded by ``@!PT`` (a predicate that is always
    false: ptxas pads with them, e.g. ``@!PT LDS RZ, [RZ]``); they never execute."""
    return [i for i in instructions(listing) if not i.startswith("@!PT ")]


def count(listing: str, families: dict = FAMILIES) -> dict:
    """How many instructions of each family the listing holds (static count, like ``ptx.count``;
    ``@!PT`` padding, which never executes, is not counted: see ``executed``)."""
    ins = executed(listing)
    return {name: sum(bool(re.search(rx, i)) for i in ins) for name, rx in families.items()}


def registers(source, arch: str = "sm_90a") -> dict:
    """Registers per thread of each kernel, ``{kernel: n}``, from the cubin's resource usage (what
    each thread is given at launch). ``source``: PTX text or a cubin (``bytes``)."""
    out = _dump(source, arch, "-res-usage")
    found = re.findall(r"Function ([\w$]+):\s*\n\s*REG:(\d+)", out)
    return {name: int(n) for name, n in found}


# The GEMM main loop: what one k-step issues. Keys are the SASS opcodes.
LOOP_FAMILIES = {
    "HGMMA": r"\bHGMMA\.", "UTMALDG": r"\bUTMALDG\b", "UTMASTG": r"\bUTMASTG\b", "SYNCS": r"\bSYNCS\.",
    "WARPGROUP": r"\bWARPGROUP\.", "BAR": r"\bBAR\.", "ELECT": r"\bELECT\b", "LDGSTS": r"\bLDGSTS\b",
    "LDG": r"\bLDG\.", "STG": r"\bSTG\.", "LDS": r"\bLDS(\.|\s)", "STS": r"\bSTS(\.|\s)",
    "STSM": r"\bSTSM\.", "USETMAXREG": r"\bUSETMAXREG\.",
}
REGISTER_FILE = 65536            # 32-bit registers per SM on Hopper (and the most one CTA may use)
_BRA = re.compile(r"\bBRA\b[^;]*?0x([0-9a-f]+)\s*$")


def _one_kernel(listing: str) -> list:
    """``[(address, instruction)]`` of a listing that holds exactly one kernel."""
    if not isinstance(listing, str):
        raise ValueError(f"expected a SASS listing (str), got {type(listing).__name__}")
    if len(functions(listing)) > 1:
        raise ValueError(f"the listing holds {len(functions(listing))} kernels: pick one with "
                         "sass.functions(listing)[name]")
    ins = _addressed(listing)
    if not ins:
        raise ValueError("no SASS instruction lines in this text: pass the output of sass.sass(...)")
    return ins


def loops(listing: str) -> list:
    """The loops of one kernel as ``(first, last)`` instruction addresses: a branch back to an
    earlier address closes a loop. ptxas moves slow paths (an mbarrier wait that must retry) out of
    line and jumps back from there; such a jump is not a loop, and shows as a range that another
    branch enters from before its head, so those ranges are left out."""
    ins = _one_kernel(listing)
    branches = [(a, int(m.group(1), 16)) for a, i in ins for m in [_BRA.search(i)] if m]
    return [(to, at) for at, to in branches if to < at
            and not any(src < to < dst <= at for src, dst in branches)]


def main_loop(listing: str, marker: str = r"\bHGMMA\.") -> str:
    """The innermost loop (fewest instructions) that holds an instruction matching ``marker`` (by
    default a tensor-core ``HGMMA``: a GEMM's k-loop), as a listing for ``count``/``instructions``."""
    ins = _one_kernel(listing)
    found = [(hi - lo, lo, hi) for lo, hi in loops(listing)
             if any(re.search(marker, i) for a, i in ins if lo <= a <= hi)]
    if not found:
        raise ValueError(f"no loop of this kernel holds an instruction matching {marker!r}")
    _, lo, hi = min(found)
    return "\n".join(f"        /*{a:04x}*/ {i} ;" for a, i in ins if lo <= a <= hi)


def loop_mix(listing: str, families: dict = LOOP_FAMILIES, marker: str = r"\bHGMMA\.") -> dict:
    """``{family: (in the main loop, in the whole kernel)}`` plus ``"instructions"``: what one trip
    of the main loop issues against the kernel's static total (``@!PT`` padding not counted)."""
    loop = main_loop(listing, marker)
    inside, total = count(loop, families), count(listing, families)
    out = {name: (inside[name], total[name]) for name in families}
    out["instructions"] = (len(executed(loop)), len(executed(listing)))
    return out


def ctas_per_sm(regs: int, threads: int) -> int:
    """CTAs of ``threads`` threads that fit in one SM's register file at ``regs`` registers per
    thread (computed: registers are given out per warp in units of 256, i.e. 8 per thread)."""
    for name, v, hi in (("regs", regs, 255), ("threads", threads, 1024)):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 < v <= hi:
            raise ValueError(f"{name} must be an int in 1..{hi}, got {v!r}")
    per_warp = -(-regs // 8) * 8 * 32
    return REGISTER_FILE // (per_warp * -(-threads // 32))
