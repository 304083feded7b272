"""What a GPU of a given compute capability can run, feature by feature, with the source of each fact.

The course asks for a *feature* (``T.has("wgmma")``), never for a major version. This module is the
one place that says which compute capability has which feature, and why:

* **baseline** features (TMA, mbarrier transaction counts, clusters) need ``sm_90`` or higher; PTX
  for ``compute_90`` runs on every later GPU through the driver's JIT, but an ``sm_90`` cubin runs
  only on 9.x, so the course compiles such kernels for the GPU they run on.
* **architecture-specific** ("a") and **family-specific** ("f") features need a target such as
  ``sm_90a`` or ``sm_100f``. Code compiled for an "a" target runs only on that exact compute
  capability; an "f" target runs on the members of its family (CUDA C++ Programming Guide 5.1.2,
  "Feature Availability", and its Table 28 "Family-Specific Compatibility"). So ``sm_90a`` code
  (``wgmma``) never runs on a B200, and a kernel that wants ``setmaxnreg`` there must be compiled
  for ``sm_100a`` or ``sm_100f``.

A fact not found in the sources is ``None`` (unknown) and treated as absent. Sources:
PTX ISA 9.1, "Target ISA notes" of each instruction and Table 60 "Arch-specific/Family-specific PTX
Features Release History"; CUDA C++ Programming Guide 5.1 "Compute Capabilities", Tables 28, 29
and 31; CUDA Driver API, ``CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED``.
"""
from __future__ import annotations

from dataclasses import dataclass

# Programming Guide Table 28: an "f" target and the compute capabilities it runs on.
FAMILIES = {"sm_100f": ((10, 0), (10, 3)), "sm_103f": ((10, 3),), "sm_110f": ((11, 0),),
            "sm_120f": ((12, 0), (12, 1)), "sm_121f": ((12, 1),)}
# Compute capabilities whose facts the sources give (Programming Guide Tables 29-31).
KNOWN = ((7, 5), (8, 0), (8, 6), (8, 7), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1))

# PTX ISA 9.1 Table 60 (and, for multicast, the Notes of cp.async.bulk / cp.async.bulk.tensor):
# the "a"/"f" targets on which each feature exists. A device has it if one of its targets is listed.
TARGETS = {
    "wgmma": {"sm_90a"},                                   # wgmma.mma_async, .fence, .commit/wait_group
    "setmaxnreg": {"sm_90a", "sm_100a", "sm_120a", "sm_100f", "sm_120f", "sm_110f"},
    "tcgen05": {"sm_100a", "sm_100f", "sm_110f"},          # tcgen05.alloc/ld/st/cp/mma: TMEM (PTX 8.6
                                                           # listed sm_101a: Thor, renamed sm_110 in 9.0)
    # Triton's ptxas 13.4 agrees: update_kernels.cu assembles for sm_90a/100a/103a/110a/120a/121a and
    # fails on sm_90, sm_100, sm_120 ("Instruction 'tensormap.replace' not supported on .target").
    "tensormap_replace": {"sm_90a", "sm_100a", "sm_120a", "sm_100f", "sm_120f", "sm_110f"},
    # .multicast::cluster "requires sm_90 or higher" but is "advised to be used with .target sm_90a
    # or sm_100f or sm_100a or sm_103f or sm_103a or sm_110f or sm_110a": elsewhere it "may have
    # substantially reduced performance". The course counts it only where it is advised.
    "multicast": {"sm_90a", "sm_100f", "sm_100a", "sm_103f", "sm_103a", "sm_110f", "sm_110a"},
}
# Programming Guide Table 31: shared memory one block may use (KB, opt-in above 48 KB).
SMEM_PER_BLOCK_KB = {(7, 5): 64, (8, 0): 163, (8, 6): 99, (8, 7): 163, (8, 9): 99, (9, 0): 227,
                     (10, 0): 227, (10, 3): 227, (11, 0): 227, (12, 0): 99, (12, 1): 99}
