"""Follow a learner's ``warp_roles`` (day 5 · 05, Exercise 2) warp by warp, in plain Python.

A ``@cute.jit`` function is ordinary Python until CuteDSL traces it. Run with Python ints for the
warpgroup and warp index and recording stand-ins for everything else, it does, branch for branch,
what each of the kernel's 12 warps does on the GPU: :func:`follow` returns, per warp, the list
of what it ran (``setmaxnreg``, each stage it loaded, the producer's tail, the consumers' loop).
The module names ``cute``, ``cutlass`` and ``pipeline`` are swapped for stand-ins in the
function's globals only (the real modules are never patched); a runaway loop is stopped.
"""
from __future__ import annotations

import ast
import inspect
import sys
import textwrap
import types

from .compat import cute, cutlass, pipeline

WARPS = 12                         # 384 threads: producer warpgroup 0, consumer warpgroups 1 and 2
# the cluster's tile numbers in the model: first 1, 3 apart, below 10 (1, 4, 7; 10 itself is not
# one, so `tile <= tiles` shows); 3 k-tiles each, 2 stages, so the ring wraps inside a tile and across tiles
FIRST, STEP, TILES, K_TILES, STAGES = 1, 3, 10, 3, 2
MAX_LINES = 20000                  # lines of the learner's function one warp may run


class Runaway(RuntimeError):
    """The learner's function ran more lines for one warp than any right answer needs."""


class State:
    """A pipeline state: ``count`` (k-tile), ``index`` (stage), ``phase``, as CuteDSL's."""

    def __init__(self, stages, count, index, phase, log):
        self.stages, self.count, self.index, self.phase, self._log = stages, count, index, phase, log

    def advance(self, n=1):
        for _ in range(int(n)):
            self.count, self.index = self.count + 1, self.index + 1
            if self.index == self.stages:
                self.index, self.phase = 0, self.phase ^ 1

    def reset_count(self):
        self.count = 0

    def clone(self):
        return State(self.stages, self.count, self.index, self.phase, self._log)

    def snap(self):
        return (self.count, self.index, self.phase)


class _Gemm:
    """``self`` in the model: the ring's depth and the persistent walk's start and step."""
    stages, realloc, persistent = STAGES, True, True

    def first_tile(self):
        return FIRST

    def tile_step(self):
        return STEP


class _Pipe:
    def __init__(self, log):
        self._log = log

    def __getattr__(self, name):
        def call(*args, **kwargs):
            self._log.append(("pipe", name) + tuple(a.snap() for a in args if isinstance(a, State)))
        return call


class _Module(types.ModuleType):
    """A module stand-in: the given names, every other one the real module's."""

    def __init__(self, real, **names):
        super().__init__(real.__name__)
        self._real = real
        self.__dict__.update(names)

    def __getattr__(self, name):
        return getattr(self._real, name)


def _range(*args, **kwargs):
    return range(*(int(a) for a in args))


def _namespaces(log):
    def state(kind, stages, **kw):
        producer = kind in (pipeline.PipelineUserType.Producer, pipeline.PipelineUserType.ProducerConsumer)
        log.append(("new state",))
        return State(int(stages), 0, 0, 1 if producer else 0, log)

    dec = lambda n, *a, **k: log.append(("dec", n))       # noqa: E731
    inc = lambda n, *a, **k: log.append(("inc", n))       # noqa: E731
    arch = _Module(cute.arch, setmaxregister_decrease=dec, setmaxregister_increase=inc,
                   make_warp_uniform=lambda x, *a, **k: x)
    sim_cute = _Module(cute, arch=arch)
    sim_cutlass = _Module(cutlass, range=_range, range_constexpr=_range, const_expr=lambda x, *a, **k: x,
                          Int32=int, Int64=int, cute=sim_cute)
    sim_pipeline = _Module(pipeline, make_pipeline_state=state)
    return {id(cute): sim_cute, id(cutlass): sim_cutlass, id(pipeline): sim_pipeline, id(cute.arch): arch,
            id(cute.arch.setmaxregister_decrease): dec, id(cute.arch.setmaxregister_increase): inc,
            id(pipeline.make_pipeline_state): state}


def _in_model(fn, log):
    """``fn`` compiled again from its source as plain Python (CuteDSL's decorator rewrites the
    code it keeps), with the modules of its globals swapped for the model's."""
    raw = getattr(fn, "__wrapped__", fn)
    tree = ast.parse(textwrap.dedent(inspect.getsource(raw)))
    tree.body[0].decorator_list = []
    swap = _namespaces(log)
    glb = {k: swap.get(id(v), v) for k, v in raw.__globals__.items()}
    exec(compile(tree, raw.__code__.co_filename, "exec"), glb)
    model = glb[tree.body[0].name]
    return model, model.__code__


def warp_log(fn, warp: int) -> list:
    """What warp ``warp`` of the model runs: ("dec", n), ("inc", n), ("load", tile, count, index,
    phase), ("pipe", method, *states), ("new state",), ("consume",)."""
    log = []
    model, code = _in_model(fn, log)

    def tile_loads(tile):
        return lambda prod: log.append(("load", int(tile)) + (prod.snap() if isinstance(prod, State) else (prod,)))
    lines = [0]

    def tracer(frame, event, arg):
        if frame.f_code is not code:
            return None

        def local(frame, event, arg):
            if event == "line":
                lines[0] += 1
                if lines[0] > MAX_LINES:
                    raise Runaway(f"warp {warp} ran {MAX_LINES} lines of your function without returning")
            return local
        return local
    old = sys.gettrace()
    sys.settrace(tracer)
    try:
        model(_Gemm(), warp // 4, warp, _Pipe(log), TILES, K_TILES, tile_loads, lambda: log.append(("consume",)))
    finally:
        sys.settrace(old)
    return log


def follow(fn) -> list:
    """Per warp (0..11), the list of what the learner's ``warp_roles`` runs in the model."""
    return [warp_log(fn, w) for w in range(WARPS)]


def expected_loads(first=FIRST, step=STEP, tiles=TILES, k_tiles=K_TILES, stages=STAGES) -> list:
    """The producer's loads, right: ("load", tile, k-tile, stage, phase) for every k-tile of the
    tiles first, first + step, ... below ``tiles``; one state whose stage and phase run on."""
    state, out = State(stages, 0, 0, 1, None), []
    for tile in range(first, tiles, step):
        state.reset_count()
        for _ in range(k_tiles):
            out.append(("load", tile) + state.snap())
            state.advance()
    return out, state.snap()
