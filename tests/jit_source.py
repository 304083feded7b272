"""Planted Triton kernels for the check tests: ``@triton.jit`` reads a kernel's source from its
file, so a planted kernel is written to a real file and imported from there (one place for it)."""
import importlib.util
import os
import tempfile

_DIR = tempfile.mkdtemp(prefix="planted_kernels_")


def load_function(src: str, name: str):
    """Write module source ``src`` to a file of its own, import it, return its function ``name``."""
    path = os.path.join(_DIR, f"k{abs(hash(src))}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return getattr(mod, name)


def replace_each(text: str, *pairs) -> str:
    """``text`` with each (old, new) replaced; each old must occur (a planted edit that misses fails)."""
    for old, new in pairs:
        assert old in text, old
        text = text.replace(old, new)
    return text


def assert_rejected(check, kernel, hint: str, others) -> None:
    """``check(kernel)`` raises CheckFailed matching ``hint``, without a traceback, with the seed, and
    with no other slip's hint (from ``others``) in its message unless that hint contains the match."""
    import re

    import pytest

    from utils.core.checks import CheckFailed
    with pytest.raises(CheckFailed, match=hint) as e:
        check(kernel)
    msg = str(e.value)
    assert "Traceback" not in msg and "seed" in msg
    matched = re.search(hint, msg).group(0)
    for other in others:
        assert other not in msg or matched in other, f"another slip's hint ({other!r}) in: {msg}"
