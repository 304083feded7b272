"""utils/ is layered (utils/README.md): every module sits in a package of a known layer, imports
only its own package or lower layers, and no modules import each other, directly or in a ring.

Imports are read with ``ast`` (nothing is executed), including imports inside functions, which
the course uses to keep ``import utils`` light.
"""
import ast
import pathlib

import pytest

UTILS = pathlib.Path(__file__).resolve().parents[1] / "utils"

# package -> layer; a package may import its own modules and packages of a lower layer only
LAYERS = {
    "core": 0,
    "cuda_cpp": 1, "triton_lang": 1,
    "tma": 2,
    "cute_dsl": 3, "emu": 3,
    "day01": 4, "day02": 5, "day05": 6,
    "": 7,  # utils/__init__.py: the notebooks' entry point (utils.setup)
}


def modules() -> dict:
    """Dotted name under utils ('' for utils itself) -> path."""
    out = {}
    for p in sorted(UTILS.rglob("*.py")):
        parts = p.relative_to(UTILS).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = p
    return out


def imports(name: str, path: pathlib.Path, known: dict) -> set:
    """The utils modules (dotted, '' = utils) that module ``name`` imports."""
    tree = ast.parse(path.read_text(), filename=str(path))
    pkg = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    if name == "":
        pkg = []
    deps = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[:len(pkg) - (node.level - 1)] + (node.module.split(".") if node.module else [])
            elif node.module and (node.module == "utils" or node.module.startswith("utils.")):
                base = node.module.split(".")[1:]
            else:
                continue
            base = ".".join(base)
            for alias in node.names:
                sub = f"{base}.{alias.name}" if base else alias.name
                deps.add(sub if sub in known else base)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name == "utils" or alias.name.startswith("utils."):
                    deps.add(".".join(alias.name.split(".")[1:]))
    deps.discard(name)
    return deps


def package(name: str) -> str:
    return name.split(".")[0] if name else ""


@pytest.fixture(scope="module")
def graph():
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def test_every_module_is_in_a_layered_package():
    flat = [n for n in modules() if n and "." not in n and n not in LAYERS]
    assert not flat, f"modules outside the layered packages (put them in one, see utils/README.md): {flat}"
    for n in modules():
        assert package(n) in LAYERS, n


def test_parser_sees_known_edges(graph):
    # guards the test itself: these imports exist (some inside functions)
    assert "cuda_cpp.nvrtc" in graph["tma.runtime"]
    assert "core.checks" in graph["day01.checks"]
    assert "triton_lang.compat" in graph["triton_lang.compile"]
    assert "core.tier" in graph[""]


def test_no_upward_or_sideways_import(graph):
    bad = []
    for src, deps in graph.items():
        for dst in deps:
            p, q = package(src), package(dst)
            if p != q and LAYERS[q] >= LAYERS[p]:
                bad.append(f"{src or 'utils'} -> {dst or 'utils'} (layer {LAYERS[p]} -> {LAYERS[q]})")
    assert not bad, "imports against the layers of utils/README.md:\n" + "\n".join(sorted(bad))


def test_no_import_cycle(graph):
    state, stack, cycles = {}, [], []

    def visit(n):
        state[n] = 1
        stack.append(n)
        for d in sorted(graph.get(n, ())):
            if state.get(d) == 1:
                cycles.append(stack[stack.index(d):] + [d])
            elif d in graph and not state.get(d):
                visit(d)
        stack.pop()
        state[n] = 2

    for n in sorted(graph):
        if not state.get(n):
            visit(n)
    assert not cycles, "import cycles: " + "; ".join(" -> ".join(c) for c in cycles)


def test_kernel_sources_live_with_their_stack():
    for cu in UTILS.rglob("*.cu"):
        assert cu.parent.name in ("cuda_cpp", "tma"), f"{cu}: CUDA sources belong to the stack that compiles them"


def test_pyproject_lists_every_package():
    import tomllib
    declared = set(tomllib.loads((UTILS.parent / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    packages = {"utils"} | {f"utils.{p.name}" for p in UTILS.iterdir() if (p / "__init__.py").exists()}
    assert declared == packages, f"pyproject.toml [tool.setuptools] packages should be {sorted(packages)}"
