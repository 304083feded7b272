"""Exercise checks for descriptors updated on the device (issue 15, grouped GEMM): which fields
``tensormap.replace`` must change for group g, and the order of the fences. Each rejects the
known slips with a hint, and explains an answer of the wrong shape instead of crashing."""
from __future__ import annotations

import math
from collections.abc import Set

from ..core.checks import NOT_ATTEMPTED, CheckFailed, attempt, fail, not_attempted, passed
from .descriptor import ArrayInfo, make_spec
from .update import FENCE_ORDERS, FENCE_STEPS, FIELDS, OPTIONAL, fields_to_replace, group_spec

# names learners reach for -> the PTX field name tensormap.replace takes
ALIASES = {"global_dims": "global_dim", "global_strides": "global_stride", "global_strides_bytes": "global_stride",
           "address": "global_address", "ptr": "global_address", "box_dims": "box_dim", "box": "box_dim",
           "swizzle": "swizzle_mode", "dtype": "elemtype", "oob_fill": "fill_mode",
           "element_strides": "element_stride", "shape": "global_dim", "strides": "global_stride",
           "interleave": "interleave_layout", "fill": "fill_mode", "global_addr": "global_address"}


def _contiguous(shape, size=2):
    return tuple(size * math.prod(shape[i + 1:]) for i in range(len(shape)))


def field_cases() -> list:
    """(what it is, base spec, group spec) for the exercise: an MoE expert's activations, weights,
    a group with another K, a padded group, the base tensor itself, and a group at the base's
    address with fewer rows: each of address, dims and strides changes without the others."""
    a = ArrayInfo((256, 4096), _contiguous((256, 4096)), "float16", 0x10000)
    a_spec = make_spec(a, (128, 64), swizzle="128B")
    w = ArrayInfo((4096, 1024), _contiguous((4096, 1024)), "bfloat16", 0x200000)
    w_spec = make_spec(w, (64, 64), swizzle="128B")
    return [
        ("tokens of expert 3 (37 x 4096 fp16)", a_spec, group_spec(a_spec, 0x90000, (37, 4096), _contiguous((37, 4096)))),
        ("weights of expert 5 (4096 x 1024 bf16)", w_spec, group_spec(w_spec, 0x4200000, (4096, 1024), _contiguous((4096, 1024)))),
        ("a group with K = 2048 (45 x 2048 fp16)", a_spec, group_spec(a_spec, 0x700000, (45, 2048), _contiguous((45, 2048)))),
        ("256 x 4096 rows inside a padded buffer (row stride 8320 B)", a_spec, group_spec(a_spec, 0x800000, (256, 4096), (8320, 2))),
        ("group 0, which is the base tensor itself", a_spec, group_spec(a_spec, 0x10000, (256, 4096), _contiguous((256, 4096)))),
        ("the first 100 rows of the base tensor (same address)", a_spec,
         group_spec(a_spec, 0x10000, (100, 4096), _contiguous((100, 4096)))),
    ]


def _call(name, fn, where, *args, hint=""):
    """``attempt(fn, *args)``; an exception from the learner's code becomes a failure saying so."""
    try:
        return attempt(fn, *args)
    except CheckFailed:
        raise
    except Exception as e:
        fail(name, f"{where + ' ' if where else ''}your function raised {type(e).__name__}: {e}", hint)


def _as_fields(name, got, what):
    """The learner's answer as a set of PTX field names, else fail explaining the shape expected."""
    if isinstance(got, dict):
        fail(name, f"{what} is a dict {got!r}; expected a set of field names",
             "return the names only, e.g. set(your_dict) or {'global_address', 'global_dim'}")
    if isinstance(got, str) or not isinstance(got, (Set, list, tuple)):
        fail(name, f"{what} is {type(got).__name__} {got!r}; expected a set of field names",
             "e.g. return {'global_address', 'global_dim'}")
    bad = [f for f in got if not isinstance(f, str)]
    if bad:
        fail(name, f"{what} holds {bad[0]!r}, not a field name (a str)", f"the fields are {FIELDS}")
    for f in got:
        if f not in FIELDS:
            hint = (f"use the PTX field name {ALIASES[f]!r} (tensormap.replace.tile.{ALIASES[f]})" if f in ALIASES
                    else f"the fields tensormap.replace knows are {FIELDS}")
            fail(name, f"{what}: {f!r} is not a tensormap.replace field", hint)
    return set(got)


def fields_hint(extra: set, missing: set, base, group) -> str:
    """The hint for the first field that is wrong (``extra``: named but unchanged; ``missing``:
    changed but not named), true for this base and group."""
    if {"box_dim", "swizzle_mode"} & extra:
        return ("the box and the swizzle describe the kernel's tile in shared memory, the same for every "
                "group: keep the base's")
    if extra - {"global_address", "global_dim", "global_stride"}:
        return "dtype, element strides, fill, rank and interleave are the same for every group: keep them"
    if "global_address" in missing:
        return "each group's tensor lives at its own address"
    if "global_address" in extra:
        if group == base:
            return "this group IS the base tensor (same address, shape and strides): nothing to replace"
        return (f"this group starts at the base's own address ({base.global_address:#x}): "
                "global_address does not change")
    if "global_stride" in extra:
        rows = ("the shape differs only in its number of rows; " if group.global_dims[0] == base.global_dims[0] and
                group.global_dims != base.global_dims else "")
        return (f"{rows}the stride is the BYTES between rows (driver order, without the innermost), "
                f"{group.global_strides_bytes} in both")
    if "global_stride" in missing:
        return (f"this group's rows are {group.global_strides_bytes[0]} B apart, the base's "
                f"{base.global_strides_bytes[0]} B")
    if "global_dim" in missing:
        return f"the group's dims (driver order) are {group.global_dims}, the base's {base.global_dims}"
    return f"the dims are the base's, {base.global_dims}: global_dim does not change"


