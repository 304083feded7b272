"""The benchmark harness: input rules, throughput arithmetic, interleaved rounds and their
spread (through a fake clock, so without a GPU), and clear errors without a GPU."""
import pytest
import torch

from utils.core import bench


def test_randn_is_normal_not_integers():
    x = bench.randn((256, 256), torch.float16, "cpu", seed=0)
    assert x.dtype == torch.float16 and x.shape == (256, 256)
    assert abs(float(x.float().mean())) < 0.05 and 0.9 < float(x.float().std()) < 1.1
    assert float((x.float() != x.float().round()).float().mean()) > 0.9


@pytest.mark.parametrize("shape", [(0, 4), (-1,), (2.0, 3), "64", 64])
def test_randn_rejects_bad_shapes(shape):
    with pytest.raises(ValueError, match="shape must be a tuple of positive ints"):
        bench.randn(shape, torch.float16, "cpu")


def test_throughput():
    assert bench.throughput(2e9, 1.0, "GB/s") == pytest.approx(2000.0)
    assert bench.throughput(2 * 4096**3, 1.0, "TFLOP/s") == pytest.approx(137.438953472)
    with pytest.raises(ValueError, match="metric must be one of"):
        bench.throughput(1, 1, "GFLOPS")
    with pytest.raises(ValueError, match="must be positive"):
        bench.throughput(1, 0, "GB/s")


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without a CUDA GPU (checks the no-GPU message)")
def test_timing_without_gpu_says_why():
    with pytest.raises(RuntimeError, match="timing needs a CUDA GPU"):
        bench.time_ms(lambda: None)


def test_argument_errors_come_before_hardware():
    with pytest.raises(TypeError, match="fn must be callable"):
        bench.time_ms(42)
    with pytest.raises(ValueError, match="reps >= 1"):
        bench.time_ms(lambda: None, reps=0)
    with pytest.raises(TypeError, match="non-empty dict"):
        bench.compare(lambda: (), {}, reference="x", metric="GB/s", amount=1, shape=(1,), dtype="f")
    with pytest.raises(ValueError, match="is not a contender"):
        bench.compare(lambda: (), {"a": print}, reference="b", metric="GB/s", amount=1,
                      shape=(1,), dtype="f")


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_compare_on_gpu_checks_and_ranks():
    rows = bench.compare(lambda: (bench.randn((1 << 20,), torch.float32, "cuda"),),
                         {"clone": lambda x: x.clone(), "mul": lambda x: x * 1.0},
                         reference="clone", metric="GB/s", amount=8 << 20, shape=(1 << 20,),
                         dtype="float32", check=lambda n, o, r: torch.testing.assert_close(o, r),
                         reps=5)
    assert [r["name"] for r in rows] == ["clone", "mul"] and rows[0]["ratio"] == 1.0
    assert all(r["value"] > 0 and r["metric"] == "GB/s" for r in rows)
    assert all(r["timing"] == "sustained" and r["rounds"] == 5 and len(r["ms_rounds"]) == 5
               and r["ratio_lo"] <= r["ratio"] <= r["ratio_hi"] for r in rows)
    burst = bench.time_ms(lambda: None, reps=3, timing="burst", flush_l2=False)
    assert burst["timing"] == "burst" and burst["reps"] == 3


def test_sweep_concatenates():
    assert bench.sweep([1, 2], lambda c: [{"c": c}], desc="t") == [{"c": 1}, {"c": 2}]


# ---- interleaved sustained timing (run without a GPU through a fake clock) ----

class FakeClock:
    """Stands in for CudaClock: ``cost(name, n)`` is the time of the n-th timed call."""

    def __init__(self, cost):
        self.cost, self.timed = cost, []

    def time(self, fn):
        name = fn()
        self.timed.append(name)
        return self.cost(name, len(self.timed))

    def read(self, handles):
        return list(handles)


