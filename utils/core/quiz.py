"""A quiz answered in code: questions are shown, answers go in a dict, ``grade`` gives feedback.

Works under nbval: nothing waits for input. Following the exercise convention of
:mod:`utils.core.checks`: an empty ``answers`` dict is reported as "not attempted" and does not
raise; a partly answered quiz prints "k of N answered, j correct" and lists what is left
(not a pass, no raise); a wrong answer prints why that option is wrong and, after all
feedback, raises :class:`~utils.core.checks.CheckFailed`. A solution notebook asserts
``result.complete`` (every question answered, all correct).

Every wrong option carries its own explanation: :class:`Question` refuses a question without one.
:class:`Predict` questions ask for a measured ratio as a range; their answer is the range that
holds the number recorded in ``results/<stem>.json`` when the quiz is graded.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from .checks import CheckFailed, not_attempted, passed


def _letter_set(answer) -> frozenset:
    return frozenset([answer]) if isinstance(answer, str) else frozenset(answer)


def _check_explanations(qid: str, keys, why, wrong: dict, explain) -> None:
    """Raise ValueError unless ``why`` is given and every letter of ``explain`` has its own
    non-empty explanation in ``wrong``."""
    if len(keys) < 2 or not all(isinstance(k, str) and len(k) == 1 for k in keys):
        raise ValueError(f"question {qid}: choices need at least two one-letter keys, got {sorted(keys)}")
    if not set(wrong) <= set(keys):
        raise ValueError(f"question {qid}: explanations name unknown choices {sorted(set(wrong) - set(keys))}")
    if not isinstance(why, str) or not why.strip():
        raise ValueError(f"question {qid}: the right answer needs an explanation (`why`)")
    missing = sorted(set(explain) - set(wrong))
    if missing:
        raise ValueError(f"question {qid}: wrong option(s) {missing} have no explanation of why "
                         "they are wrong; every wrong option needs its own")
    texts = list(wrong.values())
    if not all(isinstance(t, str) and t.strip() for t in texts) or len(set(texts)) != len(texts):
        raise ValueError(f"question {qid}: each wrong option needs its own non-empty explanation")


@dataclass(frozen=True)
class Question:
    """One multiple-choice question. ``answer`` is a letter or a frozenset of letters (pick all);
    ``why`` explains the right answer; ``wrong`` explains, for EVERY other letter, why it is wrong."""

    qid: str
    text: str
    choices: dict
    answer: str | frozenset
    why: str
    wrong: dict = field(default_factory=dict)

    def __post_init__(self):
        right, keys = _letter_set(self.answer), set(self.choices)
        if not right or not right <= keys:
            raise ValueError(f"question {self.qid}: the answer {sorted(right)} names unknown choices "
                             f"(choices {sorted(keys)})")
        if set(self.wrong) & right:
            raise ValueError(f"question {self.qid}: {sorted(set(self.wrong) & right)} is a right "
                             "answer but is explained as wrong")
        _check_explanations(self.qid, keys, self.why, self.wrong, keys - right)

    @property
    def multi(self) -> bool:
        return not isinstance(self.answer, str)

    def resolved(self) -> "Question":
        """The question with its answer known (a fixed question already is)."""
        return self


@dataclass(frozen=True)
class Measured:
    """A ratio recorded by the course's own benchmarks: row ``name`` over row ``over`` in
    ``results/<stem>.json`` (``over=None``: the row's own recorded ``ratio``)."""

    stem: str
    name: str
    over: str | None = None

    def read(self) -> tuple:
        """(ratio, "<device>, <date>") from the recording the notebooks show."""
        from . import results
        doc = results.load(self.stem)
        row = results.pick(doc["rows"], self.name)
        value = row["ratio"] if self.over is None else row["value"] / results.pick(doc["rows"], self.over)["value"]
        return float(value), f"{doc['device']}, {doc['date'][:10]}"


def _range_text(lo: float, hi: float) -> str:
    if lo <= 0:
        return f"below {hi:g}x"
    return f"{lo:g}x or more" if math.isinf(hi) else f"{lo:g}x to {hi:g}x"


@dataclass(frozen=True)
class Predict:
    """Predict a measured ratio: ``ranges`` maps letters to contiguous [lo, hi) ranges; the right
    letter is the range holding the recorded value (:class:`Measured`), read when graded. Any
    range may be the wrong one, so ``wrong`` explains every letter."""

    qid: str
    text: str
    measured: Measured
    ranges: dict
    why: str
    wrong: dict

    def __post_init__(self):
        bounds = list(self.ranges.values())
        if not all(isinstance(b, tuple) and len(b) == 2 and b[0] < b[1] for b in bounds) or \
                bounds[0][0] != 0 or not math.isinf(bounds[-1][1]) or \
                any(a[1] != b[0] for a, b in zip(bounds, bounds[1:])):
            raise ValueError(f"question {self.qid}: ranges must be (lo, hi) pairs covering 0 to inf "
                             f"in order, got {bounds}")
        _check_explanations(self.qid, set(self.ranges), self.why, self.wrong, set(self.ranges))

    multi = False

    @property
    def choices(self) -> dict:
        return {k: _range_text(*b) for k, b in self.ranges.items()}

    def resolved(self) -> Question:
        """A fixed :class:`Question` graded against the recorded value."""
        value, where = self.measured.read()
        answer = next(k for k, (lo, hi) in self.ranges.items() if lo <= value < hi)
        said = f"Recorded ({where}): {value:.2f}x"
        wrong = {k: f"{said}, not {_range_text(lo, hi)}. {self.wrong[k]}"
                 for k, (lo, hi) in self.ranges.items() if k != answer}
        return Question(self.qid, self.text, self.choices, answer, f"{said}. {self.why}", wrong)


def _normalise(q, given):
    """A learner's answer as a letter or a frozenset; raise CheckFailed explaining a bad form."""
    form = "a letter string like 'b'" + (" or, for several, a set like {'a', 'c'}" if q.multi else "")
    letters = list(given) if isinstance(given, (list, tuple, set, frozenset)) else [given]
    if not letters or not all(isinstance(g, str) for g in letters):
        raise CheckFailed(f"{q.qid}: answer with {form}; got {type(given).__name__} {given!r}")
    norm = {g.strip().lower() for g in letters}
    unknown = sorted(norm - set(q.choices))
    if unknown:
        several = " (several letters go in a set, one letter per item)" if any(len(u) > 1 for u in unknown) else ""
        raise CheckFailed(f"{q.qid}: {unknown} is not a choice{several}; choose from {sorted(q.choices)}")
    if q.multi:
        return frozenset(norm)
    if len(norm) != 1:
        raise CheckFailed(f"{q.qid}: this question has one right answer; choose exactly one letter, "
                          f"got {sorted(norm)}")
    return norm.pop()


def _feedback(q: Question, given) -> str | None:
    """None if ``given`` is right, else the explanation of every wrong part of it."""
    if given == q.answer:
        return None
    chosen = given if q.multi else frozenset([given])
    notes = [f"({g}) {q.wrong[g]}" for g in sorted(chosen - _letter_set(q.answer))]
    missing = len(_letter_set(q.answer) - chosen)
    if missing and q.multi:
        notes.append(f"{missing} right choice{'s are' if missing > 1 else ' is'} missing: pick all "
                     "that apply.")
    return " ".join(notes)


@dataclass(frozen=True)
class QuizResult:
    """What ``Quiz.grade`` found: ``complete`` only when every question is answered correctly."""

    total: int
    answered: int
    correct: int
    unanswered: tuple

    @property
    def attempted(self) -> bool:
        return self.answered > 0

    @property
    def complete(self) -> bool:
        return self.correct == self.answered == self.total


class Quiz:
    """A list of questions with ``show()`` and ``grade(answers)``."""

    def __init__(self, title: str, questions: list):
        ids = [q.qid for q in questions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate question ids in {ids}")
        self.title, self.questions = title, list(questions)

    def show(self) -> None:
        """Print every question and its choices (never the answers)."""
        print(f"{self.title}: {len(self.questions)} questions")
        for q in self.questions:
            pick = " (pick all that apply)" if q.multi else ""
            print(f"\n{q.qid}. {q.text}{pick}")
            for letter, text in q.choices.items():
                print(f"   {letter}) {text}")

    def grade(self, answers: dict) -> QuizResult:
        """Print feedback per answered question and "k of N answered, j correct".

        Nothing answered: "not attempted" (no raise). Any wrong answer: CheckFailed after all
        feedback. ``answers`` maps question id -> letter, or a set of letters where several apply.
        """
        if not isinstance(answers, dict):
            raise CheckFailed(f"answers must be a dict like {{'q1': 'b'}}, got {type(answers).__name__}")
        known = [q.qid for q in self.questions]
        stray = [k for k in answers if k not in known]
        if stray:
            raise CheckFailed(f"unknown question ids {stray!r}; ids are {known}")
        given = {q.qid: _normalise(q, answers[q.qid]) for q in self.questions
                 if answers.get(q.qid) is not None}
        wrong, skipped = [], [qid for qid in known if qid not in given]
        for q in (q.resolved() for q in self.questions if q.qid in given):
            note = _feedback(q, given[q.qid])
            if note is None:
                print(f"{q.qid}: correct. {q.why}")
            else:
                wrong.append(q.qid)
                print(f"{q.qid}: not quite. {note}")
        result = QuizResult(len(known), len(given), len(given) - len(wrong), tuple(skipped))
        tally = f"{result.answered} of {result.total} answered, {result.correct} correct"
        name = self.title
        if not result.attempted:
            not_attempted(name)
            print(f"[{name}] {tally}.")
        elif result.complete:
            passed(name, f"{tally}.")
        else:
            print(f"\n[{name}] {tally}" + (f"; not answered yet: {', '.join(skipped)}" if skipped else "."))
        if wrong:
            raise CheckFailed(f"[{name}] wrong answers: {', '.join(wrong)} (see the feedback above)")
        return result
