"""Every notebook's skip decisions, run for fake GPUs of every compute capability (issue 39): no
cell may launch code the device cannot run. No GPU needed; nothing is executed.

Each solution notebook is parsed with ``ast``. A *launch* is a call of a function listed in
:data:`utils.core.launchers.NEEDS` (or :data:`~utils.core.launchers.SELF_DECIDING`), a call on
CuPy or ``torch.cuda``, or a tensor made on ``"cuda"``; notebook functions are followed where
they are called or passed. A launch is *guarded* by the features of the ``if`` / conditional
expression around it (``utils.explain_skip(T, ...)``, ``T.has(...)``, ``T.has_tma``,
``T.has_gpu``) and, inside ``results.record_or_load(stem, measure, T, needs=...)``, by ``needs``.
For every fake tier: where the guard holds, the launch's features must hold too.
"""
import ast
import json
import pathlib

import pytest

from utils.core import features as F
from utils.core import launchers as L
from utils.core import tier as t

ROOT = pathlib.Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(ROOT.glob("solutions/*/*.ipynb")) + sorted(ROOT.glob("course/*.ipynb"))
CCS = ((7, 5), (8, 0), (8, 6), (8, 9), (9, 0), (10, 0), (10, 3), (11, 0), (12, 0), (12, 1))
# Launches a guard the parser cannot read makes safe: (notebook stem, notebook function) -> why.
EXEMPT = {("03_async_barriers", "measure_ring"):
          "bulk=True only for KINDS, which holds 'bulk' only where T.has_tma (or on the cpu tier, which "
          "loads the recording instead of measuring)"}


def fake_tiers():
    """Every tier a fake GPU of each compute capability gets, with its driver or forced lower;
    and the machine whose driver is missing or broken (torch sees no GPU)."""
    out = [t.detect(None, lambda: None)]
    for cc in CCS:
        best = t.detect(None, lambda cc=cc: (f"GPU {F.cc_text(cc)}", cc))
        for name in t.TIERS[:t.TIERS.index(best.name) + 1]:
            out.append(t.detect(name, lambda cc=cc: (f"GPU {F.cc_text(cc)}", cc)))
    return out


TIERS = fake_tiers()


def _const_names(node):
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return {node.value}
    if isinstance(node, (ast.Tuple, ast.List)) and all(isinstance(e, ast.Constant) for e in node.elts):
        return {e.value for e in node.elts}
    return None