def contenders(log):
    return {n: (lambda n=n: (log.append(n), n)[1]) for n in "ABC"}


def test_schedule_takes_turns():
    assert bench.schedule(["A", "B", "C"], rounds=2, reps_per_round=2) == [
        (0, "A"), (0, "B"), (0, "C"), (0, "A"), (0, "B"), (0, "C"),
        (1, "A"), (1, "B"), (1, "C"), (1, "A"), (1, "B"), (1, "C")]


def test_an_alternate_schedule_reverses_the_odd_rounds():
    got = bench.schedule(["A", "B", "C"], rounds=3, reps_per_round=1, order="alternate")
    assert [n for _, n in got] == list("ABC" "CBA" "ABC")
    before = {}                                   # who runs just before each call
    for order in ("fixed", "alternate"):
        seq = [n for _, n in bench.schedule(list("ABC"), rounds=2, reps_per_round=2, order=order)]
        before[order] = {n: {p for p, q in zip(seq, seq[1:]) if q == n} for n in "ABC"}
    assert before["fixed"] == {"A": {"C"}, "B": {"A"}, "C": {"B"}}
    assert before["alternate"] == {"A": {"B", "C"}, "B": {"A", "C"}, "C": {"A", "B", "C"}}   # C twice at the turn
    assert bench.schedule(list("AB"), 2, 1) == bench.schedule(list("AB"), 2, 1, order="fixed")
    with pytest.raises(ValueError, match="order must be one of"):
        bench.schedule(list("AB"), 2, 1, order="rotated")


def test_run_interleaved_alternate_keeps_each_contenders_samples_in_its_round():
    log = []
    clock = FakeClock(lambda name, n: float(n))
    got = bench.run_interleaved(contenders(log), rounds=3, reps_per_round=1, warmup=0, warmup_ms=0,
                                clock=clock, order="alternate", pacing="turns")
    assert log == list("ABC" "CBA" "ABC")
    assert got["A"] == [[1.0], [6.0], [7.0]]      # A's calls were the 1st, 6th and 7th
    with pytest.raises(ValueError, match="order must be one of"):
        bench.compare(lambda: (), {"a": print}, reference="a", metric="GB/s", amount=1,
                      shape=(1,), dtype="f", order="shuffled")


def test_run_interleaved_order_and_rounds():
    log = []
    clock = FakeClock(lambda name, n: float(n))
    got = bench.run_interleaved(contenders(log), rounds=3, reps_per_round=2, warmup=1,
                                warmup_ms=0, clock=clock, pacing="turns")
    assert log[:3] == ["A", "B", "C"], "warm-up also takes turns"
    assert clock.timed == list("ABC") * 6, "timed calls are interleaved A,B,C,A,B,C,..."
    assert got == {"A": [[1, 4], [7, 10], [13, 16]], "B": [[2, 5], [8, 11], [14, 17]],
                   "C": [[3, 6], [9, 12], [15, 18]]}


def test_warmup_lasts_warmup_ms():
    log = []
    clock = FakeClock(lambda name, n: 1.0)         # a round of 3 contenders: 3 ms
    bench.run_interleaved(contenders(log), rounds=1, reps_per_round=1, warmup=2,
                          warmup_ms=25, clock=clock, pacing="turns")
    # 2 counted warm-up rounds, 1 estimating round, ceil(25 / 3) = 9 more, then 1 timed round
    assert len(log) == 3 * (2 + 1 + 9 + 1)


def test_interleaving_cancels_drift():
    """Clocks slow down 20% over the run; A always takes 2x B's time, and the ratio says so
    (timed one after the other, A's 10 calls then B's, it would read about 1.8x)."""
    clock = FakeClock(lambda name, n: (2.0 if name == "A" else 1.0) * (1 + n / 100))
    samples = bench.run_interleaved({"A": lambda: "A", "B": lambda: "B"}, rounds=10,
                                    reps_per_round=1, warmup=0, warmup_ms=0, clock=clock, pacing="turns")
    rows = {r["name"]: r for r in bench.summarize(samples, reference="A", metric="GB/s", amount=1e9)}
    assert 1.97 < rows["B"]["ratio_lo"] <= rows["B"]["ratio"] <= rows["B"]["ratio_hi"] < 2.0


