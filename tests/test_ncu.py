"""utils.core.ncu: parsing Nsight Compute's CSV, and clear errors where it cannot run."""
import pytest

from utils.core import ncu

CSV = '''==PROF== Connected to process 1 (python3)
==PROF== Profiling "kernel_broadcast_kernel_0": 0%....50%....100% - 1 pass
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","kernel_broadcast_kernel_0","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","33,816,576"
"0","1","python3","h","kernel_broadcast_kernel_0","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Command line profiler metrics","lts__t_sectors_op_read.sum","sector","1048576"
"1","1","python3","h","kernel_broadcast_kernel_1","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Command line profiler metrics","dram__bytes_read.sum","byte","1000"
"1","1","python3","h","kernel_broadcast_kernel_1","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0","Command line profiler metrics","lts__t_sectors_op_read.sum","sector","524288"
'''


def test_parse_csv_one_dict_per_launch_in_order():
    got = ncu.parse_csv(CSV, ("dram__bytes_read.sum", "lts__t_sectors_op_read.sum"))
    assert got == [{"kernel": "kernel_broadcast_kernel_0", "dram__bytes_read.sum": 33816576.0,
                    "lts__t_sectors_op_read.sum": 1048576.0},
                   {"kernel": "kernel_broadcast_kernel_1", "dram__bytes_read.sum": 1000.0,
                    "lts__t_sectors_op_read.sum": 524288.0}]


def test_parse_csv_ignores_other_metrics_and_noise():
    assert ncu.parse_csv(CSV, ("dram__bytes_write.sum",)) == []
    assert ncu.parse_csv("==PROF== nothing profiled\n", ncu.L2_DRAM) == []


NA_ROW = ('"1","1","python3","h","kernel_broadcast_kernel_1","1","7","(128, 1, 1)","(64, 32, 1)","0","9.0",'
          '"Command line profiler metrics","lts__t_throughput.avg.pct_of_peak_sustained_elapsed","%","n/a"\n')


def test_parse_csv_keeps_n_a_as_none_and_names_other_text():
    got = ncu.parse_csv(CSV + NA_ROW, ("lts__t_throughput.avg.pct_of_peak_sustained_elapsed",))
    assert got == [{"kernel": "kernel_broadcast_kernel_1", "lts__t_throughput.avg.pct_of_peak_sustained_elapsed": None}]
    with pytest.raises(RuntimeError, match="printed 'fast' for dram__bytes_read.sum on kernel 'kernel_broadcast_kernel_1'"):
        ncu.parse_csv(CSV.replace('"byte","1000"', '"byte","fast"'), ("dram__bytes_read.sum",))


def test_profile_without_ncu_says_so(monkeypatch):
    monkeypatch.setattr(ncu.shutil, "which", lambda name: None)
    assert not ncu.available()
    with pytest.raises(RuntimeError, match="ncu \\(Nsight Compute\\) is not installed"):
        ncu.profile(["true"], "k")


@pytest.mark.parametrize("stdout, rc, match", [
    ("==ERROR== ERR_NVGPUCTRPERM - no permission\n", 1, "may not read the GPU's counters"),
    ("==PROF== Disconnected\n", 0, "found no kernel matching 'k'"),
    (CSV, 0, "did not report \\['dram__bytes_write.sum'"),
])
def test_profile_failures_are_named(monkeypatch, stdout, rc, match):
    class Done:
        returncode, stderr = rc, ""
    Done.stdout = stdout
    monkeypatch.setattr(ncu, "available", lambda: True)
    monkeypatch.setattr(ncu.subprocess, "run", lambda *a, **k: Done)
    with pytest.raises(RuntimeError, match=match):
        ncu.profile(["python3"], "k", metrics=("dram__bytes_read.sum", "dram__bytes_write.sum"))


def test_profile_names_metrics_that_came_back_n_a(monkeypatch):
    class Done:
        returncode, stderr, stdout = 0, "", CSV.replace('"byte","1000"', '"byte","n/a"')
    monkeypatch.setattr(ncu, "available", lambda: True)
    monkeypatch.setattr(ncu.subprocess, "run", lambda *a, **k: Done)
    with pytest.raises(RuntimeError, match=r"reported n/a for \['dram__bytes_read.sum'\] on \['kernel_broadcast_kernel_1'\]"):
        ncu.profile(["python3"], "k", metrics=("dram__bytes_read.sum",))


@pytest.mark.parametrize("bad", [0, -1, "2", 1.5])
def test_profile_refuses_bad_launch_count(bad):
    with pytest.raises(ValueError, match="launch_count must be a positive int"):
        ncu.profile(["true"], ".", launch_count=bad)


@pytest.mark.parametrize("bad", ["off", None, "None", True])
def test_profile_refuses_an_unknown_cache_control(bad):
    with pytest.raises(ValueError, match="cache_control must be one of"):
        ncu.profile(["true"], ".", cache_control=bad)


@pytest.mark.parametrize("given, flag", [({}, "all"), ({"cache_control": "none"}, "none")])
def test_profile_passes_its_cache_control_to_ncu(monkeypatch, given, flag):
    seen = {}

    class Done:
        returncode, stderr, stdout = 0, "", CSV

    def run(cmd, **kw):
        seen["cmd"] = cmd
        return Done
    monkeypatch.setattr(ncu, "available", lambda: True)
    monkeypatch.setattr(ncu.subprocess, "run", run)
    ncu.profile(["python3"], "k", metrics=("dram__bytes_read.sum",), **given)
    cmd = seen["cmd"]
    assert cmd[cmd.index("--cache-control") + 1] == flag


def test_other_gpu_processes_are_named_and_this_one_left_out():
    import os

    class Out:
        stdout = f"{os.getpid()}\n4242\n 77 \n[N/A]\n"
    assert ncu.other_gpu_processes(run=lambda *a, **k: Out) == [4242, 77]

    def missing(*a, **k):
        raise FileNotFoundError("nvidia-smi")
    assert ncu.other_gpu_processes(run=missing) == []
    assert ncu.shared_gpu_note([]) == ""
    assert "pids 77, 4242" in ncu.shared_gpu_note([4242, 77]) and "whole GPU" in ncu.shared_gpu_note([1])


def test_a_profile_on_a_shared_gpu_says_so(monkeypatch, capsys):
    class Done:
        returncode, stderr, stdout = 0, "", CSV
    monkeypatch.setattr(ncu, "available", lambda: True)
    monkeypatch.setattr(ncu, "other_gpu_processes", lambda: [4242])
    monkeypatch.setattr(ncu.subprocess, "run", lambda *a, **k: Done)
    got = ncu.profile(["python3"], "k", metrics=("dram__bytes_read.sum",))
    assert len(got) == 2 and "other processes are using this GPU (pids 4242)" in capsys.readouterr().out
    monkeypatch.setattr(ncu, "other_gpu_processes", lambda: [])
    ncu.profile(["python3"], "k", metrics=("dram__bytes_read.sum",))
    assert capsys.readouterr().out == ""
