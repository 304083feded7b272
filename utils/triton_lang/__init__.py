"""Triton: ahead-of-time compilation for sm_90a (``compile``, ``ptx_subprocess``), the
differences between Triton versions (``compat``), and a learner's kernel launched in a child
process (``isolated``: one that stops the GPU leaves this process's GPU working). Imports only
``utils.core``.

Not named ``triton`` so that it can never be mistaken for the library."""