def check_fields_to_replace(fn) -> None:
    """``fn(base_spec, group_spec)`` must return the set of ``tensormap.replace`` fields (PTX
    names, e.g. ``{"global_address", "global_dim"}``) in which group g's descriptor differs."""
    name = "fields_to_replace"
    for what, base, group in field_cases():
        got = _call(name, fn, f"for {what}", base, group, hint="compare base_spec and group_spec attribute "
                    "by attribute (global_address, global_dims, global_strides_bytes, box_dims, swizzle, ...)")
        if got is NOT_ATTEMPTED:
            return not_attempted(name)
        got, want = _as_fields(name, got, f"for {what}, the answer"), set(fields_to_replace(base, group))
        if got == want:
            continue
        extra, missing = sorted(got - want), sorted(want - got)
        shown = f"{what}: got {sorted(got)}, expected {sorted(want)}"
        fail(name, shown, fields_hint(set(extra), set(missing), base, group))
    return passed(name, "a group changes where its tensor is and how big it is, never the tile.")


def fence_order_problem(seq, path: str = "smem"):
    """``(what is wrong, hint)`` for an ordering ``seq`` of :data:`FENCE_STEPS` names on ``path``
    ("smem" or "global"), or None when it is right (``prefetch`` may be left out)."""
    if path not in FENCE_ORDERS:
        raise ValueError(f"path must be one of {tuple(FENCE_ORDERS)}, got {path!r}")
    want = FENCE_ORDERS[path]
    if isinstance(seq, str) or not isinstance(seq, (list, tuple)) or not all(isinstance(s, str) for s in seq):
        return (f"expected a list of step names, got {type(seq).__name__} {seq!r}",
                f"e.g. {list(want[:2])} ...; the steps are {list(want)} in some order")
    seq = [s.strip().lower() for s in seq]   # " Copy" is "copy"
    for s in seq:
        if s not in want:
            other = next((p for p, steps in FENCE_ORDERS.items() if s in steps), None)
            return (f"{s!r} is not a step of the {path!r} path", f"that step belongs to the {other!r} path; this one "
                    f"uses {sorted(want)}" if other else f"the steps are {sorted(want)} ({', '.join(FENCE_STEPS)})")
    if len(set(seq)) != len(seq):
        return (f"a step appears twice in {list(seq)}", "each step happens once per group")
    release = "cp_fenceproxy" if path == "smem" else "release"
    copy, replace = want[0], want[1]
    missing = {copy: "replace edits a COPY of the base descriptor: where does the copy come from?",
               replace: "nothing is replaced: the group would load the base tensor",
               release: "missing fence: without the release the TMA unit may read the old 128 bytes",
               "acquire": "missing fence: the tensormap proxy is not acquired from the generic proxy at kernel "
                          "start; the consumer must fence.proxy.tensormap::generic.acquire",
               "load": "the new descriptor is never used"}
    for step, hint in missing.items():
        if step not in seq:
            return (f"{step!r} is missing from {list(seq)}", hint)
    at = {s: i for i, s in enumerate(seq)}
    before = [(copy, replace, "the copy would overwrite the replaced fields with the base's"),
              (replace, release, "a release publishes the writes made BEFORE it: replace first"),
              (release, "acquire", "acquire before release: it pairs with a release that has not happened, so the "
                                   "load may still see the old descriptor"),
              ("acquire", "load", "the load may use the descriptor the TMA unit cached before the update"),
              ("acquire", "prefetch", "a prefetch before the acquire may cache the old descriptor (in SASS the acquire "
                                      "is UTMACCTL.IV, invalidate; the prefetch UTMACCTL.PF)"),
              ("prefetch", "load", "a prefetch after the load is too late to help")]
    for first, then, hint in before:
        if first in at and then in at and at[first] > at[then]:
            return (f"{then!r} comes before {first!r}", hint)
    return None


def check_fence_order(seq, path: str = "smem") -> None:
    """Grade an ordering of the steps that update a descriptor and use it (``path`` "smem":
    update a shared-memory copy, publish with ``tensormap.cp_fenceproxy``; "global": update in
    place, ``fence.proxy.tensormap::generic.release``). ``seq`` may also be a function returning
    it; ``None``, ``[]`` or a stub raising NotImplementedError is "not attempted"."""
    name = f"fence_order[{path}]"
    if callable(seq):
        seq = _call(name, seq, "")
    if hasattr(seq, "tolist") and not isinstance(seq, str):   # a NumPy array of names
        seq = seq.tolist()
    if seq is NOT_ATTEMPTED or seq is None or (isinstance(seq, (list, tuple)) and not seq):
        return not_attempted(name)
    problem = fence_order_problem(seq, path)
    if problem:
        fail(name, problem[0], problem[1])
    note = "" if set(OPTIONAL) <= {s.strip().lower() for s in seq} else " (prefetch.tensormap is optional: you may add it after the acquire)"
    return passed(name, " -> ".join(s.strip().lower() for s in seq) + note)
