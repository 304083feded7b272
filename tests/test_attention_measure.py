"""The pure parts of utils.day05.attention_measure (notebook day05_tma/07), on a CPU: the switch
between the short default run and the full one the recordings use, the configurations each runs,
and the per-round step gains the notebook prints and asserts."""
import pytest

from utils.day05 import attention_measure as am


@pytest.mark.parametrize("env, full", [({}, False), ({"COURSE_FULL": "1"}, True), ({"COURSE_RECORD": "1"}, True),
                                       ({"COURSE_FULL": "0"}, False), ({"COURSE_RECORD": "0"}, False)])
def test_full_run_is_the_recordings_switch(env, full):
    assert am.full_run(env) is full


def test_the_short_run_is_a_subset_of_the_full_one():
    assert set(am.LADDER_SHORT) < set(am.LADDER) and set(am.SWEEP_SHORT) < set(am.SWEEP)
    assert set(am.CHECKS_SHORT) < set(am.CHECKS)
    assert am.check_configs(full=True) == am.CHECKS and am.check_configs(full=False) == am.CHECKS_SHORT
    # the short checks still cover D = 64 and bf16; the ladder checks D = 128 fp16, masked and not, before timing
    assert {c[0] for c in am.CHECKS_SHORT} == {64, 128} and any(c[1] == "bfloat16" for c in am.CHECKS_SHORT)
    assert all(S == 4096 and D == 128 and dt == "float16" for S, D, dt in am.LADDER_SHORT)


