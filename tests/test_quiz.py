"""The quizzes: every right answer accepted, every wrong option rejected with its own explanation,
unanswered reported as "not attempted", malformed answers explained, bad questions refused, and
the facts the new questions state checked against the course's PTX, models and recordings."""
import json
import pathlib
import re

import numpy as np
import pytest

from utils.core.checks import CheckFailed
from utils.core.quiz import Measured, Predict, Question, Quiz, QuizResult
from utils.day05.quizzes import TMA_CONCEPTS
from utils.day05.quiz_descriptors import TMA_DESCRIPTORS
from utils.day01.quizzes import DAY01
from utils.day02.quizzes import DAY02

ROOT = pathlib.Path(__file__).resolve().parent.parent
# The solution notebooks' answers (their quiz cells assert the same).
SOLUTIONS = {
    "day01": (DAY01, dict(q1="b", q2="b", q3="b", q4="c", q5="a", q6="c", q7="b", q8="c", q9="a",
                          q10="d", q11="a", q12="c", q13="c", q14="b", q15="b", q16="b")),
    "day02": (DAY02, dict(q1="b", q2="b", q3="c", q4={"a", "b", "c"}, q5="c", q6="b", q7="b", q8="a",
                          q9="b", q10="b", q11="a", q12="c", q13="b", q14="b")),
    "day05": (TMA_CONCEPTS, dict(q1="b", q2={"c", "d"}, q3="b", q4="a", q5="c", q6="b", q7="b", q8="b",
                                 q9="b", q10="b", q11="c")),
    "day05_02": (TMA_DESCRIPTORS, dict(q1="b", q2="a", q3="b", q4="b", q5={"a", "b", "c"}, q6="b", q7="b",
                                       q8="a", q9="b", q10="a", q11="b")),
}
NOTEBOOKS = {"day01": "day01_memory_basics/03_shared_memory_banks.ipynb",
             "day02": "day02_pipelining/03_async_barriers.ipynb",
             "day05": "day05_tma/01_tma_concepts.ipynb",
             "day05_02": "day05_tma/02_descriptors_cupy.ipynb"}


def _letters(a):
    return {a} if isinstance(a, str) else set(a)


WRONG = [(day, q.qid, letter) for day, (quiz, _) in SOLUTIONS.items() for q in quiz.questions
         for letter in sorted(set(q.choices) - _letters(q.resolved().answer))]


@pytest.mark.parametrize("day", sorted(SOLUTIONS))
def test_solution_accepted_and_complete(day, capsys):
    quiz, answers = SOLUTIONS[day]
    assert set(answers) == {q.qid for q in quiz.questions}
    result = quiz.grade(answers)
    n = len(quiz.questions)
    assert result == QuizResult(n, n, n, ()) and result.complete
    out = capsys.readouterr().out
    assert f"[{quiz.title}] correct. {n} of {n} answered, {n} correct." in out
    assert out.count(": correct.") == n


@pytest.mark.parametrize("day,qid,letter", WRONG)
def test_every_wrong_option_rejected_with_its_own_explanation(day, qid, letter, capsys):
    quiz, answers = SOLUTIONS[day]
    q = next(q for q in quiz.questions if q.qid == qid).resolved()
    assert letter not in _letters(q.answer)
    given = _letters(q.answer) | {letter} if q.multi else letter
    with pytest.raises(CheckFailed, match=f"wrong answers: {qid} "):
        quiz.grade(dict(answers, **{qid: given}))
    out = capsys.readouterr().out
    assert f"{qid}: not quite. ({letter}) {q.wrong[letter]}" in out
    assert q.multi or "missing" not in out
    others = [q.wrong[k] for k in q.wrong if k != letter]
    assert not any(text in out for text in others), "only the chosen option's explanation"


def test_wrong_options_are_all_explained_and_distinct():
    for quiz, _ in SOLUTIONS.values():
        for q in (q.resolved() for q in quiz.questions):
            assert set(q.wrong) == set(q.choices) - _letters(q.answer), q.qid
            assert len(set(q.wrong.values())) == len(q.wrong), q.qid


def test_partial_set_is_wrong_and_says_something_is_missing(capsys):
    quiz, answers = SOLUTIONS["day05_02"]
    with pytest.raises(CheckFailed, match="q5"):
        quiz.grade(dict(answers, q5={"a", "b"}))
    assert "1 right choice is missing" in capsys.readouterr().out


