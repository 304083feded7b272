"""Notebook 02's exercise checks accept the solutions and reject planted wrong answers; the
CPU-side parts of the TMA runtime validate their inputs."""
import numpy as np
import pytest

from utils import tma
from utils.core.checks import CheckFailed
from utils.tma import exercises as ex
from utils.tma import plots, runtime
from tma_refs import encode_args, expect_tx, stub, swz  # noqa: E402  (tests/tma_refs.py)


def _np_ints(f):
    return lambda *a: tuple(tuple(np.int64(v) for v in part) for part in f(*a))


@pytest.mark.parametrize("check,good", [
    (ex.check_encode_args, encode_args),
    (ex.check_encode_args, lambda s, i, b: tuple(list(p) for p in encode_args(s, i, b))),  # lists
    (ex.check_encode_args, _np_ints(encode_args)),                                          # np.int64
    (ex.check_expect_tx, expect_tx),
    (ex.check_expect_tx, lambda b, i, e: np.int64(expect_tx(b, i, e))),
    (ex.check_expect_tx, lambda b, i, e: int(np.prod([np.ceil(x / s) for x, s in zip(b[:-1], e[:-1])]))
     * b[-1] * i),
    (ex.check_swizzle_offset, swz),
    (ex.check_swizzle_offset, lambda r, c, s: (r * 128 + c * s) ^ ((r % 8) << 4)),         # one XOR
    (ex.check_swizzle_offset, lambda r, c, s: np.int64(swz(r, c, s))),
])
def test_right_answers_pass_and_stubs_are_not_attempted(check, good, capsys):
    check(good)
    assert "correct" in capsys.readouterr().out
    check(stub)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("wrong,hint", [
    (lambda s, i, b: (tuple(s), encode_args(s, i, b)[1], tuple(b[::-1])), "innermost first"),
    (lambda s, i, b: (tuple(s[::-1]), tuple(int(np.prod(s[k + 1:])) for k in range(len(s) - 1))[::-1],
                      tuple(b[::-1])), "strides in elements: the driver wants BYTES"),
    (lambda s, i, b: (tuple(s[::-1]), tuple(int(np.prod(s[k + 1:])) * i for k in range(len(s) - 1)),
                      tuple(b[::-1])), "strides in array order"),
    (lambda s, i, b: (tuple(s[::-1]), (i,) + encode_args(s, i, b)[1], tuple(b[::-1])), "includes the innermost"),
    (lambda s, i, b: (tuple(s[::-1]), tuple(int(np.prod(s[k + 1:])) for k in range(len(s) - 1)),
                      tuple(b[::-1])), "elements and in array order"),
    (lambda s, i, b: (tuple(s[::-1]), encode_args(s, i, b)[1], tuple(b)), "box dims"),
    (lambda s, i, b: (tuple(s[::-1]), encode_args(s, i, b)[1][:-1], tuple(b[::-1])), "all innermost first"),
    (lambda s, i, b: tuple(tuple(float(v) for v in p) for p in encode_args(s, i, b)), "three tuples of ints"),
    (lambda s, i, b: tuple(tuple(True for v in p) for p in encode_args(s, i, b)), "three tuples of ints"),
    (lambda s, i, b: encode_args(s, i, b)[:2], "three tuples"),
    (lambda s, i, b: 42, "three tuples")])
def test_encode_args_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex.check_encode_args(wrong)


