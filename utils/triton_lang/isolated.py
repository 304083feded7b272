"""Launch a learner's Triton kernel in a child process, so that a kernel that stops the GPU cannot
take the notebook with it.

Why: an illegal instruction (on Hopper, a TMA copy whose innermost start coordinate is not at a
16-byte boundary, :func:`utils.tma.rules.coords`), a misaligned or out-of-bounds address, are
*sticky* CUDA errors: every later CUDA call of that process fails, so a wrong kernel launched in
the notebook's own process would force a restart of the Jupyter kernel (and in pytest, fail every
later test). :func:`launches` runs the launches in a child process instead (``python -m
utils.triton_lang.isolated --serve``, kept warm between checks and started afresh after a launch
that stopped its GPU, a crash or a hang), with a timeout (a kernel that never finishes is stopped
and reported as a hang), and gives back what each launch did: the tensors it wrote (copied into the caller's tensors), the Python exception
it raised (re-raised here under the same type name, :class:`KernelRaised`, so that a compile error
explains itself as before), or a :class:`GpuFault` (the GPU stopped, the child died or hung).

How the kernel crosses: a ``@triton.jit`` function cannot be pickled, so the child rebuilds it from
source (:func:`rebuild_source`): the kernel's source (``JITFunction.src``, which Triton keeps
without the decorator, or the source of ``.fn`` under the interpreter), the ``@triton.jit``
functions it calls (followed recursively), and the globals it reads: modules (``tl``, ``triton``,
``math``...), ints, floats, bools, strings and ``None`` (and tuples of them), ``tl.constexpr`` of
those, ``tl`` dtypes, functions importable by name from Triton, ``utils``, torch, NumPy or the
standard library (:data:`IMPORTABLE`). They are written into a module file in a
temporary folder (Triton's jit reads a kernel's source from its file) and imported. Tensors cross
as ``torch.save`` files; a host ``TensorDescriptor`` crosses as :class:`Desc` (its tensor and
block) and is built again in the child.

When: on a GPU always; under the interpreter (the cpu tier) the launches run in this process as
before, unless the environment variable ``COURSE_ISOLATE_KERNELS=1`` asks for the child (tests on
a CPU exercise the child path that way: the child inherits ``TRITON_INTERPRET=1``);
``COURSE_ISOLATE_KERNELS=0`` runs in-process everywhere. A kernel whose globals cannot be rebuilt
(any other object: a tensor, a Python function, an autotuned kernel) also runs in this process,
as it did before this module existed (:class:`Unrebuildable` says why).
"""
from __future__ import annotations

import ast
import atexit
import builtins
import inspect
import json
import math
import os
import pathlib
import re
import subprocess
import sys
import tempfile
import textwrap
import time
from typing import NamedTuple

ENV = "COURSE_ISOLATE_KERNELS"
ROOT = pathlib.Path(__file__).resolve().parents[2]
IMPORTABLE = ("triton", "math", "utils", "torch", "numpy")      # top-level packages the child imports
TIMEOUT_S, HANG_S = 300.0, 30.0     # the whole child (start, compile, runs); one launch on the GPU
TMA_RULE = ("a TMA copy (a descriptor's load or store) is an illegal instruction on Hopper unless "
            "its box's innermost start coordinate is a multiple of 16 bytes (8 fp16 elements) and, "
            "for a store, no start coordinate is below 0 (utils/tma/rules.py): give load and store "
            "the element offsets of the tile's top-left corner, e.g. [pid_m * BM, pid_n * BN], not "
            "the tile's indices [pid_m, pid_n]")
POINTER_RULE = ("a pointer load or store reached memory outside its tensor: mask every tl.load and "
                "tl.store with the offsets' bounds (e.g. mask=offs < n)")
HANG_HINT = ("does every loop end? a while loop whose counter never advances, or a range whose step "
             "is 0, runs forever")


class Desc(NamedTuple):
    """A host ``TensorDescriptor`` for a launch: ``TensorDescriptor.from_tensor(tensor, block_shape)``,
    built where the kernel runs."""
    tensor: object
    block_shape: tuple


class Outcome(NamedTuple):
    """What one launch did: ``error`` (None, the exception it raised, or a :class:`GpuFault`),
    ``recorded`` (what ``around`` yielded; in-process only, else None) and ``isolated`` (whether
    it ran in a child process)."""
    error: BaseException | None
    recorded: object = None
    isolated: bool = False


class Unrebuildable(Exception):
    """The kernel cannot be rebuilt in a child process (the message names the global)."""


