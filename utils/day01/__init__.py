"""Day 1 (memory basics): the memory model, its exercise checks, plots and quiz."""
