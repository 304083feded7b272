"""Raw CUDA C++: NVRTC compilation to PTX (``nvrtc``) and the kernels days 1, 2 and 5 launch
through CuPy (``day01``, ``day02`` with ``day02.cu``, ``bank_cost``). Imports only ``utils.core``."""
