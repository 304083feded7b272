"""Helpers the course notebooks import.

Import order matters: ``utils.setup()`` decides the tier and sets ``TRITON_INTERPRET`` before
Triton is imported, so this package imports nothing heavy at import time.

Modules: ``tier`` (which machine), ``report`` (environment report), ``bench`` (the benchmark
harness), ``results`` (recorded GPU results), ``checks`` (exercise checks), ``quiz``,
``ptx`` (compile for sm_90a and read the PTX), ``triton_compat`` (version differences),
``tma`` (descriptor validation, the NumPy TMA model, the CUDA TMA teaching kernels and their
launchers), ``exercises`` (generate exercise notebooks from solutions), ``plots`` (tables and
bar charts), ``cost_model`` and ``quizzes`` (day 5), ``gemm`` and ``gemm_checks`` (day 5's
Triton GEMM ladder), ``memory_model``, ``cuda_day01``,
``day01_checks``, ``day01_plots`` and ``quizzes_day01`` (day 1), ``chase``,
``pipeline_model``, ``cuda_day02``, ``day02_checks``, ``day02_plots``, ``quizzes_day02`` and
``ptx_subprocess`` (day 2), ``gemm`` and ``gemm_checks`` (day 5 notebook 03), ``reset``
(fresh exercise copies), ``gallery`` (recorded results).
"""
from .tier import Tier, current, detect, explain_skip, setup

__all__ = ["Tier", "current", "detect", "explain_skip", "setup"]