def _row(step, S, causal, rounds):
    return {"name": am.STEP_NAMES[step], "shape": [4, 16, S, 128], "causal": causal,
            "ms": sorted(rounds)[len(rounds) // 2], "ms_rounds": rounds}


def test_step_gains_are_per_round_ratios_of_the_previous_step():
    rows = [_row("pipeline", 4096, False, [1.0, 1.0, 1.0]), _row("producer", 4096, False, [0.99, 1.0, 0.98]),
            _row("pingpong", 4096, False, [0.95, 0.96, 0.94]), _row("overlap", 4096, False, [1.0, 0.97, 0.96]),
            _row("pipeline", 4096, True, [0.5, 0.5, 0.5]), _row("producer", 4096, True, [0.51, 0.52, 0.505]),
            _row("pingpong", 4096, True, [0.52, 0.53, 0.51]), _row("overlap", 4096, True, [0.53, 0.54, 0.52])]
    g = am.step_gains(rows)
    assert list(g) == [(4096, False), (4096, True)]
    name, gain, lo, hi = g[(4096, False)][0]
    assert name == am.STEP_NAMES["producer"] and gain == pytest.approx(1 / 0.99) and lo == pytest.approx(1.0)
    assert hi == pytest.approx(1 / 0.98)
    assert [x[0] for x in g[(4096, False)]] == [am.STEP_NAMES[s] for s in ("producer", "pingpong", "overlap")]
    assert all(hi < 1 for _, _, _, hi in g[(4096, True)])          # every causal step lost in every round
    assert g[(4096, False)][2][1] == pytest.approx(0.94 / 0.96)     # the median of the rounds' ratios


def test_step_gains_skip_steps_a_recording_predates():
    """A recording made before step 5 existed has gains for steps 2-4 only (no KeyError)."""
    rows = [_row(s, 4096, False, [1.0, 0.99]) for s in ("pipeline", "producer", "pingpong", "overlap")]
    assert [x[0] for x in am.step_gains(rows)[(4096, False)]] == [am.STEP_NAMES[s] for s in ("producer", "pingpong", "overlap")]
    rows += [_row("named", 4096, False, [0.9, 0.9])]
    assert len(am.step_gains(rows)[(4096, False)]) == 4


def test_fa3_ablation_is_the_papers_table():
    assert am.FA3_ABLATION["FlashAttention-3"] == 661
    assert sorted(v for k, v in am.FA3_ABLATION.items() if k != "FlashAttention-3") == [570, 582]


def test_measure_counters_rows_with_ncu_faked(monkeypatch):
    """measure_counters on a CPU, ncu faked: one row per step from the CuteDSL launches, and one for
    cuDNN from its own process, the longest kernel of that call (not the first); each row carries
    the stall reasons and the instruction count; a launch count that is not one per step is refused."""
    from utils.core import ncu
    from utils.cute_dsl import attention as fa
    from utils.cute_dsl.counters import STALL_METRIC, STALLS

    def kernel(name, ns, stall=1.0):
        k = {m: 1.0 for m in am.COUNTERS}
        k.update({"kernel": name, "gpu__time_duration.sum": ns, am.INSTRUCTIONS: 5e6,
                  **{STALL_METRIC.format(r): stall for r in STALLS}})
        return k
    calls = []

    def profile(argv, regex, metrics):
        calls.append((argv[-1], regex))
        assert am.INSTRUCTIONS in metrics and all(STALL_METRIC.format(r) in metrics for r in STALLS)
        if "launch_cudnn_once" in argv[-1]:
            return [kernel("small", 1e4), kernel("cudnn_sdpa_fprop", 9e5, 2.0), kernel("tail", 2e4)]
        return [kernel(f"kernel_cutlass_{i}", 1e6 - i * 1e4) for i in range(len(fa.STEPS))]
    monkeypatch.setattr(ncu, "profile", profile)
    rows = am.measure_counters(full=False)
    assert [r["name"] for r in rows] == [am.STEP_NAMES[s] for s in fa.STEPS] + [am.BACKENDS["CUDNN_ATTENTION"]]
    cudnn = rows[-1]
    assert cudnn["kernel"] == "cudnn_sdpa_fprop" and cudnn["value"] == pytest.approx(0.9)
    assert cudnn["stalls"]["gmma"] == 2.0 and cudnn["instructions"] == 5e6
    assert rows[0]["ratio"] == 1.0 and rows[-1]["ratio"] == pytest.approx(1.0 / 0.9)
    assert [regex for _, regex in calls] == ["kernel_cutlass", "."]
    monkeypatch.setattr(ncu, "profile", lambda argv, regex, metrics: [kernel("kernel_cutlass_0", 1e6)])
    with pytest.raises(RuntimeError, match="expected 5 attention launches"):
        am.measure_counters(full=False)


def test_notebook_07_section_10_runs_on_a_live_short_sweep(capsys):
    """A live run measures only SWEEP_SHORT (head dim 128): §10's cells must read it without the
    full sweep's head dim 64 (they once took min() of an empty list there, found on an H100)."""
    import json
    import pathlib
    from utils.core import results
    root = pathlib.Path(__file__).resolve().parents[1]
    nb = json.loads((root / "solutions/day05_tma/07_flash_attention.ipynb").read_text())
    cells = ["".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code"]
    i = next(k for k, s in enumerate(cells) if s.startswith("def versus_backends"))
    doc = results.load("07_flash_attention", device="h100")
    short = set(am.SWEEP_SHORT)
    sweep = [r for r in doc["rows"] if r.get("part") == "sweep" and (r["shape"][2], r["shape"][3], r["dtype"]) in short]
    assert sweep and {r["shape"][3] for r in sweep} == {128}
    ns = {"am": am, "results": results, "sweep": sweep, "sweep_label": "measured now on a GPU",
          "ladder": [r for r in doc["rows"] if r.get("part") == "ladder"]}
    for src in cells[i:i + 2]:               # versus_backends and the targets; then the ladder and head dim 64
        exec(src, ns)
    assert "head dim 64 is not in this run's short sweep" in capsys.readouterr().out


def _fake_clock_gpu(monkeypatch, mhz):
    """The GPU stood in for: tiny tensors, contenders that copy a fixed output, a fixed power limit,
    no graphs, and nvidia-smi samples from the iterator ``mhz``."""
    import torch
    from utils.day05 import ladder_measure as LM
    from utils.day05 import skinny_measure as sm
    checked = []
    monkeypatch.setattr(am, "shape_of", lambda S, D: (1, 2, 8, 4))
    monkeypatch.setattr(am.bench, "randn", lambda shape, dtype, device, seed=0: torch.randn(shape, generator=torch.Generator().manual_seed(seed)))
    monkeypatch.setattr(torch, "empty_like", lambda t: t.clone())
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", lambda q, k, v, is_causal: q)
    monkeypatch.setattr(am, "contenders", lambda q, k, v, o, causal: {
        n: (lambda: o.copy_(q)) for n in (*am.STEP_NAMES.values(), *am.BACKENDS.values())})
    monkeypatch.setattr(am, "check_output", lambda name, out, ref, v, dtype: checked.append(name))
    monkeypatch.setattr(sm, "power_limit_w", lambda: 700.0)
    monkeypatch.setattr(am.bench, "graphed", lambda fns: dict(fns))
    monkeypatch.setattr(LM, "_run_for", lambda fn, seconds: (10, seconds))
    monkeypatch.setattr(LM, "_sample_gpu", lambda fn, seconds: {"mhz": float(next(mhz)), "watts": 695.0,
                                                                 "calls_per_s": 1000.0, "samples": 20})
    return checked


def test_measure_clocks_rows_are_recordable(monkeypatch):
    """Three contenders per mask, each checked before sampling, two passes averaged (the second in
    reverse order); rows the results format accepts, with work per clock and the clock over cuDNN's."""
    from utils.core import results
    from utils.day05 import attention
    checked = _fake_clock_gpu(monkeypatch, iter(range(1000, 2000, 10)))
    rows = am.measure_clocks(seconds=1)
    results.validate_rows(rows)
    assert [(r["name"], r["causal"]) for r in rows] == [(n, c) for c in (False, True) for n in am.CLOCK_NAMES]
    assert checked == [r["name"] for r in rows]
    for r in rows:
        assert len(r["passes"]) == 2 and r["value"] == pytest.approx(sum(r["passes"]) / 2)
        assert r["tflops"] == pytest.approx(attention.flops(1, 2, 8, 4, r["causal"]) * 1000.0 / 1e12)
        assert r["tflops_per_ghz"] == pytest.approx(r["tflops"] / (r["value"] / 1e3))
        cudnn = next(q for q in rows if q["name"] == am.BACKENDS["CUDNN_ATTENTION"] and q["causal"] == r["causal"])
        assert r["power_limit"] == 700.0 and r["ratio"] == pytest.approx(r["value"] / cudnn["value"])
    assert rows[0]["passes"] == [1000.0, 1050.0]         # 3 kernels a pass: the second pass runs in reverse


@pytest.mark.parametrize("full, seconds", [(True, 2.0), (False, 1.0)])
def test_measure_clocks_samples_longer_in_the_full_run(monkeypatch, full, seconds):
    _fake_clock_gpu(monkeypatch, iter(range(1000, 2000, 10)))
    assert {r["seconds"] for r in am.measure_clocks(full=full)} == {seconds}


@pytest.mark.parametrize("kw, match", [(dict(seconds=0.5), "seconds must be >= 1"),
                                       (dict(seconds=True), "seconds must be >= 1"),
                                       (dict(dtype="float32"), "dtype must be"),
                                       (dict(names=(am.LAST,)), "must include"),
                                       (dict(names=(am.LAST, am.BACKENDS["CUDNN_ATTENTION"], "cuBLAS")), "unknown")])
def test_measure_clocks_refuses_bad_arguments(monkeypatch, kw, match):
    _fake_clock_gpu(monkeypatch, iter(range(1000, 2000, 10)))
    with pytest.raises(ValueError, match=match):
        am.measure_clocks(**kw)