def test_a_blocks_schedule_times_each_contender_back_to_back():
    assert bench.schedule(list("AB"), rounds=2, reps_per_round=2, pacing="blocks") == [
        (0, "A"), (0, "A"), (0, "B"), (0, "B"), (1, "A"), (1, "A"), (1, "B"), (1, "B")]
    got = bench.schedule(list("AB"), rounds=2, reps_per_round=2, order="alternate", pacing="blocks")
    assert [n for _, n in got] == list("AABB" "BBAA")
    with pytest.raises(ValueError, match="pacing must be one of"):
        bench.schedule(list("AB"), 2, 1, pacing="shuffled")


def test_each_block_settles_on_its_own_contender_first():
    """Blocks (the default): before each block, ``settle_ms`` of the contender's own untimed calls
    (A takes 2 ms, B 5 ms: ceil(10 / 2) = 5 of A's, 2 of B's); none are among the samples."""
    log = []
    clock = FakeClock(lambda name, n: {"A": 2.0, "B": 5.0}[name])
    got = bench.run_interleaved({"A": lambda: "A", "B": lambda: "B"}, rounds=2, reps_per_round=3,
                                warmup=0, warmup_ms=0, clock=clock, settle_ms=10)
    block = lambda n, settle: [n] * (settle + 3)          # noqa: E731
    assert clock.timed == ["A", "B"] + block("A", 5) + block("B", 2) + block("A", 5) + block("B", 2)
    assert got == {"A": [[2.0] * 3, [2.0] * 3], "B": [[5.0] * 3, [5.0] * 3]}
    with pytest.raises(ValueError, match="settle_ms must be a number >= 0"):
        bench.run_interleaved({"A": lambda: "A"}, rounds=1, reps_per_round=1, clock=clock, settle_ms=-1)


def test_blocks_also_cancel_drift_between_rounds():
    """Clocks slow 20% over the run; A takes 2x B. Blocks of 1 per round read 2x within about
    a percent (the drift inside one round is all that is left)."""
    clock = FakeClock(lambda name, n: (2.0 if name == "A" else 1.0) * (1 + n / 100))
    samples = bench.run_interleaved({"A": lambda: "A", "B": lambda: "B"}, rounds=10, reps_per_round=1,
                                    warmup=0, warmup_ms=0, clock=clock, settle_ms=0)
    rows = {r["name"]: r for r in bench.summarize(samples, reference="A", metric="GB/s", amount=1e9)}
    assert 1.97 < rows["B"]["ratio_lo"] <= rows["B"]["ratio"] <= rows["B"]["ratio_hi"] < 2.0


def test_compare_rejects_an_unknown_pacing_before_the_gpu():
    with pytest.raises(ValueError, match="pacing must be one of"):
        bench.compare(lambda: (), {"a": print}, reference="a", metric="GB/s", amount=1,
                      shape=(1,), dtype="f", pacing="interleaved")


def test_summarize_spread():
    samples = {"ref": [[2.0, 2.0, 4.0], [2.0], [2.0]], "x": [[1.0], [2.0], [4.0]]}
    rows = {r["name"]: r for r in bench.summarize(samples, reference="ref", metric="TFLOP/s",
                                                  amount=2e12)}
    x, ref = rows["x"], rows["ref"]
    assert x["ms_rounds"] == [1.0, 2.0, 4.0] and ref["ms_rounds"] == [2.0, 2.0, 2.0]
    assert (x["ratio"], x["ratio_lo"], x["ratio_hi"]) == (1.0, 0.5, 2.0)
    assert ref["ms"] == 2.0 and ref["value"] == pytest.approx(1000.0)
    assert x["reference_value"] == ref["value"] and x["rounds"] == 3
    assert (ref["ratio"], ref["ratio_lo"], ref["ratio_hi"]) == (1.0, 1.0, 1.0)
    with pytest.raises(ValueError, match="is not a contender"):
        bench.summarize(samples, reference="nope", metric="GB/s", amount=1)
    with pytest.raises(ValueError, match="positive times for each of the 3 rounds"):
        bench.summarize({"ref": samples["ref"], "y": [[1.0], [1.0]]}, reference="ref",
                        metric="GB/s", amount=1)