class KernelRaised(Exception):
    """Base of the exceptions re-raised from the child: ``type(e).__name__`` is the child's
    exception's (e.g. ``CompilationError``), ``str(e)`` its message."""


class GpuFault(Exception):
    """The kernel stopped the GPU (a sticky CUDA error), the child died, or it never finished.
    ``kind``: ``"illegal instruction"``, ``"misaligned address"``, ``"illegal memory access"``,
    ``"launch failure"``, ``"CUDA error"``, ``"hang"`` or ``"died"``; ``detail``: the child's words."""

    def __init__(self, kind: str, detail: str):
        self.kind, self.detail = kind, detail
        if kind == "hang":
            text = (f"your kernel did not finish ({detail}); it ran in a separate process, which was "
                    "stopped, so this notebook's GPU is unaffected")
        elif kind == "died":
            text = (f"the process running your kernel died ({detail}); it was a separate process, "
                    "so this notebook's GPU is unaffected")
        else:
            text = (f"your kernel stopped the GPU ({detail}); it ran in a separate process, so this "
                    "notebook's GPU is unaffected")
        super().__init__(text)


_RAISED: dict = {}


def raised(type_name: str, message: str) -> KernelRaised:
    """A :class:`KernelRaised` whose type is named ``type_name`` (one class per name)."""
    if not re.fullmatch(r"[A-Za-z_]\w*", type_name or ""):
        type_name = "Exception"
    cls = _RAISED.setdefault(type_name, type(type_name, (KernelRaised,), {"__module__": __name__}))
    return cls(message)


FAULTS = (("illegal instruction", "illegal instruction"), ("misaligned address", "misaligned address"),
          ("illegal memory access", "illegal memory access"), ("illegal address", "illegal memory access"),
          ("unspecified launch failure", "launch failure"))


def fault_kind(message: str) -> str:
    """The kind of CUDA error a message names (see :class:`GpuFault`)."""
    low = message.lower()
    return next((kind for key, kind in FAULTS if key in low), "CUDA error")


def fault_hint(fault: GpuFault, source: str) -> str:
    """A hint for why ``fault`` happened, from its kind and the kernel's ``source``: the TMA rule for
    an illegal instruction in a kernel with descriptor loads or stores, the masking rule for a bad
    address, the loop rule for a hang."""
    if fault.kind == "hang":
        return HANG_HINT
    if fault.kind in ("illegal instruction", "CUDA error", "launch failure") and descriptor_copies(source):
        return TMA_RULE
    if fault.kind in ("misaligned address", "illegal memory access", "launch failure"):
        return POINTER_RULE
    if fault.kind == "died":
        return ("the child ended without a Python error (its last lines are in the message); run "
                "the cell again, and if it repeats, simplify the kernel until it runs")
    return "read the error; the kernel's loads and stores are the usual suspects"


def descriptor_copies(source: str) -> bool:
    """The source calls ``.load`` or ``.store`` on something other than ``tl`` (a descriptor), or
    makes a descriptor."""
    try:
        tree = ast.parse(textwrap.dedent(source or ""))
    except SyntaxError:
        return "make_tensor_descriptor" in (source or "") or "_desc." in (source or "")
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute):
            f = n.func
            if f.attr == "make_tensor_descriptor" or (f.attr in ("load", "store") and not (
                    isinstance(f.value, ast.Name) and f.value.id in ("tl", "triton"))):
                return True
    return False


def isolates(device: str) -> bool:
    """Whether launches on ``device`` run in a child process: on a GPU, yes; on the CPU (the
    interpreter), no; ``COURSE_ISOLATE_KERNELS=1`` / ``=0`` says yes / no everywhere."""
    flag = os.environ.get(ENV, "")
    if flag not in ("", "0", "1"):
        raise ValueError(f"{ENV}={flag!r}: use 1 (a child process everywhere), 0 (never) or leave it unset")
    return flag == "1" if flag else str(device) != "cpu"


def in_process(kernel, device: str) -> bool:
    """Whether :func:`launches` runs ``kernel`` on ``device`` in this process (not isolated there,
    or a kernel that cannot be rebuilt)."""
    if not isolates(device):
        return True
    try:
        rebuild_source(kernel)
    except Unrebuildable:
        return True
    return False


# ---------- rebuilding the kernel from source ----------

def _is_jit(f) -> bool:
    return hasattr(f, "run") and inspect.isfunction(getattr(f, "fn", None))


