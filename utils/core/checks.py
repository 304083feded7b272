"""Exercise checks: accept a right answer with one short line, explain a wrong one and raise.

Conventions (STYLE.md):

* a stub that still raises ``NotImplementedError`` is reported as "not attempted" and does
  **not** raise, so exercise notebooks run under nbval;
* kernel outputs are pre-filled with NaN (``nan_like``); an output left all-NaN means the
  kernel stub was not filled in ("not attempted"), a partly NaN one means elements were never
  written, which is an error;
* on failure a check prints what was launched, yours vs expected, the first wrong index and a
  hint, then raises ``AssertionError``;
* a malformed answer (wrong type or shape) gets an explanation, never an obscure crash;
* checks return None (nothing extra is displayed under the cell); the printed line is the verdict;
* one type rule for every check (:func:`is_int`, :func:`is_number`): an integer answer may be a
  Python ``int`` or a NumPy integer scalar, a number may also be a ``float`` or NumPy float
  scalar; ``bool`` is neither (``True == 1`` would otherwise pass by accident); a yes/no answer
  is a ``bool`` or NumPy bool (:func:`is_bool`);
* a check that calls the learner's function on a table of cases gathers every answer first and
  names a mistake only when it matches every case (:mod:`utils.core.answers`).
"""
from __future__ import annotations

import numpy as np

NOT_ATTEMPTED = "not attempted"


class CheckFailed(AssertionError):
    """A check rejected the answer; the message explains why."""


def is_int(x) -> bool:
    """True for a Python ``int`` or NumPy integer scalar (``np.int64(3)``); False for ``bool``."""
    return isinstance(x, (int, np.integer)) and not isinstance(x, (bool, np.bool_))


def is_number(x) -> bool:
    """True for an integer (:func:`is_int`) or a real float (Python or NumPy scalar)."""
    return is_int(x) or (isinstance(x, (float, np.floating)) and not isinstance(x, (bool, np.bool_)))


def is_bool(x) -> bool:
    """True for a Python ``bool`` or a NumPy bool scalar (what ``np.all(...)`` returns)."""
    return isinstance(x, (bool, np.bool_))


def shown(x) -> str:
    """``x`` as a message shows it: ``repr``, but a NumPy scalar as its value (``1.0``, not
    ``np.float64(1.0)``)."""
    return repr(x.item() if isinstance(x, np.generic) else x)


INT_ADVICE = "return an int, e.g. with int(...), math.ceil(...) or //, whichever the rule needs"
ROUND_DOWN = "use // (integer division), not /"
ROUND_UP = "return an int, e.g. with math.ceil(...) (it rounds up)"
"""Advice of :func:`int_answer` for a float: neutral, or where the rule rounds down or up."""


def int_answer(name: str, got, what: str = "the answer", hint: str = "", advice: str = INT_ADVICE) -> int:
    """``got`` as a Python int if it passes :func:`is_int`, else fail naming what came back; a
    float (``3.0``: a count is an int) is also told ``advice`` (neutral by default; pass
    :data:`ROUND_DOWN`, :data:`ROUND_UP` or your own where the rule says how to round)."""
    if not is_int(got):
        extra = f": {advice}" if isinstance(got, (float, np.floating)) else ""
        fail(name, f"{what} is {type(got).__name__} {shown(got)}; expected an int{extra}", hint)
    return int(got)


def number_answer(name: str, got, what: str = "the answer", hint: str = "") -> float:
    """``got`` as a float if it passes :func:`is_number`, else fail naming what came back."""
    if not is_number(got):
        fail(name, f"{what} is {type(got).__name__} {shown(got)}; expected a number", hint)
    return float(got)


def need_function(fn) -> None:
    """Raise :class:`CheckFailed` unless ``fn`` is callable (the learner passed ``f()``, not ``f``)."""
    if not callable(fn):
        raise CheckFailed(f"expected a function, got {type(fn).__name__}: pass the function "
                          "itself, without calling it")


def attempt(fn, *args, **kwargs):
    """Call the learner's ``fn``; return :data:`NOT_ATTEMPTED` if it is still a stub."""
    need_function(fn)
    try:
        return fn(*args, **kwargs)
    except NotImplementedError:
        return NOT_ATTEMPTED


def not_attempted(name: str) -> None:
    """Print the "not attempted" line for exercise ``name`` (no raise: the notebook runs on)."""
    print(f"[{name}] not attempted yet: fill in the TODO and run this cell again.")


def passed(name: str, detail: str = "") -> None:
    """Print the success line for exercise ``name``."""
    print(f"[{name}] correct." + (f" {detail}" if detail else ""))