def row(name, lo, ratio, hi, ms_rounds=None):
    r = {"name": name, "metric": "TFLOP/s", "value": 1.0, "reference": "ref", "ratio": ratio,
         "ratio_lo": lo, "ratio_hi": hi, "shape": [8, 8, 8], "dtype": "float16"}
    if ms_rounds is not None:
        r["ms_rounds"] = ms_rounds
    return r


@pytest.mark.parametrize("r,at_least,want", [
    (row("a", 1.01, 1.02, 1.05), 1.0, "holds"),
    (row("a", 1.00, 1.02, 1.05), 1.0, "holds"),          # every round at least 1.00x
    (row("a", 0.99, 1.02, 1.05), 1.0, "within spread"),  # median >= 1 is not enough
    (row("a", 0.93, 0.95, 0.99), 1.0, "fails"),
    (row("a", 0.93, 0.95, 1.00), 1.0, "within spread"),
    (row("a", 1.06, 1.08, 1.10), 1.05, "holds"),
    (row("a", 1.01, 1.02, 1.04), 1.05, "fails"),
    ({"name": "old", "ratio": 1.2}, 1.0, "no spread recorded"),   # recorded before issue 12
])
def test_verdict_beyond_the_spread(r, at_least, want):
    assert bench.verdict(r, at_least=at_least) == want
    assert bench.holds(r, at_least=at_least) is (want == "holds")


def test_verdict_between_two_contenders():
    a, b = row("a", 1, 1, 1, [1.0, 1.1, 1.0]), row("b", 1, 1, 1, [1.2, 1.2, 1.05])
    s = bench.ratio_between(a, b)
    assert s["rounds"] == 3 and s["lo"] == pytest.approx(1.05 / 1.0) and s["hi"] == pytest.approx(1.2)
    assert bench.verdict(a, b) == "holds" and bench.verdict(b, a) == "fails"
    assert bench.verdict(a, b, at_least=1.1) == "within spread"
    assert bench.verdict(a, {"name": "old"}) == "no spread recorded"
    with pytest.raises(ValueError, match="not timed together"):
        bench.ratio_between(a, dict(b, ms_rounds=[1.0, 1.0]))
    with pytest.raises(ValueError, match="not timed together"):
        bench.ratio_between(a, dict(b, dtype="bfloat16"))
    with pytest.raises(ValueError, match="need per-round times"):
        bench.ratio_between(a, {"name": "old"})
    with pytest.raises(ValueError, match="at_least must be a positive number"):
        bench.verdict(a, at_least=0)


def test_timing_and_rounds_are_validated_before_hardware():
    with pytest.raises(ValueError, match="timing must be one of"):
        bench.time_ms(lambda: None, timing="fast")
    with pytest.raises(ValueError, match="rounds <= reps"):
        bench.compare(lambda: (), {"a": print}, reference="a", metric="GB/s", amount=1,
                      shape=(1,), dtype="f", reps=5, rounds=10)
    with pytest.raises(ValueError, match="timing must be one of"):
        bench.compare(lambda: (), {"a": print}, reference="a", metric="GB/s", amount=1,
                      shape=(1,), dtype="f", timing="cold")
    for bad in ("flush", None, True):
        with pytest.raises(ValueError, match="flush_by must be one of"):
            bench.compare(lambda: (), {"a": print}, reference="a", metric="GB/s", amount=1,
                          shape=(1,), dtype="f", flush_by=bad)


