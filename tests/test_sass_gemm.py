"""SASS of the day-5 GEMMs on the cpu tier (CuteDSL PTX for sm_90a -> Triton's ptxas): the main
loop found by its backward branch, its instruction mix, setmaxnreg's opcode and register counts."""
import functools
import re

import pytest

import utils

utils.setup(quiet=True)
from utils.cute_dsl import gemm as cute_gemm, gemm_cpasync as cute_gemm_cpasync, gemm_ws as cute_gemm_ws  # noqa: E402
from utils.triton_lang import sass  # noqa: E402

SETMAXNREG = re.compile(r"^\s*setmaxnreg\..*\n", re.M)


@functools.lru_cache(maxsize=None)
def ptx_of(kind):
    gemm = {"tma": lambda: cute_gemm.TmaGemm(4), "ws": lambda: cute_gemm_ws.WsGemm(persistent=True),
            "cpasync": lambda: cute_gemm_cpasync.CpAsyncGemm(4)}[kind]()
    return cute_gemm.ptx_of(gemm=gemm)


@functools.lru_cache(maxsize=None)
def listing(kind):
    return sass.sass(ptx_of(kind))


def test_tma_gemm_main_loop_holds_hgmma_utmaldg_and_mbarriers_but_no_cta_barrier():
    mix = sass.loop_mix(listing("tma"))
    assert mix["HGMMA"][0] == 4                      # k-tile 64 = 4 x m64n256k16, per warpgroup
    assert mix["UTMALDG"][0] >= 1 and mix["SYNCS"][0] >= 1
    assert mix["BAR"][0] == 0 and mix["LDGSTS"] == (0, 0)
    assert mix["instructions"][0] < mix["instructions"][1] / 4


def test_cpasync_gemm_loop_has_ldgsts_and_cta_barriers_instead():
    mix = sass.loop_mix(listing("cpasync"))
    assert mix["LDGSTS"][0] == 12 and mix["UTMALDG"] == (0, 0) and mix["BAR"][0] >= 2
    assert mix["LDS"][0] == 0, "the @!PT LDS padding in this loop never executes"
    assert any(i.startswith("@!PT LDS") for i in sass.instructions(sass.main_loop(listing("cpasync"))))


def test_setmaxnreg_becomes_usetmaxreg_and_sets_the_launch_allocation():
    ins = sass.instructions(listing("ws"))
    dealloc = [i for i in ins if i.startswith("USETMAXREG.DEALLOC")]
    alloc = [i for i in ins if i.startswith("USETMAXREG.TRY_ALLOC")]
    assert len(dealloc) == 1 and dealloc[0].endswith(hex(cute_gemm_ws.LOAD_REGS))
    assert len(alloc) == 1 and alloc[0].endswith(hex(cute_gemm_ws.MMA_REGS))
    assert sass.count(listing("tma"), sass.LOOP_FAMILIES)["USETMAXREG"] == 0
    with_smr, = sass.registers(ptx_of("ws")).values()
    without, = sass.registers(SETMAXNREG.sub("", ptx_of("ws"))).values()
    assert 128 * cute_gemm_ws.LOAD_REGS + 256 * cute_gemm_ws.MMA_REGS <= with_smr * 384 <= sass.REGISTER_FILE
    assert without < with_smr


def test_ws_gemm_has_a_producer_loop_and_a_consumer_loop():
    consumer = sass.count(sass.main_loop(listing("ws")), sass.LOOP_FAMILIES)
    producer = sass.count(sass.main_loop(listing("ws"), marker=r"\bUTMALDG\b"), sass.LOOP_FAMILIES)
    assert consumer["HGMMA"] == 4 and consumer["UTMALDG"] == 0
    assert producer["UTMALDG"] == 2 and producer["HGMMA"] == 0


LOOP = """
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   HGMMA.64x256x16.F32 R24, gdesc[UR4], R24 ;
        /*0020*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8], R5 ;
        /*0030*/              @!P0 BRA 0x80 ;
        /*0040*/                   UTMALDG.2D [UR8], [UR4] ;
        /*0050*/               @P1 BRA 0x10 ;
        /*0060*/                   EXIT ;
        /*0070*/                   BRA 0x70;
        /*0080*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8], R5 ;
        /*0090*/              @!P0 BRA 0x80 ;
        /*00a0*/                   BRA 0x40 ;
"""


def test_loops_leave_out_jumps_back_from_out_of_line_code():
    assert sass.loops(LOOP) == [(0x10, 0x50), (0x80, 0x90)]   # not (0x40, 0xa0): entered at 0x30
    assert sass.loop_mix(LOOP)["UTMALDG"] == (1, 1) and sass.loop_mix(LOOP)["instructions"] == (5, 11)


@pytest.mark.parametrize("bad, match", [
    ("no listing here", "no SASS instruction"), (None, "expected a SASS listing"),
    ("\n\tFunction : a\n" + LOOP + "\n\tFunction : b\n" + LOOP, "holds 2 kernels"),
])
def test_main_loop_refuses_bad_input(bad, match):
    with pytest.raises(ValueError, match=match):
        sass.main_loop(bad)


def test_no_loop_with_the_marker_is_a_clear_error():
    with pytest.raises(ValueError, match="no loop of this kernel holds"):
        sass.main_loop(LOOP, marker=r"\bLDGSTS\b")


def test_cubin_bytes_are_read_and_other_bytes_refused():
    blob = sass.cubin(ptx_of("tma"))
    assert sass.registers(blob) == sass.registers(ptx_of("tma"))
    with pytest.raises(ValueError, match="expected a cubin"):
        sass.sass(b"not an ELF file")


@pytest.mark.parametrize("regs, threads, ctas", [(168, 384, 1), (154, 256, 1), (128, 256, 2), (32, 128, 16)])
def test_ctas_per_sm_by_registers(regs, threads, ctas):
    assert sass.ctas_per_sm(regs, threads) == ctas


@pytest.mark.parametrize("regs, threads", [(0, 256), (256, 256), (64, 0), (64, 2048), (64.0, 256), (True, 256)])
def test_ctas_per_sm_refuses_bad_input(regs, threads):
    with pytest.raises(ValueError, match="must be an int"):
        sass.ctas_per_sm(regs, threads)