def function_source(f) -> str:
    """The source of jit function ``f`` from its ``def`` (decorators dropped), dedented."""
    src = getattr(f, "src", None)
    if not isinstance(src, str) or not src.strip():
        try:
            src = inspect.getsource(f.fn)
        except (OSError, TypeError) as e:
            raise Unrebuildable(f"the source of {getattr(f, '__name__', f)!r} cannot be read: {e}") from None
    src = textwrap.dedent(src)
    m = re.search(r"^def\s+\w+\s*\(", src, re.MULTILINE)
    if m is None:
        raise Unrebuildable(f"no def in the source of {getattr(f, '__name__', f)!r}")
    return src[m.start():]


def free_names(src: str) -> list:
    """Names the function in ``src`` reads that it neither takes nor assigns (its globals), in order."""
    fn = ast.parse(src).body[0]
    a = fn.args
    local = {x.arg for x in a.posonlyargs + a.args + a.kwonlyargs + [a.vararg, a.kwarg] if x}
    local |= {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and not isinstance(n.ctx, ast.Load)}
    seen = []
    for n in ast.walk(fn):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in local and n.id not in seen:
            seen.append(n.id)
    return seen


def _literal(v) -> bool:
    if isinstance(v, tuple):
        return all(_literal(x) for x in v)
    return v is None or type(v) in (bool, int, float, str)


def _literal_text(v) -> str:
    if isinstance(v, float) and not math.isfinite(v):
        return f"float({repr(v)!r})"
    if isinstance(v, tuple):
        return "(" + "".join(_literal_text(x) + ", " for x in v) + ")"
    return repr(v)


def _importable(modname: str) -> bool:
    top = (modname or "").split(".")[0]
    return top in IMPORTABLE or top in getattr(sys, "stdlib_module_names", ())


def _global_line(name: str, val) -> str | None:
    """The module line that binds ``name`` to ``val`` in the child, None for a jit function (rebuilt
    from source); raises :class:`Unrebuildable` for anything else."""
    import types
    if isinstance(val, types.ModuleType):
        if val.__name__ != "__main__" and sys.modules.get(val.__name__) is val and _importable(val.__name__):
            return f"{name} = _importlib.import_module({val.__name__!r})"
        raise Unrebuildable(f"module {name!r} ({val.__name__}) cannot be imported by a fresh process")
    if _literal(val):
        return f"{name} = {_literal_text(val)}"
    import triton.language as tl
    if isinstance(val, tl.constexpr) and _literal(val.value):
        return f"{name} = _importlib.import_module('triton.language').constexpr({_literal_text(val.value)})"
    if isinstance(val, tl.dtype):
        attr = next((k for k, v in vars(tl).items() if isinstance(v, tl.dtype) and v == val), None)
        if attr:
            return f"{name} = _importlib.import_module('triton.language').{attr}"
    if _is_jit(val) and not str(getattr(val.fn, "__module__", "")).startswith("triton."):
        return None
    mod, qual = getattr(val, "__module__", None), getattr(val, "__qualname__", getattr(val, "__name__", None))
    if (mod and qual and "." not in qual and mod != "__main__" and _importable(mod)
            and getattr(sys.modules.get(mod), qual, None) is val):
        return f"from {mod} import {qual} as {name}" if qual != name else f"from {mod} import {name}"
    raise Unrebuildable(f"the global {name!r} is a {type(val).__name__}, which a fresh process cannot rebuild")


def _jit_options(f) -> str:
    noinline = getattr(f, "noinline", None) or getattr(f, "kwargs", {}).get("noinline")
    return "(noinline=True)" if noinline else ""


