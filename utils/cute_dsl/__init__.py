"""CuteDSL (CUTLASS Python): version shims (``compat``), the TMA tile copy and multicast
(``tma``), the GEMMs (``gemm``, ``gemm_ws``, ``gemm_cpasync``), measurements (``measure``),
tracing (``trace``) and exercise checks (``exercises``). Imports ``utils.core`` and ``utils.tma``."""
