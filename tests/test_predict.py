"""utils.core.predict: predictions written in the forms learners write, judged against a value;
a wrong or unreadable prediction never raises, a None one shows nothing of the answer."""
import json
import pathlib
import re

import numpy as np
import pytest

from utils.core import predict, results

OPTIONS = ("faster", "slower", "same")

# (prediction, actual, held): choices written differently
CHOICES = [
    ("slower", "slower", True),
    ("Slower", "slower", True),
    ("  SLOWER ", "slower", True),
    ("slow", "slower", True),            # unambiguous prefix
    ("faster", "slower", False),
    ("same", "slower", False),
    ("fast", "slower", False),
    ("the same", "same", True),          # alias
    ("no change", "same", True),         # alias
]

# (prediction, actual, rel, atol, held): numbers, ranges, tolerances written differently
NUMBERS = [
    (2, 2.2, 0.25, 0.0, True),
    (2.0, 3.0, 0.25, 0.0, False),
    ("2x", 2.1, 0.25, 0.0, True),
    ("2×", 2.1, 0.25, 0.0, True),
    ("~2", 2.4, 0.25, 0.0, True),
    ("about 2", 1.2, 0.25, 0.0, False),
    ("1.5-2.5", 2.4, 0.25, 0.0, True),
    ("1.5 to 2.5", 2.6, 0.25, 0.0, False),
    ((2.5, 1.5), 2.0, 0.25, 0.0, True),      # a range written backwards
    ([1, 3], 3.5, 0.25, 0.0, False),
    ("40%", 0.45, 0.25, 0.0, True),
    ("1,000", 1100, 0.25, 0.0, True),
    (np.float32(0.5), 0.5, None, 0.01, True),
    (np.int64(8), 4, None, 1.0, False),
    (0, 0.0, None, 0.5, True),               # an absolute tolerance around zero
    (6, 7, None, 0.5, False),                # a count: exact (rel=None), not within 25%
]

UNREADABLE = ["a lot", "", True, {"x": 1}, float("nan"), (1, 2, 3), ("a", "b"), "2 or 3"]


@pytest.mark.parametrize("said, actual, held", CHOICES)
def test_choice_forms(said, actual, held):
    out = predict.choice(said, actual, {"faster": (), "slower": (), "same": ("the same", "no change")})
    assert out.held is held
    assert ("did not hold" in out.message) is (not held)


@pytest.mark.parametrize("said, actual, rel, atol, held", NUMBERS)
def test_number_forms(said, actual, rel, atol, held):
    assert predict.number(said, actual, rel=rel, atol=atol).held is held


def test_none_asks_first_and_hides_the_answer(capsys):
    for out in (predict.choice(None, "slower", OPTIONS), predict.number(None, 1.234567)):
        assert out.held is None and out.message == predict.FIRST
    printed = capsys.readouterr().out
    assert "write your prediction first" in printed
    assert "slower" not in printed and "1.23" not in printed


@pytest.mark.parametrize("said", UNREADABLE)
def test_unreadable_number_never_raises_nor_reveals(said, capsys):
    out = predict.number(said, 7.77)
    assert out.held is None and "could not read" in out.message
    assert "7.77" not in capsys.readouterr().out


@pytest.mark.parametrize("said", ["sideways", "", 3, ["slower"], "s"])   # "s": ambiguous prefix
def test_unreadable_choice_never_raises_nor_reveals(said, capsys):
    out = predict.choice(said, "slower", OPTIONS)
    assert out.held is None and "could not read" in out.message
    assert "'slower' ->" not in capsys.readouterr().out


def test_ambiguous_prefix_is_not_guessed():
    assert predict.match_choice("s", OPTIONS) is None         # slower or same
    assert predict.match_choice("sa", OPTIONS) is None        # too short to guess
    assert predict.match_choice("sam", OPTIONS) == "same"


def test_why_and_source_are_printed_after_the_verdict(capsys):
    predict.choice("faster", "faster", OPTIONS, source="recorded on H100", why="more bytes in flight")
    out = capsys.readouterr().out
    assert "recorded on H100" in out and out.index("held") < out.index("more bytes in flight")


