"""Triton: ahead-of-time compilation for sm_90a (``compile``, ``ptx_subprocess``) and the
differences between Triton versions (``compat``). Imports only ``utils.core``.

Not named ``triton`` so that it can never be mistaken for the library."""