def rebuild_source(kernel) -> str:
    """Module source defining ``kernel`` (under its own name), the ``@triton.jit`` functions it
    calls (recursively) and the globals they read; raises :class:`Unrebuildable`."""
    if not _is_jit(kernel):
        raise Unrebuildable(f"{type(kernel).__name__} is not a plain @triton.jit function")
    lines, defs, aliases, done = {}, {}, {}, set()
    todo = [kernel]
    while todo:
        f = todo.pop()
        if id(f) in done:
            continue
        done.add(id(f))
        fname, src = f.fn.__name__, function_source(f)
        if fname in defs and defs[fname] is not f:
            raise Unrebuildable(f"two different jit functions are named {fname!r}")
        defs[fname] = (f, src)
        scope = dict(f.fn.__globals__)
        if f.fn.__closure__:
            scope.update(inspect.getclosurevars(f.fn).nonlocals)
        for name in free_names(src):
            if name not in scope:
                continue            # a builtin (range, min, float...) or undefined: as in this process
            val = scope[name]
            if name in vars(builtins) and vars(builtins)[name] is val:
                continue
            line = _global_line(name, val)
            if line is None:        # a jit function: defined from its source, bound under this name
                todo.append(val)
                if name != val.fn.__name__:
                    line = f"{name} = {val.fn.__name__}"
                    aliases.setdefault(name, line)
                    if aliases[name] != line:
                        raise Unrebuildable(f"the name {name!r} means different functions in different places")
                continue
            if lines.setdefault(name, line) != line:
                raise Unrebuildable(f"the name {name!r} means different things in different functions")
    clash = (set(lines) | set(aliases)) & set(defs)
    if clash:
        raise Unrebuildable(f"the name {sorted(clash)[0]!r} is both a jit function and another global")
    out = ["# The learner's kernel, rebuilt by utils.triton_lang.isolated (the source and the globals it reads).",
           "import importlib as _importlib", "import triton as _isolated_triton", *lines.values(), ""]
    for fname, (f, src) in defs.items():
        out += ["", f"@_isolated_triton.jit{_jit_options(f)}", src.rstrip("\n"), ""]
    out += list(aliases.values())
    return "\n".join(out) + "\n"


# ---------- launching ----------

def _spec(x, tensors: list):
    import torch
    if isinstance(x, Desc):
        if not isinstance(x.tensor, torch.Tensor):
            raise TypeError(f"Desc needs a torch tensor, got {type(x.tensor).__name__}")
        tensors.append(x.tensor)
        return {"desc": len(tensors) - 1, "block": [int(b) for b in x.block_shape]}
    if isinstance(x, torch.Tensor):
        tensors.append(x)
        return {"t": len(tensors) - 1}
    if _literal(x) and not isinstance(x, tuple):
        return {"v": x}
    raise TypeError(f"an isolated launch takes tensors, Desc and int/float/bool/str/None arguments, "
                    f"got {type(x).__name__}")


def _value(spec, tensors, TD):
    if "desc" in spec:
        return TD.from_tensor(tensors[spec["desc"]], spec["block"])
    return tensors[spec["t"]] if "t" in spec else spec["v"]


def _in_process(kernel, calls, around):
    import contextlib
    from .compat import tensor_descriptor_class
    TD = tensor_descriptor_class()
    for grid, args, kwargs in calls:
        with (around() if around else contextlib.nullcontext()) as recorded:
            try:
                kernel[tuple(grid)](*[TD.from_tensor(a.tensor, list(a.block_shape)) if isinstance(a, Desc)
                                      else a for a in args], **kwargs)
                error = None
            except Exception as e:          # noqa: BLE001  the caller explains the learner's error
                error = e
        yield Outcome(error, recorded, False)
        if error is not None:
            return


def launches(kernel, calls, *, device: str, around=None, timeout_s: float = TIMEOUT_S,
             hang_s: float = HANG_S):
    """Launch ``kernel[grid](*args, **kwargs)`` for each ``(grid, args, kwargs)`` of ``calls`` in
    order, in a child process when :func:`isolates` ``(device)`` and the kernel can be rebuilt
    (else in this process); yield an :class:`Outcome` per launch, stopping after the first error.
    Arguments are tensors (on ``device``), :class:`Desc` and plain values; after a launch without
    error its tensors hold what the kernel wrote, and so does the rest of their storage (a view's
    surroundings, e.g. a guard zone a stray store reached). ``around``: a context-manager factory entered
    around each in-process launch (what it yields is the outcome's ``recorded``). In the child,
    the whole run may take ``timeout_s`` seconds and one launch on the GPU ``hang_s``: past
    either, the child is killed and the launch's error is a ``GpuFault("hang")``. Lazy: nothing
    runs before the first outcome is asked for, and in this process each launch runs when its
    outcome is."""
    calls = [(tuple(g), tuple(a), dict(k)) for g, a, k in calls]
    if not isolates(device):
        yield from _in_process(kernel, calls, around)
        return
    try:
        module = rebuild_source(kernel)
    except Unrebuildable:
        yield from _in_process(kernel, calls, around)
        return
    yield from _isolated(kernel.fn.__name__, module, calls, str(device), timeout_s, hang_s)


