"""Pointer chasing: random cycles whose every load depends on the previous one.

Used by ``day02_pipelining/01_latency_littles_law`` (CUDA, several cache levels), the course's one
latency lesson. ``random_cycle`` builds the cycle, ``walk_ref`` follows it on the host so a
kernel's final slot can be checked.
"""
from __future__ import annotations

import numpy as np


def random_cycle(n_slots: int, stride: int = 1, device="cpu", seed: int | None = None):
    """An int32 torch tensor ``nxt`` of ``n_slots * stride`` entries in which following
    ``i = nxt[i]`` from slot 0 visits the ``n_slots`` slots ``0, stride, 2*stride, ...`` once each,
    in random order, and comes back. ``stride`` (in int32) spreads slots over separate cache
    lines (32 = 128 B), so the cycle's footprint is ``n_slots`` lines."""
    import torch
    for name, v in dict(n_slots=n_slots, stride=stride).items():
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name} must be a positive int, got {v!r}")
    if n_slots * stride >= 2**31:
        raise ValueError(f"n_slots * stride = {n_slots * stride} does not fit int32 indices")
    gen = torch.Generator(device="cpu").manual_seed(seed) if seed is not None else None
    perm = torch.randperm(n_slots, generator=gen, dtype=torch.int64).to(device) * stride
    nxt = torch.zeros(n_slots * stride, dtype=torch.int32, device=device)
    nxt[perm] = torch.roll(perm, -1).to(torch.int32)
    return nxt


def walk_ref(nxt, steps: int, start: int = 0) -> int:
    """The slot reached after ``steps`` loads from ``start`` (host reference for a chase kernel)."""
    a = np.asarray(nxt.cpu() if hasattr(nxt, "cpu") else nxt)
    if not isinstance(steps, int) or steps < 0:
        raise ValueError(f"steps must be a non-negative int, got {steps!r}")
    i = start
    for _ in range(steps):
        i = int(a[i])
    return i