@pytest.mark.parametrize("day", sorted(SOLUTIONS))
def test_unanswered_is_not_attempted_and_not_a_pass(day, capsys):
    quiz, _ = SOLUTIONS[day]
    n = len(quiz.questions)
    for empty in ({}, {q.qid: None for q in quiz.questions}):
        result = quiz.grade(empty)
        assert not result.attempted and not result.complete and result.unanswered == tuple(
            q.qid for q in quiz.questions)
        out = capsys.readouterr().out
        assert f"[{quiz.title}] not attempted yet" in out and f"0 of {n} answered, 0 correct" in out
        assert "] correct." not in out


def test_partly_answered_lists_what_is_left(capsys):
    quiz, answers = SOLUTIONS["day01"]
    result = quiz.grade({k: answers[k] for k in ("q1", "q2", "q7")})
    assert (result.answered, result.correct, result.complete) == (3, 3, False)
    out = capsys.readouterr().out
    assert "3 of 16 answered, 3 correct; not answered yet: q3, q4, q5, q6, q8" in out
    assert "] correct." not in out
    with pytest.raises(CheckFailed, match=r"wrong answers: q2 "):
        quiz.grade({"q1": "b", "q2": "a"})
    assert "2 of 16 answered, 1 correct; not answered yet: q3" in capsys.readouterr().out


@pytest.mark.parametrize("answers,match", [
    ({"q1": 2}, r"q1: answer with a letter string like 'b'; got int 2"),
    ({"q1": True}, r"got bool True"),
    ({"q1": "z"}, r"\['z'\] is not a choice; choose from \['a', 'b', 'c', 'd'\]"),
    ({"q1": "ab"}, r"\['ab'\] is not a choice \(several letters go in a set"),
    ({"q1": {"a", "b"}}, r"q1: this question has one right answer; choose exactly one letter"),
    ({"q2": set()}, r"q2: answer with a letter string like 'b' or, for several, a set"),
    ({"q2": {"c", 4}}, r"q2: answer with"),
    ({"q99": "a"}, r"unknown question ids \['q99'\]"),
    (["b"], r"answers must be a dict"),
    ("q1=b", r"answers must be a dict"),
])
def test_malformed_answers_explained(answers, match):
    with pytest.raises(CheckFailed, match=match):
        TMA_CONCEPTS.grade(answers)


def test_case_and_spaces_are_forgiven(capsys):
    quiz, answers = SOLUTIONS["day05"]
    assert quiz.grade(dict(answers, q1=" B ", q2=["C", "d"])).complete


def test_question_validation():
    ok = dict(choices={"a": "1", "b": "2", "c": "3"}, answer="a", why="because")
    Question("x", "?", wrong={"b": "no", "c": "neither"}, **ok)
    with pytest.raises(ValueError, match=r"wrong option\(s\) \['c'\] have no explanation"):
        Question("x", "?", wrong={"b": "no"}, **ok)
    with pytest.raises(ValueError, match=r"wrong option\(s\) \['b', 'c'\] have no explanation"):
        Question("x", "?", **ok)
    with pytest.raises(ValueError, match="its own non-empty explanation"):
        Question("x", "?", wrong={"b": "no", "c": "no"}, **ok)
    with pytest.raises(ValueError, match="its own non-empty explanation"):
        Question("x", "?", wrong={"b": "no", "c": " "}, **ok)
    with pytest.raises(ValueError, match=r"\['a'\] is a right answer but is explained as wrong"):
        Question("x", "?", wrong={"a": "?", "b": "no", "c": "neither"}, **ok)
    with pytest.raises(ValueError, match="names unknown choices"):
        Question("x", "?", {"a": "1", "b": "2"}, "z", "why", {"a": "no", "b": "neither"})
    with pytest.raises(ValueError, match="explanations name unknown choices"):
        Question("x", "?", wrong={"b": "no", "c": "neither", "e": "?"}, **ok)
    with pytest.raises(ValueError, match="needs an explanation"):
        Question("x", "?", {"a": "1", "b": "2"}, "a", "", {"b": "no"})
    with pytest.raises(ValueError, match="at least two one-letter keys"):
        Question("x", "?", {"a": "1"}, "a", "why")
    multi = Question("m", "?", {"a": "1", "b": "2", "c": "3"}, frozenset("ab"), "why", {"c": "no"})
    assert multi.multi
    with pytest.raises(ValueError, match=r"\['c'\] have no explanation"):
        Question("m", "?", {"a": "1", "b": "2", "c": "3"}, frozenset("ab"), "why")
    with pytest.raises(ValueError, match="duplicate"):
        q = Question("x", "?", {"a": "1", "b": "2"}, "a", "why", {"b": "no"})
        Quiz("t", [q, q])