# Largest cluster without opt-in: 8 on sm_90 "and all compute capabilities higher" (Driver API);
# with cudaFuncAttributeNonPortableClusterSizeAllowed: 16 on H100 (Hopper Tuning Guide); unknown
# elsewhere (a figure of 16 for B200 is quoted second-hand but was not found in a primary source).
PORTABLE_CLUSTER = 8
NON_PORTABLE_CLUSTER = {(9, 0): 16}
# What the installed compilers target, checked here by compiling the course's kernels without a
# GPU (Triton 3.9, nvidia-cutlass-dsl 4.8.1, NVRTC 13.5 + Triton's ptxas 13.4).
CUTEDSL_TARGETS = {"sm_90a", "sm_100a", "sm_103a", "sm_120a", "sm_121a"}
CUTEDSL_UNKNOWN = {"sm_110a": "CuteDSL 4.8.1 emits .target sm_101a for it (Thor's name before CUDA 13 "
                              "renamed it sm_110; Triton's ptxas 13.4 has no sm_101): unknown"}
TRITON_CAPABILITIES = {(7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1)}
NVRTC_ARCHS = {75, 80, 86, 87, 88, 89, 90, 100, 103, 107, 110, 120, 121}   # nvrtcGetSupportedArchs

FEATURES = {   # name -> what it is (the order of the report)
    "gpu": "a CUDA GPU that kernels run on",
    "tma": "TMA: cp.async.bulk and cp.async.bulk.tensor (loads, stores, reduce)",
    "expect_tx": "mbarrier transaction counts (mbarrier.arrive.expect_tx, complete_tx)",
    "clusters": "thread block clusters and distributed shared memory",
    "multicast": "TMA multicast to the CTAs of a cluster (.multicast::cluster)",
    "wgmma": "warpgroup MMA from shared memory (wgmma.mma_async)",
    "setmaxnreg": "register reallocation between warpgroups (setmaxnreg)",
    "tcgen05": "5th-generation tensor cores and tensor memory, TMEM (tcgen05.*)",
    "tensormap_replace": "editing a TMA descriptor on the device (tensormap.replace)",
    "sm90a": "code compiled for sm_90a (the course's wgmma kernels, Hopper's recordings)",
    "big_smem": "227 KB of shared memory per block (the course's buffers are sized for it)",
    "cutedsl": "CuteDSL 4.8.1 compiles the course's TMA kernels for this GPU",
    "triton": "Triton compiles for this GPU (targets checked without a GPU, with Triton 3.9)",
    "nvrtc": "NVRTC compiles CUDA C++ for this GPU (archs read from NVRTC 13.5)",
}


@dataclass(frozen=True)
class Row:
    """One feature on one compute capability: ``available`` is True, False or None (unknown)."""

    feature: str
    available: bool | None
    why: str

    @property
    def ok(self) -> bool:
        """Usable: known to be available (unknown counts as absent)."""
        return self.available is True


def cc_text(cc) -> str:
    """``(12, 0)`` -> ``"12.0"``."""
    return f"{cc[0]}.{cc[1]}"


def arch_target(cc) -> str | None:
    """The architecture-specific target of a compute capability >= 9.0 (``sm_100a``), else None."""
    return f"sm_{cc[0]}{cc[1]}a" if tuple(cc) >= (9, 0) else None


def targets(cc) -> set:
    """Every "a" or "f" target whose code runs on ``cc``: its own "a" target and its families."""
    cc = tuple(cc)
    own = {arch_target(cc)} if arch_target(cc) else set()
    return own | {f for f, members in FAMILIES.items() if cc in members}


def _order(names) -> list:
    """Targets in numeric order: sm_90a before sm_100a."""
    return sorted(names, key=lambda t: (int("".join(c for c in t if c.isdigit())), t))