class Notebook:
    """The launches of one notebook: (cell, line, callee, needed features, guard features)."""

    def __init__(self, path):
        self.stem = path.stem
        cells = [c for c in json.loads(path.read_text())["cells"] if c["cell_type"] == "code"]
        self.trees = [(i, ast.parse("".join(c["source"]))) for i, c in enumerate(cells)]
        self.alias, self.functions, self.launches, self._walked = {}, {}, [], set()
        for _, tree in self.trees:
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    for a in node.names:
                        self.alias[a.asname or a.name.split(".")[0]] = a.name if a.asname else a.name.split(".")[0]
                elif isinstance(node, ast.ImportFrom) and node.module:
                    for a in node.names:
                        self.alias[a.asname or a.name] = f"{node.module}.{a.name}"
            for node in ast.walk(tree):                        # nested functions and methods too
                if isinstance(node, ast.FunctionDef):
                    self.functions[node.name] = node
        for i, tree in self.trees:
            self.cell, self.function = i, None
            self.walk(tree.body, frozenset())

    def path(self, node):
        """The dotted name a call target resolves to through the notebook's imports, or None."""
        parts = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name):
            return None
        base = self.alias.get(node.id)
        return ".".join([base or node.id] + parts[::-1]) if (base or parts) else node.id

    def guard(self, test):
        """(features when the test holds, features when it does not), either possibly empty."""
        if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
            yes, no = self.guard(test.operand)
            return no, yes
        if isinstance(test, ast.BoolOp):
            parts = [self.guard(v) for v in test.values]
            if isinstance(test.op, ast.And):
                return frozenset().union(*(p[0] for p in parts)), frozenset()
            return frozenset.intersection(*(p[0] for p in parts)), frozenset().union(*(p[1] for p in parts))
        if isinstance(test, ast.Attribute) and test.attr in ("has_tma", "has_gpu"):
            return frozenset({test.attr[4:]}), frozenset()
        if isinstance(test, ast.Call):
            name = self.path(test.func) or ""
            if name.endswith("explain_skip") and len(test.args) >= 2:
                return frozenset(_const_names(test.args[1]) or ()), frozenset()
            if (isinstance(test.func, ast.Attribute) and test.func.attr == "has" and test.args
                    and isinstance(test.func.value, ast.Name) and test.func.value.id == "T"):   # the tier
                return frozenset(_const_names(test.args[0]) or ()), frozenset()
        return frozenset(), frozenset()

    def add(self, node, callee, needs, guard):
        if (self.stem, self.function) not in EXEMPT:
            self.launches.append((self.cell, node.lineno, callee, frozenset(needs), guard))

    def follow(self, name, guard):
        if (name, guard) in self._walked:
            return
        self._walked.add((name, guard))
        outer, self.function = self.function, name
        self.walk(self.functions[name].body, guard)
        self.function = outer

    def walk(self, nodes, guard):
        for node in nodes:
            self.visit(node, guard)

    def visit(self, node, guard):
        if isinstance(node, ast.FunctionDef):
            return                                           # runs only where it is called
        if isinstance(node, ast.ClassDef):   # a method's callers are not traced: judge it where defined
            for item in node.body:
                if isinstance(item, ast.FunctionDef):
                    outer, self.function = self.function, f"{node.name}.{item.name}"
                    self.walk(item.body, guard)
                    self.function = outer
                else:
                    self.visit(item, guard)
            return
        if isinstance(node, (ast.If, ast.IfExp)):
            yes, no = self.guard(node.test)
            self.visit(node.test, guard)
            body = node.body if isinstance(node.body, list) else [node.body]
            orelse = node.orelse if isinstance(node.orelse, list) else [node.orelse]
            self.walk(body, guard | yes)
            self.walk(orelse, guard | no)
            return
        if isinstance(node, ast.Name) and node.id in self.functions and isinstance(node.ctx, ast.Load):
            self.follow(node.id, guard)
        if isinstance(node, ast.Call):
            if self.call(node, guard):
                return
            for child in [*node.args, *(k.value for k in node.keywords)]:
                self.visit(child, guard)
            if isinstance(node.func, ast.Name):
                self.visit(node.func, guard)                 # a notebook helper called: walk its body
            self.walk([n for n in ast.iter_child_nodes(node.func)], guard)
            return
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Load):
            name = self.path(node) or ""                     # a launcher passed, not called here
            if name in L.NEEDS:
                self.add(node, name, L.NEEDS[name], guard)
        for child in ast.iter_child_nodes(node):
            self.visit(child, guard)

    def call(self, node, guard) -> bool:
        """Record what the call launches; True when its arguments were walked here."""
        name = self.path(node.func) or ""
        kw = {k.arg: k.value for k in node.keywords}
        if name.endswith("record_or_load") and len(node.args) >= 2:
            needs = _const_names(kw["needs"]) if "needs" in kw else {"gpu"}
            needs = {"sm90a"} if needs == {"ncu"} else needs
            self.visit(node.func, guard)
            for i, a in enumerate(node.args):
                self.visit(a, guard | frozenset(needs) if i == 1 else guard)
            for k in node.keywords:
                self.visit(k.value, guard)
            return True
        if name in L.NEEDS:
            needs = set(L.NEEDS[name])
            for k, more in L.KWARG_NEEDS.get(name, {}).items():
                if k in kw and not (isinstance(kw[k], ast.Constant) and kw[k].value is False):
                    needs |= set(more)
            self.add(node, name, needs, guard)
        elif name in L.SELF_DECIDING:
            decides, needs = L.SELF_DECIDING[name]
            extra = frozenset(decides)
            for a in node.args:
                if isinstance(a, ast.IfExp) and isinstance(a.body, ast.Name) and a.body.id == "T":
                    extra |= self.guard(a.test)[0]
            self.add(node, name, needs, guard | extra)
        elif name.startswith(("cupy.", "torch.cuda.")) or (isinstance(node.func, ast.Attribute)
                                                         and node.func.attr == "cuda"):
            self.add(node, name or "...cuda()", {"gpu"}, guard)
        elif any(isinstance(a, ast.Constant) and a.value == "cuda" for a in [*node.args, *kw.values()]):
            self.add(node, f"{name}(..., 'cuda')", {"gpu"}, guard)
        return False


