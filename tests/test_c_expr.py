"""The C-expression evaluator agrees with C (checked against gcc where one is installed) and
never executes anything."""
import shutil
import subprocess

import pytest

from utils.core.c_expr import CExprError, c_function, parse

CASES = [("-7 / 2", -3), ("-7 % 2", -1), ("7 % -2", 1), ("-1 / 2", 0), ("!0", 1), ("!5", 0),
         ("~0", -1), ("1 << 3 + 1", 16), ("2 + 3 * 4", 14), ("8 >> 1 >> 1", 2), ("1 ^ 3 & 1", 0),
         ("1 | 2 ^ 3", 1), ("1 < 2 == 1", 1), ("0 && 1 / 0", 0), ("1 || 1 / 0", 1),
         ("1 ? 2 : 1 / 0", 2), ("0 ? 1 : 0 ? 2 : 3", 3), ("010", 8), ("0x1F", 31), ("-(-3)", 3),
         ("- -3", 3), ("9223372036854775807 + 1", -9223372036854775808), ("(1 + 2) * 3", 9),
         ("5 - 3 - 1", 1), ("100 / 10 / 5", 2), ("-5 >> 1", -3), ("3 != 3", 0), ("2 <= 2", 1)]


@pytest.mark.parametrize("text,value", CASES)
def test_c_semantics(text, value):
    assert c_function(text, ())() == value


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc (the C compiler to compare with)")
def test_agrees_with_gcc(tmp_path):
    body = "\n".join(f'printf("%lld\\n", (long long)({t}));' for t, _ in CASES if "/ 0" not in t)
    src = tmp_path / "e.c"
    src.write_text("#include <stdio.h>\nint main(void) {\n" + body + "\nreturn 0; }\n")
    subprocess.run(["gcc", "-w", "-o", str(tmp_path / "e"), str(src)], check=True)
    out = subprocess.run([str(tmp_path / "e")], capture_output=True, text=True, check=True).stdout.split()
    assert [int(v) for v in out] == [v for t, v in CASES if "/ 0" not in t]


def test_variables():
    f = c_function("((k / stages) & 1) ^ 1", ("k", "stages"))
    assert [f(k, 3) for k in range(7)] == [1, 1, 1, 0, 0, 0, 1]
    assert c_function("(k - stages) / stages", ("k", "stages"))(1, 2) == 0      # Python: -1


@pytest.mark.parametrize("text,why", [
    ("k // stages", "comment in C"), ("k / 0", "division by zero"), ("1 << 64", "shift by 64"),
    ("1 >> -1", "shift by -1"), ("__import__('os')", "unknown name|cannot read"),
    ("k ** 2", "unexpected"), ("not k", "Python"), ("k and 1", "Python"), ("(k", "expected '\\)'"),
    ("k +", "ends too early"), ("", "empty"), ("k 1", "after a complete"), ("x + 1", "unknown name"),
    ("1.5", "cannot read|unexpected"), ("k = 1", "cannot read"), ("09", "octal"), ("k[0]", "cannot read")])
def test_rejects(text, why):
    with pytest.raises(CExprError, match=why):
        c_function(text, ("k", "stages"))(3, 2)


def test_not_a_string():
    with pytest.raises(CExprError, match="string"):
        parse(3)
