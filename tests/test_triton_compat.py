"""utils.triton_lang.compat.patch_old_interpreter: a loop bound passed at run time runs under the
interpreter on every Triton the course supports. Triton 3.6's interpreter turns a tensor into an
int with int() of its array, which NumPy 2 refuses; 3.8 squeezes first; utils.setup() patches
older versions on the cpu tier."""
import pytest

import utils

T = utils.setup(quiet=True)
import torch  # noqa: E402
import triton  # noqa: E402
import triton.language as tl  # noqa: E402

from utils.triton_lang import compat  # noqa: E402

pytestmark = pytest.mark.skipif(not compat.interpreting(), reason="the interpreter runs on the cpu tier only")


@triton.jit
def _column_sums(x_ptr, out_ptr, iters, BLOCK: tl.constexpr):
    acc = tl.zeros((BLOCK,), dtype=tl.float32)
    for i in tl.range(0, iters):                    # the bound is a run-time argument
        acc += tl.load(x_ptr + i * BLOCK + tl.arange(0, BLOCK))
    tl.store(out_ptr + tl.arange(0, BLOCK), acc)


def _run():
    x = torch.randn(5 * 16)
    out = torch.full((16,), float("nan"))
    _column_sums[(1,)](x, out, 5, BLOCK=16)
    torch.testing.assert_close(out, x.view(5, 16).sum(0), rtol=1e-6, atol=1e-5)


def test_runtime_loop_bound_runs_under_the_interpreter():
    _run()


def test_patched_only_where_needed():
    from triton.runtime import interpreter
    needed = compat.version_tuple(triton.__version__) < compat.INDEX_FIXED_IN
    assert getattr(interpreter._patch_lang_tensor, "course_index_fix", False) == needed
    assert compat.patch_old_interpreter() is False          # installed once, or not needed


def test_the_patch_fixes_the_old_conversion(monkeypatch):
    from triton.runtime import interpreter
    current = interpreter._patch_lang_tensor
    base = getattr(current, "wrapped", current)

    def old_style(tensor, scope):                           # what Triton 3.6's interpreter does
        base(tensor, scope)
        scope.set_attr(tensor, "__index__", lambda self: int(self.handle.data))

    monkeypatch.setattr(interpreter, "_patch_lang_tensor", old_style)
    with pytest.raises(Exception, match="0-dimensional"):
        _run()
    before = vars(tl.core.tensor).get("__index__")
    assert compat.patch_old_interpreter(force=True) is True
    _run()
    assert vars(tl.core.tensor).get("__index__") is before  # the launch's patches are undone
