"""Day 5 · 02's picture of the TMA path: the steps come in the order the hardware needs, every PTX
name on it is one the course's kernels really emit, and the figure draws every step."""
import matplotlib
import pytest

matplotlib.use("Agg")

from utils.tma import path_figure as pf


def _index(ptx_part):
    hits = [n for n, _, _, _, _, ptx in pf.steps() if ptx_part in ptx]
    assert len(hits) == 1, (ptx_part, hits)
    return hits[0]


def test_steps_are_numbered_loads_first():
    s = pf.steps()
    assert [n for n, *_ in s] == list(range(1, len(s) + 1))
    assert [k for _, k, *_ in s] == ["load"] * len(pf.LOAD_PATH) + ["store"] * len(pf.STORE_PATH)


def test_order_of_the_load_and_the_store():
    assert _index("mbarrier.init") < _index("expect_tx") < _index("(load)") < _index("complete_tx") \
        < _index("try_wait.parity")
    assert _index("st.shared") < _index("fence.proxy.async") < _index("(store)") < _index("wait_group.read")
    lands = next(n for n, k, a, b, *_ in pf.steps() if (a, b) == ("TMA unit", "shared memory"))
    assert _index("(load)") < lands < _index("complete_tx"), "bytes land before they are counted"


def test_every_ptx_name_is_in_the_course_kernels():
    from utils.tma import runtime
    text = runtime.ptx()
    names = {p.strip() for *_, ptx in pf.steps() for p in ptx.split("+") if ptx}
    assert len(names) >= 9, names
    for name in names:
        op = name.split(" (")[0].removesuffix(" 0")      # "cp.async.bulk.tensor (load)" -> the opcode
        assert op in text, name


def test_the_figure_draws_every_step():
    fig = pf.show_tma_path()
    texts = [t.get_text() for t in fig.axes[0].texts]
    for n, *_ in pf.steps():
        assert any(t.startswith(f"{n}. ") for t in texts), n
    assert {"threads", "mbarrier", "shared memory", "TMA unit", "descriptor"} <= set(texts)


def test_a_step_naming_an_unknown_lane_is_refused(monkeypatch):
    monkeypatch.setattr(pf, "LOAD_PATH", pf.LOAD_PATH + (("threads", "registers", "x", ""),))
    with pytest.raises(ValueError, match="names a lane that is not one of"):
        pf.steps()
