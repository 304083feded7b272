"""Which kind of machine is this? The course decides once, before Triton is imported.

Four tiers, lowest first (see README). Each is decided by what the GPU *has*
(:mod:`utils.core.features`), never by its major version alone:

* ``hopper``: compute capability 9.x (H100, H200, GH200). Everything runs, benchmarks included:
  TMA, clusters and multicast, and the ``sm_90a`` kernels (``wgmma``, ``setmaxnreg``).
* ``tma``: another GPU with TMA (compute capability 10.x, 11.0, 12.x: B200, GB200, GB300, Jetson
  Thor, RTX 50-series and RTX PRO, DGX Spark). TMA, mbarrier and bulk-copy kernels are compiled
  for this GPU and run; Triton runs natively; cells that need ``wgmma``, ``sm_90a`` code or another
  feature this GPU lacks explain why and show what was recorded on Hopper.
* ``cuda``: a GPU without TMA (compute capability < 9.0). Non-TMA kernels run; TMA cells explain.
* ``cpu``: no usable GPU. Triton runs under its interpreter (``TRITON_INTERPRET=1``) on small
  sizes, kernels are compiled for sm_90a so you can read their PTX, and results recorded on a
  real Hopper GPU are shown.

A cell asks for a feature: ``T.has("wgmma")`` or ``utils.explain_skip(T, "wgmma", what)``.
A learner may force a *lower* tier with the ``COURSE_TIER`` environment variable
(e.g. ``COURSE_TIER=cpu`` on a Hopper machine shows what a laptop sees, ``COURSE_TIER=tma``
what a Blackwell GPU sees: no ``sm_90a`` code).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass

from . import features as F

TIERS = ("cpu", "cuda", "tma", "hopper")  # lowest first
HOPPER_ONLY = ("wgmma", "sm90a")           # what the tma tier never has, even forced on a Hopper GPU
CUDA_KEEPS = ("gpu", "big_smem", "triton", "nvrtc")   # the cuda tier leaves out every TMA-era feature

_CURRENT: "Tier | None" = None


@dataclass(frozen=True)
class Tier:
    """The machine's tier and the facts it was decided from."""

    name: str                      # "hopper", "tma", "cuda" or "cpu"
    device_name: str | None        # e.g. "NVIDIA H100 80GB HBM3", None without a GPU
    capability: tuple | None       # (major, minor), None without a GPU
    reason: str                    # one line: why this tier

    @property
    def features(self) -> dict:
        """Feature name -> :class:`utils.core.features.Row` (available or not, and why) on this
        tier: the GPU's own facts, less what a lower tier leaves out."""
        rows = F.table(None if self.name == "cpu" else self.capability)
        for name, r in rows.items():
            lower = ((self.name == "cuda" and name not in CUDA_KEEPS)
                     or (self.name == "tma" and name in HOPPER_ONLY))
            if lower and r.available:
                rows[name] = F.Row(name, False, f"tier {self.name} leaves it out ({r.why})")
        return rows

    def has(self, feature: str) -> bool:
        """True when this tier provides ``feature`` (a name of :data:`utils.core.features.FEATURES`)."""
        if feature not in F.FEATURES:
            raise ValueError(f"unknown feature {feature!r}; features: {', '.join(F.FEATURES)}")
        return self.features[feature].ok

    @property
    def has_gpu(self) -> bool:
        """True when kernels run on a real GPU (tiers hopper, tma and cuda)."""
        return self.name != "cpu"

    @property
    def has_tma(self) -> bool:
        """True when TMA instructions can run (tiers hopper and tma): ``has("tma")``."""
        return self.has("tma")

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


def _tier_of(cc) -> str:
    """The tier a GPU of compute capability ``cc`` gets: by what it has (features.py)."""
    if not F.row("tma", cc).ok:
        return "cuda"
    return "hopper" if cc[0] == 9 else "tma"


def _reason(cc) -> str:
    cc_s = F.cc_text(cc)
    if not F.row("tma", cc).ok:
        return f"compute capability {cc_s} < 9.0: no TMA"
    if cc[0] == 9:
        return f"compute capability {cc_s}: TMA and sm_90a (wgmma, setmaxnreg)"
    return f"compute capability {cc_s}: TMA, but sm_90a code (wgmma) does not run here"


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
        name, cc = gpu[0], tuple(gpu[1])
        best = Tier(_tier_of(cc), name, cc, _reason(cc))
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
        environ.setdefault("CUTE_DSL_ARCH", "sm_90a")     # compile-only target without a TMA GPU


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


def _needs(needs) -> tuple:
    names = (needs,) if isinstance(needs, str) else tuple(needs) if isinstance(needs, (tuple, list)) else ()
    if not names or any(n not in F.FEATURES for n in names):
        raise ValueError(f"needs must be a feature name or a tuple of them ({', '.join(F.FEATURES)}), "
                         f"got {needs!r}")
    return names


def missing(tier: Tier, needs) -> str | None:
    """The most basic feature of ``needs`` (a name or a tuple of names; in the order of
    :data:`utils.core.features.FEATURES`, so "tma" before "cutedsl") that ``tier`` lacks, or None."""
    names = set(_needs(needs))
    return next((n for n in F.FEATURES if n in names and not tier.has(n)), None)


def why_not(tier: Tier, feature: str) -> str:
    """One line: why ``tier`` lacks ``feature``, naming the GPU's compute capability."""
    gpu = f"compute capability {F.cc_text(tier.capability)}" if tier.capability else "no GPU"
    return f"it needs {feature}, which this tier ({gpu}) lacks: {tier.features[feature].why}"


def explain_skip(tier: Tier, needs, what: str) -> bool:
    """Return True if ``tier`` provides ``needs`` (a feature name such as "gpu", "tma", "wgmma",
    "clusters", or a tuple of them); else print why ``what`` is skipped and return False.
    The one place where notebooks decide to skip something."""
    lack = missing(tier, needs)
    if lack is not None:
        print(f"[tier {tier.name}] skipped: {what} ({why_not(tier, lack)}; {tier.reason}).")
    return lack is None