@pytest.fixture(scope="module")
def parsed():
    return {p: Notebook(p) for p in NOTEBOOKS}


def test_the_parser_sees_launches_and_guards(parsed):
    """Guards the test itself: known launches and guards are found."""
    nb = parsed[ROOT / "solutions/day05_tma/04_cutedsl_tma_gemm.ipynb"]
    found = {(c, n) for _, _, c, n, _ in nb.launches}
    assert ("utils.cute_dsl.gemm.run_gemm", frozenset({"wgmma"})) in found
    assert ("utils.cute_dsl.tma.run_tile_copy", frozenset({"tma", "cutedsl"})) in found
    guards = {g for _, _, c, _, g in nb.launches if c.endswith("run_gemm")}
    assert guards and all("wgmma" in g or "sm90a" in g for g in guards)
    day02 = parsed[ROOT / "solutions/day02_pipelining/03_async_barriers.ipynb"]
    assert any(c.endswith("day02.ring") and "tma" in n and "tma" in g for _, _, c, n, g in day02.launches)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_no_cell_launches_what_the_device_cannot_run(parsed, path):
    bad = []
    for tier in TIERS:
        for cell, line, callee, needs, guard in parsed[path].launches:
            if all(tier.has(g) for g in guard) and not all(tier.has(n) for n in needs):
                lack = sorted(n for n in needs if not tier.has(n))
                bad.append(f"code cell {cell}, line {line}: {callee} needs {lack}, guarded by "
                           f"{sorted(guard) or 'nothing'}; runs on tier {tier.name} "
                           f"({tier.capability and F.cc_text(tier.capability)})")
    assert not bad, f"{path.name}:\n" + "\n".join(sorted(set(bad)))


def test_self_deciding_functions_that_decide_safely():
    """A function that tests the tier itself is safe if what it tests implies what it launches
    (check_producer is not: its callers must pass a tier that has wgmma)."""
    unsafe = {name for name, (decides, needs) in L.SELF_DECIDING.items()
              if any(all(x.has(d) for d in decides) and not all(x.has(n) for n in needs) for x in TIERS)}
    assert unsafe == {"utils.cute_dsl.exercises.check_producer", "utils.cute_dsl.producer_check.check_producer"}


LAUNCHER_MODULES = ("utils/cuda_cpp", "utils/tma", "utils/cute_dsl", "utils/day05")
LAUNCH_MARKS = {"get_function", "RawModule", "RawKernel", "launch", "run_cached", "_compiled", "_child",
                "record_or_load"}
NOT_LAUNCHES = {  # functions whose launch marks are not launches
    "utils.cute_dsl.tma.tile_copy", "utils.cute_dsl.tma.broadcast",     # @cute.jit: launched by run_*
}


def _marks(fn) -> set:
    """Launch marks in a function's own body (nested functions, e.g. @cute.kernel probes, excluded);
    a public run_* or measure_* function is a launcher by its name."""
    found, todo = set(), list(fn.body)
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(n, (ast.Attribute, ast.Name)):
            found.add(n.attr if isinstance(n, ast.Attribute) else n.id)
        todo.extend(ast.iter_child_nodes(n))
    named = {"run/measure name"} if fn.name.startswith(("run_", "measure")) else set()
    return (found & LAUNCH_MARKS) | named


def test_every_launcher_in_utils_is_in_the_table():
    """A new function that launches GPU work must say what it needs (utils/core/launchers.py)."""
    known = set(L.NEEDS) | set(L.SELF_DECIDING) | NOT_LAUNCHES
    missing = []
    for folder in LAUNCHER_MODULES:
        for path in sorted((ROOT / folder).glob("*.py")):
            mod = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            for fn in ast.parse(path.read_text()).body:
                if not isinstance(fn, ast.FunctionDef) or fn.name.startswith("_"):
                    continue
                marks = _marks(fn)
                if marks and f"{mod}.{fn.name}" not in known:
                    missing.append(f"{mod}.{fn.name} ({', '.join(sorted(marks))})")
    assert not missing, "launchers missing from utils/core/launchers.py:\n" + "\n".join(missing)