def _isolated(name, module, calls, device, timeout_s, hang_s):
    """Run ``calls`` in one child on rebuilt ``module``; return their outcomes (up to the first
    error), the tensors of the launches that succeeded already holding what the child wrote."""
    import torch
    with tempfile.TemporaryDirectory(prefix=f"isolated_{name}_") as tmp:
        d = pathlib.Path(tmp)
        (d / "learner_kernel.py").write_text(module)
        job, mine = {"kernel": name, "device": device, "calls": []}, []
        for grid, args, kwargs in calls:
            tensors = []
            job["calls"].append({"grid": [int(g) for g in grid], "args": [_spec(a, tensors) for a in args],
                                 "kwargs": {k: _spec(v, tensors) for k, v in kwargs.items()}})
            mine.append(tensors)
        torch.save(mine, d / "inputs.pt")          # one file: tensors shared between launches stay shared
        (d / "job.json").write_text(json.dumps(job))
        rc, stopped = _wait(d, len(calls), timeout_s, hang_s)
        out = (d / "stdout.txt").read_text(errors="replace")
        if out:
            print(out, end="" if out.endswith("\n") else "\n")      # the kernel's own prints
        last = [ln for ln in (d / "stderr.txt").read_text(errors="replace").splitlines() if ln.strip()][-3:]
        outcomes = []
        for i, tensors in enumerate(mine):
            res = d / f"result{i}.json"
            if not res.exists():
                what = f"signal {-rc}" if rc is not None and rc < 0 else f"exit status {rc}"
                outcomes.append(Outcome(GpuFault("hang", stopped) if stopped else GpuFault(
                    "died", what + (": " + " | ".join(last)[-300:] if last else "")), None, True))
                break
            r = json.loads(res.read_text())
            if "error" in r:
                outcomes.append(Outcome(GpuFault(fault_kind(r["message"]), _fault_words(r["message"]))
                                        if r["fault"] else raised(r["error"], r["message"]), None, True))
                break
            back = torch.load(d / f"out{i}.pt", map_location="cpu")
            copied = set()
            for mine_t, t in zip(tensors, back):     # whole storages: a view's guard zones come back too
                if mine_t.untyped_storage().data_ptr() not in copied:
                    _bytes(mine_t).copy_(_bytes(t))
                    copied.add(mine_t.untyped_storage().data_ptr())
            outcomes.append(Outcome(None, None, True))
    return outcomes


def _bytes(t):
    """The whole storage under tensor ``t`` (a view sees only part of it), as uint8."""
    import torch
    return torch.empty(0, dtype=torch.uint8, device=t.device).set_(t.untyped_storage())


def _fault_words(message: str) -> str:
    """The line of a CUDA error message that names the error (torch adds advice lines after it)."""
    words = [ln.strip() for ln in message.strip().splitlines() if re.search(r"[A-Za-z]", ln)]
    named = [ln for ln in words if any(key in ln.lower() for key, _ in FAULTS)]
    return (named or words or ["no message"])[0][:200]


_WORKER: dict = {}      # the warm child: {"proc": Popen, "env": the environment it started with}


def _worker(env: dict):
    """The warm child process (``python -m utils.triton_lang.isolated --serve``): started once and
    reused while it lives and the environment is unchanged, so torch, Triton and the CUDA context
    start once, not per check. It exits after any launch that left its GPU unusable (a sticky
    error), and is killed when a launch hangs; the next call starts a fresh one."""
    p = _WORKER.get("proc")
    if p is not None and p.poll() is None and _WORKER.get("env") == env:
        return p
    stop_worker()
    log = pathlib.Path(tempfile.gettempdir()) / f"isolated_worker_{os.getpid()}.log"
    with open(log, "wb") as err:              # what it says outside a job (e.g. failing to start)
        p = subprocess.Popen([sys.executable, "-m", "utils.triton_lang.isolated", "--serve"],
                             stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, stderr=err, cwd=ROOT,
                             env=env, text=True)
    _WORKER.update(proc=p, env=env, log=log)
    return p


def stop_worker() -> None:
    """Stop the warm child, if one runs (at exit, or before a fresh one)."""
    p = _WORKER.pop("proc", None)
    if p is not None and p.poll() is None:
        p.kill()
        p.wait()


atexit.register(stop_worker)


