"""The clock probe (utils.core.clock_probe) and the sampling loop that runs it beside a kernel
(utils.day05.ladder_measure._run_for), on a CPU: the probe's source compiles for sm_90a and reads
the two counters it divides; the loop queues readings, counts only the window's calls, and keeps
the GPU loaded until the last reading ends; clock_fields carries the probe's clock when present."""
import pytest

from utils.core import clock_probe
from utils.day05 import ladder_measure as LM


def test_the_probe_compiles_and_reads_sm_cycles_against_wall_time():
    from utils.cuda_cpp.nvrtc import nvrtc_ptx
    ptx = nvrtc_ptx(clock_probe.SOURCE, arch="sm_90a", name="clock_probe.cu")
    assert "%globaltimer" in ptx and "%clock64" in ptx and ".entry clock_probe" in ptx


class FakeProbe:
    """Busy for ``busy_polls`` polls after each launch."""
    def __init__(self, busy_polls=3):
        self.launches, self.left, self.busy_polls = 0, 0, busy_polls

    def launch(self, ms=50.0):
        if self.left:
            return False
        self.launches, self.left = self.launches + 1, self.busy_polls
        return True

    def busy(self):
        if self.left:
            self.left -= 1
            return True
        return False


class FakeCuda:
    def __init__(self, log):
        self.log = log

    def synchronize(self):
        self.log.append("device sync")

    def current_stream(self):
        log = self.log

        class S:
            def synchronize(self):
                log.append("stream sync")
        return S()


@pytest.fixture
def fake_torch(monkeypatch):
    import torch
    log = []
    monkeypatch.setattr(torch, "cuda", FakeCuda(log))
    return log


def test_run_for_queues_readings_and_loads_the_gpu_until_the_last_ends(monkeypatch, fake_torch):
    import time
    clock = iter(i * 0.1 for i in range(100))
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    calls, probe = [], FakeProbe(busy_polls=3)
    n, elapsed = LM._run_for(lambda: calls.append(1), 0.35, probe=probe)
    assert n == 30 and elapsed == pytest.approx(0.5)          # three batches of 10 inside the window
    assert len(calls) > n                                     # then uncounted calls while the probe ran
    assert not probe.busy() and probe.launches >= 1
    assert "stream sync" in fake_torch and fake_torch[-1] == "device sync"


def test_run_for_without_a_probe_synchronizes_the_device(monkeypatch, fake_torch):
    import time
    clock = iter(i * 0.1 for i in range(100))
    monkeypatch.setattr(time, "perf_counter", lambda: next(clock))
    calls = []
    n, _ = LM._run_for(lambda: calls.append(1), 0.25)
    assert n == len(calls) == 20 and "stream sync" not in fake_torch


def test_clock_fields_carry_the_probe_clock_when_every_pass_has_it():
    passes = [{"mhz": 1500.0, "watts": 690.0, "calls_per_s": 1000.0, "sm_mhz": 1400.0},
              {"mhz": 1520.0, "watts": 692.0, "calls_per_s": 1000.0, "sm_mhz": 1380.0}]
    f = LM.clock_fields(passes, flops=1e12)
    assert f["value"] == 1510.0 and f["sm_mhz"] == 1390.0 and f["sm_passes"] == [1400.0, 1380.0]
    assert f["tflops"] == pytest.approx(1000.0) and f["tflops_per_sm_ghz"] == pytest.approx(1000.0 / 1.39)
    old = LM.clock_fields([{k: v for k, v in p.items() if k != "sm_mhz"} for p in passes], flops=1e12)
    assert "sm_mhz" not in old and "tflops_per_sm_ghz" not in old        # recordings before the probe


@pytest.mark.parametrize("ms", [0, 0.5, 2000, True, "50"])
def test_a_reading_must_last_1_to_1000_ms(ms):
    probe = object.__new__(clock_probe.Probe)
    with pytest.raises(ValueError, match="ms must be 1..1000"):
        probe.launch(ms)
