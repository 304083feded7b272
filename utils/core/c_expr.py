"""Evaluate a small C integer expression with C's rules, safely (nothing is ever executed).

Exercise checks receive C expressions from learners (e.g. an mbarrier parity in ``k`` and
``stages``). Python's ``eval`` would get them wrong: ``-1 / 2`` is ``0`` in C but ``-1`` with
``//``, ``-7 % 2`` is ``-1`` in C but ``1`` in Python, and ``!x`` is not Python at all. This module
parses the expression into a tree and evaluates it as C does on 64-bit signed integers
(``long long``): ``/`` truncates toward zero, ``%`` takes the dividend's sign, comparisons and
``!`` give 0 or 1, ``&&``, ``||`` and ``?:`` evaluate only the side they need. Division by zero
and shifts by a negative count or by 64 or more (undefined in C) raise ``CExprError``.

Grammar: integer literals (decimal, octal with a leading 0, hex with 0x), named variables,
parentheses, unary ``+ - ! ~``, binary ``* / % + - << >> < <= > >= == != & ^ | && ||`` and
``?:``, with C's precedence and associativity.
"""
from __future__ import annotations

import re

_TOKEN = re.compile(r"\s*(?:(0[xX][0-9a-fA-F]+|\d+)|([A-Za-z_]\w*)|(<<|>>|<=|>=|==|!=|&&|\|\||//|/\*|"
                    r"[-+*/%<>&|^!~?:()]))")
_BINARY = [("||",), ("&&",), ("|",), ("^",), ("&",), ("==", "!="), ("<", "<=", ">", ">="),
           ("<<", ">>"), ("+", "-"), ("*", "/", "%")]          # loosest first
_BITS = 64


class CExprError(ValueError):
    """The text is not a C expression this evaluator accepts, or C leaves its value undefined."""


def _wrap(v: int) -> int:
    """``v`` wrapped to a 64-bit two's-complement integer, as ``long long`` arithmetic does."""
    v &= (1 << _BITS) - 1
    return v - (1 << _BITS) if v >> (_BITS - 1) else v


def tokenize(text: str) -> list:
    """Tokens of ``text``: ("num", value), ("name", str) or ("op", str)."""
    if not isinstance(text, str):
        raise CExprError(f"expected the expression as a string, got {type(text).__name__}")
    out, pos = [], 0
    while text[pos:].strip():
        m = _TOKEN.match(text, pos)
        if not m:
            raise CExprError(f"cannot read {text[pos:].strip()[:10]!r} at position {pos}: C integer "
                             "expressions use numbers, names and + - * / % << >> < > == != & ^ | "
                             "&& || ! ~ ?: ( )")
        num, name, op = m.groups()
        if op in ("//", "/*"):
            raise CExprError(f"{op!r} starts a comment in C: integer division is a single '/'")
        if num is not None:
            base = 16 if num[:2].lower() == "0x" else 8 if len(num) > 1 and num[0] == "0" else 10
            try:
                out.append(("num", int(num, base)))
            except ValueError:
                raise CExprError(f"{num!r} is not a valid C integer (a leading 0 means octal)") from None
        elif name is not None:
            if name in ("and", "or", "not"):
                raise CExprError(f"{name!r} is Python: C writes && || !")
            out.append(("name", name))
        else:
            out.append(("op", op))
        pos = m.end()
    return out