@pytest.mark.parametrize("call, err, words", [
    (lambda: predict.choice("x", "bogus", OPTIONS), ValueError, "one of the options"),
    (lambda: predict.choice("x", "a", ("a",)), ValueError, "at least two"),
    (lambda: predict.choice("x", "a", "ab"), TypeError, "options must be"),
    (lambda: predict.choice("x", "a", ("a", "")), ValueError, "non-empty"),
    (lambda: predict.number(1, "2"), TypeError, "actual must be"),
    (lambda: predict.number(1, float("inf")), TypeError, "finite"),
    (lambda: predict.number(1, 2, rel=-1), ValueError, "rel must be"),
    (lambda: predict.number(1, 2, rel=None, atol=0), ValueError, "tolerance"),
    (lambda: predict.number(1, 2, atol=-1), ValueError, "atol must be"),
])
def test_author_mistakes_raise_naming_the_rule(call, err, words):
    with pytest.raises(err, match=words):
        call()


def _row(name, lo, mid, hi, reference="memcpy"):
    return {"name": name, "ratio": mid, "ratio_lo": lo, "ratio_hi": hi, "reference": reference}


@pytest.mark.parametrize("row, base, want", [
    (_row("a", 1.05, 1.1, 1.2), _row("b", 0.9, 0.95, 1.0), "faster"),
    (_row("a", 0.9, 0.95, 1.0), _row("b", 1.05, 1.1, 1.2), "slower"),
    (_row("a", 0.95, 1.0, 1.06), _row("b", 1.05, 1.1, 1.2), "same"),     # spreads overlap
])
def test_direction_reads_the_spread(row, base, want):
    assert predict.direction(row, base) == want


def test_direction_refuses_rows_it_cannot_compare():
    with pytest.raises(ValueError, match="ratio_lo"):
        predict.direction({"name": "a", "ratio": 1.0}, _row("b", 1, 1, 1))
    with pytest.raises(ValueError, match="different references"):
        predict.direction(_row("a", 1, 1, 1), _row("b", 1, 1, 1, reference="cuBLAS"))


def _prediction_cells():
    root = pathlib.Path(__file__).resolve().parents[1] / "solutions"
    for path in sorted(root.glob("*/*.ipynb")):
        cells = ["".join(c["source"]) for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        for i, src in enumerate(cells):
            for name in re.findall(r"^(\w+_prediction) = None$", src, re.M):
                yield path.relative_to(root), name, i, cells


@pytest.mark.parametrize("where, name, i, cells", list(_prediction_cells()),
                         ids=lambda v: str(v) if not isinstance(v, list) else "")
def test_every_prediction_is_judged_once_after_it_is_asked(where, name, i, cells):
    """A prediction variable is set to None where the question is asked, and judged by exactly one
    predict call in that cell or a later one (so the answer prints only after the prediction)."""
    judged = [j for j, src in enumerate(cells) if re.search(rf"predict\.(number|choice)\(\s*{name}\b", src)]
    assert len(judged) == 1 and judged[0] >= i, (where, name, judged, i)



def test_the_outcome_adds_nothing_under_a_notebook_cell():
    out = predict.number(2, 2.0)
    assert out._ipython_display_() is None      # IPython calls this instead of printing the repr


@pytest.mark.parametrize("doc", results.documents("03_triton_tma_gemm"),
                         ids=lambda d: d["device"])
def test_5_3_recorded_questions_hold_on_every_device(doc):
    """5.3 §5 asks v1 / v0 and v2 against v1 at 8192³ fp16. The notebook asserts its claim on the
    device it shows; every recording must answer both the same way (v1 gains, v2 within v1's spread)."""
    from utils.day05 import gemm
    at = {s: next(r for r in doc["rows"] if r["name"] == gemm.STEPS[s] and r["dtype"] == "float16"
                  and r["shape"] == [8192, 8192, 8192]) for s in ("v0", "v1", "v2")}
    assert at["v1"]["value"] > at["v0"]["value"], doc["device"]
    assert predict.direction(at["v2"], at["v1"]) == "same", doc["device"]
