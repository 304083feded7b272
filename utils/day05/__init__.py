"""Day 5 (TMA): the concepts quiz, the Triton GEMM ladder (``gemm``) and its checks. May import
earlier days."""
