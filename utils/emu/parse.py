"""Parse the PTX that NVRTC emits into kernels the emulator runs.

:func:`parse` turns PTX text into a :class:`Module`: its ``.global`` variables and, per ``.entry``,
a :class:`Kernel` with the ``.param`` layout, the registers (name -> type), the ``.shared`` /
``.local`` variables and a flat list of :class:`Instr` with label targets resolved. Scoped
registers (``{ .reg .pred p; ... }`` blocks of inline asm) get unique names. Parsing is cached
per PTX text (:func:`parse_cached`).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field

from .errors import UnsupportedPTX

_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_TYPE_SIZE = {"pred": 1, "b8": 1, "u8": 1, "s8": 1, "b16": 2, "u16": 2, "s16": 2, "f16": 2, "bf16": 2,
              "b32": 4, "u32": 4, "s32": 4, "f32": 4, "b64": 8, "u64": 8, "s64": 8, "f64": 8,
              "f16x2": 4, "bf16x2": 4, "b128": 16}


@dataclass
class Instr:
    """One PTX instruction: ``parts`` is the opcode split at dots (``["ld", "global", "v4", "u32"]``),
    ``guard`` a (predicate register, negated) pair or None, ``ops`` the raw operand strings."""
    parts: list
    ops: list
    guard: tuple | None
    line: int
    text: str
    target: int = -1          # branch target index, resolved after parsing
    src: tuple | None = None  # (CUDA line in the kernel, CUDA line of the code itself) from -lineinfo

    @property
    def opcode(self) -> str:
        """The opcode with its qualifiers, e.g. ``ld.global.v4.u32``."""
        return ".".join(self.parts)


@dataclass
class Var:
    """A variable in a state space: name, byte size, alignment (``size`` 0: an unsized extern array)."""
    name: str
    size: int
    align: int
    extern: bool = False


@dataclass
class Kernel:
    """One ``.entry``: params (name, type, size, align) in order, registers, variables, code."""
    name: str
    params: list = field(default_factory=list)
    regs: dict = field(default_factory=dict)
    shared: list = field(default_factory=list)
    local: list = field(default_factory=list)
    code: list = field(default_factory=list)
    labels: dict = field(default_factory=dict)
    cluster_dims: tuple | None = None


@dataclass
class Module:
    """A parsed PTX module: kernels by name, module-level ``.global`` and ``.shared`` variables."""
    kernels: dict
    globals: list
    shared: list


def _split_ops(text: str) -> list:
    """Split an operand list at top-level commas (not inside [] or {})."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def _var(decl: str, line: int) -> Var:
    """A ``.shared/.global/.local`` declaration such as ``.shared .align 8 .b8 name[64]``."""
    m = re.search(r"(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d*)\])?(?:\s*=.*)?$", decl)
    if not m:
        raise UnsupportedPTX(f"cannot read the declaration {decl!r}", line, decl)
    align, typ, name, count = m.groups()
    size = _TYPE_SIZE.get(typ, 1)
    n = 1 if count is None else (int(count) if count else 0)
    return Var(name, size * n, int(align or size), extern=".extern" in decl)


_TOKEN = re.compile(r"\s*(?:([{}])|([\w$]+:)(?!:)|([^;]*);)", re.S)


def _statements(body: str, first_line: int):
    """Yield (line number, statement text) for `;`-terminated statements, labels and braces
    (a brace only where a statement would start: ``{%r1, %r2}`` operands stay in their statement)."""
    line, pos, n = first_line, 0, len(body)
    while pos < n:
        m = _TOKEN.match(body, pos)
        if not m:
            return
        start = line + body.count("\n", pos, m.start(1) if m.group(1) else m.start(2) if m.group(2) else m.start(3))
        brace, label, stmt = m.groups()
        if brace:
            yield start, brace
        elif label:
            yield start, label
        else:
            yield start, stmt.strip()
        line += body.count("\n", pos, m.end())
        pos = m.end()


_BRACE = re.compile(r"[{}]")
_LOC = re.compile(r"\s*\.loc\s+(\d+)\s+(\d+)\s+\d+(?:.*?inlined_at\s+(\d+)\s+(\d+))?")
_FILE = re.compile(r'^\s*\.file\s+(\d+)\s+"([^"]*)"', re.M)


def _locations(text: str):
    """Strip ``.loc``/``.file`` (NVRTC's ``-lineinfo``) from ``text``; return it and a dict: PTX line ->
    ((file, line) in the kernel, (file, line) of the code itself), following ``inlined_at`` up to the
    kernel; ``file`` is the base name NVRTC was given (``kernel.cu``, or a ``#line`` directive's)."""
    files = {int(n): name.rsplit("/", 1)[-1] for n, name in _FILE.findall(text)}
    lines, locs, cur, up = text.split("\n"), {}, None, {}
    for i, ln in enumerate(lines):
        s = ln.lstrip()
        if s.startswith(".loc"):
            m = _LOC.match(ln)
            cur = None
            if m and int(m.group(2)) > 0:
                inner = (files.get(int(m.group(1))), int(m.group(2)))
                if m.group(3):
                    up[inner] = (files.get(int(m.group(3))), int(m.group(4)))
                outer, seen = inner, set()
                while outer in up and outer not in seen:
                    seen.add(outer)
                    outer = up[outer]
                cur = (outer, inner)
            lines[i] = ""
        elif s.startswith(".file"):
            lines[i] = ""
        elif cur is not None:
            locs[i + 1] = cur
    return "\n".join(lines), locs


