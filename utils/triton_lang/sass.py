"""SASS, the machine code the GPU runs, on any machine: PTX -> cubin with the ``ptxas`` that ships
in Triton's wheel, then ``cuobjdump -sass``. PTX is what the compilers emit; SASS is what ptxas
made of it, and ptxas optimizes (it can merge loads, reorder, pick instructions), so a claim about
what executes is checked here.

``sass(ptx_text)`` returns the listing, ``count(listing)`` counts instruction families
(``FAMILIES``: TMA ``UTMALDG``/``UTMASTG``/``UTMAPF``/``UTMAREDG``, bulk ``UBLKCP``, barriers
``SYNCS``, tensor cores ``HGMMA``, shared/global loads and stores), ``registers(ptx_text)`` reads
the registers per thread from the cubin's resource usage.
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


def _dump(ptx_text: str, arch: str, flag: str) -> str:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "k.cubin")
        with open(path, "wb") as f:
            f.write(cubin(ptx_text, arch))
        p = _run([tool("cuobjdump"), flag, path])
    if p.returncode:
        raise RuntimeError(f"cuobjdump {flag} failed: {p.stderr.strip()[-400:]}")
    return p.stdout


def sass(ptx_text: str, arch: str = "sm_90a") -> str:
    """The SASS listing of every kernel in ``ptx_text``."""
    return _dump(ptx_text, arch, "-sass")


def instructions(listing: str) -> list:
    """The instructions of a listing, one string each (``"UTMALDG.2D [UR4], [UR16]"``): the
    address comment, the trailing ``;`` and the encoding are dropped, comments are skipped."""
    return [" ".join(ln.split("*/", 1)[1].split(";")[0].split()) for ln in listing.splitlines()
            if re.match(r"\s*/\*[0-9a-f]{4}\*/", ln)]


def functions(listing: str) -> dict:
    """``{kernel name: its part of the listing}``."""
    return {part.split()[0]: part for part in re.split(r"\n\s*Function : ", listing)[1:]}


def count(listing: str, families: dict = FAMILIES) -> dict:
    """How many instructions of each family the listing holds (static count, like ``ptx.count``)."""
    ins = instructions(listing)
    return {name: sum(bool(re.search(rx, i)) for i in ins) for name, rx in families.items()}


def registers(ptx_text: str, arch: str = "sm_90a") -> dict:
    """Registers per thread of each kernel, ``{kernel: n}``, from the cubin's resource usage."""
    out = _dump(ptx_text, arch, "-res-usage")
    found = re.findall(r"Function ([\w$]+):\s*\n\s*REG:(\d+)", out)
    return {name: int(n) for name, n in found}
