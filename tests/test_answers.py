"""utils.core.answers: every case is called before any is judged, a stub is "not attempted", an
exception or a forgotten return is explained naming the call, and a hint names a mistake only when
the answers equal that mistake's on every case. Also the advice and number display of
utils.core.checks.int_answer."""
import numpy as np
import pytest

from utils.core.answers import answers, close, named_mistake, wrong_cases
from utils.core.checks import NOT_ATTEMPTED, ROUND_DOWN, CheckFailed, int_answer, number_answer

CASES = [(1, 2), (3, 4), (5, 6)]


def stub(*args):
    raise NotImplementedError


def test_answers_calls_every_case_and_converts_each():
    assert answers("add", lambda a, b: a + b, CASES) == [3, 7, 11]
    assert answers("add", lambda a, b: a + b, CASES, lambda got, case: (case, got))[1] == ((3, 4), 7)


def test_a_stub_is_not_attempted():
    assert answers("add", stub, CASES) is NOT_ATTEMPTED
    assert answers("add", lambda *a: NOT_ATTEMPTED, CASES) is NOT_ATTEMPTED
    later = lambda a, b: a if a == 1 else stub()                          # noqa: E731
    assert answers("add", later, CASES) is NOT_ATTEMPTED                  # a stub anywhere, by default
    with pytest.raises(CheckFailed, match=r"\[add\] wrong: later stub"):
        answers("add", later, CASES, raised=lambda case, e: ("later stub",), stub_first_only=True)
    assert answers("add", stub, CASES, stub_first_only=True) is NOT_ATTEMPTED


def test_an_exception_is_explained_naming_the_call_and_chained():
    with pytest.raises(CheckFailed, match=r"\[div\] wrong: div\(3, 4\) raised ZeroDivisionError") as e:
        answers("div", lambda a, b: a / (b - 4), CASES)
    assert isinstance(e.value.__context__, ZeroDivisionError)          # the learner's traceback shows
    with pytest.raises(CheckFailed, match=r"div\[3\|4\] raised"):
        answers("div", lambda a, b: a / (b - 4), CASES, show=lambda c: f"[{c[0]}|{c[1]}]")
    with pytest.raises(CheckFailed) as e:
        answers("div", lambda a, b: a / (b - 4), CASES, raised=lambda case, err: ("mine", "a hint", f"at {case}"))
    assert str(e.value) == "[div] wrong: mine\n  launched: at (3, 4)\n  hint: a hint"
    with pytest.raises(ZeroDivisionError):
        answers("div", lambda a, b: a / (b - 4), CASES, raised=False)


def test_a_check_failed_inside_the_function_is_not_rewrapped():
    def inner(*args):
        raise CheckFailed("[inner] wrong: x")
    with pytest.raises(CheckFailed, match=r"^\[inner\] wrong: x$"):
        answers("outer", inner, CASES)


def test_none_and_non_functions():
    with pytest.raises(CheckFailed, match=r"add\(1, 2\) returned None; expected an int: did the function forget"):
        answers("add", lambda a, b: None, CASES, kind="an int")
    assert answers("add", lambda a, b: None, CASES) == [None, None, None]     # no kind: None is an answer
    with pytest.raises(CheckFailed, match="expected a function, got int"):
        answers("add", 3, CASES)


def test_a_malformed_answer_fails_before_later_cases_run():
    seen = []

    def fn(a, b):
        seen.append(a)
        return "x" if a == 3 else a + b
    with pytest.raises(CheckFailed, match="add\\(3, 4\\) is str"):
        answers("add", fn, CASES, lambda got, case: int_answer("add", got, f"add{case}"))
    assert seen == [1, 3]


def test_args_passes_fresh_arguments():
    arrays = [(np.arange(3), "first"), (np.arange(4), "second")]

    def clobber(a):
        a[:] = 0
        return int(a.size)
    assert answers("n", clobber, arrays, args=lambda a, what: (a.copy(),)) == [3, 4]
    assert arrays[1][0].tolist() == [0, 1, 2, 3]


def test_named_mistake_needs_every_case():
    mistakes = [(lambda a, b: a - b, "subtracts"), (lambda a, b: a * b, "multiplies"),
                (lambda a, b: a * b, "never reached")]
    assert named_mistake([2, 12, 30], CASES, mistakes, "the rule") == "multiplies"
    assert named_mistake([2, 12, 31], CASES, mistakes, "the rule") == "the rule"   # one case off: no guess
    assert named_mistake([2, 12, 31], CASES, mistakes) is None


def test_named_mistake_passes_over_formulas_that_raise_or_are_right():
    raising = [(lambda a, b: a / (b - 4), "divides"), (lambda a, b: a * b, "multiplies")]
    assert named_mistake([2, 12, 30], CASES, raising) == "multiplies"
    near = [(lambda a, b: (a + b) * (1 + 1e-9), "right within the tolerance"), (lambda a, b: a * b, "multiplies")]
    want = [a + b for a, b in CASES]
    assert named_mistake(want, CASES, near, "rule", same=close) == "right within the tolerance"
    assert named_mistake([3, 7, 11.5], CASES, near, "rule", same=close, want_all=want) == "rule"


def test_named_mistake_compares_arrays_with_same():
    tiles = [(np.arange(4),), (np.arange(6),)]
    mistakes = [(lambda t: t * 2, "doubles")]
    assert named_mistake([np.arange(4) * 2, np.arange(6) * 2], tiles, mistakes, same=np.array_equal) == "doubles"


def test_wrong_cases():
    assert wrong_cases([3, 7, 11], [3, 8, 12]) == [1, 2]
    assert wrong_cases([3, 7], [3, 7]) == []
    assert wrong_cases([1.0 + 1e-9, 2.5], [1.0, 2.0], close) == [1]


def test_close():
    assert close(1.0 + 1e-7, 1.0) and not close(1.001, 1.0)
    assert close(0.5, 0.0, atol=1.0) and not close(float("nan"), 1.0) and not close(1.0, float("nan"))


def test_int_answer_advice_is_neutral_unless_given_and_numbers_show_as_values():
    with pytest.raises(CheckFailed) as e:
        int_answer("n", np.float64(1.0), "n(3)")
    assert str(e.value) == ("[n] wrong: n(3) is float64 1.0; expected an int: return an int, e.g. with "
                            "int(...), math.ceil(...) or //, whichever the rule needs")
    with pytest.raises(CheckFailed, match=r"is float 2\.0; expected an int: use // \(integer division\), not /$"):
        int_answer("n", 2.0, advice=ROUND_DOWN)
    with pytest.raises(CheckFailed, match=r"is str '2'; expected an int$"):            # no advice: not a float
        int_answer("n", "2", advice=ROUND_DOWN)
    with pytest.raises(CheckFailed, match=r"is str_ '2'; expected a number"):
        number_answer("n", np.str_("2"))
