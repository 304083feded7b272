""""Change this, predict, then run": compare a learner's prediction with the value that answers it.

A notebook section ends with a question ("halve the stages: faster or slower, by about how
much?"). The learner writes a prediction into a variable, then runs the cell, which calls
:func:`choice` (one of a few words) or :func:`number` (a value, a range, or a value with a
tolerance) with the value that answers it: rows measured now on a GPU, the recording on the cpu
tier, or a value the interpreter / emulator computes. The verdict is printed; nothing here raises
for a wrong or unreadable prediction (a prediction is not an exercise, so a notebook run under
nbval never fails on one), and a prediction left as ``None`` prints "write your prediction first"
and shows nothing of the answer.

Forms a learner may write (:func:`parse_number`): ``2``, ``2.5``, ``"2x"``, ``"2×"``, ``"~2"``,
``"about 2"``, ``"1.5-2.5"``, ``"1.5 to 2.5"``, ``(1.5, 2.5)``, ``"40%"`` (0.4). A choice is
matched case-insensitively, by a listed alias or by an unambiguous prefix (``"slow"`` for
``"slower"``). Bad arguments from the notebook's author (the answer, the options, the
tolerance) raise ValueError/TypeError naming the rule.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

FIRST = "write your prediction first: set the prediction variable above, then run this cell again"

_NUM = r"[-+]?(?:\d+\.?\d*|\.\d+)(?:e[-+]?\d+)?"
_RANGE = re.compile(rf"^({_NUM})\s*(?:-|–|to|\.\.)\s*({_NUM})$")
_ONE = re.compile(rf"^(?:~|about|approx\.?|approximately|around|roughly)?\s*({_NUM})\s*(x|×|%)?$")


@dataclass(frozen=True)
class Outcome:
    """The verdict: ``held`` is True/False, or None when there was no readable prediction."""

    held: bool | None
    message: str

    def _ipython_display_(self):
        """Show nothing under the cell: the verdict was printed already."""


def _real(x) -> bool:
    return isinstance(x, (int, float, np.integer, np.floating)) and not isinstance(x, (bool, np.bool_))


def parse_number(prediction) -> tuple[float, float] | float | None:
    """A number (float), a range ``(lo, hi)``, or None if ``prediction`` is not one of the forms
    in the module docstring. ``"40%"`` is 0.4; ``"2x"`` is 2."""
    if _real(prediction):
        value = float(prediction)
        return value if math.isfinite(value) else None
    if isinstance(prediction, (tuple, list)) and len(prediction) == 2 and all(map(_real, prediction)):
        lo, hi = sorted(float(p) for p in prediction)
        return (lo, hi) if math.isfinite(lo) and math.isfinite(hi) else None
    if not isinstance(prediction, str):
        return None
    text = prediction.strip().lower().replace(",", "")
    m = _RANGE.match(text)
    if m:
        lo, hi = sorted((float(m.group(1)), float(m.group(2))))
        return lo, hi
    m = _ONE.match(text)
    if m:
        value = float(m.group(1))
        return value / 100 if m.group(2) == "%" else value
    return None


def _options(options) -> dict:
    """``{canonical: {aliases...}}`` from a tuple of words or a dict word -> aliases."""
    if isinstance(options, dict):
        pairs = options.items()
    elif isinstance(options, (tuple, list)):
        pairs = ((o, ()) for o in options)
    else:
        raise TypeError(f"options must be a tuple of words or a dict word -> aliases, got {type(options).__name__}")
    table = {}
    for word, aliases in pairs:
        if not isinstance(word, str) or not word.strip():
            raise ValueError(f"every option must be a non-empty string, got {word!r}")
        if isinstance(aliases, str):
            aliases = (aliases,)
        table[word] = {word.lower(), *(a.lower() for a in aliases)}
    if len(table) < 2:
        raise ValueError(f"a choice needs at least two options, got {list(table)}")
    return table


def match_choice(prediction, options) -> str | None:
    """The option ``prediction`` names (case-insensitive; an alias or an unambiguous prefix of
    at least 3 letters), or None."""
    table = _options(options)
    if not isinstance(prediction, str) or not prediction.strip():
        return None
    text = " ".join(prediction.strip().lower().split())
    exact = [w for w, names in table.items() if text in names]
    if len(exact) == 1:
        return exact[0]
    if len(text) >= 3:
        pre = [w for w, names in table.items() if any(n.startswith(text) for n in names)]
        if len(pre) == 1:
            return pre[0]
    return None


def _say(held, what_you, actual_text, source, why) -> Outcome:
    verdict = "your prediction held" if held else "your prediction did not hold"
    lines = [f"you predicted {what_you}; {source}: {actual_text} -> {verdict}."]
    if why:
        lines.append(why)
    msg = "\n".join(lines)
    print(msg)
    return Outcome(held, msg)


def _pending(prediction) -> Outcome | None:
    if prediction is None:
        print(FIRST)
        return Outcome(None, FIRST)
    return None


def choice(prediction, actual: str, options, *, source: str = "the recording", why: str = "") -> Outcome:
    """Compare a one-word prediction with ``actual`` (one of ``options``; see :func:`match_choice`).
    ``source`` says where ``actual`` comes from ("recorded on H100", "measured now", "the emulator");
    ``why`` is printed after the verdict. Never raises for the learner's prediction."""
    table = _options(options)
    if actual not in table:
        raise ValueError(f"actual must be one of the options {list(table)}, got {actual!r}")
    wait = _pending(prediction)
    if wait:
        return wait
    said = match_choice(prediction, table)
    if said is None:
        msg = (f"could not read your prediction {prediction!r}: write one of {list(table)} "
               "(as a string), then run this cell again")
        print(msg)
        return Outcome(None, msg)
    return _say(said == actual, repr(said), repr(actual), source, why)