class _Parser:
    def __init__(self, tokens):
        self.t, self.i = tokens, 0

    def peek(self):
        return self.t[self.i] if self.i < len(self.t) else ("end", None)

    def take(self, op=None):
        tok = self.peek()
        if op is not None and tok != ("op", op):
            raise CExprError(f"expected {op!r}, found {tok[1]!r}" if tok[0] != "end" else
                             f"expected {op!r} before the end")
        self.i += 1
        return tok

    def conditional(self):
        cond = self.binary(0)
        if self.peek() == ("op", "?"):
            self.take()
            yes = self.conditional()
            self.take(":")
            return ("?:", cond, yes, self.conditional())
        return cond

    def binary(self, level):
        if level == len(_BINARY):
            return self.unary()
        left = self.binary(level + 1)
        while self.peek()[0] == "op" and self.peek()[1] in _BINARY[level]:
            op = self.take()[1]
            left = (op, left, self.binary(level + 1))
        return left

    def unary(self):
        kind, val = self.peek()
        if kind == "op" and val in ("+", "-", "!", "~"):
            self.take()
            return ("u" + val, self.unary())
        if kind == "op" and val == "(":
            self.take()
            inner = self.conditional()
            self.take(")")
            return inner
        if kind in ("num", "name"):
            self.take()
            return (kind, val)
        raise CExprError("the expression ends too early" if kind == "end" else f"unexpected {val!r}")


def parse(text: str):
    """The expression tree of C expression ``text`` (CExprError if it is not one)."""
    p = _Parser(tokenize(text))
    if not p.t:
        raise CExprError("the expression is empty")
    tree = p.conditional()
    if p.peek()[0] != "end":
        raise CExprError(f"unexpected {p.peek()[1]!r} after a complete expression")
    return tree


def names(tree) -> set:
    """The variable names an expression tree uses."""
    if tree[0] == "name":
        return {tree[1]}
    return set().union(*(names(t) for t in tree[1:] if isinstance(t, tuple))) if tree[0] != "num" else set()


def evaluate(tree, env: dict) -> int:
    """Value of ``tree`` with C semantics on 64-bit signed ints; ``env`` maps names to ints."""
    op = tree[0]
    if op == "num":
        return _wrap(tree[1])
    if op == "name":
        if tree[1] not in env:
            raise CExprError(f"unknown name {tree[1]!r}: only {', '.join(sorted(env))} may be used")
        return _wrap(int(env[tree[1]]))
    if op.startswith("u"):
        v = evaluate(tree[1], env)
        return {"u+": v, "u-": _wrap(-v), "u!": int(v == 0), "u~": _wrap(~v)}[op]
    if op == "?:":
        return evaluate(tree[2] if evaluate(tree[1], env) else tree[3], env)
    if op in ("&&", "||"):
        a = evaluate(tree[1], env) != 0
        if a == (op == "||"):
            return int(a)
        return int(evaluate(tree[2], env) != 0)
    a, b = evaluate(tree[1], env), evaluate(tree[2], env)
    if op in ("/", "%"):
        if b == 0:
            raise CExprError("division by zero: undefined in C")
        q = abs(a) // abs(b) * (1 if (a < 0) == (b < 0) else -1)      # truncate toward zero
        return _wrap(q) if op == "/" else _wrap(a - q * b)
    if op in ("<<", ">>"):
        if not 0 <= b < _BITS:
            raise CExprError(f"shift by {b}: undefined in C for a 64-bit value")
        return _wrap(a << b) if op == "<<" else a >> b
    return {"*": lambda: _wrap(a * b), "+": lambda: _wrap(a + b), "-": lambda: _wrap(a - b),
            "<": lambda: int(a < b), "<=": lambda: int(a <= b), ">": lambda: int(a > b),
            ">=": lambda: int(a >= b), "==": lambda: int(a == b), "!=": lambda: int(a != b),
            "&": lambda: _wrap(a & b), "^": lambda: _wrap(a ^ b), "|": lambda: _wrap(a | b)}[op]()


def c_function(text: str, params: tuple):
    """A Python function of ``params`` (positional ints) computing C expression ``text``.
    Raises CExprError at once if ``text`` does not parse or names anything else."""
    tree = parse(text)
    unknown = names(tree) - set(params)
    if unknown:
        raise CExprError(f"unknown name(s) {', '.join(sorted(unknown))}: only "
                         f"{', '.join(params)} may be used")
    return lambda *args: evaluate(tree, dict(zip(params, args)))
