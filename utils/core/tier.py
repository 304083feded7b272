"""Which kind of machine is this? The course decides once, before Triton is imported.

Three tiers (see README):

* ``hopper``: a CUDA GPU with compute capability >= 9.0. Everything runs, benchmarks included.
* ``cuda``: another CUDA GPU. Non-TMA kernels run; TMA cells explain why not and fall back.
* ``cpu``: no usable GPU. Triton runs under its interpreter (``TRITON_INTERPRET=1``) on small
  sizes, kernels are compiled for sm_90a so you can read their PTX, and results recorded on a
  real Hopper GPU are shown.

A learner may force a *lower* tier with the ``COURSE_TIER`` environment variable
(e.g. ``COURSE_TIER=cpu`` on a Hopper machine shows what a laptop sees).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

TIERS = ("cpu", "cuda", "hopper")  # lowest first

_CURRENT: "Tier | None" = None


@dataclass(frozen=True)
class Tier:
    """The machine's tier and the facts it was decided from."""

    name: str                      # "hopper", "cuda" or "cpu"
    device_name: str | None        # e.g. "NVIDIA H100 80GB HBM3", None without a GPU
    capability: tuple | None       # (major, minor), None without a GPU
    reason: str                    # one line: why this tier

    @property
    def has_gpu(self) -> bool:
        """True when kernels run on a real GPU (tiers hopper and cuda)."""
        return self.name != "cpu"

    @property
    def has_tma(self) -> bool:
        """True when TMA instructions can run (tier hopper)."""
        return self.name == "hopper"

    @property
    def device(self) -> str:
        """The torch device string that notebooks allocate on."""
        return "cuda" if self.has_gpu else "cpu"

    def size(self, cpu: int, gpu: int) -> int:
        """Pick a problem size: small under the interpreter, full size on a GPU."""
        return gpu if self.has_gpu else cpu


def _probe_gpu():
    """Return (name, (major, minor)) of GPU 0, or None when torch sees no CUDA device."""
    try:
        import torch
    except ImportError:
        return None
    try:
        if not torch.cuda.is_available():
            return None
        return torch.cuda.get_device_name(0), tuple(torch.cuda.get_device_capability(0))
    except Exception:  # a broken driver counts as no GPU
        return None


def detect(requested: str | None = None, probe=_probe_gpu) -> Tier:
    """Decide the tier from the hardware and an optional lower ``requested`` tier.

    ``requested`` defaults to the ``COURSE_TIER`` environment variable. Asking for a tier
    the machine cannot provide (e.g. ``hopper`` without a GPU) raises ``ValueError``.
    """
    if requested is None:
        requested = os.environ.get("COURSE_TIER") or None
    if requested is not None and requested not in TIERS:
        raise ValueError(f"COURSE_TIER={requested!r} is not a tier; choose one of {TIERS}")
    gpu = probe()
    if gpu is None:
        best = Tier("cpu", None, None, "no CUDA device visible to torch")
    else:
        name, cc = gpu
        if cc[0] >= 9:
            best = Tier("hopper", name, cc, f"compute capability {cc[0]}.{cc[1]} >= 9.0 has TMA")
        else:
            best = Tier("cuda", name, cc, f"compute capability {cc[0]}.{cc[1]} < 9.0: no TMA")
    if requested is None or requested == best.name:
        return best
    if TIERS.index(requested) > TIERS.index(best.name):
        raise ValueError(f"COURSE_TIER={requested} asks for more than this machine has "
                         f"(detected tier {best.name}: {best.reason})")
    if requested == "cpu":
        return Tier("cpu", None, None, f"forced by COURSE_TIER=cpu (machine is {best.name})")
    return Tier(requested, best.device_name, best.capability,
                f"forced by COURSE_TIER={requested} (machine is {best.name})")


def configure_environment(tier: Tier, environ=os.environ) -> None:
    """Set the variables Triton and CuteDSL read at import time, for this tier.

    Must run before ``import triton``: the interpreter is chosen when Triton is imported.
    """
    environ.setdefault("TRITON_DEFAULT_FP_FUSION", "1")   # silences a Triton 3.9 warning
    environ.setdefault("PYTHONUNBUFFERED", "1")
    if tier.name == "cpu":
        environ["TRITON_INTERPRET"] = "1"
    else:
        environ.pop("TRITON_INTERPRET", None)
    if not tier.has_tma:
        environ.setdefault("CUTE_DSL_ARCH", "sm_90a")     # compile-only target without Hopper


def setup(requested: str | None = None, quiet: bool = False) -> Tier:
    """Detect the tier, configure the environment before Triton loads, print the report.

    Call it in the first code cell of every notebook: ``T = utils.setup()``.
    """
    global _CURRENT
    tier = detect(requested)
    if "triton" in sys.modules:
        interp = os.environ.get("TRITON_INTERPRET") == "1"
        if interp != (tier.name == "cpu"):
            raise RuntimeError("triton was imported before utils.setup(); restart the kernel "
                               "and run the setup cell first")
    configure_environment(tier)
    _CURRENT = tier
    if not quiet:
        from .report import print_report
        print_report(tier)
    return tier


def current() -> Tier:
    """The tier chosen by :func:`setup` (detecting it if setup was not called)."""
    return _CURRENT if _CURRENT is not None else setup(quiet=True)


def explain_skip(tier: Tier, needs: str, what: str) -> bool:
    """Return True if ``tier`` provides ``needs`` ("gpu" or "tma"); else print why ``what`` is
    skipped and return False. The one place where notebooks decide to skip something."""
    if needs not in ("gpu", "tma"):
        raise ValueError(f"needs must be 'gpu' or 'tma', got {needs!r}")
    ok = tier.has_gpu if needs == "gpu" else tier.has_tma
    if not ok:
        why = {"gpu": "it needs a CUDA GPU", "tma": "TMA needs compute capability >= 9.0 (Hopper)"}
        print(f"[tier {tier.name}] skipped: {what} ({why[needs]}; {tier.reason}).")
    return ok