def number(prediction, actual, *, rel: float | None = 0.25, atol: float = 0.0, unit: str = "",
           source: str = "the recording", why: str = "") -> Outcome:
    """Compare a numeric prediction with ``actual``. A range holds if it contains ``actual``; a
    single value holds if it is within ``rel`` (relative) or ``atol`` (absolute) of ``actual``.
    ``unit`` is shown after the numbers. Never raises for the learner's prediction."""
    if not _real(actual) or not math.isfinite(float(actual)):
        raise TypeError(f"actual must be a finite real number, got {actual!r}")
    if rel is not None and (not _real(rel) or rel < 0):
        raise ValueError(f"rel must be a number >= 0 or None, got {rel!r}")
    if not _real(atol) or atol < 0:
        raise ValueError(f"atol must be a number >= 0, got {atol!r}")
    if not rel and not atol:
        raise ValueError("give a tolerance: rel > 0 or atol > 0 (an exact match is not a prediction)")
    wait = _pending(prediction)
    if wait:
        return wait
    got, actual = parse_number(prediction), float(actual)
    u = f" {unit}" if unit else ""
    if got is None:
        msg = (f"could not read your prediction {prediction!r}: write a number (2, '2x', '~2', "
               "'40%') or a range ((1.5, 2.5), '1.5-2.5'), then run this cell again")
        print(msg)
        return Outcome(None, msg)
    if isinstance(got, tuple):
        held = got[0] <= actual <= got[1]
        said = f"{got[0]:.3g} to {got[1]:.3g}{u}"
    else:
        tol = max((rel or 0.0) * abs(actual), atol)
        held = abs(got - actual) <= tol
        said = f"{got:.3g}{u} (counted as right within ±{tol:.2g}{u})"
    return _say(held, said, f"{actual:.3g}{u}", source, why)


TIMES = ("faster", "slower", "same")
"""The options of a timing question; "same" means within the run-to-run spread."""


def direction(row: dict, base: dict) -> str:
    """"faster", "slower" or "same" for ``row`` against ``base``, two rows of one harness run timed
    against the same reference: "faster" when ``row``'s lowest round beats ``base``'s highest
    (``ratio_lo`` > ``base``'s ``ratio_hi``), "slower" the other way round, "same" when their spreads
    overlap. Raises ValueError for rows without a spread or with different references."""
    for r in (row, base):
        if not isinstance(r, dict) or any(r.get(k) is None for k in ("ratio", "ratio_lo", "ratio_hi")):
            raise ValueError("direction() needs two harness rows with ratio, ratio_lo and ratio_hi; "
                             f"got {r.get('name') if isinstance(r, dict) else r!r}")
    if row.get("reference") != base.get("reference"):
        raise ValueError(f"the rows are timed against different references ({row.get('reference')!r}, "
                         f"{base.get('reference')!r}): their ratios do not compare")
    if row["ratio_lo"] > base["ratio_hi"]:
        return "faster"
    if row["ratio_hi"] < base["ratio_lo"]:
        return "slower"
    return "same"
