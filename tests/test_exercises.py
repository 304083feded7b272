"""Exercise generation from solution markers."""
import pytest

from utils.core.exercises import strip_solution


def test_python_stub_raises_not_implemented():
    src = "def f(x):\n    ### BEGIN SOLUTION\n    y = x + 1\n    return y\n    ### END SOLUTION\nprint(1)"
    out = strip_solution(src)
    assert "x + 1" not in out and "# TODO (2 lines): your code here" in out
    assert '    raise NotImplementedError("exercise not attempted yet")' in out and out.endswith("print(1)")


def test_stub_lines_are_uncommented():
    src = "    ### BEGIN SOLUTION\n    acc = a @ b\n    # STUB: acc = zeros\n    ### END SOLUTION"
    assert strip_solution(src) == "    # TODO (1 line): your code here\n    acc = zeros"


@pytest.mark.parametrize("src,match", [("### BEGIN SOLUTION\nx", "without an END"),
                                       ("x\n### END SOLUTION", "without a BEGIN"),
                                       ("### BEGIN SOLUTION\n### BEGIN SOLUTION", "nested")])
def test_unbalanced_markers(src, match):
    with pytest.raises(ValueError, match=match):
        strip_solution(src)


def test_cuda_markers_in_strings():
    src = 'k = r"""\n  x = 1;\n  // ### BEGIN SOLUTION\n  fence();\n  // STUB: // nothing here\n  // ### END SOLUTION\n"""'
    out = strip_solution(src)
    assert "fence();" not in out and "  // TODO (1 line): your code here\n  // nothing here" in out
    assert "NotImplementedError" not in out


@pytest.mark.parametrize("stubs,todo", [
    (["issue_s()", "softmax()"], "TODO (4 lines; 2 of them below)"),   # stubs the learner keeps
    (["acc = zeros"], "TODO (4 lines)"),                               # a placeholder, not a solution line
    (["# x = ?", "softmax()"], "TODO (4 lines; 1 of them below)")])
def test_todo_counts_the_lines_given_below(stubs, todo):
    body = ["wait()", "issue_s()", "arrive()", "softmax()"] + [f"# STUB: {s}" for s in stubs]
    out = strip_solution("\n".join(["### BEGIN SOLUTION", *body, "### END SOLUTION"]))
    assert out.split("\n")[0] == f"# {todo}: your code here" and out.split("\n")[1:] == stubs