def _wait(d: pathlib.Path, n: int, timeout_s: float, hang_s: float):
    """Run job folder ``d`` in the warm child; return (0 when it finished, the child's exit status
    if it died, None if it was killed; why it was killed or "")."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p))
    for f in ("stdout.txt", "stderr.txt"):
        (d / f).touch()
    p = _worker(env)
    try:
        p.stdin.write(str(d) + "\n")
        p.stdin.flush()
    except (BrokenPipeError, OSError):          # it died between two jobs: one fresh start
        stop_worker()
        p = _worker(env)
        try:
            p.stdin.write(str(d) + "\n")
            p.stdin.flush()
        except (BrokenPipeError, OSError):      # the fresh one died too, before its first job (a
            p.wait()                            # broken environment): the loop reports its last words
    start, waiting = time.monotonic(), {}
    while True:
        if (d / "done").exists():
            return 0, ""
        rc = p.poll()
        if rc is not None:                      # died: its words outside the job count too
            with open(d / "stderr.txt", "ab") as err:
                err.write(_WORKER["log"].read_bytes()[-2000:])
            return rc, ""
        time.sleep(0.02)
        now = time.monotonic()
        why = ""
        for i in range(n):
            if (d / f"launched{i}").exists() and not (d / f"result{i}.json").exists():
                if now - waiting.setdefault(i, now) > hang_s:
                    why = f"launch {i + 1} still running {hang_s:.0f} s after it started"
        if not why and now - start > timeout_s:
            why = f"the child still running after {timeout_s:.0f} s"
        if why:
            stop_worker()
            return None, why


def _alive() -> bool:
    """Whether this process's CUDA context still works (a sticky error makes every call fail)."""
    import torch
    try:
        torch.cuda.synchronize()
        return bool((torch.ones(1, device="cuda") + 1).item() == 2)
    except Exception:               # noqa: BLE001
        return False


def _child(folder: str) -> None:
    """In the child: import the rebuilt kernel, run each launch, save its tensors or its error."""
    import importlib.util

    import torch
    from . import compat
    d = pathlib.Path(folder)
    job = json.loads((d / "job.json").read_text())
    device = job["device"]
    compat.patch_old_interpreter()
    compat.set_device_allocator(device)         # device-side descriptors need global scratch
    TD = compat.tensor_descriptor_class()

    def report(i, **r):
        (d / f"result{i}.json.part").write_text(json.dumps(r))
        os.replace(d / f"result{i}.json.part", d / f"result{i}.json")

    try:
        spec = importlib.util.spec_from_file_location("learner_kernel", d / "learner_kernel.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        kernel = getattr(mod, job["kernel"])
    except Exception as e:          # noqa: BLE001
        return report(0, error=type(e).__name__, message=str(e), fault=False)
    inputs = torch.load(d / "inputs.pt", map_location=device)
    for i, (call, tensors) in enumerate(zip(job["calls"], inputs)):
        try:
            args = [_value(s, tensors, TD) for s in call["args"]]
            kwargs = {k: _value(s, tensors, TD) for k, s in call["kwargs"].items()}
            kernel[tuple(call["grid"])](*args, **kwargs)
            (d / f"launched{i}").touch()            # compiled and launched: the rest is the GPU's time
            if device != "cpu":
                torch.cuda.synchronize()
        except Exception as e:      # noqa: BLE001
            fault = "Triton Error [CUDA]" in str(e) or (device != "cpu" and not _alive())
            return report(i, error=type(e).__name__, message=str(e), fault=fault)
        torch.save(tensors, d / f"out{i}.pt")      # views keep their whole storage
        report(i, ok=True)


def _serve() -> None:
    """The warm child: run each job folder named on stdin (one a line) with its output going to the
    folder's ``stdout.txt`` / ``stderr.txt``, mark it ``done``; exit at end of input, or after a
    job that left the GPU unusable."""
    import torch
    torch.zeros(1)               # started once: what makes the child warm
    saved = os.dup(1), os.dup(2)
    for line in sys.stdin:
        d = pathlib.Path(line.strip())
        with open(d / "stdout.txt", "ab") as out, open(d / "stderr.txt", "ab") as err:
            sys.stdout.flush(), sys.stderr.flush()
            os.dup2(out.fileno(), 1), os.dup2(err.fileno(), 2)
            try:
                _child(str(d))
            finally:
                sys.stdout.flush(), sys.stderr.flush()
                os.dup2(saved[0], 1), os.dup2(saved[1], 2)
        device = json.loads((d / "job.json").read_text())["device"]
        faulted = any(json.loads(r.read_text()).get("fault") for r in d.glob("result*.json"))
        usable = not faulted and (device == "cpu" or _alive())
        (d / "done").touch()
        if not usable:
            os._exit(0)


if __name__ == "__main__":          # the child: python -m utils.triton_lang.isolated (--serve | JOB_FOLDER)
    _serve() if sys.argv[1] == "--serve" else _child(sys.argv[1])