def verified(name: str, what: str) -> None:
    """Print what a check could verify when it cannot verify everything on this machine (no
    "correct": e.g. "structure OK; correctness is checked on Hopper")."""
    print(f"[{name}] {what}")


def fail(name: str, msg: str, hint: str = "", launched: str = ""):
    """Print and raise a teaching failure message."""
    parts = [f"[{name}] wrong: {msg}"]
    if launched:
        parts.append(f"  launched: {launched}")
    if hint:
        parts.append(f"  hint: {hint}")
    text = "\n".join(parts)
    raise CheckFailed(text) from None    # the message is the lesson: no chained traceback above it


def nan_like(x):
    """A NaN-filled array/tensor shaped like ``x`` (poisoned output: unwritten elements show)."""
    if hasattr(x, "new_full"):
        return x.new_full(x.shape, float("nan"))
    return np.full(np.shape(x), np.nan, dtype=np.asarray(x).dtype)


def _to_numpy(x, name, what):
    if hasattr(x, "detach"):
        x = x.detach().float().cpu().numpy() if str(x.dtype) == "torch.bfloat16" else x.detach().cpu().numpy()
    try:
        return np.asarray(x)
    except Exception:
        fail(name, f"{what} should be an array, got {type(x).__name__}")


def check_array(name: str, yours, expected, *, atol: float = 0.0, rtol: float = 0.0,
                hint: str = "", launched: str = "") -> None:
    """Compare every element of ``yours`` with ``expected``.

    All-NaN output -> "not attempted" (no raise). Wrong shape, unwritten (NaN) elements or
    values outside ``atol + rtol*|expected|`` -> message with the first wrong index, then raise.
    """
    if isinstance(yours, str) and yours == NOT_ATTEMPTED:
        return not_attempted(name)
    if yours is None:
        fail(name, "got None: did the function forget to return its result?", hint, launched)
    y = _to_numpy(yours, name, "your result")
    e = _to_numpy(expected, name, "the expected result")
    if y.shape != e.shape:
        extra = " (transposed?)" if y.shape == e.shape[::-1] else ""
        fail(name, f"shape {y.shape} but expected {e.shape}{extra}", hint, launched)
    yf = y.astype(np.float64) if y.dtype.kind in "fc" else y
    nan_y = np.isnan(yf) if y.dtype.kind == "f" else np.zeros(y.shape, bool)
    if y.size and nan_y.all() and not np.isnan(e.astype(np.float64)).all():
        return not_attempted(name)
    nan_e = np.isnan(e.astype(np.float64)) if e.dtype.kind == "f" else np.zeros(e.shape, bool)
    bad = nan_y & ~nan_e
    if bad.any():
        idx = tuple(int(i) for i in np.argwhere(bad)[0])
        fail(name, f"{int(bad.sum())} of {y.size} elements were never written (still NaN), "
             f"first at index {idx}", hint or "is every element covered by some program/thread?",
             launched)
    ef = e.astype(np.float64)
    wrong = ~(np.isclose(yf.astype(np.float64), ef, atol=atol, rtol=rtol) | (nan_y & nan_e))
    if wrong.any():
        idx = tuple(int(i) for i in np.argwhere(wrong)[0])
        fail(name, f"{int(wrong.sum())} of {y.size} elements differ; first at index {idx}: "
             f"yours {shown(y[idx])}, expected {shown(e[idx])}", hint, launched)
    return passed(name, f"all {y.size} elements match.")


def check_value(name: str, yours, expected, *, rel: float = 0.0, hint: str = "",
                kind: type | tuple = (int, float)) -> None:
    """Check one number (or tuple/str) answer; ``rel`` is the allowed relative error."""
    if isinstance(yours, str) and yours == NOT_ATTEMPTED:
        return not_attempted(name)
    kinds = (kind,) if isinstance(kind, type) else tuple(kind)
    ok_type = (is_int(yours) and int in kinds) or (is_number(yours) and float in kinds) or \
        (not isinstance(yours, (bool, np.bool_, int, float, np.number)) and isinstance(yours, kinds))
    if not ok_type:
        want = " or ".join(k.__name__ for k in kinds)
        fail(name, f"expected a {want}, got {type(yours).__name__} {shown(yours)}", hint)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        ok = abs(yours - expected) <= rel * abs(expected)
    else:
        ok = yours == expected
    if not ok:
        fail(name, f"got {shown(yours)}, expected {shown(expected)}" + (f" (within {rel:.0%})" if rel else ""),
             hint)
    return passed(name)
