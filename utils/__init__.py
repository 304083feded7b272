"""Helpers the course notebooks import, one package per subject (see ``utils/README.md``).

Import order matters: ``utils.setup()`` decides the tier and sets ``TRITON_INTERPRET`` before
Triton is imported, so this package imports nothing heavy at import time.

Packages, bottom layer first (a package imports only those above it in this list):

* ``core``: the machinery every notebook uses: ``tier`` (which machine, ``setup``), ``report``
  (environment report), ``bench`` and ``spread`` (the benchmark harness), ``results`` (recorded
  GPU results) and ``ncu`` (hardware counters), ``checks`` and ``c_expr`` (exercise checks),
  ``quiz``, ``exercises`` and ``reset`` (exercise notebooks from solutions), ``plots`` and
  ``gallery``, ``ptx`` and ``ptx_paths`` (reading PTX).
* ``cuda_cpp`` (raw CUDA C++: ``nvrtc``, ``day01``, ``day02`` + ``day02.cu``, ``bank_cost``) and
  ``triton_lang`` (``compile``, ``compat``, ``ptx_subprocess``): one package per compiler stack.
* ``tma``: descriptor validation, the NumPy TMA model, the CUDA TMA teaching kernels.
* ``cute_dsl``: CuteDSL tile copy, multicast, GEMMs, measurements, exercise checks.
* ``day01``, ``day02``, ``day05``: each day's models, exercise checks, plots and quiz.
"""
from .core.tier import Tier, current, detect, explain_skip, setup

__all__ = ["Tier", "current", "detect", "explain_skip", "setup"]
