"""The course machinery every notebook uses: tier and setup, environment report, the benchmark
harness and its spread, recorded results (and ncu counters), exercise checks and the quiz engine,
the exercise generator and reset, plots and the results gallery, reading PTX.

Imports nothing else from ``utils`` (the bottom layer)."""
