"""Compile one Triton kernel for sm_90a under several options (e.g. ``num_stages``), on any tier.

Compiles in this process with :func:`utils.triton_lang.compile.triton_ptx`. Under ``TRITON_INTERPRET=1`` (the
cpu tier) that has failed inside Triton for kernels with loops (interpreted ``triton.language``
helpers reaching the compiler); then the kernel's source is compiled again in a fresh Python
process without the interpreter. Such a kernel may use only ``triton``, ``tl`` and its arguments.
"""
from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import textwrap

from .compile import triton_ptx

_SCRIPT = """
import importlib.util, json, pathlib, sys, tempfile
job = json.load(sys.stdin)
from utils.triton_lang.compile import triton_ptx
with tempfile.TemporaryDirectory() as tmp:   # @triton.jit reads its source from a file
    path = pathlib.Path(tmp) / "course_kernel.py"
    path.write_text("import triton\\nimport triton.language as tl\\n\\n" + job["source"])
    spec = importlib.util.spec_from_file_location("course_kernel", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
out = [triton_ptx(getattr(mod, job["name"]), job["signature"], dict(job["constexprs"], **v.pop("constexprs", {})),
                  **dict(job["common"], **v)) for v in job["variants"]]
json.dump(out, sys.stdout)
"""


def triton_ptx_variants(kernel, signature: dict, constexprs: dict | None, variants: list,
                        **common) -> list:
    """PTX of ``kernel`` for each dict of options in ``variants`` (merged over ``common``,
    e.g. ``num_warps``, ``aligned``; a ``"constexprs"`` entry updates ``constexprs``); see
    :func:`utils.triton_lang.compile.triton_ptx` for the arguments."""
    if not isinstance(variants, list) or not variants or not all(isinstance(v, dict) for v in variants):
        raise TypeError("variants must be a non-empty list of option dicts, e.g. [{'num_stages': 1}]")
    try:
        return [triton_ptx(kernel, signature, dict(constexprs or {}, **v.get("constexprs", {})),
                               **dict(common, **{k: x for k, x in v.items() if k != "constexprs"}))
                for v in variants]
    except (TypeError, ValueError):
        raise                                       # bad arguments: the message names the rule
    except Exception:
        if os.environ.get("TRITON_INTERPRET") != "1":
            raise                                   # a real compile error: report it
    fn = getattr(kernel, "fn", kernel)
    try:
        source = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as err:
        raise TypeError(f"cannot read the source of {kernel!r}: {err}") from None
    job = {"source": source, "name": fn.__name__, "signature": signature, "constexprs": constexprs or {},
           "variants": variants, "common": {k: list(v) if isinstance(v, tuple) else v for k, v in common.items()}}
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["TRITON_DEFAULT_FP_FUSION"] = "1"
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    env["PYTHONPATH"] = root + os.pathsep + env.get("PYTHONPATH", "")
    run = subprocess.run([sys.executable, "-c", _SCRIPT], input=json.dumps(job), text=True,
                         capture_output=True, env=env, cwd=root, timeout=300)
    if run.returncode:
        raise RuntimeError(f"compiling {fn.__name__} for sm_90a failed:\n{run.stderr[-2000:]}")
    return json.loads(run.stdout)
