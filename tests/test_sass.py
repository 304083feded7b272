"""SASS on the cpu tier: Triton's ptxas and cuobjdump turn the course's PTX into machine code."""
import pytest

from utils.triton_lang import sass

BANK = "utils.cuda_cpp.bank_cost"


def test_tma_kernels_become_utma_instructions():
    from utils.tma import runtime
    n = sass.count(sass.sass(runtime.ptx()))
    assert n["TMA load (UTMALDG)"] >= 1 and n["TMA store (UTMASTG)"] >= 1 and n["TMA reduce (UTMAREDG)"] >= 1
    assert n["mbarrier (SYNCS)"] >= 1 and n["tensor core (HGMMA)"] == 0


def test_ptxas_merges_identical_shared_loads_unless_volatile():
    """The fact behind day 5 · 02's bank-cost lesson: same PTX load count, fewer LDS without .volatile."""
    bank_cost = __import__(BANK, fromlist=["SOURCE"])
    from utils.cuda_cpp import nvrtc
    vol = sass.count(sass.sass(nvrtc.nvrtc_ptx(bank_cost.SOURCE)))["shared load (LDS)"]
    plain = sass.count(sass.sass(nvrtc.nvrtc_ptx(bank_cost.SOURCE.replace("ld.volatile.shared", "ld.shared"))))
    assert plain["shared load (LDS)"] < vol


def test_registers_per_kernel():
    from utils.tma import runtime
    regs = sass.registers(runtime.ptx())
    assert regs and all(0 < n <= 255 for n in regs.values())


@pytest.mark.parametrize("bad, match", [("not ptx", "at least one .entry"), (None, "at least one .entry"),
                                        (".version 8.0\n.target sm_90a\n.entry k() { bogus; }", "could not assemble")])
def test_bad_ptx_is_refused_with_a_message(bad, match):
    with pytest.raises((ValueError, RuntimeError), match=match):
        sass.sass(bad)


def test_count_reads_only_instruction_lines():
    listing = "        /*0040*/                   UTMALDG.2D [UR8], [UR4] ;\n  // UTMALDG in a comment\n"
    assert sass.count(listing)["TMA load (UTMALDG)"] == 1
