"""Record what a learner's CuteDSL producer step does while the GEMM is being compiled.

A ``@cute.jit`` function runs as ordinary Python while CuteDSL traces it, so the check can hand
it stand-ins for the pipeline, the pipeline state and the four TMA partitions that pass every
call through to the real object and note it: which pipeline methods were called, in what order,
which partition was sliced with which index (``state.count``, ``state.index`` or something else),
and, through a temporary wrapper around ``cute.copy``, which atom copied which slice to which,
with which barrier and multicast mask. Objects are recognised by identity, so a learner who
writes ``k = state.count`` and then ``tAg[None, k]`` is followed too.
"""
from __future__ import annotations

import contextlib

from .compat import cute


class Trace:
    """Events of each call of the step: ``calls`` is a list (one per call site in the kernel) of
    lists of events; ``names`` maps ``id(obj)`` to what the object is (keeps objects alive)."""

    def __init__(self):
        self.calls, self.names, self._keep, self.active = [], {}, [], False

    def name(self, obj, what: str):
        self._keep.append(obj)
        self.names.setdefault(id(obj), what)
        return obj

    def what(self, obj) -> str:
        return self.names.get(id(obj), "something else" if not isinstance(obj, int) else f"the constant {obj}")

    def event(self, *e):
        if self.active:
            self.calls[-1].append(e)


class _State:
    def __init__(self, state, trace):
        self._s, self._t = state, trace

    def __getattr__(self, key):
        value = getattr(self._s, key)
        return self._t.name(value, f"state.{key}") if key in ("count", "index", "phase") else value


class _Pipe:
    def __init__(self, pipe, trace):
        self._p, self._t = pipe, trace

    def __getattr__(self, key):
        method = getattr(self._p, key)

        def call(*args, **kwargs):
            real = [a._s if isinstance(a, _State) else a for a in args]
            out = method(*real, **kwargs)
            self._t.event("pipe", key, any(isinstance(a, _State) for a in args))
            return self._t.name(out, f"pipe.{key}(state)") if out is not None else out
        return call


class _Part:
    def __init__(self, tensor, label, trace):
        self._x, self._label, self._t = tensor, label, trace

    def __getitem__(self, idx):
        out = self._x[idx]
        parts = idx if isinstance(idx, tuple) else (idx,)
        index = [self._t.what(p) for p in parts if p is not None]
        return self._t.name(out, f"{self._label}[{', '.join(index)}]")

    def __getattr__(self, key):
        return getattr(self._x, key)


@contextlib.contextmanager
def copies_recorded(trace: Trace):
    """Wrap ``cute.copy`` so that copies made while ``trace.active`` are recorded."""
    real = cute.copy

    def spy(atom, src, dst, **kwargs):
        trace.event("copy", trace.what(atom), trace.what(src), trace.what(dst),
                    trace.what(kwargs["tma_bar_ptr"]) if "tma_bar_ptr" in kwargs else None,
                    trace.what(kwargs["mcast_mask"]) if "mcast_mask" in kwargs else None)
        return real(atom, src, dst, **kwargs)
    cute.copy = spy
    try:
        yield trace
    finally:
        cute.copy = real


def traced_step(load_fn, trace: Trace):
    """A ``load`` method for a ``TmaGemm`` subclass that calls ``load_fn`` with recording
    stand-ins; every call opens a new list in ``trace.calls``."""
    @cute.jit
    def load(self, pipe, state, atom_a, tAg, tAs, mask_a, atom_b, tBg, tBs, mask_b):
        for obj, what in ((atom_a, "atom_a"), (atom_b, "atom_b"), (mask_a, "mask_a"), (mask_b, "mask_b")):
            trace.name(obj, what)
        trace.calls.append([])
        trace.active = True
        try:
            load_fn(self, _Pipe(pipe, trace), _State(state, trace), atom_a, _Part(tAg, "tAg", trace),
                    _Part(tAs, "tAs", trace), mask_a, atom_b, _Part(tBg, "tBg", trace),
                    _Part(tBs, "tBs", trace), mask_b)
        finally:
            trace.active = False
    return load