def _specific(name: str, cc) -> Row:
    have = _order(targets(cc) & TARGETS[name])
    listed = "/".join(_order(TARGETS[name]))
    if have:
        return Row(name, True, f"compiled for {' or '.join(have)} (PTX ISA: {listed})")
    if tuple(cc) not in KNOWN:
        return Row(name, None, f"compute capability {cc_text(cc)} is not in the sources: unknown")
    if name == "multicast" and tuple(cc) >= (9, 0):
        return Row(name, False, f"legal from sm_90, but PTX ISA advises it only for {listed} "
                   f"(\"substantially reduced performance\" elsewhere): counted as absent on {cc_text(cc)}")
    return Row(name, False, f"PTX ISA has it for {listed} only: none runs on compute capability {cc_text(cc)}")


def row(name: str, cc) -> Row:
    """Feature ``name`` on a GPU of compute capability ``cc`` ((major, minor); None: no GPU)."""
    if name not in FEATURES:
        raise ValueError(f"unknown feature {name!r}; features: {', '.join(FEATURES)}")
    if cc is None:
        return Row(name, False, "no CUDA GPU is used")
    cc = tuple(cc)
    if name == "gpu":
        return Row(name, True, f"compute capability {cc_text(cc)}")
    if name in ("tma", "expect_tx", "clusters"):   # baseline: "Requires sm_90 or higher"
        if cc < (9, 0):
            return Row(name, False, f"needs compute capability 9.0 or higher (sm_90); this GPU is {cc_text(cc)}")
        extra = ""
        if name == "clusters":
            big = NON_PORTABLE_CLUSTER.get(cc)
            extra = f": up to {PORTABLE_CLUSTER} CTAs" + (f", {big} non-portable" if big else "")
        return Row(name, True, f"sm_90 and later (baseline){extra}")
    if name == "sm90a":
        return Row(name, cc == (9, 0), "sm_90a code runs only on compute capability 9.0 (Hopper)"
                   if cc != (9, 0) else "Hopper: compute capability 9.0")
    if name == "big_smem":
        kb = SMEM_PER_BLOCK_KB.get(cc)
        return Row(name, None if kb is None else kb >= 227,
                   f"{kb} KB per block" if kb else "shared memory per block not in the sources")
    if name == "cutedsl":
        t = arch_target(cc)
        if t in CUTEDSL_UNKNOWN:
            return Row(name, None, CUTEDSL_UNKNOWN[t])
        return Row(name, t in CUTEDSL_TARGETS if t else False, f"targets {'/'.join(_order(CUTEDSL_TARGETS))}"
                   + ("" if t in CUTEDSL_TARGETS else f", not {t or 'this GPU (no TMA)'}"))
    if name == "triton":
        installed = _installed("triton")
        other = f"; checked with Triton 3.9, installed here: {installed}" if installed and not installed.startswith("3.9") else ""
        return Row(name, cc in TRITON_CAPABILITIES, f"sm_{cc[0]}{cc[1]}{'a' if cc >= (9, 0) else ''}"
                   + ("" if cc in TRITON_CAPABILITIES else " not checked") + other)
    if name == "nvrtc":
        return Row(name, cc[0] * 10 + cc[1] in NVRTC_ARCHS, f"supported archs {sorted(NVRTC_ARCHS)}")
    return _specific(name, cc)


def _installed(dist: str) -> str | None:
    """The installed version of distribution ``dist`` (package metadata: nothing is imported)."""
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def table(cc) -> dict:
    """Every feature's :class:`Row` on compute capability ``cc`` (None: no GPU), in report order."""
    return {name: row(name, cc) for name in FEATURES}


def smem_per_block(cc) -> int | None:
    """Bytes of shared memory one block may use on ``cc`` (Programming Guide Table 31), or None."""
    kb = SMEM_PER_BLOCK_KB.get(tuple(cc)) if cc is not None else None
    return None if kb is None else kb * 1024


def max_cluster(cc, portable: bool = True) -> int | None:
    """The largest cluster: portable (8 from 9.0 on) or with the non-portable opt-in (None: unknown)."""
    if cc is None or tuple(cc) < (9, 0):
        return None
    return PORTABLE_CLUSTER if portable else NON_PORTABLE_CLUSTER.get(tuple(cc))
