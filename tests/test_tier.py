"""Tier detection: hardware facts, the COURSE_TIER override, and what setup() configures."""
import pytest

from utils.core import tier as t


def probe(name=None, cc=None):
    return lambda: None if name is None else (name, cc)


@pytest.mark.parametrize("gpu,expected", [((None, None), "cpu"), (("A100", (8, 0)), "cuda"),
                                           (("H100", (9, 0)), "hopper"), (("B200", (10, 0)), "tma")])
def test_detect_from_hardware(gpu, expected):
    tier = t.detect(None, probe(*gpu))
    assert tier.name == expected
    assert tier.has_gpu == (expected != "cpu")
    assert tier.has_tma == (expected in ("hopper", "tma"))
    assert tier.device == ("cpu" if expected == "cpu" else "cuda")


def test_override_lowers_tier():
    tier = t.detect("cpu", probe("H100", (9, 0)))
    assert tier.name == "cpu" and "forced" in tier.reason and tier.device == "cpu"
    assert t.detect("cuda", probe("H100", (9, 0))).name == "cuda"


def test_override_cannot_raise_tier():
    with pytest.raises(ValueError, match="asks for more than this machine has"):
        t.detect("hopper", probe())


def test_override_rejects_unknown_name():
    with pytest.raises(ValueError, match="is not a tier"):
        t.detect("tpu", probe())


def test_configure_environment_sets_interpreter_only_for_cpu():
    env = {"TRITON_INTERPRET": "1"}
    t.configure_environment(t.Tier("hopper", "H100", (9, 0), "x"), env)
    assert "TRITON_INTERPRET" not in env and env["TRITON_DEFAULT_FP_FUSION"] == "1"
    assert "CUTE_DSL_ARCH" not in env
    t.configure_environment(t.Tier("cpu", None, None, "x"), env)
    assert env["TRITON_INTERPRET"] == "1" and env["CUTE_DSL_ARCH"] == "sm_90a"


def test_size_picks_by_tier():
    assert t.Tier("cpu", None, None, "").size(cpu=64, gpu=8192) == 64
    assert t.Tier("cuda", "A100", (8, 0), "").size(cpu=64, gpu=8192) == 8192


def test_explain_skip(capsys):
    cpu = t.Tier("cpu", None, None, "no CUDA device")
    assert t.explain_skip(cpu, "tma", "the TMA benchmark") is False
    assert "skipped: the TMA benchmark" in capsys.readouterr().out
    assert t.explain_skip(t.Tier("hopper", "H100", (9, 0), ""), "tma", "x") is True
    with pytest.raises(ValueError, match="needs must be"):
        t.explain_skip(cpu, "fp8", "x")


def test_report_lists_abilities(capsys):
    from utils.core.report import print_report
    print_report(t.Tier("cpu", None, None, "no CUDA device visible to torch"))
    out = capsys.readouterr().out
    assert "Course tier: CPU" in out and "[ no] TMA kernels" in out and "triton" in out