def _recorded(tmp_path, monkeypatch, v1, v2):
    doc = {"device": "NVIDIA H200", "driver": "0", "versions": {}, "date": "2026-01-02T00:00:00+00:00",
           "command": "test", "rows": [
               {"name": n, "metric": "GB/s", "value": v, "reference": None, "reference_value": None,
                "ratio": v / 100, "shape": [1], "dtype": "float32"} for n, v in (("slow", v1), ("fast", v2))]}
    (tmp_path / "stem_x.json").write_text(json.dumps(doc))
    monkeypatch.setenv("COURSE_RESULTS_DIR", str(tmp_path))
    monkeypatch.delenv("COURSE_RESULTS_DEVICE", raising=False)   # the fake recording is the only one


PREDICT = dict(qid="p", text="how much faster?", measured=Measured("stem_x", "fast", over="slow"),
               ranges={"a": (0, 2), "b": (2, 5), "c": (5, float("inf"))}, why="mechanism",
               wrong={"a": "note a", "b": "note b", "c": "note c"})


@pytest.mark.parametrize("v2,right", [(150, "a"), (200, "b"), (499, "b"), (700, "c")])
def test_predict_is_graded_against_the_recorded_value(tmp_path, monkeypatch, capsys, v2, right):
    _recorded(tmp_path, monkeypatch, 100, v2)
    quiz = Quiz("t", [Predict(**PREDICT)])
    assert quiz.questions[0].choices == {"a": "below 2x", "b": "2x to 5x", "c": "5x or more"}
    assert quiz.grade({"p": right}).complete
    assert f"Recorded (NVIDIA H200, 2026-01-02): {v2 / 100:.2f}x. mechanism" in capsys.readouterr().out
    for letter in set("abc") - {right}:
        with pytest.raises(CheckFailed):
            quiz.grade({"p": letter})
        out = capsys.readouterr().out
        assert f"{v2 / 100:.2f}x" in out and f"note {letter}" in out


def test_predict_reads_the_rows_own_ratio(tmp_path, monkeypatch):
    _recorded(tmp_path, monkeypatch, 100, 300)
    q = Predict(**dict(PREDICT, measured=Measured("stem_x", "fast")))   # ratio 3.0
    assert q.resolved().answer == "b"


def test_predict_validation():
    with pytest.raises(ValueError, match="covering 0 to inf"):
        Predict(**dict(PREDICT, ranges={"a": (0, 2), "b": (3, float("inf")), "c": (5, 6)}))
    with pytest.raises(ValueError, match="covering 0 to inf"):
        Predict(**dict(PREDICT, ranges={"a": (0, 2), "b": (2, 5), "c": (5, 9)}))
    with pytest.raises(ValueError, match=r"\['c'\] have no explanation"):
        Predict(**dict(PREDICT, wrong={"a": "note a", "b": "note b"}))


def test_each_quiz_has_understanding_questions():
    for quiz, _ in SOLUTIONS.values():
        kinds = {"ptx": sum("PTX" in q.text and "Read the PTX" in q.text for q in quiz.questions),
                 "bug": sum(q.text.startswith("Find the bug") for q in quiz.questions),
                 "predict": sum(isinstance(q, Predict) for q in quiz.questions)}
        assert all(kinds.values()) and sum(kinds.values()) >= 3, (quiz.title, kinds)


def test_predict_answers_match_the_recordings():
    """If a re-recording moves a value into another range, the quiz text needs a look."""
    for day, (quiz, answers) in SOLUTIONS.items():
        for q in quiz.questions:
            if isinstance(q, Predict):
                value, _ = q.measured.read()
                lo, hi = q.ranges[answers[q.qid]]
                assert lo <= value < hi, (day, q.qid, value)


def _ptx_lines(snippet):
    """Instruction lines, whitespace and virtual register numbers normalized: another NVRTC
    (the GPU machine's CUDA 13 against the CPU pin) numbers registers differently."""
    return [re.sub(r"%(r|rd|f|fd|p|h|rs)\d+", r"%\1", " ".join(line.split()))
            for line in snippet.strip().splitlines()]