def test_describe_states_the_claim_with_its_spread():
    r = dict(row("Triton v4", 0.95, 0.97, 0.98), reference="cuBLAS", rounds=10)
    assert bench.describe(r) == "Triton v4: 0.97x cuBLAS [0.95-0.98 over 10 rounds]; >= 1.00x: fails"
    a, b = row("a", 1, 1, 1, [1.0, 1.1, 1.0]), row("b", 1, 1, 1, [1.2, 1.2, 1.05])
    assert bench.describe(a, b) == "a: 1.09x b [1.05-1.20 over 3 rounds]; >= 1.00x: holds"
    old = {"name": "old", "ratio": 1.02, "reference": "cuBLAS"}
    assert bench.describe(old) == "old: 1.02x cuBLAS [no spread recorded]; >= 1.00x: no spread recorded"
    assert bench.describe(a, old) == "a vs old: no per-round times recorded, no claim"


# ---- did the host keep up? (sustained timing of kernels shorter than their launch) ----

class PacedClock(FakeClock):
    """A FakeClock that also reports each repetition's pace: ``(GPU ms, host ms)`` per name."""

    def __init__(self, cost, pace_of):
        super().__init__(cost)
        self.pace_of = pace_of

    def time(self, fn):
        name = fn()
        self.timed.append(name)
        return (self.cost(name, len(self.timed)), name)

    def read(self, handles):
        return [h[0] for h in handles]

    def pace(self, handles):
        return [self.pace_of[h[1]] for h in handles]


def test_run_interleaved_fills_pace_when_the_clock_has_it():
    log, pace = [], {}
    clock = PacedClock(lambda name, n: 1.0, {"A": (0.2, 0.05), "B": (0.1, 0.12), "C": (0.3, 0.3)})
    got = bench.run_interleaved(contenders(log), rounds=2, reps_per_round=3, warmup=0, warmup_ms=0,
                                clock=clock, pace=pace)
    assert got["A"] == [[1.0] * 3] * 2
    assert pace["A"] == [(0.2, 0.05)] * bench.PACE_REPS and pace["B"] == [(0.1, 0.12)] * bench.PACE_REPS
    bench.run_interleaved(contenders([]), rounds=1, reps_per_round=1, warmup=0, warmup_ms=0,
                          clock=FakeClock(lambda name, n: 1.0), pace=(no_pace := {}))
    assert no_pace == {}                        # a clock without pace leaves it empty


class QueueClock:
    """A clock that logs what run_interleaved asks of it: ``drain`` (a read of nothing), ``timed``
    (a repetition), ``read`` (times of a block) and ``pace`` (host/GPU of the handles given)."""

    def __init__(self):
        self.log = []

    def time(self, fn):
        self.log.append(("timed", fn()))
        return fn

    def read(self, handles):
        self.log.append(("read", len(handles)) if handles else ("drain",))
        return [1.0] * len(handles)

    def pace(self, handles):
        self.log.append(("pace", len(handles)))
        return [(0.2, 0.05)] * len(handles)


def test_pace_comes_from_repetitions_issued_onto_a_drained_queue():
    """Back-pressure: once a fast host has filled the launch queue, every timed launch waits for a
    free slot and its host time equals the GPU's, so the timed repetitions cannot tell who waited.
    The pace is read from PACE_REPS more, issued after a drain, after the timed ones are read."""
    clock, pace = QueueClock(), {}
    bench.run_interleaved(contenders([]), rounds=2, reps_per_round=3, warmup=0, warmup_ms=0, settle_ms=0,
                          clock=clock, pace=pace)
    log = clock.log
    last_read = max(i for i, e in enumerate(log) if e[0] == "read")
    tail = log[last_read + 1:]
    names = list(contenders([]))
    want = []
    for n in names:
        want += [("drain",)] + [("timed", n)] * bench.PACE_REPS + [("pace", bench.PACE_REPS)]
    assert tail == want
    assert sum(1 for e in log[:last_read] if e[0] == "timed") == 2 * 3 * len(names)   # the timed ones, before
    assert set(pace) == set(names) and all(len(p) == bench.PACE_REPS for p in pace.values())


