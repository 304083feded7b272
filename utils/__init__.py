"""Helpers the course notebooks import, one package per subject (see ``utils/README.md``).

Import order matters: ``utils.setup()`` decides the tier and sets ``TRITON_INTERPRET`` before
Triton is imported, so this package imports nothing heavy at import time.

Packages, bottom layer first (a package imports only those above it in this list):

* ``core``: the machinery every notebook uses: ``tier`` (which machine, ``setup``), ``features``
  (what a GPU of each compute capability has, with sources), ``launchers`` (what each launcher
  needs), ``report`` (environment report), ``bench`` and ``spread`` (the benchmark harness),
  ``results`` (recorded GPU results) and ``ncu`` (hardware counters), ``checks`` and ``c_expr``
  (exercise checks), ``quiz``, ``exercises`` and ``reset`` (exercise notebooks from solutions),
  ``plots`` and ``gallery``, ``ptx`` and ``ptx_paths`` (reading PTX).
* ``cuda_cpp`` (raw CUDA C++: ``nvrtc``, ``day01``, ``day02`` + ``day02.cu``, ``bank_cost``) and
  ``triton_lang`` (``compile``, ``compat``, ``ptx_subprocess``): one package per compiler stack.
* ``tma``: descriptor validation, the NumPy TMA model, the CUDA TMA teaching kernels.
* ``cute_dsl``: CuteDSL tile copy, multicast, GEMMs, measurements, exercise checks.
* ``day01``, ``day02``, ``day05``: each day's models, exercise checks, plots and quiz.
"""
from __future__ import annotations

from .core.tier import Tier, current, detect, explain_skip
from .core.tier import setup as _setup_tier

__all__ = ["Tier", "current", "detect", "explain_skip", "setup"]


def setup(requested: str | None = None, quiet: bool = False) -> Tier:
    """Detect the tier, configure the environment before Triton loads, print the report
    (:func:`utils.core.tier.setup`). On the cpu tier, also let an older Triton's interpreter
    run what Triton 3.8+ runs (:func:`utils.triton_lang.compat.patch_old_interpreter`).

    Call it in the first code cell of every notebook: ``T = utils.setup()``.
    """
    tier = _setup_tier(requested, quiet)
    if tier.name == "cpu":
        from .triton_lang import compat
        compat.patch_old_interpreter()
    return tier
