"""Day 2 (pipelining): Little's law cost model, the pipeline model, pointer chasing, the exercise
checks, plots and quiz. May import day 1, never a later day."""
