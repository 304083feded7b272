"""The learner's answers, gathered before any is judged, and the hint that names a mistake.

Every exercise check that calls a learner's function on a table of cases does it the same way:

1. :func:`answers` calls the function on EVERY case first (a stub is "not attempted"; an exception
   or a forgotten ``return`` is explained, naming the call), converting each answer as it comes;
2. the check compares the answers with the reference's (:func:`wrong_cases`) and reports the
   first wrong case;
3. :func:`named_mistake` picks the hint: a known mistake is named only when the answers equal that
   mistake's on every case, so a hint is never a guess from one coincidence.

:func:`close` is the relative comparison the float checks use.
"""
from __future__ import annotations

import operator

from .checks import NOT_ATTEMPTED, CheckFailed, fail, need_function


def answers(name: str, fn, cases, convert=None, *, show=repr, kind: str | None = None, raised=True,
            args=None, stub_first_only: bool = False):
    """The learner's answer ``fn(*case)`` for every case, in order, each passed through
    ``convert(answer, case)`` as soon as it comes (so a malformed answer fails on its own case); or
    :data:`NOT_ATTEMPTED` if ``fn`` is still a stub (raises ``NotImplementedError`` or returns
    ``NOT_ATTEMPTED``).

    * ``show(case)``: the call's arguments as text; messages name the call as ``{name}{show(case)}``.
    * ``kind``: what a right answer is (e.g. ``"an int"``); an answer of None then fails, asking
      whether the function forgot to return. Without ``kind``, None goes to ``convert``.
    * ``raised``: an exception ``fn`` raises fails naming the call (``True``), or with the
      ``(message[, hint[, launched]])`` that ``raised(case, err)`` returns; the learner's traceback
      stays chained. ``False``: the exception propagates unexplained.
    * ``args(*case)``: the arguments passed, when they are not the case itself (fresh copies of
      arrays the learner may modify, or a case that also carries its description).
    * ``stub_first_only``: only the first call may be a stub; a later ``NotImplementedError`` is an
      exception like any other (explained through ``raised``).
    """
    need_function(fn)
    out = []
    for k, case in enumerate(cases):
        try:
            got = fn(*(case if args is None else args(*case)))
        except NotImplementedError as err:
            if k == 0 or not stub_first_only:
                return NOT_ATTEMPTED
            fail(name, *_explained(name, case, err, show, raised))
        except CheckFailed:
            raise
        except Exception as err:
            if raised is False:
                raise
            fail(name, *_explained(name, case, err, show, raised))
        if isinstance(got, str) and got == NOT_ATTEMPTED:
            return NOT_ATTEMPTED
        if got is None and kind is not None:
            fail(name, f"{name}{show(case)} returned None; expected {kind}: did the function forget "
                 "to return its result?")
        out.append(got if convert is None else convert(got, case))
    return out


def _explained(name, case, err, show, raised) -> tuple:
    """``fail``'s (message, hint, launched) for the exception ``err`` of the call on ``case``."""
    if raised is True:
        return (f"{name}{show(case)} raised {type(err).__name__}: {err}",)
    return tuple(raised(case, err))


def named_mistake(got_all, cases, mistakes, default=None, *, same=operator.eq, want_all=None):
    """The hint of the first ``(formula, hint)`` in ``mistakes`` whose values ``formula(*case)``
    equal (``same(answer, value)``) the learner's answers ``got_all`` on EVERY case; else
    ``default``. A formula that raises on some case is passed over (the learner's function
    answered there); with ``want_all`` (the right answers), so is one that is right on every case,
    which matters when ``same`` is a tolerance."""
    for formula, hint in mistakes:
        try:
            values = [formula(*case) for case in cases]
        except Exception:
            continue
        if want_all is not None and all(same(v, w) for v, w in zip(values, want_all)):
            continue
        if all(same(g, v) for g, v in zip(got_all, values)):
            return hint
    return default


def wrong_cases(got_all, want_all, same=operator.eq) -> list:
    """The indices of the cases whose answer is not ``same`` as the right one (empty: all right)."""
    return [i for i, (g, w) in enumerate(zip(got_all, want_all)) if not same(g, w)]


def close(a, b, rel: float = 1e-6, atol: float = 0.0) -> bool:
    """``a`` within ``rel`` of ``b`` (relative to ``b``) or within ``atol`` of it; False for NaN."""
    return abs(a - b) <= max(rel * abs(b), atol)