SNIPPET_NVRTC = "release 13.5"   # the NVRTC of requirements.txt that produced the quiz snippets


def test_ptx_snippets_are_real_compiler_output():
    from utils.cuda_cpp import day01 as cuda_day01, day02 as cuda_day02
    from utils.cuda_cpp.nvrtc import nvrtc_ptx
    from utils.day05 import quiz_descriptors, quizzes
    from utils.day01 import quizzes as quizzes_day01
    from utils.day02 import quizzes as quizzes_day02
    from utils.tma import runtime
    norm = lambda text: set(_ptx_lines(text))
    v2 = nvrtc_ptx(cuda_day01.source("transpose_v2_padded")).replace("_ZZ19transpose_v2_paddedE4tile", "tile")
    release = re.search(r"Cuda compilation tools, (release [\d.]+)", v2).group(1)
    if release != SNIPPET_NVRTC:   # e.g. the GPU machine's CUDA 13.0 schedules the transpose differently
        pytest.skip(f"needs NVRTC {SNIPPET_NVRTC} (the quiz snippets' compiler); this machine has {release}")
    cases = [(quizzes_day01.TRANSPOSE_PTX, v2), (quizzes_day02.BULK_PTX, cuda_day02.ptx()),
             (quizzes.LOAD_PTX, runtime.ptx()), (quiz_descriptors.STORE_PTX, runtime.ptx())]
    for snippet, text in cases:
        lines = norm(text)
        missing = [l for l in _ptx_lines(snippet) if l not in lines]
        assert not missing, missing


def test_swizzle_and_bank_facts_agree_with_the_models():
    from utils.day01 import memory_model
    from utils.tma import swizzle
    rows = np.arange(8)
    def ways(mode, row_bytes):
        start = swizzle.swizzled_offset(rows, 0, mode, row_bytes=row_bytes)
        return memory_model.conflict_ways((start[:, None] + 4 * np.arange(4)).ravel()), start % 128 // 16
    w, pos = ways("64B", 64)                                    # q11: conflict-free, positions 0,4,1,5,...
    assert w == 1 and pos.tolist() == [0, 4, 1, 5, 2, 6, 3, 7]
    assert [ways("none", rb)[0] for rb in (32, 64, 128)] == [2, 4, 8]   # q11's wrong options
    for mode in ("32B", "64B", "128B"):                         # each mode: conflict-free up to its span
        assert all(ways(mode, rb)[0] == 1 for rb in (32, 64, 128) if rb <= swizzle.swizzle_span(mode))
    t = np.arange(32)                                           # q15: tile[32][34] is 2-way, [32][33] 1
    assert memory_model.conflict_ways(4 * 34 * t) == 2 and memory_model.conflict_ways(4 * 33 * t) == 1
    assert 32 * 33 * 4 == 4224 and 8 * 33 * 4 == 1056           # q13


def _quiz_cell(path):
    cells = json.loads(path.read_text())["cells"]
    hits = ["".join(c["source"]) for c in cells if c["cell_type"] == "code" and ".grade(answers)" in "".join(c["source"])]
    assert len(hits) == 1, path
    return hits[0]


@pytest.mark.parametrize("day", sorted(NOTEBOOKS))
def test_notebook_quiz_cells(day, capsys):
    """The solution cell answers everything correctly; the generated exercise cell holds no
    answer and reports "not attempted" without raising."""
    quiz, answers = SOLUTIONS[day]
    name = {"day01": "DAY01", "day02": "DAY02", "day05": "TMA_CONCEPTS", "day05_02": "TMA_DESCRIPTORS"}[day]
    solution = _quiz_cell(ROOT / "solutions" / NOTEBOOKS[day])
    scope = {name: quiz}
    exec(solution, scope)
    assert scope["answers"] == answers and scope["result"].complete
    exercise = _quiz_cell(ROOT / NOTEBOOKS[day])
    code = "\n".join(l for l in exercise.splitlines() if not l.lstrip().startswith("#"))
    assert not re.search(r"""=\s*["'{]|update\(""", code.replace("answers = {}", "")), exercise
    capsys.readouterr()
    scope = {name: quiz}
    exec(exercise, scope)
    assert scope["answers"] == {} and not scope["result"].attempted
    assert "not attempted yet" in capsys.readouterr().out
