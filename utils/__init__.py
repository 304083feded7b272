"""Helpers the course notebooks import.

Import order matters: ``utils.setup()`` decides the tier and sets ``TRITON_INTERPRET`` before
Triton is imported, so this package imports nothing heavy at import time.

Modules: ``tier`` (which machine), ``report`` (environment report), ``bench`` (the benchmark
harness), ``results`` (recorded GPU results), ``checks`` (exercise checks), ``quiz``,
``ptx`` (compile for sm_90a and read the PTX), ``triton_compat`` (version differences),
``tma`` (descriptor validation, the NumPy TMA model), ``exercises`` (generate exercise
notebooks from solutions).
"""
from .tier import Tier, current, detect, explain_skip, setup

__all__ = ["Tier", "current", "detect", "explain_skip", "setup"]
