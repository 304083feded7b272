"""utils.core.ptx_paths.kernel_body: the whole body, even when an inline-asm block closes in column 0."""
import pytest

from utils.core.ptx_paths import kernel_body

PTX = """.version 8.0
// .globl\tk1
.visible .entry k1(
\t.param .u32 k1_param_0
)
{
\tmov.u32 \t%r1, 1;
\t{
\t.reg .pred p;
\tmbarrier.try_wait.parity.shared::cta.b64 p, [%r2], %r3;
}
\tst.shared.u32 \t[%r2], %r1;
\tret;

}
// .globl\tk2
.visible .entry k2()
{
\tret;

}
"""


def test_body_runs_past_an_inline_asm_brace_in_column_0():
    body = kernel_body(PTX, "k1")
    assert "st.shared.u32" in body and "ret;" in body and "k2" not in body


def test_last_kernel_and_missing_kernel():
    assert kernel_body(PTX, "k2").strip() == "ret;"
    with pytest.raises(ValueError, match="no kernel named 'k3'"):
        kernel_body(PTX, "k3")
