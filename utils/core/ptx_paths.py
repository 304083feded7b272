"""Paths through one PTX kernel: does every way from instruction A to instruction B pass C?

Exercise checks use this to judge a learner's kernel by what the compiler emitted rather than by
the words in its source: code the compiler proved dead is gone from the PTX, a fence inside an
``if`` shows up as a branch around it, and an instruction that runs only under a predicate
(``@%p``) may be skipped. The control-flow graph is built from labels, ``bra`` and ``ret``/
``exit``; ``call`` is treated as an ordinary instruction.
"""
from __future__ import annotations

import re
from typing import Callable, NamedTuple

_LABEL = re.compile(r"^([$\w]+):$")
_PRED = re.compile(r"^@!?%\w+\s+")


class Instr(NamedTuple):
    """One PTX instruction: its text without the predicate, and whether it has one."""
    text: str
    predicated: bool


def kernel_body(ptx: str, name: str) -> str:
    """The body of ``.entry name`` in ``ptx`` (ValueError if there is none): up to the last ``}``
    in column 0 before the next kernel, since inline-asm blocks (``{ .reg .pred p; ... }``) may
    close in column 0 inside the body."""
    m = re.search(r"\.entry\s+" + re.escape(name) + r"\s*\(", ptx)
    if not m:
        raise ValueError(f"the PTX has no kernel named {name!r}")
    start = ptx.index("{", ptx.index(")", m.end()))
    nxt = re.compile(r"^(// \.globl|\.visible|\.entry|\.weak)", re.M).search(ptx, start)
    stop = nxt.start() if nxt else len(ptx)
    end = ptx.rfind("\n}", start, stop)
    return ptx[start + 1: end if end >= 0 else stop]


def parse(body: str) -> tuple[list, dict]:
    """(instructions, label -> index of the instruction that follows it) of a kernel body."""
    instrs, labels = [], {}
    for raw in body.splitlines():
        line = raw.split("//")[0].strip()
        m = _LABEL.match(line)
        if m:
            labels[m.group(1)] = len(instrs)
            continue
        for stmt in line.replace("{", ";").replace("}", ";").split(";"):
            stmt = stmt.strip()
            if not stmt or stmt.startswith("."):          # directives: .reg, .shared, ...
                continue
            pred = bool(_PRED.match(stmt))
            instrs.append(Instr(_PRED.sub("", stmt), pred))
    return instrs, labels


def successors(instrs: list, labels: dict, i: int) -> list:
    """Indices control may reach right after instruction ``i`` (``len(instrs)`` = kernel exit)."""
    ins = instrs[i]
    op = ins.text.split()[0]
    nxt = [] if op.startswith(("ret", "exit", "trap")) and not ins.predicated else [i + 1]
    if op.startswith("bra"):
        target = ins.text.split()[-1].rstrip(";")
        if target not in labels:
            raise ValueError(f"branch to unknown label {target!r}")
        nxt = [labels[target]] + ([i + 1] if ins.predicated else [])
    if op.startswith(("ret", "exit", "trap")):
        nxt = [len(instrs)] + ([i + 1] if ins.predicated else [])
    return [j for j in nxt if j <= len(instrs)]


def path_avoiding(ptx_body: str, start: Callable, goal: Callable, block: Callable):
    """A path (list of instruction texts) from an instruction matching ``start`` to one matching
    ``goal`` that passes no unpredicated instruction matching ``block``; None if every such path
    is blocked. ``goal`` may be ``"exit"`` for the end of the kernel."""
    instrs, labels = parse(ptx_body)
    n = len(instrs)

    def is_goal(j):
        return j == n if goal == "exit" else j < n and goal(instrs[j].text)

    for s in (i for i, ins in enumerate(instrs) if start(ins.text)):
        seen, todo = {s: None}, [s]
        while todo:
            i = todo.pop()
            for j in (successors(instrs, labels, i) if i < n else []):
                if j in seen:
                    continue
                seen[j] = i
                if is_goal(j):
                    path, k = [], j
                    while k is not None:
                        path.append(instrs[k].text if k < n else "(kernel exit)")
                        k = seen[k]
                    return path[::-1]
                if j < n and block(instrs[j].text) and not instrs[j].predicated:
                    continue
                todo.append(j)
    return None


def find(ptx_body: str, match: Callable) -> list:
    """Instructions of the body that ``match`` (texts, in order)."""
    return [ins.text for ins in parse(ptx_body)[0] if match(ins.text)]