@pytest.mark.parametrize("wrong,hint", [
    (lambda b, i, e: int(np.prod(b)), "elements, not bytes"),
    (lambda b, i, e: int(np.prod(b)) * i, "each OUTER dimension"),
    (lambda b, i, e: int(np.prod([-(-x // s) for x, s in zip(b, e)])) * i, "innermost element stride is ignored"),
    (lambda b, i, e: int(np.prod([x // s for x, s in zip(b[:-1], e[:-1])])) * b[-1] * i, "round up"),
    (lambda b, i, e: expect_tx(b, i, e) + 16, "product over OUTER dims"),
    (lambda b, i, e: float(expect_tx(b, i, e)), "expected an int"),
    (lambda b, i, e: True, "expected an int"),
    (lambda b, i, e: "8192", "expected an int")])
def test_expect_tx_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex.check_expect_tx(wrong)


def swz_mode(mode):
    from utils.tma.swizzle import element_offset
    return lambda r, c, s: int(element_offset(r, c, s, 128, mode))


@pytest.mark.parametrize("wrong,hint", [
    (lambda r, c, s: r * 128 + c * s, "unswizzled offset"),
    (swz_mode("64B"), "SWIZZLE_64B"),
    (swz_mode("32B"), "SWIZZLE_32B"),
    (lambda r, c, s: r * 128 + (((c * s // 16) ^ r) * 16) + c * s % 16, "not the row"),
    (lambda r, c, s: r * 128 + (((c * s // 16) ^ (r % 8)) * 16), "byte % 16"),
    (lambda r, c, s: r * 128 + ((c ^ (r % 8)) * s), "not the column"),
    (lambda r, c, s: swz(r, c, s) // s, "BYTE offset"),
    (lambda r, c, s: swz(r, c, s) + (r == 9), "offset = row\\*128"),
    (lambda r, c, s: float(swz(r, c, s)), "expected an int"),
])
def test_swizzle_offset_rejects(wrong, hint):
    with pytest.raises(CheckFailed, match=hint):
        ex.check_swizzle_offset(wrong)


FENCE = 'asm volatile("fence.proxy.async.shared::cta;" ::: "memory");'
WRITES = "for (int i = threadIdx.x; i < 16 * 32; i += blockDim.x) tile[i] = 2.0f * in[i];"
SYNC = "  __syncthreads();"
WAIT = "asm volatile(\"cp.async.bulk.commit_group;\\n cp.async.bulk.wait_group.read 0;\" ::: \"memory\");"
TMA_LINE = 'unsigned src = (unsigned)__cvta_generic_to_shared(tile);'


def with_fence(line, src=None):
    """The stub with ``line`` where the notebook's TODO is (right after the threads' writes)."""
    return (src or ex.STORE_STUB).replace(WRITES, WRITES + "\n  " + line)


def notebook_store_cell(folder):
    import json
    nb = json.load(open(f"{folder}/02_descriptors_cupy.ipynb"))
    cell = next("".join(c["source"]) for c in nb["cells"] if "store_tile_src = " in "".join(c["source"]))
    ns = {}
    exec(cell, ns)
    return ns["store_tile_src"]


def test_store_stub_is_the_notebooks_and_the_solution_adds_one_line():
    stub, sol = notebook_store_cell("day05_tma"), notebook_store_cell("solutions/day05_tma")
    assert ex.c_tokens(stub) == ex.c_tokens(ex.STORE_STUB)
    assert ex.c_tokens(sol) == ex.c_tokens(with_fence(FENCE))


@pytest.mark.parametrize("source", [
    with_fence(FENCE),                                                      # the solution
    with_fence("// TODO (1 line): your code here\n  " + FENCE),            # under the stub's TODO
    with_fence('asm volatile("fence.proxy.async;" ::: "memory");'),         # all state spaces
    with_fence('asm volatile("fence.proxy.async.shared::cluster;" ::: "memory");'),
    with_fence('asm volatile("fence.proxy.async.shared::cta;\\n" ::: "memory");'),
    ex.STORE_STUB.replace("tile[i] = 2.0f * in[i];", "{ tile[i] = 2.0f * in[i]; " + FENCE + " }"),
], ids=["solution", "under-todo", "no-space", "cluster", "newline", "in-loop"])
def test_store_kernel_accepts(source, capsys):
    ex.check_store_kernel(source)
    assert "correct" in capsys.readouterr().out


@pytest.mark.parametrize("source,why", [
    (with_fence('asm volatile("fence.proxy.async.global;" ::: "memory");'), "not the fence needed"),
    (with_fence("__threadfence_block();"), "not the fence needed"),
    (with_fence('asm volatile("fence.proxy.alias;" ::: "memory");'), "not the fence needed"),
    (with_fence("if (x < 0) " + FENCE), "skips your fence"),                 # a branch never taken
    (with_fence("if (threadIdx.x == 0) " + FENCE), "skips your fence"),      # only one writer fences
    (with_fence("if (0) " + FENCE), "compiler removed it"),                 # folded away
    (ex.STORE_STUB.replace(WRITES, FENCE + "\n  " + WRITES), "skips your fence"),  # before the writes
    (ex.STORE_STUB.replace(TMA_LINE, FENCE + "\n    " + TMA_LINE), "after __syncthreads"),  # leader fences after the barrier
    (with_fence(FENCE, ex.STORE_STUB.replace(WAIT, 'asm volatile("cp.async.bulk.commit_group;" ::: "memory");')),
     "before the copy engine has read"),                                    # dropped wait_group.read
    (with_fence(FENCE, ex.STORE_STUB.replace(WAIT, 'asm volatile("cp.async.bulk.commit_group;\\n '
                                                   'cp.async.bulk.wait_group.read 1;" ::: "memory");')),
     "before the copy engine has read"),                                    # waits for the wrong count
    (with_fence(FENCE, ex.STORE_STUB.replace(WAIT, "")), "never committed"),
    (with_fence(FENCE, ex.STORE_STUB.replace(WAIT, "if (x > 1 << 30) " + WAIT)), "never committed"),
    (ex.STORE_STUB.replace(WRITES, "").replace("__syncthreads();", FENCE + " __syncthreads();"),
     "both the threads' shared-memory writes and the TMA store"),
    (with_fence("fence();"), "does not compile"),
    (with_fence(FENCE).replace("store_tile(", "store_tile2("), "no kernel named"),
], ids=["global-fence", "threadfence", "alias-fence", "branch-never-taken", "thread0-only", "if0",
        "before-writes", "leader-after-sync", "no-wait", "wait-1", "no-commit", "commit-in-branch", "no-writes",
        "syntax", "renamed"])
def test_store_kernel_rejects(source, why):
    with pytest.raises(CheckFailed, match=why):
        ex.check_store_kernel(source)


@pytest.mark.parametrize("source", [ex.STORE_STUB, notebook_store_cell("day05_tma"),
                                    ex.STORE_STUB.replace("  __syncthreads();", "\n\n    __syncthreads(); // later")])
def test_store_kernel_stub_is_not_attempted(source, capsys):
    ex.check_store_kernel(source)
    assert "not attempted" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [None, 42, "int main() { return 0; }"])
def test_store_kernel_rejects_non_kernels(bad):
    with pytest.raises(CheckFailed, match="CUDA C\\+\\+ source"):
        ex.check_store_kernel(bad)


def test_runtime_cpu_side():
    spec = tma.make_spec(np.zeros((64, 128), np.float16), (8, 64))
    assert runtime.check_coords(spec, (3, 8)) == (8, 3)
    with pytest.raises(ValueError, match="not a multiple of 16 B"):
        runtime.check_coords(spec, (0, 4))
    with pytest.raises(TypeError, match="2 ints"):
        runtime.check_coords(spec, (0,))
    with pytest.raises(ValueError, match="int32"):
        runtime.check_coords(spec, (2**31, 0))
    assert runtime.smem_image_bytes(spec) == 1024
    assert runtime.smem_image_bytes(tma.make_spec(np.zeros((64, 128), np.float16), (9, 32),
                                                   swizzle="128B")) == 2048    # rows 128 B apart
    assert "mbar_wait_bounded" in runtime.kernel_source("tma_load_dump")
    with pytest.raises(ValueError, match="no kernel named"):
        runtime.kernel_source("nope")
    with pytest.raises(ValueError, match="exceeds"):
        runtime.kernel("tma_load_dump", 300 * 1024)
    counts = tma_ptx_counts()
    assert counts["cp.async.bulk.tensor"] >= 10 and counts["fence.proxy.async"] >= 1


def tma_ptx_counts():
    from utils.core import ptx
    return ptx.count(runtime.ptx())


def test_swizzle_pictures():
    assert plots.column_read_ways("none") == 8 and plots.column_read_ways("128B") == 1
    grid = plots.chunk_grid("128B")
    assert grid.shape == (8, 8) and sorted(grid[5]) == list(range(8)) and grid[1, 0] == 1
    fig = plots.show_swizzle()
    assert len(fig.axes) == 4
