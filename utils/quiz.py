"""A quiz answered in code: questions are shown, answers go in a dict, ``grade`` gives feedback.

Works under nbval: nothing waits for input. Unanswered questions are reported as such and do
not fail; a wrong answer prints why it is wrong and, after all feedback, raises.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .checks import CheckFailed


@dataclass(frozen=True)
class Question:
    """One multiple-choice question. ``answer`` is a letter or a frozenset of letters (pick all);
    ``why`` explains the right answer, ``wrong`` explains each tempting wrong letter."""

    qid: str
    text: str
    choices: dict
    answer: str | frozenset
    why: str
    wrong: dict = field(default_factory=dict)

    def __post_init__(self):
        keys = set(self.choices)
        answers = {self.answer} if isinstance(self.answer, str) else set(self.answer)
        if not answers <= keys or not set(self.wrong) <= keys:
            raise ValueError(f"question {self.qid}: answers/explanations name unknown choices")

    @property
    def multi(self) -> bool:
        return not isinstance(self.answer, str)


def _normalise(q: Question, given):
    """Turn a learner's answer into a letter or a frozenset; raise CheckFailed on bad form."""
    letters = given if isinstance(given, (list, tuple, set, frozenset)) else [given]
    if not letters or not all(isinstance(g, str) for g in letters):
        raise CheckFailed(f"{q.qid}: answer with a letter string like 'b'"
                          + (" or a set like {'a', 'c'}" if q.multi else "") + f", got {given!r}")
    norm = {g.strip().lower() for g in letters}
    unknown = norm - set(q.choices)
    if unknown:
        raise CheckFailed(f"{q.qid}: {sorted(unknown)} is not a choice; choose from "
                          f"{sorted(q.choices)}")
    if q.multi:
        return frozenset(norm)
    if len(norm) != 1:
        raise CheckFailed(f"{q.qid}: choose exactly one letter, got {sorted(norm)}")
    return norm.pop()


class Quiz:
    """A list of questions with ``show()`` and ``grade(answers)``."""

    def __init__(self, title: str, questions: list):
        ids = [q.qid for q in questions]
        if len(set(ids)) != len(ids):
            raise ValueError(f"duplicate question ids in {ids}")
        self.title, self.questions = title, list(questions)

    def show(self) -> None:
        """Print every question and its choices."""
        print(self.title)
        for q in self.questions:
            pick = " (pick all that apply)" if q.multi else ""
            print(f"\n{q.qid}. {q.text}{pick}")
            for letter, text in q.choices.items():
                print(f"   {letter}) {text}")

    def grade(self, answers: dict) -> int:
        """Print feedback per question; raise CheckFailed if any answer is wrong.

        Returns the number of correct answers. ``answers`` maps question id -> letter(s).
        """
        if not isinstance(answers, dict):
            raise CheckFailed(f"answers must be a dict like {{'q1': 'b'}}, got {type(answers).__name__}")
        known = {q.qid for q in self.questions}
        stray = set(answers) - known
        if stray:
            raise CheckFailed(f"unknown question ids {sorted(stray)}; ids are {sorted(known)}")
        right, wrong, skipped = 0, [], []
        for q in self.questions:
            if answers.get(q.qid) is None:
                skipped.append(q.qid)
                continue
            given = _normalise(q, answers[q.qid])
            if given == q.answer:
                right += 1
                print(f"{q.qid}: correct. {q.why}")
            else:
                wrong.append(q.qid)
                letters = given if isinstance(given, frozenset) else [given]
                notes = [q.wrong[g] for g in sorted(letters) if g in q.wrong]
                print(f"{q.qid}: not quite. " + (" ".join(notes) or "Re-read the section and try again."))
        print(f"\nScore: {right}/{len(self.questions)}"
              + (f"; not answered yet: {', '.join(skipped)}" if skipped else ""))
        if wrong:
            raise CheckFailed(f"wrong answers: {', '.join(wrong)} (see the feedback above)")
        return right