@pytest.mark.parametrize("pace, bound", [
    ([(0.20, 0.05)] * 5, False),                # host issues in a quarter of the GPU's time: queue grows
    ([(0.20, 0.17)] * 5, False),                # 85%: still ahead
    ([(0.20, 0.185)] * 5, True),                # past 90%: the GPU is about to wait for it
    ([(0.12, 0.12)] * 5, True),                 # host-bound steady state: the GPU's pace IS the host's
    ([(0.20, 0.30), (0.20, 0.01), (0.20, 0.30)], True),     # medians: 0.30 host vs 0.20 GPU
    ([(0.0, 0.01)] * 3, True),                  # an empty call: events back to back, all host
])
def test_host_pace_flags_a_starved_gpu(pace, bound):
    got = bench.host_pace(pace)
    assert got["host_bound"] is bound
    assert got["gpu_ms_per_rep"] == pytest.approx(sorted(p[0] for p in pace)[len(pace) // 2])


@pytest.mark.parametrize("pace", [[], [(-0.1, 0.1)], [(0.1, -1.0)], [(0.1,)], None])
def test_host_pace_refuses_bad_samples(pace):
    with pytest.raises(ValueError, match="pace must be"):
        bench.host_pace(pace)


def test_cuda_clock_handles_without_a_gpu():
    """CudaClock's own code (events in order, read and pace) against a stand-in for torch.cuda."""
    import types
    ticks = iter(range(100))

    class Event:
        def __init__(self, enable_timing=False):
            self.t = None

        def record(self):
            self.t = next(ticks)

        def elapsed_time(self, end):
            return float(end.t - self.t)

        def synchronize(self):
            pass
    fake = types.SimpleNamespace(cuda=types.SimpleNamespace(Event=Event, synchronize=lambda: None,
                                                            _sleep=lambda cycles: None))
    for timing in bench.TIMINGS:
        clock = bench.CudaClock(flush_l2=False, timing=timing)
        clock.torch = fake
        handles = [clock.time(lambda: next(ticks)) for _ in range(2)]   # the call itself takes one tick
        assert clock.read(handles) == [2.0, 2.0]                        # start, the call, end
        assert [p[0] for p in clock.pace(handles)] == [3.0, 3.0]        # the repetition's event comes first
        assert all(p[1] >= 0 for p in clock.pace(handles))


# ---- CUDA graphs: every contender the same few microseconds of host work ----

@pytest.mark.parametrize("fn", [None, 3, "matmul"])
def test_as_graph_refuses_what_it_cannot_call(fn):
    with pytest.raises(TypeError, match="fn must be callable"):
        bench.as_graph(fn)


@pytest.mark.parametrize("calls", [0, -1, 1.5, 501, True])
def test_host_us_per_call_refuses_counts_that_could_fill_the_queue(calls):
    with pytest.raises(ValueError, match="calls must be an int in 1..500"):
        bench.host_us_per_call(lambda: None, calls)


def test_graphed_captures_every_contender(monkeypatch):
    seen = []
    monkeypatch.setattr(bench, "as_graph", lambda fn: (seen.append(fn) or (lambda: "replayed"), "out"))
    fns = {"A": lambda: 1, "B": lambda: 2}
    got = bench.graphed(fns)
    assert list(got) == ["A", "B"] and seen == list(fns.values())
    assert all(g() == "replayed" for g in got.values())


def test_a_replay_keeps_the_captured_call_and_its_inputs_alive(monkeypatch):
    """A CUDA graph keeps addresses, not tensors: when only the captured call referenced its inputs,
    dropping it freed them and the next allocation took their memory (a replay then read garbage:
    notebook 05's clock cell, rung 2, 2026-11-27). The replay must hold the call."""
    import contextlib
    import gc
    import weakref
    import torch

    class Inputs:
        pass
    fake_cuda = dict(Stream=lambda: type("S", (), {"wait_stream": lambda self, other: None})(),
                     current_stream=lambda: type("S", (), {"wait_stream": lambda self, other: None})(),
                     stream=lambda s: contextlib.nullcontext(), graph=lambda g, stream=None: contextlib.nullcontext(),
                     CUDAGraph=lambda: type("G", (), {"replay": lambda self: None})())
    for k, v in fake_cuda.items():
        monkeypatch.setattr(torch.cuda, k, v)
    monkeypatch.setattr(bench, "_require_gpu", lambda: None)
    x = Inputs()
    alive = weakref.ref(x)
    replay, out = bench.as_graph(lambda x=x: "out")
    del x
    gc.collect()
    assert alive() is not None and replay() == "out" == out
    del replay
    gc.collect()
    assert alive() is None                     # held by the replay, nothing else


# ---- the second opinion: do_bench windows, the reference's around each contender's ----

def test_do_bench_rows_put_each_contender_between_two_reference_windows():
    calls, ref_ms = [], iter([1.0, 1.2, 0.9])       # the reference drifts from window to window

    def timer(fn):
        calls.append(fn())
        return next(ref_ms) if calls[-1] == "R" else {"A": 1.1, "B": 0.5}[calls[-1]]
    fns = {"R": lambda: "R", "A": lambda: "A", "B": lambda: "B"}
    got = bench.do_bench_rows(fns, "R", timer)
    assert calls == ["R", "A", "R", "B", "R"]
    assert got["A"]["do_bench_ratio"] == pytest.approx((1.0 * 1.2) ** 0.5 / 1.1)
    assert got["B"]["do_bench_ratio"] == pytest.approx((1.2 * 0.9) ** 0.5 / 0.5)
    assert got["A"]["do_bench_ref_ms"] == [1.0, 1.2] and got["B"]["do_bench_ref_ms"] == [1.2, 0.9]
    assert got["R"] == {"do_bench_ms": 1.0, "do_bench_ratio": 1.0}      # the median of its windows


def test_do_bench_rows_refuse_a_reference_that_is_not_a_contender():
    with pytest.raises(ValueError, match="is not a contender"):
        bench.do_bench_rows({"A": lambda: 0}, "R", lambda fn: 1.0)


def test_compare_replayed_times_the_replays_and_tags_the_rows(monkeypatch):
    """compare_replayed: the host cost is read from direct calls, compare() gets the replays (not the
    direct callables), and every row says how it was launched and what a direct call costs."""
    direct = {"ref": lambda: "r", "ours": lambda: "o"}
    monkeypatch.setattr(bench, "host_us", lambda fns, calls=50: {n: 10.0 * (i + 1) for i, n in enumerate(fns)})
    replays = {n: (lambda n=n: n + " replayed") for n in direct}
    monkeypatch.setattr(bench, "graphed", lambda fns: replays if fns is direct else None)
    seen = {}

    def fake_compare(make_inputs, contenders, **kw):
        seen.update(contenders=contenders, kw=kw)
        return [{"name": n} for n in contenders]
    monkeypatch.setattr(bench, "compare", fake_compare)
    rows = bench.compare_replayed(direct, reference="ref", metric="TFLOP/s", do_bench=True)
    assert seen["contenders"] is replays and seen["kw"] == {"reference": "ref", "metric": "TFLOP/s", "do_bench": True}
    assert rows == [{"name": "ref", "launch": bench.LAUNCH_GRAPH, "host_us_per_call": 10.0},
                    {"name": "ours", "launch": bench.LAUNCH_GRAPH, "host_us_per_call": 20.0}]
