"""The environment report printed by every notebook's first cell: tier, GPU, versions, features,
abilities."""
from __future__ import annotations

import importlib
import platform

PACKAGES = {  # import name -> distributions that provide it (the first installed one is shown)
    "numpy": ("numpy",),
    "torch": ("torch",),
    "triton": ("triton",),
    "cupy": ("cupy-cuda13x", "cupy-cuda12x", "cupy"),
    "cuda.bindings": ("cuda-bindings",),
    "cutlass": ("nvidia-cutlass-dsl",),
    "matplotlib": ("matplotlib",),
}


def versions() -> dict:
    """Installed versions of the course's libraries (``None`` when missing), without importing
    heavy modules: versions come from package metadata (recorded into every results file)."""
    from importlib import metadata
    out = {"python": platform.python_version()}
    for mod, dists in PACKAGES.items():
        for dist in dists:
            try:
                out[dist] = metadata.version(dist)
                break
            except metadata.PackageNotFoundError:
                continue
        else:
            try:
                out[dists[0]] = getattr(importlib.import_module(mod), "__version__", "installed")
            except Exception:
                out[dists[0]] = None
    return out


def abilities(tier) -> list[tuple[str, bool, str]]:
    """What this tier can and cannot do: (what, yes/no, why) rows."""
    gpu, tma, sm90a = tier.has_gpu, tier.has("tma"), tier.has("sm90a")
    rows = tier.features
    return [
        ("Triton kernels on the GPU", gpu, "needs a CUDA GPU" if not gpu else "GPU present"),
        ("Triton kernels under the interpreter", True, "TRITON_INTERPRET=1 on CPU tensors"),
        ("TMA kernels (cp.async.bulk.tensor)", tma, rows["tma"].why),
        ("wgmma GEMMs at full speed", sm90a, "Hopper" if sm90a else rows["wgmma"].why),
        ("Compile for sm_90a and read the PTX", True, "Triton AOT, NVRTC, CuteDSL compile-only"),
        ("Benchmarks measured here", gpu, "timings need a GPU; recorded results are shown"
         if not gpu else "CUDA events"),
    ]


def feature_lines(tier) -> list[str]:
    """Two short lines: the features this tier has, and those it lacks (details: ``T.features``)."""
    rows = tier.features
    yes = [k for k, r in rows.items() if r.ok]
    no = [k for k, r in rows.items() if not r.ok]
    if "clusters" in yes and tier.capability:
        from .features import max_cluster
        big = max_cluster(tier.capability, portable=False)
        yes[yes.index("clusters")] = f"clusters (<= {max_cluster(tier.capability)}" + (f", {big} opt-in)" if big else ")")
    if not tier.has_gpu:
        return ["Features here: none (no GPU is used)"]
    return [f"Features here: {', '.join(yes)}",
            f"Not here: {', '.join(no) or 'nothing'}  (why: T.features[name].why)"]


def sm_note() -> str:
    """", N SMs" for the GPU in use, and a warning when N is below a whole H100 SXM/H200's 132 (a
    MIG slice or a smaller part: its power, clock and per-SM figures are not the recordings')."""
    try:
        import torch
        n = torch.cuda.get_device_properties(0).multi_processor_count
    except Exception:                      # no torch, or no usable device: say nothing
        return ""
    return f", {n} SMs" + ("" if n >= 132 else " (fewer than an H100 SXM's 132: a MIG slice or a "
                                            "smaller GPU; compare per-SM figures, not totals)")


def print_report(tier) -> None:
    """Print the tier, the device, the library versions, the features and the abilities table."""
    print(f"Course tier: {tier.name.upper()}  ({tier.reason})")
    if tier.device_name:
        major, minor = tier.capability
        print(f"GPU: {tier.device_name}, compute capability {major}.{minor}{sm_note()}")
    else:
        print("GPU: none used")
    v = versions()
    print("Versions: " + ", ".join(f"{k} {val}" for k, val in v.items() if val))
    missing = [k for k, val in v.items() if val is None]
    if missing:
        print("Not installed: " + ", ".join(missing))
    for line in feature_lines(tier):
        print(line)
    for what, ok, why in abilities(tier):
        print(f"  [{'yes' if ok else ' no'}] {what}: {why}")
