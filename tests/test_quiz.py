"""The quiz: right answers pass, wrong ones explain and raise, malformed ones are explained."""
import pytest

from utils.checks import CheckFailed
from utils.quiz import Question, Quiz
from utils.quizzes import TMA_CONCEPTS

SOLUTION = dict(q1="b", q2={"c", "d"}, q3="b", q4="b", q5="a", q6="b", q7="b", q8="b", q9="c",
                q10="b", q11="b", q12="b", q13="b", q14={"a", "b", "c"}, q15="b", q16="b")


def test_tma_quiz_has_at_least_12_questions_and_accepts_solution(capsys):
    assert len(TMA_CONCEPTS.questions) >= 12
    assert TMA_CONCEPTS.grade(SOLUTION) == len(TMA_CONCEPTS.questions)
    assert "Score: 16/16" in capsys.readouterr().out


@pytest.mark.parametrize("qid", sorted(SOLUTION))
def test_every_wrong_answer_is_rejected(qid, capsys):
    q = next(q for q in TMA_CONCEPTS.questions if q.qid == qid)
    wrong = next(c for c in q.choices if c not in (q.answer if q.multi else {q.answer}))
    with pytest.raises(CheckFailed, match=f"wrong answers: {qid}"):
        TMA_CONCEPTS.grade(dict(SOLUTION, **{qid: wrong}))
    assert f"{qid}: not quite" in capsys.readouterr().out


def test_partial_set_is_wrong():
    with pytest.raises(CheckFailed, match="q14"):
        TMA_CONCEPTS.grade(dict(SOLUTION, q14={"a", "b"}))


def test_unanswered_is_not_a_failure(capsys):
    assert TMA_CONCEPTS.grade({}) == 0
    assert "not answered yet: q1" in capsys.readouterr().out


@pytest.mark.parametrize("answers,match", [({"q1": 2}, "letter string"), ({"q1": "z"}, "not a choice"),
                                           ({"q99": "a"}, "unknown question ids"),
                                           ({"q1": {"a", "b"}}, "exactly one letter"),
                                           (["b"], "must be a dict")])
def test_malformed_answers_explained(answers, match):
    with pytest.raises(CheckFailed, match=match):
        TMA_CONCEPTS.grade(answers)


def test_question_validation():
    with pytest.raises(ValueError, match="unknown choices"):
        Question("x", "?", {"a": "1"}, "b", "why")
    with pytest.raises(ValueError, match="duplicate"):
        Quiz("t", [Question("x", "?", {"a": "1"}, "a", ""), Question("x", "?", {"a": "1"}, "a", "")])