def _kernel(name: str, header: str, body: str, first_line: int, locs=None) -> Kernel:
    k = Kernel(name)
    for p in _split_ops(header):
        p = re.sub(r"\.ptr(\s*\.(global|shared|const|local))?(\s*\.align\s+\d+)?", "", p)
        m = re.match(r"\.param\s+(?:\.align\s+(\d+)\s+)?\.(\w+)\s+([\w$]+)(?:\[(\d+)\])?", p)
        if not m:
            raise UnsupportedPTX(f"cannot read the kernel parameter {p!r}", first_line, p)
        align, typ, pname, count = m.groups()
        size = _TYPE_SIZE[typ] * (int(count) if count else 1)
        k.params.append((pname, typ, size, int(align or _TYPE_SIZE[typ])))
    scopes, counter = [{}], [0]

    def resolve(tok: str) -> str:
        for scope in reversed(scopes):
            if tok in scope:
                return scope[tok]
        return tok

    for line, st in _statements(body, first_line):
        if st == "{":
            scopes.append({})
            continue
        if st == "}":
            scopes.pop()
            continue
        if st.endswith(":"):
            k.labels[st[:-1]] = len(k.code)
            continue
        if st.startswith(".reg"):
            m = re.match(r"\.reg\s+\.(\w+)\s+(.+)", st)
            typ = m.group(1)
            for decl in _split_ops(m.group(2)):
                r = re.fullmatch(r"(%?[\w$]+)<(\d+)>", decl)
                names = [f"{r.group(1)}{i}" for i in range(int(r.group(2)))] if r else [decl]
                for n in names:
                    unique = n
                    if len(scopes) > 1:
                        counter[0] += 1
                        unique = f"{n}#{counter[0]}"
                        scopes[-1][n] = unique
                    k.regs[unique] = typ
            continue
        if st.startswith(".shared"):
            k.shared.append(_var(st, line))
            continue
        if st.startswith(".local"):
            k.local.append(_var(st, line))
            continue
        if st.startswith((".maxntid", ".reqntid", ".minnctapersm", ".pragma", ".explicitcluster",
                          ".maxnreg", ".maxclusterrank", ".loc", ".file", ".noreturn")):
            continue
        if st.startswith(".reqnctapercluster"):
            k.cluster_dims = tuple(int(x) for x in re.findall(r"\d+", st))
            continue
        if st.startswith("."):
            raise UnsupportedPTX(f"the directive {st.split()[0]} is not modelled", line, st)
        guard = None
        m = re.match(r"@(!?)(%?[\w$#]+)\s+(.*)", st, re.S)
        if m:
            guard = (resolve(m.group(2)), m.group(1) == "!")
            st = m.group(3)
        m = re.match(r"([\w.:]+)\s*(.*)", st, re.S)
        opcode, rest = m.group(1), m.group(2)
        ops = [re.sub(r"%?[A-Za-z_$][\w$]*", lambda t: resolve(t.group(0)), o) for o in _split_ops(rest)]
        k.code.append(Instr(opcode.split("."), ops, guard, line, (("@" + st) if guard else st),
                            src=(locs or {}).get(line)))
    for ins in k.code:
        if ins.parts[0] == "bra":
            if ins.ops[0] not in k.labels:
                raise UnsupportedPTX(f"branch to unknown label {ins.ops[0]}", ins.line, ins.text)
            ins.target = k.labels[ins.ops[0]]
    return k


def parse(ptx: str) -> Module:
    """Parse PTX text (NVRTC's output) into a :class:`Module`."""
    if not isinstance(ptx, str) or ".entry" not in ptx:
        raise ValueError("expected PTX text containing at least one .entry kernel")
    text = _COMMENT.sub(lambda m: "\n" * m.group(0).count("\n"), ptx)
    text, locs = _locations(text)
    kernels, gvars, svars = {}, [], []
    pos = 0
    entry = re.compile(r"\.(?:visible\s+)?\.?entry\s+([\w$]+)\s*\(([^)]*)\)([^{]*)\{", re.S)
    for m in entry.finditer(text):
        for ln in text[pos:m.start()].splitlines():
            ln = ln.strip().rstrip(";")
            if re.match(r"(\.extern\s+)?\.shared", ln):
                svars.append(_var(ln, 0))
            elif re.match(r"(\.visible\s+)?\.global", ln):
                gvars.append(_var(ln, 0))
        depth, i = 1, m.end()
        for b in _BRACE.finditer(text, m.end()):
            depth += 1 if b.group() == "{" else -1
            if not depth:
                i = b.end()
                break
        first = text.count("\n", 0, m.end()) + 1
        k = _kernel(m.group(1), m.group(2), text[m.end():i - 1], first, locs)
        dims = re.search(r"\.reqnctapercluster\s+(\d+)\s*,\s*(\d+)\s*,\s*(\d+)", m.group(3))
        if dims:
            k.cluster_dims = tuple(int(x) for x in dims.groups())
        kernels[k.name] = k
        pos = i
    return Module(kernels, gvars, svars)


@functools.lru_cache(maxsize=16)
def parse_cached(ptx: str) -> Module:
    """:func:`parse`, cached per PTX text."""
    return parse(ptx)
